package iceberg

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// Upsert mode: every row replaces the table's row with the same key. An
// epoch's rows are buffered per subtask; at pre-commit the last row of
// each key is kept, written as data files, and the keys as equality
// delete files; the commit adds both in one row delta. Equality deletes
// apply to data files of earlier commits only (lower sequence numbers),
// so the epoch's own rows stay.

// upsertBuffer holds one epoch's batches in upsert mode.
type upsertBuffer struct {
	recs []arrow.RecordBatch
}

func (u *upsertBuffer) release() {
	for _, r := range u.recs {
		r.Release()
	}
	u.recs = nil
}

// keyColumns returns the positions of names in sc.
func keyColumns(sc *arrow.Schema, names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		idx := sc.FieldIndices(n)
		if len(idx) != 1 {
			return nil, fmt.Errorf("upsert key column %q is not in the stream", n)
		}
		out[i] = idx[0]
	}
	return out, nil
}

// lastPerKey keeps, over recs in order, the last row of each key: it
// returns per record the surviving row indices, ascending.
func lastPerKey(recs []arrow.RecordBatch, keys []int) ([][]int32, error) {
	type loc struct{ rec, row int32 }
	byHash := map[uint64][]loc{}
	var hashes []uint64
	cols := make([]arrow.Array, len(keys))
	sameKey := func(a, b loc) bool {
		for _, k := range keys {
			va := arrowflow.ValueAt(recs[a.rec].Column(k), int(a.row))
			vb := arrowflow.ValueAt(recs[b.rec].Column(k), int(b.row))
			if !reflect.DeepEqual(va, vb) {
				return false
			}
		}
		return true
	}
	for ri, rec := range recs {
		n := int(rec.NumRows())
		hashes = slices.Grow(hashes[:0], n)[:n]
		for i, k := range keys {
			cols[i] = rec.Column(k)
		}
		if err := kernels.HashColumns(cols, nil, hashes); err != nil {
			return nil, err
		}
		for row, h := range hashes {
			cur := loc{int32(ri), int32(row)}
			locs := byHash[h]
			replaced := false
			for i, l := range locs {
				if sameKey(l, cur) {
					locs[i], replaced = cur, true
					break
				}
			}
			if !replaced {
				byHash[h] = append(locs, cur)
			}
		}
	}
	keep := make([][]int32, len(recs))
	for _, locs := range byHash {
		for _, l := range locs {
			keep[l.rec] = append(keep[l.rec], l.row)
		}
	}
	for _, k := range keep {
		slices.Sort(k)
	}
	return keep, nil
}

// upsertFiles writes the epoch's surviving rows as data files (through
// the epoch's WriteRecords stream) and their keys as equality delete
// files; it returns the delete files.
func (w *writer) upsertFiles(ctx context.Context, mem memory.Allocator) ([]iceberg.DataFile, error) {
	buf := w.upsert
	defer buf.release()
	if len(buf.recs) == 0 {
		return nil, nil
	}
	sc := buf.recs[0].Schema()
	keys, err := keyColumns(sc, w.s.opts.UpsertKeys)
	if err != nil {
		return nil, err
	}
	keep, err := lastPerKey(buf.recs, keys)
	if err != nil {
		return nil, err
	}
	tbl := w.s.Table()
	ids := make([]int, len(keys))
	delCols := slices.Clone(keys)
	for i, k := range keys {
		f, ok := tbl.Schema().FindFieldByName(sc.Field(k).Name)
		if !ok {
			return nil, fmt.Errorf("upsert key column %s is not in the table", sc.Field(k).Name)
		}
		ids[i] = f.ID
	}
	// A partitioned table routes deletes by the partition source columns.
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		for _, src := range pf.SourceIDs {
			f, ok := tbl.Schema().FindFieldByID(src)
			if !ok {
				continue
			}
			if idx := sc.FieldIndices(f.Name); len(idx) == 1 && !slices.Contains(delCols, idx[0]) {
				delCols = append(delCols, idx[0])
			}
		}
	}
	var deletes []arrow.RecordBatch
	defer func() {
		for _, d := range deletes {
			d.Release()
		}
	}()
	for i, rec := range buf.recs {
		if len(keep[i]) == 0 {
			continue
		}
		rows, err := kernels.TakeRecord(mem, rec, keep[i])
		if err != nil {
			return nil, err
		}
		if w.cur == nil {
			if err := w.start(ctx, rows.Schema()); err != nil {
				rows.Release()
				return nil, err
			}
		}
		fields := make([]arrow.Field, len(delCols))
		cols := make([]arrow.Array, len(delCols))
		for j, c := range delCols {
			fields[j], cols[j] = rows.Schema().Field(c), rows.Column(c)
		}
		delSchema, err := withFieldIDs(arrow.NewSchema(fields, nil), tbl.Schema())
		if err != nil {
			rows.Release()
			return nil, err
		}
		deletes = append(deletes, array.NewRecordBatch(delSchema, cols, rows.NumRows()))
		if err := w.send(ctx, rows); err != nil {
			return nil, err
		}
	}
	// WriteEqualityDeletes retains what it keeps of a record (unlike
	// WriteRecords, it does not take the caller's reference): the
	// deferred release above frees the deletes.
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for _, d := range deletes {
			if !yield(d, nil) {
				return
			}
		}
	}
	return tbl.NewTransaction().WriteEqualityDeletes(ctx, ids, records)
}

// identifierSchema marks the upsert keys as the schema's identifier
// fields (they must be required: non-nullable in the stream).
func identifierSchema(sc *iceberg.Schema, keys []string) (*iceberg.Schema, error) {
	ids := make([]int, len(keys))
	for i, k := range keys {
		f, ok := sc.FindFieldByName(k)
		if !ok {
			return nil, fmt.Errorf("iceberg: upsert key %q is not in the stream", k)
		}
		if !f.Required {
			return nil, fmt.Errorf("iceberg: upsert key %q is nullable in the stream; keys must be non-nullable", k)
		}
		ids[i] = f.ID
	}
	return iceberg.NewSchemaWithIdentifiers(sc.ID, ids, sc.Fields()...), nil
}
