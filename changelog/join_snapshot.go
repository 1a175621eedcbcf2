package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// joinMatchesSchema is the schema of an outer side's match-count table:
// one row per stored row, in the order the row store's snapshot writes
// them (live rows in id order), with the row's key group.
var joinMatchesSchema = arrow.NewSchema([]arrow.Field{
	{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	{Name: "matches", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// joinSnapshotRows bounds the rows of one match-count record.
const joinSnapshotRows = 1 << 16

// SnapshotState writes each side's rows (tables join_left, join_right)
// with their key groups and, for an outer side, the rows' match counts
// (join_left_matches, join_right_matches). The index is rebuilt on
// restore. The counts are kept rather than recounted because with
// StateTTL they may exceed the current matches, and the output emitted so
// far depends on them.
func (o *joinOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	for s := range o.sides {
		d := &o.c.sides[s]
		if err := o.sides[s].store.Snapshot(w, d.table, o.info.MaxParallelism); err != nil {
			return fmt.Errorf("join %s: snapshot of %s rows: %w", o.info.Name, d.name, err)
		}
		if d.outer {
			if err := o.snapshotMatches(s, w); err != nil {
				return fmt.Errorf("join %s: snapshot of %s match counts: %w", o.info.Name, d.name, err)
			}
		}
	}
	return nil
}

func (o *joinOp) snapshotMatches(side int, w state.SnapshotWriter) error {
	sd := &o.sides[side]
	kg := array.NewUint16Builder(o.mem)
	defer kg.Release()
	mb := array.NewInt32Builder(o.mem)
	defer mb.Release()
	flush := func() error {
		if kg.Len() == 0 {
			return nil
		}
		n := kg.Len()
		kgs, ms := kg.NewArray(), mb.NewArray()
		defer kgs.Release()
		defer ms.Release()
		rec := array.NewRecordBatch(joinMatchesSchema, []arrow.Array{kgs, ms}, int64(n))
		defer rec.Release()
		return w.Write(o.c.sides[side].table+"_matches", rec)
	}
	for id := range rowstore.RowID(sd.store.IDs()) {
		if !sd.store.Live(id) {
			continue
		}
		kg.Append(uint16(kernels.KeyGroupOf(sd.store.Hash(id), o.info.MaxParallelism)))
		mb.Append(sd.matches[id])
		if kg.Len() == joinSnapshotRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// RestoreState loads the rows of the key groups this subtask owns, from
// one or more old subtasks' snapshots, and rebuilds the index.
func (o *joinOp) RestoreState(r state.SnapshotReader) error {
	for s := range o.sides {
		d := &o.c.sides[s]
		var counts []int32
		if d.outer {
			var err error
			if counts, err = o.readMatches(r, d.table+"_matches"); err != nil {
				return fmt.Errorf("join %s: restoring %s match counts: %w", o.info.Name, d.name, err)
			}
		}
		next := 0
		err := o.sides[s].store.Restore(r, d.table, o.info.KeyGroups, func(first rowstore.RowID, rec arrow.RecordBatch) error {
			if err := o.restoreRows(s, first, rec); err != nil {
				return err
			}
			if d.outer {
				n := int(rec.NumRows())
				if next+n > len(counts) {
					return fmt.Errorf("the snapshot holds more rows than match counts (%d)", len(counts))
				}
				copy(o.sides[s].matches[first:int(first)+n], counts[next:next+n])
				next += n
			}
			return nil
		})
		if err == nil && next != len(counts) {
			err = fmt.Errorf("the snapshot holds %d match counts for %d rows", len(counts), next)
		}
		if err != nil {
			return fmt.Errorf("join %s: restoring %s rows: %w", o.info.Name, d.name, err)
		}
		sd := &o.sides[s]
		slices.SortStableFunc(sd.expiry[sd.expHead:], func(a, b joinExpiry) int {
			switch {
			case a.at < b.at:
				return -1
			case a.at > b.at:
				return 1
			}
			return 0
		})
	}
	return o.reportState()
}

// readMatches reads a match-count table, keeping the counts of the rows
// of this subtask's key groups, in order.
func (o *joinOp) readMatches(r state.SnapshotReader, table string) ([]int32, error) {
	if !slices.Contains(r.Tables(), table) {
		return nil, nil
	}
	var counts []int32
	err := r.Read(table, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(joinMatchesSchema) {
			return fmt.Errorf("table %q has schema %s, want %s", table, rec.Schema(), joinMatchesSchema)
		}
		kg, ms := rec.Column(0).(*array.Uint16), rec.Column(1).(*array.Int32)
		for i := range int(rec.NumRows()) {
			if o.info.KeyGroups.Contains(int(kg.Value(i))) {
				counts = append(counts, ms.Value(i))
			}
		}
		return nil
	})
	return counts, err
}

// restoreRows indexes stored rows first, first+1, ... (rec) restored into
// the side's store.
func (o *joinOp) restoreRows(side int, first rowstore.RowID, rec arrow.RecordBatch) error {
	sd := &o.sides[side]
	gids, err := o.indexStored(side, rec)
	if err != nil {
		return err
	}
	n := int(rec.NumRows())
	hashes := make([]uint64, n)
	if err := o.hashRows(side, rec, nil, hashes); err != nil {
		return err
	}
	o.growRows(side)
	var at *array.Int64
	if o.c.ttl > 0 {
		at = rec.Column(rec.Schema().NumFields() - 1).(*array.Int64)
	}
	for i := range n {
		id := first + rowstore.RowID(i)
		o.link(side, id, gids[i], hashes[i])
		if at != nil {
			sd.expiry = append(sd.expiry, joinExpiry{at: at.Value(i), id: id})
		}
	}
	return nil
}
