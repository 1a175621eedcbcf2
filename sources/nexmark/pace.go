package nexmark

import (
	"context"
	"time"

	"github.com/weirflow/weir/internal/ctxsleep"
)

const (
	// maxWait bounds how long Next sleeps for the rate limit, so that
	// epoch barriers are not delayed.
	maxWait = 50 * time.Millisecond
	// maxBurst bounds catching up: a reader that fell behind its schedule
	// (a slow consumer) produces at most this much time's worth of events
	// at once.
	maxBurst = time.Second
)

// pacer limits a reader to rate events per second of processing time,
// counted from its first batch: event k (from 0) is due at start + k/rate,
// and a batch starts when its first event is due.
type pacer struct {
	rate    float64 // events per second; 0 = unlimited
	start   time.Time
	started bool
	emitted int64 // events generated since start
	// now and sleep are the clock; tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newPacer(rate float64) pacer {
	return pacer{rate: rate, now: time.Now, sleep: ctxsleep.Sleep}
}

func (p *pacer) limited() bool { return p.rate > 0 }

// admit waits until the next event is due and returns how many events to
// generate now: about 100ms worth, at least 1 and at most limit. It
// returns 0 when none is due within maxWait, after sleeping maxWait, so
// that a caller looping on Next does not spin.
func (p *pacer) admit(ctx context.Context, limit int) (int, error) {
	now := p.now()
	if !p.started {
		p.start, p.started = now, true
	}
	due := p.start.Add(time.Duration(float64(p.emitted) / p.rate * float64(time.Second)))
	if behind := now.Sub(due); behind > maxBurst {
		p.start = p.start.Add(behind - maxBurst) // forgive the excess debt
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
	return int(max(1, min(float64(limit), p.rate/10))), nil
}
