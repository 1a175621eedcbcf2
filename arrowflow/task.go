package arrowflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/state"
)

// task runs one subtask of a chain in one goroutine: a source or an input
// gate at the head, operators called in sequence, and a sink or edge
// writers at the tail.
type task struct {
	job     *Job
	chain   *chain
	subtask int
	name    string
	logger  *slog.Logger
	metrics taskMetrics

	// Head: either a source or an input gate.
	source     *Node
	splits     []SplitState
	reader     SourceReader
	barrierReq chan Barrier
	srcWM      EventTime

	gate   *gate
	layout gateLayout

	ops []*opInstance
	// timerOps are the chained operators acting on processing time.
	timerOps []timerOp

	// Tail: either a sink or edge writers.
	sink    *Node
	writer  SinkWriter
	outputs []*edgeWriter
	tail    *tailEmitter
	// outputsBySide groups outputs by the producer output they carry (""
	// for the main one); built on first use.
	outputsBySide map[string][]*edgeWriter

	entry Emitter // where the source's batches go

	// idle is the watermark status this task last announced downstream;
	// idler is the reader as an IdleReporter, nil if it is none.
	idle  bool
	idler IdleReporter

	ctx     context.Context
	epoch   uint64 // the epoch currently open (closed by the next barrier)
	current *Node  // the node whose code is running, for panic reports
}

// opInstance is one operator subtask inside a task.
type opInstance struct {
	node              *Node
	op                Operator
	info              TaskInfo
	out               Emitter
	lastWM            EventTime
	finishedOnRestore bool
	opened            bool

	// late is op as a LateRowCounter, nil if it is none; set by open and
	// used only by the task's goroutine. countsLate tells readers whether
	// it is set; lateRows is its count as last published.
	late       LateRowCounter
	countsLate atomic.Bool
	lateRows   atomic.Int64
}

// publish makes the operator's counters readable by other goroutines
// (Job.OperatorCounts). It runs after each call that may drop rows.
func (inst *opInstance) publish() {
	if inst.late != nil {
		inst.lateRows.Store(inst.late.LateRows())
	}
}

// opEmitter delivers to the next operator in the chain.
type opEmitter struct {
	t    *task
	next *opInstance
}

func (e *opEmitter) Emit(b Batch) error {
	if b.NumRows() == 0 {
		b.Release()
		return nil
	}
	return e.t.callBatch(e.next, 0, b)
}

func (e *opEmitter) EmitWatermark(wm EventTime) error { return e.t.callWatermark(e.next, wm) }

// EmitSide drops the batch: an operator inside a chain has exactly one
// consumer, the next operator, so none of its side outputs is consumed
// (a side consumer would have ended the chain).
func (e *opEmitter) EmitSide(_ string, b Batch) error {
	b.Release()
	return nil
}

func (t *task) callBatch(inst *opInstance, input int, b Batch) error {
	prev := t.current
	t.current = inst.node
	err := inst.op.ProcessBatch(input, b, inst.out)
	inst.publish()
	t.current = prev
	return t.nodeErr(inst.node, err)
}

func (t *task) callWatermark(inst *opInstance, wm EventTime) error {
	if wm <= inst.lastWM {
		return nil
	}
	inst.lastWM = wm
	prev := t.current
	t.current = inst.node
	err := inst.op.ProcessWatermark(wm, inst.out)
	inst.publish()
	t.current = prev
	return t.nodeErr(inst.node, err)
}

func (t *task) nodeErr(n *Node, err error) error {
	return nodeErr(n.kind, n.name, t.subtask, n.parallelism, err)
}

// tailEmitter receives the output of the chain's last operator (or of the
// head, when the chain has no operator) and passes it to the sink or the
// edge writers.
type tailEmitter struct {
	t      *task
	lastWM EventTime
}

func (e *tailEmitter) Emit(b Batch) error {
	t := e.t
	n := b.NumRows()
	if n == 0 {
		b.Release()
		return nil
	}
	t.metrics.batchesOut.Add(1)
	t.metrics.rowsOut.Add(int64(n))
	if t.writer != nil {
		prev := t.current
		t.current = t.sink
		err := t.writer.Write(t.ctx, b)
		t.current = prev
		return t.nodeErr(t.sink, err)
	}
	return t.emitTo("", b)
}

// EmitSide passes a batch to the consumers of the named side output, or
// drops it when there are none.
func (e *tailEmitter) EmitSide(output string, b Batch) error {
	if b.NumRows() == 0 || e.t.writer != nil {
		b.Release()
		return nil
	}
	return e.t.emitTo(output, b)
}

// emitTo passes b to every edge writer of the given output ("" for the
// main one), sharing the batch among them.
func (t *task) emitTo(side string, b Batch) error {
	if t.outputsBySide == nil {
		t.outputsBySide = map[string][]*edgeWriter{}
		for _, w := range t.outputs {
			t.outputsBySide[w.side] = append(t.outputsBySide[w.side], w)
		}
	}
	ws := t.outputsBySide[side]
	if len(ws) == 0 {
		b.Release()
		return nil
	}
	last := len(ws) - 1
	for i, w := range ws {
		m := b
		if i < last {
			m = b.Share()
		}
		if err := w.emit(m); err != nil {
			if i < last {
				b.Release()
			}
			return err
		}
	}
	return nil
}

func (e *tailEmitter) EmitWatermark(wm EventTime) error {
	if wm <= e.lastWM {
		return nil
	}
	e.lastWM = wm
	e.t.metrics.watermark.Store(int64(wm))
	if ww, ok := e.t.writer.(WatermarkWriter); ok {
		if err := ww.ProcessWatermark(wm); err != nil {
			return e.t.nodeErr(e.t.sink, fmt.Errorf("watermark %s: %w", wm, err))
		}
	}
	return e.t.broadcast(Message{Kind: KindWatermark, Watermark: wm})
}

func (t *task) broadcast(m Message) error {
	for _, w := range t.outputs {
		if err := w.broadcast(m); err != nil {
			return err
		}
	}
	return nil
}

// run executes the task until its inputs end, the job is cancelled or it
// fails. It always closes everything it opened.
func (t *task) run(ctx context.Context) (err error) {
	t.ctx = ctx
	defer func() {
		if r := recover(); r != nil {
			n := t.current
			if n == nil {
				n = t.chain.head()
			}
			err = t.nodeErr(n, fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
		}
		if cerr := t.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := t.open(); err != nil {
		return err
	}
	if t.reader != nil {
		return t.runSource(ctx)
	}
	return t.runGate()
}

func (t *task) open() error {
	j := t.job
	restore := j.opts.Restore
	for _, inst := range t.ops {
		t.current = inst.node
		if inst.op == nil {
			return t.nodeErr(inst.node, errors.New("operator factory returned nil"))
		}
		inst.opened = true
		if lc, ok := inst.op.(LateRowCounter); ok {
			inst.late = lc
			inst.countsLate.Store(true)
		}
		if err := inst.op.Open(&inst.info); err != nil {
			return t.nodeErr(inst.node, fmt.Errorf("open: %w", err))
		}
		if restore != nil {
			if err := t.restoreOperator(inst, restore); err != nil {
				return t.nodeErr(inst.node, fmt.Errorf("restore epoch %d: %w", restore.Epoch, err))
			}
		}
	}
	if t.sink != nil {
		t.current = t.sink
		w, err := t.sink.sink.Open(t.info(t.sink))
		if err != nil {
			return t.nodeErr(t.sink, fmt.Errorf("open: %w", err))
		}
		t.writer = w
	}
	if t.source != nil {
		t.current = t.source
		r, err := t.source.source.Open(t.info(t.source), t.splits)
		if err != nil {
			return t.nodeErr(t.source, fmt.Errorf("open: %w", err))
		}
		t.reader = r
		t.idler, _ = r.(IdleReporter)
	}
	t.current = nil
	return nil
}

// restoreOperator loads the state of every old subtask whose key groups
// overlap this subtask's.
func (t *task) restoreOperator(inst *opInstance, cp *Checkpoint) error {
	oc := cp.Operators[inst.node.name]
	if oc == nil || len(oc.Subtasks) == 0 {
		return nil // the operator is new in this job: no state
	}
	maxPar := t.job.opts.MaxParallelism
	mine := inst.info.KeyGroups
	var readers []state.SnapshotReader
	defer func() {
		for _, r := range readers {
			_ = r.Close()
		}
	}()
	finished, overlaps := true, 0
	for s, sc := range oc.Subtasks {
		if !state.RangeOf(s, maxPar, len(oc.Subtasks)).Overlaps(mine) {
			continue
		}
		overlaps++
		finished = finished && sc.Finished
		if sc.State.IsZero() {
			continue
		}
		// Only this subtask's key groups: a store that lays snapshots out
		// by key group reads just those parts.
		store := t.job.opts.RestoreStore
		if store == nil {
			store = t.job.store
		}
		r, err := state.OpenKeyGroups(store, sc.State, mine, inst.info.Allocator)
		if err != nil {
			return fmt.Errorf("open snapshot of old subtask %d: %w", s+1, err)
		}
		readers = append(readers, r)
	}
	inst.finishedOnRestore = overlaps > 0 && finished
	if len(readers) == 0 {
		return nil
	}
	return inst.op.RestoreState(state.MultiReader(readers...))
}

func (t *task) info(n *Node) *TaskInfo {
	maxPar := t.job.opts.MaxParallelism
	return &TaskInfo{
		Job:            t.job.graph.name,
		Name:           n.name,
		Subtask:        t.subtask,
		Parallelism:    n.parallelism,
		MaxParallelism: maxPar,
		KeyGroups:      keyGroupsOf(n, t.subtask, maxPar),
		Allocator:      t.job.opts.Allocator,
		Logger:         t.logger.With("node", n.name),
		StateBudget:    t.job.budget.Account(n.name, t.subtask),
		Clock:          t.job.clock,
		FirstEpoch:     t.job.firstEpoch,
	}
}

func (t *task) close() error {
	var errs []error
	if t.reader != nil {
		if err := t.reader.Close(); err != nil {
			errs = append(errs, t.nodeErr(t.source, fmt.Errorf("close: %w", err)))
		}
	}
	for _, inst := range t.ops {
		if inst.opened {
			if err := inst.op.Close(); err != nil {
				errs = append(errs, t.nodeErr(inst.node, fmt.Errorf("close: %w", err)))
			}
		}
	}
	if t.writer != nil {
		if err := t.writer.Close(); err != nil {
			errs = append(errs, t.nodeErr(t.sink, fmt.Errorf("close: %w", err)))
		}
	}
	return errors.Join(errs...)
}

// runSource reads the source until it is exhausted, emitting a barrier
// whenever the coordinator asks for one.
func (t *task) runSource(ctx context.Context) error {
	t.srcWM = MinEventTime
	for {
		select {
		case b := <-t.barrierReq:
			if err := t.checkpoint(b, false); err != nil {
				return err
			}
			if b.Stop {
				// Stop with savepoint: nothing after the barrier. The job
				// is cancelled once the savepoint's epoch is committed.
				<-ctx.Done()
				return errGateClosed
			}
		default:
		}
		if ctx.Err() != nil {
			return errGateClosed
		}
		t.current = t.source
		b, err := t.reader.Next(ctx)
		t.current = nil
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return errGateClosed
			}
			return t.nodeErr(t.source, err)
		}
		if !b.IsZero() {
			if err := t.setIdle(false); err != nil {
				return err
			}
			t.metrics.batchesIn.Add(1)
			t.metrics.rowsIn.Add(int64(b.NumRows()))
			if err := t.entry.Emit(b); err != nil {
				return err
			}
		}
		// The status goes active before a watermark of an active reader
		// and idle after the last watermark of an idle one.
		idleNow := t.idler != nil && t.idler.Idle()
		if !idleNow {
			if err := t.setIdle(false); err != nil {
				return err
			}
		}
		if wm := t.reader.Watermark(); wm > t.srcWM {
			t.srcWM = wm
			if err := t.entry.EmitWatermark(wm); err != nil {
				return err
			}
		}
		if idleNow {
			if err := t.setIdle(true); err != nil {
				return err
			}
		}
		if err := t.fireTimers(); err != nil {
			return err
		}
	}
	return t.finish()
}

// runGate consumes the input queues until every input ended, aligning
// barriers and combining watermarks.
func (t *task) runGate() error {
	n := len(t.layout.channelInput)
	wms := make([]EventTime, n)
	for i := range wms {
		wms[i] = MinEventTime
	}
	ended := make([]bool, n)
	idle := make([]bool, n) // channels whose producer announced idleness
	live := n
	var (
		aligning bool
		barrier  Barrier
		arrived  int
	)
	lastWM := MinEventTime
	// advance emits the minimum watermark over the active channels, when
	// it moved forward; ended channels hold MaxEventTime. Idle channels do
	// not count, and when every live channel is idle the task emits the
	// largest of their watermarks (nothing seen contradicts it, and
	// windows of a quiet stream still fire, as in Flink) and turns idle
	// itself.
	advance := func() error {
		combined, largestIdle, active := MaxEventTime, MinEventTime, false
		for ch, wm := range wms {
			switch {
			case ended[ch]:
			case idle[ch]:
				largestIdle = max(largestIdle, wm)
				continue
			default:
				active = true
			}
			combined = min(combined, wm)
		}
		allIdle := !active && live > 0
		if allIdle {
			combined = largestIdle
		} else if err := t.setIdle(false); err != nil {
			return err
		}
		if combined > lastWM {
			lastWM = combined
			if err := t.deliverWatermark(combined); err != nil {
				return err
			}
		}
		if allIdle {
			return t.setIdle(true)
		}
		return nil
	}
	completeAlignment := func() error {
		if err := t.checkpoint(barrier, false); err != nil {
			return err
		}
		aligning, arrived = false, 0
		t.gate.unblockAll()
		return nil
	}
	for live > 0 {
		if err := t.fireTimers(); err != nil {
			return err
		}
		ch, m, ok, err := t.gate.popWithin(t.popWait())
		if err != nil {
			return err
		}
		if !ok {
			continue // a timer is due
		}
		switch m.Kind {
		case KindIdle:
			if idle[ch] != m.Idle {
				idle[ch] = m.Idle
				if err := advance(); err != nil {
					return err
				}
			}
		case KindBatch:
			t.metrics.batchesIn.Add(1)
			t.metrics.rowsIn.Add(int64(m.Batch.NumRows()))
			if err := t.deliverBatch(t.layout.channelInput[ch], m.Batch); err != nil {
				return err
			}
		case KindWatermark:
			if m.Watermark > wms[ch] {
				wms[ch] = m.Watermark
				if err := advance(); err != nil {
					return err
				}
			}
		case KindBarrier:
			if !aligning {
				aligning, barrier = true, m.Barrier
			} else if m.Barrier.Epoch != barrier.Epoch {
				return fmt.Errorf("BUG: task %s: barrier %d arrived while aligning barrier %d", t.name, m.Barrier.Epoch, barrier.Epoch)
			}
			t.gate.block(ch)
			arrived++
			if arrived+(n-live) == n {
				if err := completeAlignment(); err != nil {
					return err
				}
			}
		case KindEndOfStream:
			ended[ch] = true
			live--
			wms[ch] = MaxEventTime
			if err := advance(); err != nil {
				return err
			}
			if aligning && arrived+(n-live) == n {
				if err := completeAlignment(); err != nil {
					return err
				}
			}
		}
	}
	return t.finish()
}

// setIdle announces a change of the task's watermark status to every
// consumer.
func (t *task) setIdle(idle bool) error {
	if idle == t.idle {
		return nil
	}
	t.idle = idle
	return t.broadcast(Message{Kind: KindIdle, Idle: idle})
}

func (t *task) deliverBatch(input int, b Batch) error {
	if len(t.ops) > 0 {
		return t.callBatch(t.ops[0], input, b)
	}
	return t.tail.Emit(b)
}

func (t *task) deliverWatermark(wm EventTime) error {
	if len(t.ops) > 0 {
		return t.callWatermark(t.ops[0], wm)
	}
	return t.tail.EmitWatermark(wm)
}

// finish runs when every input ended: the final watermark, Finish on every
// operator in chain order, the final epoch's snapshot and pre-commit, then
// end of stream downstream.
func (t *task) finish() error {
	if err := t.deliverWatermark(MaxEventTime); err != nil {
		return err
	}
	for _, inst := range t.ops {
		if inst.finishedOnRestore {
			continue
		}
		t.current = inst.node
		err := inst.op.Finish(inst.out)
		inst.publish()
		t.current = nil
		if err != nil {
			return t.nodeErr(inst.node, fmt.Errorf("finish: %w", err))
		}
	}
	if err := t.checkpoint(Barrier{Epoch: t.epoch}, true); err != nil {
		return err
	}
	return t.broadcast(Message{Kind: KindEndOfStream})
}

// checkpoint closes the open epoch: it snapshots every operator in chain
// order, pre-commits the sink, forwards the barrier (unless this is the
// final epoch, which end of stream closes) and acknowledges to the
// coordinator.
func (t *task) checkpoint(b Barrier, final bool) error {
	if b.Epoch != t.epoch {
		return fmt.Errorf("BUG: task %s: barrier for epoch %d while epoch %d is open", t.name, b.Epoch, t.epoch)
	}
	a := &ack{task: t, epoch: b.Epoch, final: final, savepoint: b.Savepoint}
	if t.reader != nil {
		pos, err := t.reader.Positions()
		if err != nil {
			return t.nodeErr(t.source, fmt.Errorf("positions at epoch %d: %w", b.Epoch, err))
		}
		a.positions = pos
	}
	// Changes held back within the epoch leave first, in chain order, so
	// that each operator's flush reaches the next before it flushes and
	// the sink sees them before it pre-commits.
	for _, inst := range t.ops {
		f, ok := inst.op.(EpochFlusher)
		if !ok || inst.finishedOnRestore {
			continue
		}
		t.current = inst.node
		err := f.FlushEpoch(b.Epoch, inst.out)
		inst.publish()
		t.current = nil
		if err != nil {
			return t.nodeErr(inst.node, fmt.Errorf("flush epoch %d: %w", b.Epoch, err))
		}
	}
	a.states = make([]SubtaskCheckpoint, len(t.ops))
	for i, inst := range t.ops {
		h, err := t.snapshot(inst, b.Epoch)
		if err != nil {
			return t.nodeErr(inst.node, fmt.Errorf("snapshot epoch %d: %w", b.Epoch, err))
		}
		a.states[i] = SubtaskCheckpoint{State: h, Finished: final || inst.finishedOnRestore}
	}
	if t.writer != nil {
		t.current = t.sink
		payload, err := t.writer.PreCommit(t.ctx, b.Epoch)
		t.current = nil
		if err != nil {
			return t.nodeErr(t.sink, fmt.Errorf("pre-commit epoch %d: %w", b.Epoch, err))
		}
		a.payload = payload
		failpoint.Inject(failpoint.AfterPreCommit)
	}
	if !final {
		if err := t.broadcast(Message{Kind: KindBarrier, Barrier: b}); err != nil {
			return err
		}
	}
	t.metrics.lastEpoch.Store(b.Epoch)
	t.epoch = b.Epoch + 1
	return t.job.coord.ack(t.ctx, a)
}

func (t *task) snapshot(inst *opInstance, epoch uint64) (state.Handle, error) {
	id := state.SnapshotID{Job: t.job.graph.name, Epoch: epoch, Operator: inst.node.name, Subtask: t.subtask}
	w, err := t.job.store.Create(id, inst.info.KeyGroups)
	if err != nil {
		return state.Handle{}, err
	}
	t.current = inst.node
	err = inst.op.SnapshotState(epoch, w)
	t.current = nil
	if err != nil {
		w.Abort()
		return state.Handle{}, err
	}
	h, err := w.Finish()
	if err == nil && !h.IsZero() {
		failpoint.Inject(failpoint.AfterSnapshot)
	}
	return h, err
}
