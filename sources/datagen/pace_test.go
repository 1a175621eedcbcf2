package datagen

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeClock is a pacer clock whose sleeps advance time instantly.
type fakeClock struct {
	now      time.Time
	sleeps   int
	maxSleep time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.sleeps++
	c.maxSleep = max(c.maxSleep, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) install(rd *reader) {
	rd.pace.now, rd.pace.sleep = c.Now, c.Sleep
}

// pacedRun calls Next until the fake clock passes d and counts rows,
// non-empty and zero batches.
func pacedRun(t *testing.T, rd *reader, clock *fakeClock, d time.Duration) (rows, batches, zeros int) {
	t.Helper()
	end := clock.now.Add(d)
	for clock.now.Before(end) {
		b, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if b.IsZero() {
			zeros++
			continue
		}
		rows += b.NumRows()
		batches++
		b.Release()
	}
	return rows, batches, zeros
}

func TestRateShareAndBatchSize(t *testing.T) {
	// 1000 rows/s over 8 splits; a reader of 4 splits gets 500 rows/s, in
	// batches of 100ms worth: 50 rows.
	src := mustNew(t, Config{RowsPerSecond: 1000})
	rd := open(t, src, newMem(t), states(0, 2, 4, 6))
	clock := &fakeClock{now: time.Unix(1000, 0)}
	clock.install(rd)
	rows, batches, _ := pacedRun(t, rd, clock, 10*time.Second)
	// Row k is due at k/500 s; a batch of 50 starts when its first row is
	// due: at 0, 0.1s, ..., 10s (Next sleeps until then), so 101 batches.
	if rows != 5050 || batches != 101 {
		t.Fatalf("%d rows in %d batches over 10s; want 5050 in 101", rows, batches)
	}
	if clock.maxSleep > maxWait {
		t.Fatalf("slept %v in one Next; at most %v", clock.maxSleep, maxWait)
	}
}

func TestRateLowReturnsZeroBatches(t *testing.T) {
	// 0.8 rows/s for the whole source, one reader: a row every 1.25s,
	// batches of 1 row, zero batches (after a sleep of at most 50ms) in
	// between.
	src := mustNew(t, Config{RowsPerSecond: 0.8})
	rd := open(t, src, newMem(t), allStates(src))
	clock := &fakeClock{now: time.Unix(1000, 0)}
	clock.install(rd)
	rows, batches, zeros := pacedRun(t, rd, clock, 10*time.Second)
	// Due at 0, 1.25s, ..., 10s: 9 rows.
	if rows != 9 || batches != 9 {
		t.Fatalf("%d rows in %d batches over 10s; want 9 in 9", rows, batches)
	}
	// Zero batches, each after sleeping maxWait, fill the 10s.
	if want := int(10*time.Second/maxWait) - 9; zeros < want-9 || zeros > want+9 {
		t.Fatalf("%d zero batches; want about %d", zeros, want)
	}
	if clock.maxSleep > maxWait {
		t.Fatalf("slept %v in one Next; at most %v", clock.maxSleep, maxWait)
	}
}

func TestRateCatchUpIsBounded(t *testing.T) {
	src := mustNew(t, Config{RowsPerSecond: 800}) // 800 rows/s, batches of 80
	rd := open(t, src, newMem(t), allStates(src))
	clock := &fakeClock{now: time.Unix(1000, 0)}
	clock.install(rd)
	pacedRun(t, rd, clock, time.Second)
	// The consumer stalls for 10s; then count rows available without
	// waiting: at most a second's worth (plus the batch due now).
	clock.now = clock.now.Add(10 * time.Second)
	sleeps := clock.sleeps
	burst := 0
	for clock.sleeps == sleeps {
		b, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		burst += b.NumRows()
		b.Release()
	}
	if burst < 800 || burst > 800+80+80 {
		t.Fatalf("burst of %d rows after a 10s stall; want about one second's worth (800)", burst)
	}
}

func TestRateContextCanceled(t *testing.T) {
	src := mustNew(t, Config{RowsPerSecond: 0.001})
	rd := open(t, src, newMem(t), allStates(src))
	ctx, cancel := context.WithCancel(context.Background())
	b, err := rd.Next(ctx) // the first row is due at once
	if err != nil || b.NumRows() != 1 {
		t.Fatalf("first Next: %d rows, %v", b.NumRows(), err)
	}
	b.Release()
	cancel()
	if _, err := rd.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v, want context.Canceled", err)
	}
	// A cancellation during the sleep ends it (real clock).
	ctx, cancel = context.WithCancel(context.Background())
	go cancel()
	if b, err := rd.Next(ctx); !b.IsZero() || (err != nil && !errors.Is(err, context.Canceled)) {
		t.Fatalf("Next while rate-limited: %d rows, %v", b.NumRows(), err)
	}
}
