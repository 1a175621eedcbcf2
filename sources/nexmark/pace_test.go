package nexmark

import (
	"context"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when slept on.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
	return nil
}

// TestRateLimit runs a rate-limited reader on a fake clock: it gets its
// share of RateLimit (by its number of splits), makes batches of about
// 100ms worth of events, never sleeps more than maxWait at once, and
// generates the same events as without a limit.
func TestRateLimit(t *testing.T) {
	src := mustNew(t, Config{Seed: 8, RateLimit: 1000, Splits: 4})
	cfg := src.Config()
	rd := open(t, src, newMem(t), states(1, 3)) // half the splits: 500 events/s
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	rd.pace.now, rd.pace.sleep = clock.now, clock.sleep
	start := clock.t
	got := map[int][]oEvent{}
	zero := 0
	for clock.t.Sub(start) < 10*time.Second {
		k := rd.pick()
		b, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if b.IsZero() {
			zero++
			continue
		}
		if n := b.NumRows(); n != 50 {
			t.Fatalf("batch of %d events, want 50 (100ms at 500/s)", n)
		}
		got[rd.cursors[k].split] = append(got[rd.cursors[k].split], eventsOf(t, b.Record)...)
		b.Release()
	}
	n := len(got[1]) + len(got[3])
	if n < 4950 || n > 5050 {
		t.Fatalf("%d events in 10s at 500/s", n)
	}
	if zero == 0 {
		t.Fatal("the reader never waited")
	}
	for _, d := range clock.slept {
		if d > maxWait {
			t.Fatalf("slept %v at once, more than %v", d, maxWait)
		}
	}
	checkEvents(t, cfg, got[1], 1, 4)
	checkEvents(t, cfg, got[3], 3, 4)
}

// TestPacerForgivesDebt checks that a reader that fell far behind its
// schedule bursts at most maxBurst worth of events.
func TestPacerForgivesDebt(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := newPacer(100)
	p.now, p.sleep = clock.now, clock.sleep
	burst := 0
	if n, _ := p.admit(context.Background(), 1000); n != 10 {
		t.Fatalf("first admit: %d", n)
	}
	p.emitted += 10
	clock.t = clock.t.Add(time.Minute) // a stalled consumer
	for {
		n, _ := p.admit(context.Background(), 1000)
		if len(clock.slept) > 0 {
			break // caught up
		}
		burst += n
		p.emitted += int64(n)
	}
	if burst < 100 || burst > 110 {
		t.Fatalf("burst of %d events after a minute's stall, want about %d (maxBurst at 100/s)", burst, int(maxBurst.Seconds()*100))
	}
}
