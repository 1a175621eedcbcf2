// Package rowstore is the keyed row store of weir's stateful operators:
// rows of one schema kept in Arrow record batches (chunks), addressed by
// dense row ids, with the hash of each row's key beside it so that a
// snapshot can be laid out by key group and restored into another
// parallelism.
//
// A Store only appends: deleting a row marks it, and Compact rewrites the
// live rows into one chunk when enough are dead. It keeps no index: an
// operator maps its keys to row ids itself (usually with a
// kernels.GroupTable and per-key id lists), and rebuilds that mapping from
// the chunks Restore hands it. CockroachDB's colexec AppendOnlyBufferedBatch
// is the model.
//
// A Store is not safe for concurrent use; an operator instance owns it.
package rowstore

import (
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// RowID addresses a row of a Store: ids are dense, starting at 0, in the
// order rows were appended. Compact renumbers them.
type RowID = int32

// HashColumn names the column of snapshot tables that holds each row's
// key hash; state.KeyGroupColumn holds its key group.
const HashColumn = "_key_hash"

// Merging: when at least mergeChunks chunks of fewer than mergeRows rows
// each sit at the end of the store, they are concatenated into one, so that
// appending one row at a time does not leave one record batch per row.
const (
	mergeChunks = 32
	mergeRows   = 1024
)

// Store holds rows of one schema. See the package documentation.
type Store struct {
	schema *arrow.Schema
	mem    memory.Allocator
	chunks []arrow.RecordBatch
	starts []RowID // starts[c] is the id of chunks[c]'s first row
	hashes []uint64
	dead   []bool
	nrows  int // ids handed out
	live   int
	bytes  int64
	small  int // trailing chunks of fewer than mergeRows rows
}

// New returns an empty store of rows of schema, allocating from mem (nil:
// memory.DefaultAllocator). Every column must be of a type kernels.Take
// supports (numbers, booleans, strings, binaries, decimals, dates, times,
// timestamps, durations); nested types are refused, naming the column.
func New(schema *arrow.Schema, mem memory.Allocator) (*Store, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	for _, f := range schema.Fields() {
		if !Storable(f.Type) {
			return nil, fmt.Errorf("row store: column %q has type %s, which rows cannot be stored as (nested types are not supported)", f.Name, f.Type)
		}
	}
	return &Store{schema: schema, mem: mem}, nil
}

// Storable reports whether a column of type dt can be kept in a Store.
func Storable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.NULL, arrow.BOOL, arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	return ok && fw.BitWidth()%8 == 0 && dt.ID() != arrow.DICTIONARY && dt.ID() != arrow.EXTENSION
}

// Schema is the schema of the stored rows.
func (s *Store) Schema() *arrow.Schema { return s.schema }

// Append copies the selected rows of rec (sel nil: every row) into the
// store and returns the id of the first; the k-th selected row gets id
// first+k. hashes[k] is the key hash of the k-th selected row (as
// kernels.HashColumns computes it over the operator's key columns). rec
// must have the store's schema; the caller keeps its reference.
func (s *Store) Append(rec arrow.RecordBatch, sel []int32, hashes []uint64) (RowID, error) {
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	if len(hashes) != n {
		return 0, fmt.Errorf("row store: %d hashes for %d rows", len(hashes), n)
	}
	if !rec.Schema().Equal(s.schema) {
		if int(rec.NumCols()) != s.schema.NumFields() {
			return 0, fmt.Errorf("row store: a batch of %d columns, the store holds %d", rec.NumCols(), s.schema.NumFields())
		}
		for i, f := range s.schema.Fields() {
			if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
				return 0, fmt.Errorf("row store: column %q is %s in the batch, %s in the store", f.Name, rec.Column(i).DataType(), f.Type)
			}
		}
	}
	first := RowID(s.nrows)
	if n == 0 {
		return first, nil
	}
	if int64(s.nrows)+int64(n) > int64(^uint32(0)>>1) {
		return 0, fmt.Errorf("row store: more than %d rows", int64(^uint32(0)>>1))
	}
	var idx [][]int32
	if sel != nil {
		idx = [][]int32{sel}
	} else {
		idx = [][]int32{nil}
	}
	chunk, err := kernels.GatherRecords(s.mem, s.schema, []arrow.RecordBatch{rec}, idx)
	if err != nil {
		return 0, fmt.Errorf("row store: %w", err)
	}
	s.push(chunk)
	s.hashes = append(s.hashes, hashes...)
	s.dead = append(s.dead, make([]bool, n)...)
	s.live += n
	return first, nil
}

// push adds a chunk of new rows, merging small trailing chunks.
func (s *Store) push(chunk arrow.RecordBatch) {
	s.chunks = append(s.chunks, chunk)
	s.starts = append(s.starts, RowID(s.nrows))
	s.nrows += int(chunk.NumRows())
	s.bytes += recordBytes(chunk)
	if chunk.NumRows() >= mergeRows {
		s.small = 0
		return
	}
	s.small++
	if s.small < mergeChunks {
		return
	}
	// Concatenate the trailing small chunks; their ids stay the same.
	from := len(s.chunks) - s.small
	parts := s.chunks[from:]
	idx := make([][]int32, len(parts))
	merged, err := kernels.GatherRecords(s.mem, s.schema, parts, idx)
	if err != nil {
		return // keep them apart: still correct, only less compact
	}
	for _, c := range parts {
		s.bytes -= recordBytes(c)
		c.Release()
	}
	s.chunks = append(s.chunks[:from], merged)
	s.starts = s.starts[:from+1]
	s.bytes += recordBytes(merged)
	s.small = 1
	if merged.NumRows() >= mergeRows {
		s.small = 0
	}
}

// Len is the number of live rows.
func (s *Store) Len() int { return s.live }

// IDs is the number of ids handed out since the last Compact (live and
// deleted rows): valid ids are below it.
func (s *Store) IDs() int { return s.nrows }

// Garbage is the number of deleted rows the store still holds.
func (s *Store) Garbage() int { return s.nrows - s.live }

// Live reports whether id is a row that has not been deleted.
func (s *Store) Live(id RowID) bool { return id >= 0 && int(id) < s.nrows && !s.dead[id] }

// Delete marks row id deleted. Deleting a deleted row does nothing.
func (s *Store) Delete(id RowID) {
	if s.Live(id) {
		s.dead[id] = true
		s.live--
	}
}

// Hash is the key hash row id was appended with.
func (s *Store) Hash(id RowID) uint64 { return s.hashes[id] }

// Locate returns the chunk holding row id and the row's index in it, to
// read values in place. The chunk stays owned by the store and is valid
// until the next Compact or Release.
func (s *Store) Locate(id RowID) (arrow.RecordBatch, int) {
	c := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > id }) - 1
	return s.chunks[c], int(id - s.starts[c])
}

// Gather returns a new record batch with the rows ids, in that order
// (deleted rows too, if asked for). The caller releases it.
func (s *Store) Gather(ids []RowID) (arrow.RecordBatch, error) {
	if len(ids) == 0 {
		return s.empty(), nil
	}
	var (
		recs []arrow.RecordBatch
		idx  [][]int32
		cur  = -1 // chunk of the current run
		lo   RowID
		hi   RowID
	)
	for _, id := range ids {
		if id < 0 || int(id) >= s.nrows {
			return nil, fmt.Errorf("row store: row id %d out of range [0, %d)", id, s.nrows)
		}
		if cur < 0 || id < lo || id >= hi {
			cur = sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > id }) - 1
			lo = s.starts[cur]
			hi = lo + RowID(s.chunks[cur].NumRows())
			recs = append(recs, s.chunks[cur])
			idx = append(idx, make([]int32, 0, 8))
		}
		idx[len(idx)-1] = append(idx[len(idx)-1], int32(id-lo))
	}
	rec, err := kernels.GatherRecords(s.mem, s.schema, recs, idx)
	if err != nil {
		return nil, fmt.Errorf("row store: %w", err)
	}
	return rec, nil
}

// empty is a batch of no rows of the store's schema.
func (s *Store) empty() arrow.RecordBatch {
	cols := make([]arrow.Array, s.schema.NumFields())
	for i, f := range s.schema.Fields() {
		cols[i] = array.MakeArrayOfNull(s.mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(s.schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// Compact drops the deleted rows and renumbers the live ones in their
// order: remap[old] is a live row's new id, -1 for a deleted one. It
// returns nil, and renumbers nothing, when no row is deleted. Operators
// call it when Garbage is a large share of IDs, and remap the ids they
// hold.
func (s *Store) Compact() ([]RowID, error) {
	if s.live == s.nrows {
		return nil, nil
	}
	remap := make([]RowID, s.nrows)
	idx := make([][]int32, len(s.chunks))
	next := RowID(0)
	for c, ch := range s.chunks {
		start := s.starts[c]
		rows := make([]int32, 0, ch.NumRows())
		for i := range int(ch.NumRows()) {
			id := start + RowID(i)
			if s.dead[id] {
				remap[id] = -1
				continue
			}
			remap[id] = next
			next++
			rows = append(rows, int32(i))
		}
		idx[c] = rows
	}
	hashes := make([]uint64, 0, s.live)
	for id, h := range s.hashes {
		if !s.dead[id] {
			hashes = append(hashes, h)
		}
	}
	var chunks []arrow.RecordBatch
	if s.live > 0 {
		merged, err := kernels.GatherRecords(s.mem, s.schema, s.chunks, idx)
		if err != nil {
			return nil, fmt.Errorf("row store: compact: %w", err)
		}
		chunks = []arrow.RecordBatch{merged}
	}
	s.releaseChunks()
	s.chunks, s.hashes = chunks, hashes
	s.starts = s.starts[:0]
	s.nrows, s.small, s.bytes = 0, 0, 0
	if len(chunks) > 0 {
		s.starts = append(s.starts, 0)
		s.nrows = int(chunks[0].NumRows())
		s.bytes = recordBytes(chunks[0])
	}
	s.dead = make([]bool, s.nrows)
	return remap, nil
}

// SizeBytes approximates the memory the store retains.
func (s *Store) SizeBytes() int64 {
	return s.bytes + int64(cap(s.hashes))*8 + int64(cap(s.dead)) + int64(cap(s.starts))*4
}

// Reset forgets every row.
func (s *Store) Reset() {
	s.releaseChunks()
	s.chunks, s.starts = s.chunks[:0], s.starts[:0]
	s.hashes, s.dead = s.hashes[:0], s.dead[:0]
	s.nrows, s.live, s.bytes, s.small = 0, 0, 0, 0
}

// Release frees the store's memory; the store must not be used after.
func (s *Store) Release() {
	s.releaseChunks()
	s.chunks, s.starts, s.hashes, s.dead = nil, nil, nil, nil
	s.nrows, s.live, s.bytes, s.small = 0, 0, 0, 0
}

func (s *Store) releaseChunks() {
	for _, c := range s.chunks {
		c.Release()
	}
}

// SnapshotSchema is the schema of the snapshot table Snapshot writes: the
// store's columns, then state.KeyGroupColumn (uint16) and HashColumn
// (uint64).
func (s *Store) SnapshotSchema() *arrow.Schema {
	fields := append(slices.Clone(s.schema.Fields()),
		arrow.Field{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		arrow.Field{Name: HashColumn, Type: arrow.PrimitiveTypes.Uint64})
	return arrow.NewSchema(fields, nil)
}

// Snapshot writes the live rows, in id order, to the table of w, with
// each row's key group (of maxParallelism key groups) and key hash, so
// that a store restored by key group gets exactly the rows of its key
// groups. A store without live rows writes nothing.
func (s *Store) Snapshot(w state.SnapshotWriter, table string, maxParallelism int) error {
	schema := s.SnapshotSchema()
	for c, ch := range s.chunks {
		start := s.starts[c]
		n := int(ch.NumRows())
		var sel []int32
		all := true
		for i := range n {
			if s.dead[start+RowID(i)] {
				all = false
				break
			}
		}
		if !all {
			sel = make([]int32, 0, n)
			for i := range n {
				if !s.dead[start+RowID(i)] {
					sel = append(sel, int32(i))
				}
			}
			if len(sel) == 0 {
				continue
			}
		}
		m := n
		if sel != nil {
			m = len(sel)
		}
		kg := array.NewUint16Builder(s.mem)
		hb := array.NewUint64Builder(s.mem)
		kg.Reserve(m)
		hb.Reserve(m)
		for k := range m {
			i := k
			if sel != nil {
				i = int(sel[k])
			}
			h := s.hashes[start+RowID(i)]
			kg.UnsafeAppend(uint16(kernels.KeyGroupOf(h, maxParallelism)))
			hb.UnsafeAppend(h)
		}
		kgArr, hArr := kg.NewArray(), hb.NewArray()
		kg.Release()
		hb.Release()
		var rows arrow.RecordBatch
		if sel == nil {
			ch.Retain()
			rows = ch
		} else {
			var err error
			if rows, err = kernels.TakeRecord(s.mem, ch, sel); err != nil {
				kgArr.Release()
				hArr.Release()
				return fmt.Errorf("row store: snapshot: %w", err)
			}
		}
		cols := append(slices.Clone(rows.Columns()), kgArr, hArr)
		rec := array.NewRecordBatch(schema, cols, int64(m))
		rows.Release()
		kgArr.Release()
		hArr.Release()
		err := w.Write(table, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// Restore appends the rows of table in r (tables Snapshot wrote, possibly
// by several subtasks) whose key group lies in keyGroups, and calls fn
// with the id of each appended chunk's first row and the chunk (rows
// first, first+1, ...; valid while fn runs), so the operator can rebuild
// its indexes. A missing table restores nothing.
func (s *Store) Restore(r state.SnapshotReader, table string, keyGroups state.KeyGroupRange, fn func(first RowID, rec arrow.RecordBatch) error) error {
	if !slices.Contains(r.Tables(), table) {
		return nil
	}
	want := s.SnapshotSchema()
	return r.Read(table, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(want) {
			return fmt.Errorf("row store: snapshot table %q has schema %s, want %s", table, rec.Schema(), want)
		}
		nc := s.schema.NumFields()
		kg := rec.Column(nc).(*array.Uint16)
		hs := rec.Column(nc + 1).(*array.Uint64)
		var (
			sel    []int32
			hashes []uint64
		)
		n := int(rec.NumRows())
		for i := range n {
			if keyGroups.Contains(int(kg.Value(i))) {
				sel = append(sel, int32(i))
				hashes = append(hashes, hs.Value(i))
			}
		}
		if len(sel) == 0 {
			return nil
		}
		if len(sel) == n {
			sel = nil
		}
		rows := array.NewRecordBatch(s.schema, rec.Columns()[:nc], rec.NumRows())
		defer rows.Release()
		first, err := s.Append(rows, sel, hashes)
		if err != nil {
			return err
		}
		if fn == nil {
			return nil
		}
		c := len(s.chunks) - 1
		for s.starts[c] > first {
			c--
		}
		// The rows may have been merged into a larger trailing chunk:
		// hand fn exactly the appended rows.
		ch := s.chunks[c]
		if s.starts[c] == first && int(ch.NumRows()) == len(hashes) {
			return fn(first, ch)
		}
		off := int64(first - s.starts[c])
		part := ch.NewSlice(off, off+int64(len(hashes)))
		defer part.Release()
		return fn(first, part)
	})
}

// recordBytes approximates the memory rec's buffers hold.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}
