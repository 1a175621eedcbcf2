package arrowflow

import (
	"time"
)

// Clock tells processing time: the wall clock of the machine running a
// task. Tests substitute their own through Options.Clock.
type Clock interface {
	Now() time.Time
}

// systemClock is the real wall clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the wall clock, the default of Options.Clock.
var SystemClock Clock = systemClock{}

// ProcessingTimeOperator is an Operator that also acts on processing time,
// such as a processing-time window that fires when the wall clock passes
// its end whether or not rows arrive. The runtime asks NextProcessingTime
// after every call into the operator and calls OnProcessingTime, from the
// task's goroutine like every other method, once the task's clock reaches
// that time: between batches while input flows, and by waking the task
// when its input is idle.
//
// Results of processing-time operators depend on when rows arrive, so they
// are not deterministic on replay: after a recovery the same rows may fall
// into other windows. Exactly-once still holds for what is emitted (each
// emitted row is committed once), but not "the same output as a run
// without failures".
type ProcessingTimeOperator interface {
	Operator
	// NextProcessingTime returns when OnProcessingTime must next run, and
	// false when no timer is set.
	NextProcessingTime() (time.Time, bool)
	// OnProcessingTime handles the clock having reached now (at or past
	// the time NextProcessingTime returned).
	OnProcessingTime(now time.Time, out Emitter) error
}

// timerOp pairs a chained operator with its processing-time view.
type timerOp struct {
	inst *opInstance
	pt   ProcessingTimeOperator
}

// nextTimer returns the earliest timer of the task's processing-time
// operators, and false when none is set.
func (t *task) nextTimer() (time.Time, bool) {
	var next time.Time
	found := false
	for _, o := range t.timerOps {
		if o.inst.finishedOnRestore {
			continue
		}
		if at, ok := o.pt.NextProcessingTime(); ok && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found
}

// fireTimers calls OnProcessingTime on every chained operator whose timer
// is due, in chain order (an operator's output reaches the next operator
// before that one's timers run).
func (t *task) fireTimers() error {
	if len(t.timerOps) == 0 {
		return nil
	}
	now := t.job.clock.Now()
	for _, o := range t.timerOps {
		if o.inst.finishedOnRestore {
			continue
		}
		at, ok := o.pt.NextProcessingTime()
		if !ok || now.Before(at) {
			continue
		}
		prev := t.current
		t.current = o.inst.node
		err := o.pt.OnProcessingTime(now, o.inst.out)
		t.current = prev
		if err != nil {
			return t.nodeErr(o.inst.node, err)
		}
	}
	return nil
}

// popWait is how long the next pop may wait for input before the task's
// earliest timer is due: negative for no limit.
func (t *task) popWait() time.Duration {
	at, ok := t.nextTimer()
	if !ok {
		return -1
	}
	return max(at.Sub(t.job.clock.Now()), 0)
}
