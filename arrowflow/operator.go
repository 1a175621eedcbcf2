package arrowflow

import (
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/state"
)

// TaskInfo tells a source, operator or sink instance where it runs. One
// instance exists per subtask.
type TaskInfo struct {
	// Job is the job's name.
	Job string
	// Name is the source's, operator's or sink's name, unique in the job.
	Name string
	// Subtask is this instance's index in [0, Parallelism).
	Subtask int
	// Parallelism is the number of subtasks of this node.
	Parallelism int
	// MaxParallelism is the job's number of key groups.
	MaxParallelism int
	// KeyGroups is the key-group range this subtask owns; a keyed
	// operator receives exactly the rows whose keys hash into it, and on
	// restore must keep exactly the state of these key groups.
	KeyGroups state.KeyGroupRange
	// Allocator is where the instance allocates Arrow memory.
	Allocator memory.Allocator
	// Logger carries the job, node and subtask as attributes.
	Logger *slog.Logger
	// StateBudget is where a stateful operator reports the size of its
	// state (bytes and keys) whenever it changes notably; the report fails
	// when the job's state memory budget is exceeded. Nil in tests that
	// build a TaskInfo by hand: reporting to it is then a no-op.
	StateBudget *state.BudgetAccount
	// Clock tells processing time (Options.Clock); nil in tests that
	// build a TaskInfo by hand, meaning SystemClock.
	Clock Clock
	// FirstEpoch is the epoch the instance's first output belongs to;
	// each barrier (a sink writer's PreCommit) closes the open epoch and
	// opens the next, one higher. Zero in tests that build a TaskInfo by
	// hand.
	FirstEpoch uint64
}

// SideEmitter is implemented by the Emitters the runtime gives operators:
// EmitSide passes a batch (taking over its reference) to the consumers of
// the operator's side output of that name, those whose Input uses
// FromSide(output). A side output nobody consumes drops its batches.
// Operators should type-assert for it, since test emitters may lack it.
type SideEmitter interface {
	EmitSide(output string, b Batch) error
}

// Emitter receives an operator's output in order.
type Emitter interface {
	// Emit passes a batch downstream, taking over its reference.
	Emit(b Batch) error
	// EmitWatermark passes a watermark downstream. Watermarks must not go
	// backwards; the runtime drops ones that do.
	EmitWatermark(wm EventTime) error
}

// Operator is one subtask's instance of a transformation. The runtime calls
// its methods from a single goroutine, never concurrently.
//
// Life cycle: Open, then RestoreState if the job restores from a
// checkpoint in which this subtask had state, then any sequence of
// ProcessBatch, ProcessWatermark and SnapshotState, then Finish once all
// inputs ended (bounded jobs only), then Close (always, also after errors).
type Operator interface {
	// Open prepares the instance to run as described by info.
	Open(info *TaskInfo) error
	// ProcessBatch handles a batch from the given input (the index of the
	// input in the order the graph declared them). The operator owns b.
	ProcessBatch(input int, b Batch, out Emitter) error
	// ProcessWatermark handles the operator's watermark advancing to wm
	// (the minimum over all its inputs). It must forward a watermark with
	// out.EmitWatermark, usually wm itself after emitting what wm
	// completes; BaseOperator does exactly that.
	ProcessWatermark(wm EventTime, out Emitter) error
	// SnapshotState writes the state as of the end of epoch to w. Rows
	// of later epochs have not been processed yet.
	SnapshotState(epoch uint64, w state.SnapshotWriter) error
	// RestoreState loads state written by SnapshotState, possibly by
	// several subtasks of a run with another parallelism: the reader holds
	// the snapshots of every old subtask whose key groups overlap this
	// subtask's, and the operator keeps only rows of its own key groups.
	RestoreState(r state.SnapshotReader) error
	// Finish is called when every input has ended, after the final
	// watermark: emit whatever is still held.
	Finish(out Emitter) error
	// Close releases resources. It is called exactly once, also when the
	// job fails; it must release every batch the operator still holds.
	Close() error
}

// OperatorFactory makes one Operator instance per subtask. The runtime
// calls it once per subtask, sequentially, before any subtask starts.
type OperatorFactory func() Operator

// BaseOperator provides the methods of Operator that stateless operators do
// not need to write: it forwards watermarks, has no state and nothing to
// finish. Embed it and implement ProcessBatch.
type BaseOperator struct{}

// Open does nothing.
func (BaseOperator) Open(*TaskInfo) error { return nil }

// ProcessWatermark forwards wm.
func (BaseOperator) ProcessWatermark(wm EventTime, out Emitter) error { return out.EmitWatermark(wm) }

// SnapshotState writes nothing.
func (BaseOperator) SnapshotState(uint64, state.SnapshotWriter) error { return nil }

// RestoreState reads nothing.
func (BaseOperator) RestoreState(state.SnapshotReader) error { return nil }

// Finish emits nothing.
func (BaseOperator) Finish(Emitter) error { return nil }

// Close does nothing.
func (BaseOperator) Close() error { return nil }

// LateRowCounter is implemented by operators that drop rows arriving
// behind the watermark (event-time windows and joins): LateRows is the
// number of late rows this instance has dropped since it opened, those
// sent to a late-data side output included. It is a running count that
// never decreases, and it is not part of the checkpoint, so it starts
// from zero in every run. Flink's numLateRecordsDropped is the analogue.
//
// The runtime calls LateRows from the operator's goroutine after each
// ProcessBatch, ProcessWatermark and Finish, and publishes the count for
// Job.OperatorCounts; it must be cheap (return a field).
type LateRowCounter interface {
	LateRows() int64
}
