package arrowflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// errStopped ends the coordinator after a stop-with-savepoint committed.
var errStopped = errors.New("stopped with a savepoint")

// SavepointWriter stores a savepoint's checkpoint where it outlives
// checkpoint retention, and returns where (a folder, a URL).
type SavepointWriter interface {
	WriteSavepoint(ctx context.Context, cp *Checkpoint) (string, error)
}

// Savepoint is the result of Job.TriggerSavepoint.
type Savepoint struct {
	// Checkpoint is the savepoint's checkpoint; its epoch is committed.
	Checkpoint *Checkpoint
	// Location is where Options.Savepoints stored it ("" without one).
	Location string
}

// savepointReq is a pending Job.TriggerSavepoint call.
type savepointReq struct {
	stop  bool
	reply chan savepointResult
}

type savepointResult struct {
	sp  Savepoint
	err error
}

// ack is a task's acknowledgement that it closed an epoch.
type ack struct {
	task      *task
	epoch     uint64
	final     bool // the task finished: this was its last epoch
	savepoint bool
	positions []SplitState        // source tasks
	states    []SubtaskCheckpoint // one per chained operator
	payload   []byte              // sink tasks
}

// coordinator triggers epochs, collects acknowledgements, records each
// completed epoch's checkpoint and then commits the sinks. At most one
// triggered epoch is in flight at a time.
type coordinator struct {
	job      *Job
	acks     chan *ack
	interval time.Duration

	mu            sync.Mutex // guards what Run reads after a failure
	pending       map[uint64]map[*task]*ack
	finals        map[*task]*ack
	lastTriggered uint64
	lastCompleted uint64
	latest        atomic.Pointer[Checkpoint]
	completed     atomic.Int64

	// Savepoints: requests wait in spQueue until no epoch is in flight;
	// spEpoch is the epoch of the savepoint in flight (0: none) and
	// spWaiting the requests it answers.
	spReqs    chan *savepointReq
	spQueue   []*savepointReq
	spEpoch   uint64
	spWaiting []*savepointReq
	ended     chan struct{} // closed when run returns
}

func newCoordinator(j *Job) *coordinator {
	return &coordinator{
		job:           j,
		acks:          make(chan *ack, 2*len(j.tasks)+1),
		interval:      j.opts.CheckpointInterval,
		pending:       make(map[uint64]map[*task]*ack),
		finals:        make(map[*task]*ack),
		lastTriggered: j.firstEpoch - 1,
		lastCompleted: j.firstEpoch - 1,
		spReqs:        make(chan *savepointReq),
		ended:         make(chan struct{}),
	}
}

// TriggerSavepoint takes a savepoint of the running job: the next epoch
// is closed as a savepoint (waiting for an epoch in flight to complete
// first), and once it is recorded and committed its checkpoint is stored
// through Options.Savepoints and returned. With stop, sources read
// nothing after the savepoint's barrier and Run returns nil once the
// savepoint is stored: the job can resume from it later, also with
// another parallelism.
func (j *Job) TriggerSavepoint(ctx context.Context, stop bool) (Savepoint, error) {
	if !j.started.Load() {
		return Savepoint{}, fmt.Errorf("job %q: not running", j.graph.name)
	}
	r := &savepointReq{stop: stop, reply: make(chan savepointResult, 1)}
	select {
	case j.coord.spReqs <- r:
	case <-j.coord.ended:
		return Savepoint{}, fmt.Errorf("job %q: ended before the savepoint could start", j.graph.name)
	case <-ctx.Done():
		return Savepoint{}, ctx.Err()
	}
	select {
	case res := <-r.reply:
		return res.sp, res.err
	case <-j.coord.ended:
		select {
		case res := <-r.reply:
			return res.sp, res.err
		default:
		}
		return Savepoint{}, fmt.Errorf("job %q: ended before the savepoint completed", j.graph.name)
	case <-ctx.Done():
		return Savepoint{}, ctx.Err()
	}
}

// ack hands a task's acknowledgement to the coordinator.
func (c *coordinator) ack(ctx context.Context, a *ack) error {
	select {
	case c.acks <- a:
		return nil
	default:
	}
	select {
	case c.acks <- a:
		return nil
	case <-ctx.Done():
		return errGateClosed
	}
}

// run drives epochs until every task finished and every epoch is committed,
// or ctx is cancelled.
func (c *coordinator) run(ctx context.Context) (err error) {
	defer close(c.ended)
	defer func() {
		for _, r := range append(c.spQueue, c.spWaiting...) {
			r.reply <- savepointResult{err: fmt.Errorf("job %q: ended before the savepoint completed", c.job.graph.name)}
		}
	}()
	var tick <-chan time.Time
	if c.interval > 0 {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		tick = t.C
	}
	for !c.done() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			if len(c.spQueue) == 0 {
				c.trigger(false, false)
			}
		case r := <-c.spReqs:
			c.spQueue = append(c.spQueue, r)
		case a := <-c.acks:
			c.receive(a)
			if err := c.completeReady(ctx); err != nil {
				return err
			}
		}
		c.startSavepoint()
	}
	return nil
}

// startSavepoint triggers a savepoint epoch for the queued requests once
// no epoch is in flight. One epoch answers every request queued so far;
// it stops the job if any of them asked to.
func (c *coordinator) startSavepoint() {
	if len(c.spQueue) == 0 || c.spEpoch != 0 {
		return
	}
	stop := false
	for _, r := range c.spQueue {
		stop = stop || r.stop
	}
	epoch, ok := c.trigger(true, stop)
	if !ok {
		c.mu.Lock()
		inFlight := c.lastTriggered > c.lastCompleted
		c.mu.Unlock()
		if inFlight {
			return // wait for the epoch in flight
		}
		for _, r := range c.spQueue {
			r.reply <- savepointResult{err: fmt.Errorf("job %q: every source has finished; no savepoint can be taken", c.job.graph.name)}
		}
		c.spQueue = nil
		return
	}
	c.spEpoch, c.spWaiting, c.spQueue = epoch, c.spQueue, nil
}

// savepointCommitted stores and answers the savepoint of epoch cp.Epoch.
func (c *coordinator) savepointCommitted(ctx context.Context, cp *Checkpoint) error {
	if c.spEpoch != cp.Epoch {
		return nil
	}
	res := savepointResult{sp: Savepoint{Checkpoint: cp}}
	if w := c.job.opts.Savepoints; w != nil {
		res.sp.Location, res.err = w.WriteSavepoint(ctx, cp)
		if res.err != nil {
			res.err = fmt.Errorf("store savepoint of epoch %d: %w", cp.Epoch, res.err)
		}
	}
	stop := false
	for _, r := range c.spWaiting {
		stop = stop || r.stop
		r.reply <- res
	}
	c.spEpoch, c.spWaiting = 0, nil
	if stop {
		if res.err != nil {
			return res.err // the job was stopped but its savepoint is not stored
		}
		return errStopped
	}
	return nil
}

// done reports whether every task finished and all their epochs completed.
func (c *coordinator) done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.finals) < len(c.job.tasks) {
		return false
	}
	for _, a := range c.finals {
		if a.epoch > c.lastCompleted {
			return false
		}
	}
	return true
}

// trigger asks every running source task to emit the next barrier, unless
// an epoch is still in flight or every source has finished; it returns the
// epoch triggered.
func (c *coordinator) trigger(savepoint, stop bool) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastTriggered > c.lastCompleted {
		return 0, false
	}
	var live []*task
	for _, t := range c.job.sourceTasks {
		if c.finals[t] == nil {
			live = append(live, t)
		}
	}
	if len(live) == 0 {
		return 0, false
	}
	c.lastTriggered = c.lastCompleted + 1
	b := Barrier{Epoch: c.lastTriggered, Savepoint: savepoint, Stop: stop}
	for _, t := range live {
		select {
		case t.barrierReq <- b:
		default: // cannot happen with one epoch in flight; the source would fall behind
		}
	}
	return b.Epoch, true
}

func (c *coordinator) receive(a *ack) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.pending[a.epoch]
	if m == nil {
		m = make(map[*task]*ack)
		c.pending[a.epoch] = m
	}
	m[a.task] = a
	if a.final {
		c.finals[a.task] = a
	}
}

// completeReady records and commits every epoch, in order, whose
// acknowledgements are all in.
func (c *coordinator) completeReady(ctx context.Context) error {
	for {
		c.mu.Lock()
		epoch := c.lastCompleted + 1
		cp, payloads, ok := c.checkpointFor(epoch)
		c.mu.Unlock()
		if !ok {
			return nil
		}
		if rec := c.job.opts.Recorder; rec != nil {
			if err := rec.RecordEpoch(ctx, cp); err != nil {
				return fmt.Errorf("record checkpoint of epoch %d: %w", epoch, err)
			}
		}
		c.mu.Lock()
		c.lastCompleted = epoch
		delete(c.pending, epoch)
		c.mu.Unlock()
		c.latest.Store(cp)
		c.completed.Add(1)
		for _, n := range CommitOrder(c.job.graph) {
			if err := CommitSink(ctx, n, cp, payloads[n]); err != nil {
				return &NodeError{Kind: SinkNode, Name: n.name, Subtask: -1, Parallelism: n.parallelism,
					Err: fmt.Errorf("commit epoch %d: %w", epoch, err)}
			}
		}
		c.notifySources(ctx, cp)
		c.job.logger.Debug("epoch committed", "epoch", epoch, "final", cp.Final)
		if err := c.savepointCommitted(ctx, cp); err != nil {
			return err
		}
	}
}

// checkpointFor assembles epoch's checkpoint if every task acknowledged it
// (a task that finished in an earlier epoch counts with its final state).
// Callers hold c.mu.
func (c *coordinator) checkpointFor(epoch uint64) (*Checkpoint, map[*Node][][]byte, bool) {
	acks := c.pending[epoch]
	if len(acks) == 0 {
		return nil, nil, false
	}
	j := c.job
	cp := &Checkpoint{
		Job:            j.graph.name,
		Epoch:          epoch,
		Shape:          j.shape,
		Fingerprint:    j.fingerprint,
		MaxParallelism: j.opts.MaxParallelism,
		Final:          true,
		Sources:        make(map[string][]SplitState),
		Operators:      make(map[string]*OperatorCheckpoint),
		Sinks:          make(map[string]*SinkCheckpoint),
	}
	payloads := make(map[*Node][][]byte)
	for _, t := range j.tasks {
		a := acks[t]
		if a == nil {
			f := c.finals[t]
			if f == nil || f.epoch > epoch {
				return nil, nil, false
			}
			a = f
		}
		cp.Savepoint = cp.Savepoint || a.savepoint
		cp.Final = cp.Final && a.final
		if t.source != nil {
			cp.Sources[t.source.name] = append(cp.Sources[t.source.name], a.positions...)
		}
		for i, inst := range t.ops {
			oc := cp.Operators[inst.node.name]
			if oc == nil {
				oc = &OperatorCheckpoint{Subtasks: make([]SubtaskCheckpoint, inst.node.parallelism)}
				cp.Operators[inst.node.name] = oc
			}
			oc.Subtasks[t.subtask] = a.states[i]
		}
		if t.sink != nil {
			sc := cp.Sinks[t.sink.name]
			if sc == nil {
				sc = &SinkCheckpoint{Payloads: make([][]byte, t.sink.parallelism)}
				cp.Sinks[t.sink.name] = sc
				payloads[t.sink] = sc.Payloads
			}
			if a.epoch == epoch {
				sc.Payloads[t.subtask] = a.payload
			}
		}
	}
	return cp, payloads, true
}

// abortUncommitted tells the sinks to discard what was pre-committed for
// epochs that never reached their commit point. It runs after every task
// stopped, when the job failed or was cancelled.
func (c *coordinator) abortUncommitted(ctx context.Context) {
	for {
		select {
		case a := <-c.acks:
			c.receive(a)
			continue
		default:
		}
		break
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for epoch, acks := range c.pending {
		if epoch <= c.lastCompleted {
			continue
		}
		for _, n := range c.job.graph.nodes {
			if n.kind != SinkNode {
				continue
			}
			payloads := make([][]byte, n.parallelism)
			any := false
			for t, a := range acks {
				if t.sink == n && a.payload != nil {
					payloads[t.subtask] = a.payload
					any = true
				}
			}
			if !any {
				continue
			}
			if err := n.sink.Abort(ctx, epoch, payloads); err != nil {
				c.job.logger.Warn("abort of uncommitted epoch failed", "sink", n.name, "epoch", epoch, "err", err)
			}
		}
	}
}

// notifySources tells every CommitObserver source that cp's epoch is
// committed, with its positions in cp. Errors are logged: nothing correct
// depends on them.
func (c *coordinator) notifySources(ctx context.Context, cp *Checkpoint) {
	for _, n := range c.job.graph.nodes {
		if n.kind != SourceNode {
			continue
		}
		if o, ok := n.source.(CommitObserver); ok {
			if err := o.EpochCommitted(ctx, cp.Epoch, cp.Sources[n.name]); err != nil {
				c.job.logger.Warn("source: after-commit action failed", "source", n.name, "epoch", cp.Epoch, "err", err)
			}
		}
	}
}
