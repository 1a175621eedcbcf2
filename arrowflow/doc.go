// Package arrowflow is weir's dataflow runtime.
//
// A job is a directed acyclic graph of sources, operators and sinks, each
// with a parallelism, built with a Graph. Planning turns the graph into
// tasks: operators joined by forward edges of equal parallelism are chained
// into one task (one goroutine, plain function calls); other edges become
// bounded queues between tasks, so a slow consumer blocks its producers
// (backpressure) and memory stays bounded. Keyed edges exchange rows by the
// hash of key columns: the hash picks one of MaxParallelism key groups and
// key groups are owned by consumer subtasks in contiguous ranges (see
// package state), which is what lets state be restored with another
// parallelism.
//
// Data travels as Batches: an Arrow record batch plus an optional selection
// vector. Control messages travel in order with the data on the same queues:
// watermarks (event time progress), epoch barriers (checkpoints) and end of
// stream. A message never overtakes another.
//
// Epochs: every CheckpointInterval a coordinator asks each source to emit a
// barrier. Tasks with several inputs align barriers (an input that delivered
// barrier N is held until all inputs did), then snapshot their operators'
// state, pre-commit their sinks and forward the barrier. When every task has
// acknowledged epoch N, the coordinator records the checkpoint (the commit
// point, see EpochRecorder) and then commits every sink's epoch N. A bounded
// job (all sources exhausted) fires all event-time windows with a final
// watermark, finishes its operators, and commits a final epoch before Run
// returns.
//
// Ownership follows Arrow's reference counting: whoever receives a Batch
// owns one reference and must release it or pass it on. Allocators are
// passed in through Options.
package arrowflow
