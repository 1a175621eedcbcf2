package arrowflow

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// SplitState is the position of one split of a source: what a checkpoint
// records and a restored reader resumes from.
type SplitState struct {
	// Split identifies the split (a Kafka partition, a file, a generator
	// shard), stable across runs.
	Split string `json:"split"`
	// Position is the source's own encoding of where to resume (the next
	// offset, say). Nil means the split's configured start.
	Position []byte `json:"position,omitempty"`
}

// Source describes a replayable input. It is divided into splits, which the
// runtime deals to the source's subtasks (split i to subtask i mod
// parallelism); each subtask reads its splits through a SourceReader.
// Because positions are recorded per split, a job can restore with another
// source parallelism.
type Source interface {
	// Schema is the schema of every batch the source produces; its
	// metadata names the event-time column, if any (see
	// WithEventTimeColumn).
	Schema() *arrow.Schema
	// Splits lists the source's splits. The list must be the same in every
	// run of a job that restores from the others' checkpoints.
	Splits(ctx context.Context) ([]string, error)
	// Open starts a reader for one subtask over the given splits, each
	// resuming from its Position.
	Open(info *TaskInfo, splits []SplitState) (SourceReader, error)
}

// SourceReader reads one subtask's splits. The runtime calls it from a
// single goroutine.
type SourceReader interface {
	// Next returns the next batch, or a zero Batch when nothing is
	// available right now, or io.EOF when every split is exhausted
	// (bounded sources only). Before returning a zero Batch, Next should
	// wait for data, but not for long: about 100 ms at most, so that epoch
	// barriers are not delayed (returning at once makes the runtime spin).
	Next(ctx context.Context) (Batch, error)
	// Watermark is the reader's current watermark: the minimum over its
	// active splits of each split's watermark (finished splits do not
	// hold it back; once all are done it may return MaxEventTime). A
	// reader without event time returns MinEventTime. The runtime emits
	// MaxEventTime after EOF in any case.
	Watermark() EventTime
	// Positions returns the position of every split after the last batch
	// returned by Next. It is called between Next calls, when a barrier is
	// emitted.
	Positions() ([]SplitState, error)
	// Close releases the reader's resources.
	Close() error
}

// IdleReporter is implemented by source readers that know when they are
// idle: none of their splits produced anything for the source's idle
// timeout, or they were given no split at all. While a reader is idle its
// subtask's downstream consumers leave it out of their watermark minimum,
// so that one quiet subtask does not stall event time for the whole job
// (Flink's watermark status). The runtime asks after every Next.
type IdleReporter interface {
	Idle() bool
}

// CommitObserver is implemented by sources that want to hear when an epoch
// is committed, for side effects that must not run earlier: a Kafka source
// commits its consumer group's offsets then, so that lag monitoring sees
// progress. Correctness never depends on it (positions live in
// checkpoints). The coordinator calls it after every sink committed the
// epoch, with the source's positions recorded in that epoch's checkpoint;
// an error is logged, not fatal.
type CommitObserver interface {
	EpochCommitted(ctx context.Context, epoch uint64, positions []SplitState) error
}

// SplitReporter is implemented by source readers that can say which split
// each row they return came from and which of their splits may still
// produce rows. It lets a watermark be generated per split outside the
// reader, from an expression the reader knows nothing about (SQL's
// WATERMARK on a computed column: see window.SplitWatermarkSource), as
// Flink's split-aware sources do with watermark push-down. The runtime
// does not call it; a wrapper does, from the reader's goroutine, right
// after each Next.
type SplitReporter interface {
	// BatchSplits describes the batch the last Next returned: splits
	// holds split ids and rowSplit, when not nil, the index into splits
	// of each row of the batch's record (all rows, selected or not); a
	// nil rowSplit means every row came from splits[0]. Both are only
	// valid until the next call to Next.
	BatchSplits() (splits []string, rowSplit []int32)
	// ActiveSplits lists the splits that may still produce rows and
	// should hold the watermark back: the reader's unfinished splits (a
	// reader that reads its splits in event-time order, one after the
	// other, lists only the one it reads). Only valid until the next call
	// to Next.
	ActiveSplits() []string
}
