package arrowflow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sink describes an output with a two-phase commit per epoch. Each subtask
// writes through a SinkWriter; at an epoch barrier the writer pre-commits
// (makes its output durable but not visible) and returns a payload
// describing it; once the epoch's checkpoint is recorded, the coordinator
// calls Commit once with every subtask's payload.
type Sink interface {
	// Open starts a writer for one subtask.
	Open(info *TaskInfo) (SinkWriter, error)
	// Commit makes the epoch's pre-committed output visible. It must be
	// idempotent: recovery calls it again for the last recorded epoch. It
	// runs concurrently with writers already writing later epochs, so it
	// may only use what the payloads describe. payloads has one entry per
	// subtask (nil where a subtask had nothing to commit).
	Commit(ctx context.Context, epoch uint64, payloads [][]byte) error
	// Abort discards pre-committed output of an epoch that will never be
	// committed.
	Abort(ctx context.Context, epoch uint64, payloads [][]byte) error
}

// SinkWriter is one subtask's writer. The runtime calls it from a single
// goroutine.
type SinkWriter interface {
	// Write adds a batch to the current epoch's output, taking over its
	// reference.
	Write(ctx context.Context, b Batch) error
	// PreCommit closes the current epoch's output (everything written
	// since the previous PreCommit): it is made durable but not visible,
	// and the returned payload (small: file names, transaction ids) tells
	// Commit or Abort what to do with it.
	PreCommit(ctx context.Context, epoch uint64) ([]byte, error)
	// Close releases resources and discards output not yet pre-committed.
	Close() error
}

// RecoverableSink is implemented by sinks whose output outlives the job's
// process (files, tables, topics). The runtime uses it when a job starts
// on a checkpoint folder, before any writer opens.
type RecoverableSink interface {
	Sink
	// LastCommittedEpoch returns the highest epoch the job (by name) has
	// committed to the sink, 0 when none. A job restored from an older
	// savepoint numbers its epochs above it, so that no new output is
	// mistaken for an epoch already committed.
	LastCommittedEpoch(ctx context.Context, job string) (uint64, error)
	// Recover discards what earlier runs of the job pre-committed but
	// never committed: leftovers of a run that stopped between a
	// pre-commit and its commit. It runs after the restored checkpoint's
	// epoch (committed, 0 on a fresh start) was committed again, while no
	// writer of the job runs, so everything not committed is garbage.
	Recover(ctx context.Context, job string, committed uint64) error
}

// ErrEpochAborted is wrapped by the error a sink's Commit returns when the
// epoch's pre-committed output no longer exists outside the job: the
// external system discarded it, as a Kafka broker aborts a transaction
// whose timeout expired while the job was down. Recovery then recomputes
// the epoch from the checkpoint before it (see AbortedEpochError).
var ErrEpochAborted = errors.New("pre-committed output was aborted by the external system")

// AbortedEpochError reports an epoch whose pre-committed output was
// aborted outside the job, for some or all of a sink's subtasks.
type AbortedEpochError struct {
	Epoch uint64
	// Aborted lists the subtasks whose output was aborted; Committed
	// those whose output had been committed before.
	Aborted, Committed []int
	// Reason is the external system's answer.
	Reason error
}

func (e *AbortedEpochError) Error() string {
	return fmt.Sprintf("epoch %d: pre-committed output of subtasks %v was aborted outside the job (%v); subtasks %v had committed", e.Epoch, e.Aborted, e.Reason, e.Committed)
}

// Unwrap makes errors.Is(err, ErrEpochAborted) true.
func (e *AbortedEpochError) Unwrap() []error { return []error{ErrEpochAborted, e.Reason} }

// ExpiringSink is implemented by sinks whose pre-committed output can
// expire outside the job (Kafka transactions). The coordinator and
// recovery commit such sinks before the others, so that when one finds its
// epoch aborted no other sink has made that epoch visible yet, and the
// epoch can be recomputed from the checkpoint before it.
type ExpiringSink interface {
	Sink
	// PreCommitsExpire reports whether pre-committed output can expire.
	PreCommitsExpire() bool
}

// CommitOrder returns the sink nodes of g in the order epochs commit:
// sinks whose pre-commits can expire first, the others after, each group in
// graph order.
func CommitOrder(g *Graph) []*Node {
	var first, rest []*Node
	for _, n := range g.nodes {
		if n.kind != SinkNode {
			continue
		}
		if es, ok := n.sink.(ExpiringSink); ok && es.PreCommitsExpire() {
			first = append(first, n)
		} else {
			rest = append(rest, n)
		}
	}
	return append(first, rest...)
}

// PositionRecorder is implemented by sinks that store, with each epoch's
// output, the source positions the epoch ends at (the Iceberg sink puts
// them in the snapshot summary), so that the output says which input it
// holds. The runtime calls EpochPositions right before Commit, in normal
// runs and when recovery commits the restored epoch again.
type PositionRecorder interface {
	Sink
	EpochPositions(epoch uint64, sources map[string][]SplitState)
}

// CommitSink commits cp's epoch on sink node n with the given payloads,
// telling a PositionRecorder the checkpoint's source positions first. The
// coordinator commits through it, and so does recovery.
func CommitSink(ctx context.Context, n *Node, cp *Checkpoint, payloads [][]byte) error {
	if pr, ok := n.sink.(PositionRecorder); ok {
		pr.EpochPositions(cp.Epoch, cp.Sources)
	}
	return n.sink.Commit(ctx, cp.Epoch, payloads)
}

// Owner identifies the job instance that owns an output: the checkpoint
// folder whose job writes it. Two checkpoint folders writing one output
// would recover, overwrite and delete each other's epochs, so sinks that
// outlive the job record their owner and recovery refuses an output owned
// by another (see OwnedSink).
type Owner struct {
	// ID identifies the owning checkpoint folder (random, made when the
	// folder was first used).
	ID string `json:"id"`
	// Lineage is the ID of the folder the owner descends from through
	// savepoints (its own ID when it started fresh): a job started from a
	// savepoint of the same lineage may take the output over.
	Lineage string `json:"lineage,omitempty"`
	// Folder is where the owner's checkpoint folder was, and Host the
	// machine, for messages.
	Folder string `json:"folder,omitempty"`
	Host   string `json:"host,omitempty"`
	// Since is when the owner claimed the output.
	Since time.Time `json:"since,omitzero"`
}

// String describes the owner for messages.
func (o Owner) String() string {
	if o.ID == "" {
		return "nobody"
	}
	s := "checkpoint folder " + o.ID
	if o.Folder != "" {
		s += " (" + o.Folder
		if o.Host != "" {
			s += " on " + o.Host
		}
		s += ")"
	}
	return s
}

// OwnedSink is implemented by sinks that record which job instance owns
// their output: the Parquet sink in its _weir folder, the Iceberg sink in a
// table property. Recovery reads the owner before it touches the output,
// refuses an output owned by another checkpoint folder (unless told to take
// it over), and claims it. After a claim, commits of any other owner fail:
// a job whose output was taken over is fenced.
type OwnedSink interface {
	RecoverableSink
	// Owner returns the recorded owner of job's output (zero when none).
	Owner(ctx context.Context, job string) (Owner, error)
	// Claim records owner as the owner of job's output, replacing any
	// previous one, and makes this sink commit only while owner is
	// recorded.
	Claim(ctx context.Context, job string, owner Owner) error
}

// ErrFenced is wrapped by the error a sink's Commit returns when another
// job instance has claimed the output since this one did.
var ErrFenced = errors.New("the output belongs to another job instance")

// CheckOwner is the fence of OwnedSink commits: nil when the output's
// recorded owner is mine (the ID the sink claimed it as; both empty when
// nobody claimed it), else an error wrapping ErrFenced that says who owns
// the output (what names it for the message).
func CheckOwner(what string, recorded Owner, mine string) error {
	switch {
	case recorded.ID == mine:
		return nil
	case mine == "":
		return fmt.Errorf("%w: %s is owned by %s, and this job has not claimed it (it runs without that checkpoint folder)", ErrFenced, what, recorded)
	default:
		return fmt.Errorf("%w: %s was taken over by %s; this job (checkpoint folder %s) stops and must not commit again", ErrFenced, what, recorded, mine)
	}
}

// WatermarkWriter is implemented by sink writers that act on event time:
// the filesystem sink commits a partition (writes its success file) once
// the watermark passes the partition's time. The runtime calls
// ProcessWatermark from the writer's goroutine each time the sink's
// input watermark (the minimum over its inputs) moves forward, and with
// MaxEventTime at the end of a bounded input, before the final barrier.
// An error fails the job.
type WatermarkWriter interface {
	SinkWriter
	ProcessWatermark(wm EventTime) error
}
