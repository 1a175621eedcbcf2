package arrowflow

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// RowKind says what a row of a changelog stream does to the table the
// stream describes, as Flink's RowKind: an insert, the retraction of a
// row emitted before an update (update-before), the row after the update
// (update-after), or a delete.
//
// Downstream operators read a changelog as a retract stream: Insert and
// UpdateAfter add a row, UpdateBefore and Delete remove one equal row. The
// pairing of an UpdateBefore with the UpdateAfter that follows it is
// informational (print shows it; an upsert sink may drop the
// UpdateBefore).
type RowKind uint8

const (
	// Insert adds a row.
	Insert RowKind = iota
	// UpdateBefore removes the old version of an updated row.
	UpdateBefore
	// UpdateAfter adds the new version of an updated row.
	UpdateAfter
	// Delete removes a row.
	Delete
)

// String is Flink's short form: +I, -U, +U, -D.
func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", uint8(k))
}

// IsRetraction reports whether the row removes a row (UpdateBefore,
// Delete) rather than adding one.
func (k RowKind) IsRetraction() bool { return k == UpdateBefore || k == Delete }

// Kind is the row kind of the k-th selected row of b (Insert when the
// batch carries no row kinds).
func (b Batch) Kind(k int) RowKind {
	if b.Kinds == nil {
		return Insert
	}
	return b.Kinds[b.Row(k)]
}

// AppendOnly reports whether every row of b is an insert because b carries
// no row kinds. A batch with a Kinds vector of inserts only is not
// append-only by this test; operators that care look at the rows.
func (b Batch) AppendOnly() bool { return b.Kinds == nil }

// NewChangeBatch wraps rec, taking over the caller's reference, with every
// row selected and the row kinds kinds (one per physical row of rec; nil
// for an append-only batch).
func NewChangeBatch(rec arrow.RecordBatch, kinds []RowKind) Batch {
	return Batch{Record: rec, Kinds: kinds}
}

// GatherKinds returns the row kinds of b's selected rows, in order, for a
// record materialized from b (nil when b carries none). dst is reused when
// it is large enough.
func GatherKinds(dst []RowKind, b Batch) []RowKind {
	if b.Kinds == nil {
		return nil
	}
	if b.Sel == nil {
		return b.Kinds
	}
	dst = dst[:0]
	for _, i := range b.Sel {
		dst = append(dst, b.Kinds[i])
	}
	return dst
}

// ChangelogMode is what kinds of rows an edge of a plan carries: the
// planner infers it for every edge (as Flink's planner does) and picks
// operator variants by it.
type ChangelogMode uint8

const (
	// AppendOnly edges carry inserts only; batches have no Kinds.
	AppendOnly ChangelogMode = iota
	// Retract edges carry every kind; an update is an UpdateBefore of the
	// old row and an UpdateAfter of the new one.
	Retract
)

// String names the mode as --explain shows it.
func (m ChangelogMode) String() string {
	switch m {
	case AppendOnly:
		return "append-only"
	case Retract:
		return "retract"
	}
	return fmt.Sprintf("ChangelogMode(%d)", uint8(m))
}

// EpochFlusher is implemented by operators that hold back changes within
// an epoch and fold them (several updates of one key become one
// UpdateBefore/UpdateAfter pair). The runtime calls FlushEpoch when the
// epoch closes, in chain order and before any operator of the task
// snapshots, so that a flushed change reaches the next operator of the
// chain before that one flushes; and the operator's Finish must flush what
// is left. With no periodic epochs (CheckpointInterval 0) an unbounded job
// flushes only at Finish, so updating operators also flush by themselves
// when what they hold grows large.
type EpochFlusher interface {
	FlushEpoch(epoch uint64, out Emitter) error
}
