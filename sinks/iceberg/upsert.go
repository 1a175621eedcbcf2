package iceberg

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// Upsert mode materializes each epoch's changes per key, as Flink's
// SinkUpsertMaterializer does, and writes the result as Iceberg row-level
// changes:
//
//   - an add (+I, +U) makes the row one of the key's pending values (the
//     latest add is the key's value); a row equal to a pending one (all
//     columns) replaces it;
//   - a retraction (-U, -D) of a row equal to a pending value removes
//     that value; a retraction of a row that is not pending retracts the
//     key's committed row (an earlier epoch's);
//   - a batch without row kinds (an append-only input) holds upserts:
//     each row replaces the key's pending value.
//
// At pre-commit every key the epoch touched gets an equality delete (in
// the partition of each row it retracted and of its new value), and a
// key with a pending value gets its latest pending value as a data row.
// The commit adds both in one row delta: equality deletes apply to data
// files of lower sequence numbers only, so the epoch's own rows stay.
//
// The buffer keeps, per key, only the rows that can still matter: its
// pending values, the committed rows it retracted and its latest row;
// when the epoch's batches hold more than twice as many rows as that,
// the live rows are gathered into one batch and the rest are released.

// loc is a row of the buffer: batch rec, row row.
type loc struct{ rec, row int32 }

// keyState is what an epoch did to one key.
type keyState struct {
	last loc   // the key's latest change (its values name the key)
	adds []loc // pending values, oldest first; the last is the key's value
	dels []loc // retracted rows that were not pending (committed rows)
	next int32 // the next state of the same key hash, -1 at the end
}

// upsertBuffer is one subtask's epoch of changes in upsert mode.
type upsertBuffer struct {
	recs   []arrow.RecordBatch
	rows   int // rows in recs
	keys   []int
	states []keyState
	index  map[uint64]int32 // key hash -> first state
	hashes []uint64
	keyCol []arrow.Array
	events int64 // changes folded this epoch
}

func newUpsertBuffer() *upsertBuffer {
	return &upsertBuffer{index: map[uint64]int32{}}
}

func (u *upsertBuffer) release() {
	for _, r := range u.recs {
		r.Release()
	}
	u.recs, u.rows, u.states, u.events = nil, 0, nil, 0
	clear(u.index)
}

// live counts the rows the states reference.
func (u *upsertBuffer) live() int {
	n := 0
	for i := range u.states {
		s := &u.states[i]
		n += 1 + len(s.adds) + len(s.dels)
	}
	return n
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

// add folds rec (taking its reference) with the row kinds kinds (nil: every
// row an upsert) into the buffer.
func (u *upsertBuffer) add(mem memory.Allocator, rec arrow.RecordBatch, kinds []arrowflow.RowKind, keyNames []string) error {
	if u.keys == nil {
		keys, err := keyColumns(rec.Schema(), keyNames)
		if err != nil {
			rec.Release()
			return err
		}
		u.keys = keys
		u.keyCol = make([]arrow.Array, len(keys))
	}
	ri := int32(len(u.recs))
	u.recs = append(u.recs, rec)
	n := int(rec.NumRows())
	u.rows += n
	u.events += int64(n)
	u.hashes = slices.Grow(u.hashes[:0], n)[:n]
	for i, k := range u.keys {
		u.keyCol[i] = rec.Column(k)
	}
	if err := kernels.HashColumns(u.keyCol, nil, u.hashes); err != nil {
		return err
	}
	for row, h := range u.hashes {
		cur := loc{ri, int32(row)}
		si := u.find(h, cur)
		if si < 0 {
			si = int32(len(u.states))
			first, ok := u.index[h]
			if !ok {
				first = -1
			}
			u.states = append(u.states, keyState{next: first})
			u.index[h] = si
		}
		s := &u.states[si]
		s.last = cur
		kind := arrowflow.Insert
		if kinds != nil {
			kind = kinds[row]
		}
		switch {
		case kinds == nil:
			s.adds = append(s.adds[:0], cur)
		case !kind.IsRetraction():
			if i := u.findRow(s.adds, cur); i >= 0 {
				s.adds = slices.Delete(s.adds, i, i+1)
			}
			s.adds = append(s.adds, cur)
		default:
			if i := u.findRow(s.adds, cur); i >= 0 {
				s.adds = slices.Delete(s.adds, i, i+1)
			} else {
				s.dels = append(s.dels, cur)
			}
		}
	}
	if u.rows > 1<<16 && u.rows > 2*u.live() {
		return u.compact(mem)
	}
	return nil
}

// find returns the state of the key of row at (hash h), or -1.
func (u *upsertBuffer) find(h uint64, at loc) int32 {
	si, ok := u.index[h]
	if !ok {
		return -1
	}
	for ; si >= 0; si = u.states[si].next {
		if u.sameCols(u.keys, u.states[si].last, at) {
			return si
		}
	}
	return -1
}

// findRow returns the position in ls of a row equal to at in every
// column, or -1.
func (u *upsertBuffer) findRow(ls []loc, at loc) int {
	for i := len(ls) - 1; i >= 0; i-- {
		if u.sameRow(ls[i], at) {
			return i
		}
	}
	return -1
}

func (u *upsertBuffer) sameRow(a, b loc) bool {
	ra, rb := u.recs[a.rec], u.recs[b.rec]
	for c := 0; c < int(ra.NumCols()); c++ {
		if !sameValue(ra.Column(c), int(a.row), rb.Column(c), int(b.row)) {
			return false
		}
	}
	return true
}

func (u *upsertBuffer) sameCols(cols []int, a, b loc) bool {
	ra, rb := u.recs[a.rec], u.recs[b.rec]
	for _, c := range cols {
		if !sameValue(ra.Column(c), int(a.row), rb.Column(c), int(b.row)) {
			return false
		}
	}
	return true
}

// sameValue reports whether a[i] equals b[j] (two nulls are equal: a
// retraction carries the row as it was emitted).
func sameValue(a arrow.Array, i int, b arrow.Array, j int) bool {
	na, nb := a.IsNull(i), b.IsNull(j)
	if na || nb {
		return na == nb
	}
	switch x := a.(type) {
	case *array.Int64:
		return x.Value(i) == b.(*array.Int64).Value(j)
	case *array.Int32:
		return x.Value(i) == b.(*array.Int32).Value(j)
	case *array.String:
		return x.Value(i) == b.(*array.String).Value(j)
	case *array.LargeString:
		return x.Value(i) == b.(*array.LargeString).Value(j)
	case *array.Binary:
		return bytes.Equal(x.Value(i), b.(*array.Binary).Value(j))
	case *array.Timestamp:
		return x.Value(i) == b.(*array.Timestamp).Value(j)
	case *array.Boolean:
		return x.Value(i) == b.(*array.Boolean).Value(j)
	case *array.Float64: // bitwise: NaN equals NaN, as the row emitted
		return x.Value(i) == b.(*array.Float64).Value(j) || (x.Value(i) != x.Value(i) && b.(*array.Float64).Value(j) != b.(*array.Float64).Value(j))
	}
	return array.SliceEqual(a, int64(i), int64(i+1), b, int64(j), int64(j+1))
}

// compact gathers the rows the states reference into one batch and
// releases the others.
func (u *upsertBuffer) compact(mem memory.Allocator) error {
	remap := make([][]int32, len(u.recs))
	idx := make([][]int32, len(u.recs))
	for i, r := range u.recs {
		remap[i] = make([]int32, r.NumRows())
		for k := range remap[i] {
			remap[i][k] = -1
		}
	}
	mark := func(l loc) {
		if remap[l.rec][l.row] < 0 {
			remap[l.rec][l.row] = int32(len(idx[l.rec]))
			idx[l.rec] = append(idx[l.rec], l.row)
		}
	}
	for i := range u.states {
		s := &u.states[i]
		mark(s.last)
		for _, l := range s.adds {
			mark(l)
		}
		for _, l := range s.dels {
			mark(l)
		}
	}
	offsets := make([]int32, len(u.recs))
	total := int32(0)
	for i := range idx {
		offsets[i] = total
		total += int32(len(idx[i]))
		if idx[i] == nil {
			idx[i] = []int32{}
		}
	}
	rec, err := kernels.GatherRecords(mem, u.recs[0].Schema(), u.recs, idx)
	if err != nil {
		return err
	}
	move := func(l loc) loc { return loc{0, offsets[l.rec] + remap[l.rec][l.row]} }
	for i := range u.states {
		s := &u.states[i]
		s.last = move(s.last)
		for k := range s.adds {
			s.adds[k] = move(s.adds[k])
		}
		for k := range s.dels {
			s.dels[k] = move(s.dels[k])
		}
	}
	for _, r := range u.recs {
		r.Release()
	}
	u.recs, u.rows = append(u.recs[:0], rec), int(total)
	return nil
}

// result lists the epoch's data rows (per batch) and delete rows (per
// batch, rows naming the key and, in their other columns, a partition to
// delete in): delCols are the columns the delete rows are compared by.
func (u *upsertBuffer) result(delCols []int) (data, dels [][]int32) {
	data = make([][]int32, len(u.recs))
	dels = make([][]int32, len(u.recs))
	var seen []loc
	for i := range u.states {
		s := &u.states[i]
		seen = seen[:0]
		del := func(l loc) {
			for _, o := range seen {
				if u.sameCols(delCols, o, l) {
					return
				}
			}
			seen = append(seen, l)
			dels[l.rec] = append(dels[l.rec], l.row)
		}
		for _, l := range s.dels {
			del(l)
		}
		if n := len(s.adds); n > 0 {
			v := s.adds[n-1]
			del(v)
			data[v.rec] = append(data[v.rec], v.row)
		} else if len(s.dels) == 0 {
			del(s.last) // added and retracted within the epoch
		}
	}
	for i := range data { // nil would gather every row
		if data[i] == nil {
			data[i] = []int32{}
		}
		if dels[i] == nil {
			dels[i] = []int32{}
		}
	}
	return data, dels
}

// upsertFiles writes the epoch's rows as data files (through the epoch's
// WriteRecords stream) and its deleted keys as equality delete files; it
// returns the delete files.
func (w *writer) upsertFiles(ctx context.Context, mem memory.Allocator) ([]iceberg.DataFile, error) {
	buf := w.upsert
	defer buf.release()
	if len(buf.states) == 0 {
		return nil, nil
	}
	sc := buf.recs[0].Schema()
	keys := buf.keys
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
	data, dels := buf.result(delCols)
	if rowsIn(data) > 0 {
		rows, err := kernels.GatherRecords(mem, sc, buf.recs, data)
		if err != nil {
			return nil, err
		}
		if w.cur == nil {
			if err := w.start(ctx, sc); err != nil {
				rows.Release()
				return nil, err
			}
		}
		if err := w.send(ctx, rows); err != nil {
			return nil, err
		}
	}
	fields := make([]arrow.Field, len(delCols))
	for j, c := range delCols {
		fields[j] = sc.Field(c)
	}
	delSchema, err := withFieldIDs(arrow.NewSchema(fields, nil), tbl.Schema())
	if err != nil {
		return nil, err
	}
	proj := make([]arrow.RecordBatch, len(buf.recs))
	for i, r := range buf.recs {
		cols := make([]arrow.Array, len(delCols))
		for j, c := range delCols {
			cols[j] = r.Column(c)
		}
		proj[i] = array.NewRecordBatch(delSchema, cols, r.NumRows())
	}
	deletes, err := kernels.GatherRecords(mem, delSchema, proj, dels)
	for _, p := range proj {
		p.Release()
	}
	if err != nil {
		return nil, err
	}
	defer deletes.Release()
	// WriteEqualityDeletes retains what it keeps of a record (unlike
	// WriteRecords, it does not take the caller's reference): the
	// deferred release frees the deletes.
	records := func(yield func(arrow.RecordBatch, error) bool) {
		yield(deletes, nil)
	}
	return tbl.NewTransaction().WriteEqualityDeletes(ctx, ids, records)
}

func rowsIn(idx [][]int32) int {
	n := 0
	for _, i := range idx {
		n += len(i)
	}
	return n
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
