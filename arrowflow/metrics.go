package arrowflow

import "sync/atomic"

// taskMetrics are a task's counters, updated by the task's goroutine and
// read by anyone.
type taskMetrics struct {
	batchesIn  atomic.Int64
	rowsIn     atomic.Int64
	batchesOut atomic.Int64
	rowsOut    atomic.Int64
	watermark  atomic.Int64
	lastEpoch  atomic.Uint64
}

// TaskStats is a snapshot of one task's counters.
type TaskStats struct {
	// Task names the chain of nodes the task runs, "a -> b -> c".
	Task string
	// Subtask is the task's subtask index.
	Subtask int
	// BatchesIn and RowsIn count what the task read: from its source, or
	// from its input queues.
	BatchesIn, RowsIn int64
	// BatchesOut and RowsOut count what the task's last node passed on:
	// to its sink, or to downstream queues.
	BatchesOut, RowsOut int64
	// Watermark is the last watermark the task passed on.
	Watermark EventTime
	// Queued is the number of messages waiting in the task's input queues
	// and MaxQueued its high-water mark; both are zero for source tasks.
	Queued, MaxQueued int
	// LastEpoch is the last epoch the task acknowledged.
	LastEpoch uint64
}

// OperatorCount is one operator subtask's counters, as the runtime last
// published them (see Job.OperatorCounts).
type OperatorCount struct {
	// Operator is the operator's node name.
	Operator string
	// Subtask is the operator's subtask index.
	Subtask int
	// LateRows is the number of late rows the subtask dropped (see
	// LateRowCounter), as of its last ProcessBatch, ProcessWatermark or
	// Finish call.
	LateRows int64
}
