package window

import (
	"fmt"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// procOp is a subtask of a tumbling, hopping or cumulating aggregate over
// processing time. It shares the pane machinery of the event-time
// operator: a batch goes whole into the pane of the moment it arrives,
// and "the watermark" of the panes is the clock, advanced by timers
// instead of by the input's watermarks (which pass through untouched).
// Cumulating windows are built incrementally as in the event-time
// operator; a batch never drops the accumulator, since the monotonic
// clock puts it in a pane at or after the end of every window fired.
type procOp struct {
	aggOp
	clock arrowflow.Clock
	now   int64 // latest clock reading, ns; never goes backwards
	timer int64 // earliest unfired window end over the held panes
	armed bool  // whether timer is set
}

var _ arrowflow.ProcessingTimeOperator = (*procOp)(nil)

func (o *procOp) Open(info *arrowflow.TaskInfo) error {
	if err := o.aggOp.Open(info); err != nil {
		return err
	}
	o.clock = info.Clock
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	// Window [start, end) fires once the clock reads end or later, which
	// the event-time rule "watermark >= end - tick" gives with a tick of
	// 1 ns and the watermark at the clock minus 1 ns.
	o.tick = 1
	return nil
}

// read returns the clock, kept monotonic: a wall clock stepping back must
// not put rows into windows that already fired.
func (o *procOp) read() int64 {
	o.now = max(o.now, o.clock.Now().UnixNano())
	return o.now
}

func (o *procOp) ProcessBatch(_ int, b arrowflow.Batch, _ arrowflow.Emitter) error {
	defer b.Release()
	if err := checkInput(b.Record, o.cfg.Input); err != nil {
		return err
	}
	if b.NumRows() == 0 {
		return nil
	}
	p := floorTo(o.read(), o.pane, o.offset)
	g, err := o.paneState(p)
	if err != nil {
		return err
	}
	if err := g.Update(b.Record, b.Sel); err != nil {
		return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
	}
	if end := o.firstEnd(p); !o.armed || end < o.timer {
		o.timer, o.armed = end, true
	}
	return o.reportState()
}

// firstEnd is the end of the earliest window that contains the pane
// starting at p and has not fired yet.
func (o *procOp) firstEnd(p int64) int64 {
	// appendWindows lists them in increasing order of end.
	o.paneWins = o.cfg.Window.appendWindows(o.paneWins[:0], p)
	for _, w := range o.paneWins {
		if !o.fired(w.end, o.wm) {
			return w.end
		}
	}
	return o.cfg.Window.lastWindowEnd(p) // not reached: the pane would be freed
}

// ProcessWatermark forwards event-time watermarks: they do not move
// processing-time windows.
func (o *procOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// NextProcessingTime is the end of the earliest window still to fire.
func (o *procOp) NextProcessingTime() (time.Time, bool) {
	if !o.armed {
		return time.Time{}, false
	}
	return time.Unix(0, o.timer), true
}

// OnProcessingTime fires every window that ended by now.
func (o *procOp) OnProcessingTime(_ time.Time, out arrowflow.Emitter) error {
	// The clock is read again, not taken from the runtime's argument, so
	// that it stays monotonic with the reads of ProcessBatch.
	wm := arrowflow.EventTime(o.read() - 1)
	if wm <= o.wm {
		return nil
	}
	prev := o.wm
	o.wm = wm
	if err := o.fire(prev, wm, out); err != nil {
		return err
	}
	o.rearm()
	return o.reportState()
}

// rearm sets the timer to the earliest unfired window end of the panes
// still held.
func (o *procOp) rearm() {
	o.armed = false
	for p := range o.panes {
		if end := o.firstEnd(p); !o.armed || end < o.timer {
			o.timer, o.armed = end, true
		}
	}
}

func (o *procOp) Finish(out arrowflow.Emitter) error {
	err := o.aggOp.Finish(out)
	o.armed = false
	return err
}

// RestoreState restores the panes and the clock progress of the
// snapshot; windows that ended while the job was down fire at the first
// timer check.
func (o *procOp) RestoreState(r state.SnapshotReader) error {
	if err := o.aggOp.RestoreState(r); err != nil {
		return err
	}
	o.now = max(o.now, int64(o.wm)+1)
	o.rearm()
	return nil
}
