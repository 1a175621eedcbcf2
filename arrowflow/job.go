package arrowflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/state"
)

// DefaultQueueCapacity is the number of messages each input channel of a
// task buffers before its producer blocks.
const DefaultQueueCapacity = 4

// Options configure how a planned job runs.
type Options struct {
	// MaxParallelism is the number of key groups (default
	// state.DefaultMaxParallelism). It must be the same in every run of a
	// job that restores state.
	MaxParallelism int
	// QueueCapacity is the number of messages each input channel of a task
	// holds (default DefaultQueueCapacity). Memory in flight between two
	// tasks is bounded by QueueCapacity batches per channel.
	QueueCapacity int
	// Allocator is where the job allocates Arrow memory (default
	// memory.DefaultAllocator).
	Allocator memory.Allocator
	// CheckpointInterval is how often an epoch closes. Zero disables
	// periodic epochs: a bounded job then commits everything in one final
	// epoch, and an unbounded job never commits its sinks.
	CheckpointInterval time.Duration
	// StateStore holds operator snapshots (default: a new
	// state.MemoryStore).
	StateStore state.Store
	// Recorder makes each completed epoch's checkpoint durable before the
	// sinks commit it. Nil keeps checkpoints only in memory (see
	// Job.LatestCheckpoint).
	Recorder EpochRecorder
	// Restore, when set, resumes from a checkpoint: operators restore its
	// state (redistributed by key group if parallelism changed) and sources
	// resume from its positions.
	Restore *Checkpoint
	// RestoreStore holds the state of Restore when it is not StateStore
	// (a savepoint folder).
	RestoreStore state.Store
	// DropVanishedSplits lets a restore go on when Restore holds positions
	// of splits the sources no longer list (a topic removed on purpose):
	// those positions are dropped, with a warning. Without it, and unless
	// Restore is a savepoint (the way to upgrade a job), such a restore
	// fails, so that a changed configuration cannot silently lose or
	// repeat rows.
	DropVanishedSplits bool
	// FirstEpoch is the number of the first epoch this run closes (default:
	// Restore.Epoch+1, or 1). Epoch numbers must never go backwards for a
	// job, even when it restores an older checkpoint.
	FirstEpoch uint64
	// Logger receives the runtime's log records (default: discarded).
	Logger *slog.Logger
	// StateMemoryBudget bounds the bytes of state all operators together
	// may hold (0: unlimited). Operators report their state size through
	// TaskInfo.StateBudget; exceeding the budget fails the job with an
	// error naming the operator and the budget.
	StateMemoryBudget int64
	// Savepoints, when set, stores the checkpoint of each savepoint taken
	// with Job.TriggerSavepoint somewhere it outlives checkpoint retention
	// (a portable folder). It runs after the savepoint's epoch committed.
	Savepoints SavepointWriter
	// Clock tells processing time to processing-time operators (default
	// SystemClock). Timers still wait in real time: a clock for tests
	// should advance with it.
	Clock Clock
}

// Job is a planned graph, ready to run once.
type Job struct {
	graph       *Graph
	opts        Options
	store       state.Store
	logger      *slog.Logger
	firstEpoch  uint64
	chains      []*chain
	tasks       []*task
	sourceTasks []*task
	gates       []*gate
	coord       *coordinator
	budget      *state.MemoryBudget
	clock       Clock
	explain     string
	shape       []string // the graph's Shape, recorded in checkpoints
	fingerprint string
	started     atomic.Bool
}

// Plan validates the graph and turns it into tasks: chains of nodes joined
// by forward edges of equal parallelism, one task per chain subtask, and a
// bounded input gate per task fed by the edge writers of its producers.
func (g *Graph) Plan(opts Options) (*Job, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	if opts.MaxParallelism == 0 {
		opts.MaxParallelism = state.DefaultMaxParallelism
	}
	if opts.QueueCapacity <= 0 {
		opts.QueueCapacity = DefaultQueueCapacity
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, n := range g.nodes {
		if err := state.ValidateParallelism(n.parallelism, opts.MaxParallelism); err != nil {
			return nil, fmt.Errorf("job %q: %s %q: %w", g.name, n.kind, n.name, err)
		}
	}
	if cp := opts.Restore; cp != nil && cp.MaxParallelism != opts.MaxParallelism {
		return nil, fmt.Errorf("job %q: checkpoint of epoch %d has max parallelism %d, job has %d; key groups cannot change",
			g.name, cp.Epoch, cp.MaxParallelism, opts.MaxParallelism)
	}
	j := &Job{graph: g, opts: opts, store: opts.StateStore, logger: opts.Logger.With("job", g.name),
		budget: state.NewMemoryBudget(opts.StateMemoryBudget), clock: opts.Clock, shape: g.Shape()}
	j.fingerprint = ShapeFingerprint(j.shape)
	if j.clock == nil {
		j.clock = SystemClock
	}
	if j.store == nil {
		j.store = state.NewMemoryStore()
	}
	j.firstEpoch = opts.FirstEpoch
	if j.firstEpoch == 0 {
		j.firstEpoch = 1
		if opts.Restore != nil {
			j.firstEpoch = opts.Restore.Epoch + 1
		}
	}
	if opts.Restore != nil && j.firstEpoch <= opts.Restore.Epoch {
		return nil, fmt.Errorf("job %q: first epoch %d must follow the restored epoch %d", g.name, j.firstEpoch, opts.Restore.Epoch)
	}

	chains, chainOf := buildChains(g)
	j.chains = chains
	j.explain = explain(g, chains, chainOf, opts.MaxParallelism)

	// Tasks, with their gates.
	tasksOf := make(map[*chain][]*task)
	for _, c := range chains {
		for s := 0; s < c.parallelism; s++ {
			t := j.newTask(c, s)
			tasksOf[c] = append(tasksOf[c], t)
			j.tasks = append(j.tasks, t)
			if t.source != nil {
				j.sourceTasks = append(j.sourceTasks, t)
			}
			if t.gate != nil {
				j.gates = append(j.gates, t.gate)
			}
		}
	}
	// Edge writers: for every chain tail, one writer per consumer edge.
	for _, c := range chains {
		u := c.tail()
		for _, v := range u.outputs {
			cons := chainOf[v]
			for inIdx, in := range v.inputs {
				if in.From != u {
					continue
				}
				for s, t := range tasksOf[c] {
					w := &edgeWriter{
						edge:   fmt.Sprintf("%s -> %s", u.name, v.name),
						kind:   in.Kind,
						keys:   in.Keys,
						side:   in.Side,
						maxPar: opts.MaxParallelism,
					}
					ct := tasksOf[cons]
					lay := ct[0].layout
					if in.pointwise() {
						w.targets = []target{{gate: ct[s].gate, ch: lay.firstChannel[inIdx]}}
					} else {
						for _, consumer := range ct {
							w.targets = append(w.targets, target{gate: consumer.gate, ch: lay.firstChannel[inIdx] + s})
						}
					}
					t.outputs = append(t.outputs, w)
				}
			}
		}
	}
	j.coord = newCoordinator(j)
	return j, nil
}

func (j *Job) newTask(c *chain, subtask int) *task {
	t := &task{
		job:     j,
		chain:   c,
		subtask: subtask,
		name:    fmt.Sprintf("%s [%d/%d]", c.name(), subtask+1, c.parallelism),
		epoch:   j.firstEpoch,
	}
	t.logger = j.logger.With("task", c.name(), "subtask", subtask)
	t.metrics.watermark.Store(int64(MinEventTime))
	head := c.head()
	switch head.kind {
	case SourceNode:
		t.source = head
		t.barrierReq = make(chan Barrier, 1)
	default:
		t.layout = layoutFor(head)
		t.gate = newGate(len(t.layout.channelInput), j.opts.QueueCapacity)
	}
	for _, n := range c.nodes {
		switch n.kind {
		case OperatorNode:
			inst := &opInstance{node: n, lastWM: MinEventTime}
			inst.info = *t.info(n)
			t.ops = append(t.ops, inst)
		case SinkNode:
			t.sink = n
		}
	}
	t.tail = &tailEmitter{t: t, lastWM: MinEventTime}
	for i, inst := range t.ops {
		if i+1 < len(t.ops) {
			inst.out = &opEmitter{t: t, next: t.ops[i+1]}
		} else {
			inst.out = t.tail
		}
	}
	t.entry = t.tail
	if len(t.ops) > 0 {
		t.entry = &opEmitter{t: t, next: t.ops[0]}
	}
	return t
}

// Explain describes the plan: the tasks (chains of nodes), their
// parallelism and the exchanges between them.
func (j *Job) Explain() string { return j.explain }

// LatestCheckpoint returns the checkpoint of the last completed epoch, or
// nil before the first one completes.
func (j *Job) LatestCheckpoint() *Checkpoint { return j.coord.latest.Load() }

// EpochsCompleted is the number of epochs this run recorded and committed.
func (j *Job) EpochsCompleted() int64 { return j.coord.completed.Load() }

// StateUsage reports the state each stateful operator subtask holds now,
// by "operator[subtask]", as the operators last reported it.
func (j *Job) StateUsage() map[string]state.Usage { return j.budget.Usage() }

// Stats returns a snapshot of every task's counters.
func (j *Job) Stats() []TaskStats {
	out := make([]TaskStats, len(j.tasks))
	for i, t := range j.tasks {
		out[i] = TaskStats{
			Task:       t.chain.name(),
			Subtask:    t.subtask,
			BatchesIn:  t.metrics.batchesIn.Load(),
			RowsIn:     t.metrics.rowsIn.Load(),
			BatchesOut: t.metrics.batchesOut.Load(),
			RowsOut:    t.metrics.rowsOut.Load(),
			Watermark:  EventTime(t.metrics.watermark.Load()),
			LastEpoch:  t.metrics.lastEpoch.Load(),
		}
		if t.gate != nil {
			out[i].Queued, out[i].MaxQueued = t.gate.stats()
		}
	}
	return out
}

// OperatorCounts returns the counters of every operator subtask that
// keeps them (an operator implementing LateRowCounter), in plan order:
// the values the runtime published after the subtask's last call. An
// operator is listed once its subtask opened; the counts stay readable
// after Run returned. Safe for concurrent use with Run.
func (j *Job) OperatorCounts() []OperatorCount {
	var out []OperatorCount
	for _, t := range j.tasks {
		for _, inst := range t.ops {
			if inst.countsLate.Load() {
				out = append(out, OperatorCount{Operator: inst.node.name, Subtask: t.subtask, LateRows: inst.lateRows.Load()})
			}
		}
	}
	return out
}

// Run executes the job. A bounded job returns nil after its final epoch is
// committed; an unbounded job runs until ctx is cancelled and returns the
// cancellation cause. The first failure of any source, operator or sink
// cancels every task and is returned, naming the node (see NodeError).
// Every batch in flight is released before Run returns. A Job runs once.
func (j *Job) Run(ctx context.Context) error {
	if !j.started.CompareAndSwap(false, true) {
		return fmt.Errorf("job %q: already started; plan the graph again to rerun it", j.graph.name)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || ctx.Err() != nil {
			return // a consequence of an earlier failure or of cancellation
		}
		firstErr = err
		cancel(err)
	}

	if err := j.assignSplits(ctx); err != nil {
		return err
	}
	stopClosing := context.AfterFunc(ctx, func() {
		for _, g := range j.gates {
			g.close()
		}
	})
	defer stopClosing()

	// Factories run here, one after the other, so that they need not be
	// safe for concurrent use; Open runs in each task's goroutine.
	for _, t := range j.tasks {
		for _, inst := range t.ops {
			inst.op = inst.node.factory()
			if pt, ok := inst.op.(ProcessingTimeOperator); ok {
				t.timerOps = append(t.timerOps, timerOp{inst: inst, pt: pt})
			}
		}
	}
	var wg sync.WaitGroup
	for _, t := range j.tasks {
		wg.Go(func() { fail(t.run(ctx)) })
	}
	coordDone := make(chan struct{})
	stopped := false
	go func() {
		defer close(coordDone)
		err := j.coord.run(ctx)
		if errors.Is(err, errStopped) {
			mu.Lock()
			stopped = true
			mu.Unlock()
			cancel(errStopped)
			return
		}
		fail(err)
	}()
	wg.Wait()
	// With every task stopped, the coordinator either finishes the last
	// epochs or, after a failure, returns on cancellation.
	<-coordDone

	mu.Lock()
	err := firstErr
	if stopped && err == nil {
		// Stopped with a savepoint: every epoch up to the savepoint's is
		// committed, and nothing was read after it.
		mu.Unlock()
		for _, g := range j.gates {
			g.close()
		}
		return nil
	}
	mu.Unlock()
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel(err)
		abortCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		j.coord.abortUncommitted(abortCtx)
		stop()
	}
	for _, g := range j.gates {
		g.close() // releases whatever a failed job left queued
	}
	if err != nil {
		return fmt.Errorf("job %q: %w", j.graph.name, err)
	}
	return nil
}

// assignSplits deals each source's splits to its subtasks (split i to
// subtask i mod parallelism), each with its restored position.
// checkRestoredSplits fails when the checkpoint being restored holds
// positions of splits that source n no longer lists (its configuration
// changed: fewer generator splits, another topic): dropping them would
// silently lose or repeat their rows.
func (j *Job) checkRestoredSplits(n *Node, ids []string, positions map[string][]byte) error {
	var gone []string
	for id := range positions {
		if !slices.Contains(ids, id) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	if j.opts.DropVanishedSplits || j.opts.Restore.Savepoint {
		j.logger.Warn("dropping the restored positions of splits the source no longer lists", "source", n.name, "splits", gone)
		return nil
	}
	more := ""
	if len(gone) > 5 {
		more = fmt.Sprintf(" and %d more", len(gone)-5)
		gone = gone[:5]
	}
	return fmt.Errorf("job %q: %w", j.graph.name, &NodeError{Kind: SourceNode, Name: n.name, Subtask: -1, Parallelism: n.parallelism,
		Err: fmt.Errorf("the checkpoint of epoch %d has positions of splits %s%s that the source no longer lists (it lists %d now: its configuration changed, or its input was deleted); restoring would lose or repeat their rows (to go on without them deliberately, restore a savepoint, or run with --allow-changed-job)",
			j.opts.Restore.Epoch, strings.Join(gone, ", "), more, len(ids))})
}

func (j *Job) assignSplits(ctx context.Context) error {
	positions := make(map[string]map[string][]byte)
	if cp := j.opts.Restore; cp != nil {
		for src, splits := range cp.Sources {
			m := make(map[string][]byte, len(splits))
			for _, s := range splits {
				m[s.Split] = s.Position
			}
			positions[src] = m
		}
	}
	splitsOf := make(map[*Node][]string)
	for _, t := range j.sourceTasks {
		n := t.source
		ids, ok := splitsOf[n]
		if !ok {
			var err error
			ids, err = n.source.Splits(ctx)
			if err != nil {
				return fmt.Errorf("job %q: %w", j.graph.name, &NodeError{Kind: SourceNode, Name: n.name, Subtask: -1, Parallelism: n.parallelism, Err: fmt.Errorf("list splits: %w", err)})
			}
			splitsOf[n] = ids
			if err := j.checkRestoredSplits(n, ids, positions[n.name]); err != nil {
				return err
			}
		}
		t.splits = nil
		for i, id := range ids {
			if i%n.parallelism == t.subtask {
				t.splits = append(t.splits, SplitState{Split: id, Position: positions[n.name][id]})
			}
		}
	}
	return nil
}
