package datagen

import (
	"context"
	"time"

	"github.com/weirflow/weir/internal/ctxsleep"
)

// maxDebt bounds catching up: a reader that fell behind its schedule (a
// slow consumer) bursts at most this much time's worth of rows.
const maxDebt = time.Second

// pacer limits a reader to rate rows per second, counted from the first
// Next. Row k (from 0) is due at start + k/rate: a batch may start when
// its first row is due.
type pacer struct {
	rate    float64 // rows per second; 0 = unlimited
	start   time.Time
	started bool
	emitted int64 // rows generated since start
	// now and sleep are the clock; tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newPacer(rate float64) pacer {
	return pacer{rate: rate, now: time.Now, sleep: ctxsleep.Sleep}
}

func (p *pacer) limited() bool { return p.rate > 0 }

// batchSize is about 100ms worth of rows, at least 1 and at most limit, so
// that low rates flow smoothly.
func (p *pacer) batchSize(limit int) int {
	return int(max(1, min(float64(limit), p.rate/10)))
}

// admit waits until the next row is due and returns how many rows to
// generate, or 0 when none is due within maxWait (after sleeping maxWait,
// so that a caller looping on Next does not spin).
func (p *pacer) admit(ctx context.Context, limit int) (int, error) {
	now := p.now()
	if !p.started {
		p.start, p.started = now, true
	}
	due := p.start.Add(time.Duration(float64(p.emitted) / p.rate * float64(time.Second)))
	if late := now.Sub(due); late > maxDebt {
		p.start = p.start.Add(late - maxDebt)
	}
	wait := due.Sub(now)
	if wait > maxWait {
		return 0, p.sleep(ctx, maxWait)
	}
	if wait > 0 {
		if err := p.sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
	return p.batchSize(limit), nil
}
