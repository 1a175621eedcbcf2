package rowstore

import (
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// TagColumn names the int64 column that tagged snapshot tables
// (SnapshotTagged) carry after state.KeyGroupColumn and HashColumn: an
// operator's per-row value that is not one of the stored columns, such as
// the start of the pane a row belongs to or a matched flag.
const TagColumn = "_tag"

// NumChunks is the number of record batches the store holds its rows in.
func (s *Store) NumChunks() int { return len(s.chunks) }

// Chunk returns the c-th chunk (0 <= c < NumChunks) and the id of its
// first row: its row i is row first+i of the store (live or deleted). The
// chunk stays owned by the store and is valid until the next Append,
// Compact, Reset or Release.
func (s *Store) Chunk(c int) (rec arrow.RecordBatch, first RowID) {
	return s.chunks[c], s.starts[c]
}

// ChunkOf is the index of the chunk holding row id.
func (s *Store) ChunkOf(id RowID) int {
	return sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > id }) - 1
}

// Hashes is the key hash of every row by id (len IDs()), deleted rows
// included. The slice is the store's: read it only, and only until the
// next Append, Compact, Reset or Release.
func (s *Store) Hashes() []uint64 { return s.hashes[:s.nrows] }

// TaggedSnapshotSchema is the schema of the tables SnapshotTagged writes:
// SnapshotSchema's columns, then TagColumn (int64).
func (s *Store) TaggedSnapshotSchema() *arrow.Schema {
	return taggedSchema(s.schema)
}

func taggedSchema(schema *arrow.Schema) *arrow.Schema {
	fields := append(slices.Clone(schema.Fields()),
		arrow.Field{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		arrow.Field{Name: HashColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: TagColumn, Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil)
}

// SnapshotTagged is Snapshot with one more column, TagColumn, holding
// tag(id) for each live row id (tag nil: 0 for every row). Several stores
// may write to one table (for example one store per pane, each with its
// pane start as the tag); RestoreTagged reads it back and hands each
// row's tag to the operator.
func (s *Store) SnapshotTagged(w state.SnapshotWriter, table string, maxParallelism int, tag func(id RowID) int64) error {
	schema := s.TaggedSnapshotSchema()
	var sel []int32
	for c, ch := range s.chunks {
		start := s.starts[c]
		n := int(ch.NumRows())
		sel = sel[:0]
		all := true
		for i := range n {
			if s.dead[start+RowID(i)] {
				all = false
				break
			}
		}
		if !all {
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
		if !all {
			m = len(sel)
		}
		kg := array.NewUint16Builder(s.mem)
		hb := array.NewUint64Builder(s.mem)
		tb := array.NewInt64Builder(s.mem)
		kg.Reserve(m)
		hb.Reserve(m)
		tb.Reserve(m)
		for k := range m {
			i := k
			if !all {
				i = int(sel[k])
			}
			id := start + RowID(i)
			h := s.hashes[id]
			kg.UnsafeAppend(uint16(kernels.KeyGroupOf(h, maxParallelism)))
			hb.UnsafeAppend(h)
			if tag != nil {
				tb.UnsafeAppend(tag(id))
			} else {
				tb.UnsafeAppend(0)
			}
		}
		extra := []arrow.Array{kg.NewArray(), hb.NewArray(), tb.NewArray()}
		kg.Release()
		hb.Release()
		tb.Release()
		release := func() {
			for _, a := range extra {
				a.Release()
			}
		}
		var rows arrow.RecordBatch
		if all {
			ch.Retain()
			rows = ch
		} else {
			var err error
			if rows, err = kernels.TakeRecord(s.mem, ch, sel); err != nil {
				release()
				return fmt.Errorf("row store: snapshot of table %q: %w", table, err)
			}
		}
		cols := append(slices.Clone(rows.Columns()), extra...)
		rec := array.NewRecordBatch(schema, cols, int64(m))
		rows.Release()
		release()
		err := w.Write(table, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// SchemaError is the error RestoreTagged returns when a snapshot table's
// schema is not the tagged layout of the expected rows: a snapshot of
// another layout (an older version's) or of other columns.
type SchemaError struct {
	Table     string
	Got, Want *arrow.Schema
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("row store: snapshot table %q has schema %s, want %s", e.Table, e.Got, e.Want)
}

// Tagged reports whether the schema has the tagged snapshot columns
// (state.KeyGroupColumn, HashColumn and TagColumn, last), whatever the
// stored columns: false means a snapshot of another layout.
func (e *SchemaError) Tagged() bool {
	n := e.Got.NumFields()
	return n >= 3 && e.Got.Field(n-3).Name == state.KeyGroupColumn &&
		e.Got.Field(n-2).Name == HashColumn && e.Got.Field(n-1).Name == TagColumn
}

// RestoreTagged reads a table that SnapshotTagged wrote (possibly from
// several stores and subtasks) with rows of schema, keeps the rows whose
// key group lies in keyGroups, and appends them, by tag, to the store
// into(tag) returns (into is called for every run of rows of one tag, so
// it may hand out one store for every tag or one per tag). fn, when not
// nil, then sees the tag, the store, the id of the first appended row and
// the appended rows (ids first, first+1, ...; valid while fn runs), so the
// operator can rebuild its indexes and per-row values. A missing table
// restores nothing. A table of another schema fails with a *SchemaError.
func RestoreTagged(r state.SnapshotReader, table string, schema *arrow.Schema, keyGroups state.KeyGroupRange,
	into func(tag int64) (*Store, error), fn func(tag int64, s *Store, first RowID, rec arrow.RecordBatch) error) error {
	if !slices.Contains(r.Tables(), table) {
		return nil
	}
	want := taggedSchema(schema)
	nc := schema.NumFields()
	var (
		sel    []int32
		hashes []uint64
		tags   []int64
	)
	return r.Read(table, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(want) {
			return &SchemaError{Table: table, Got: rec.Schema(), Want: want}
		}
		kg := rec.Column(nc).(*array.Uint16)
		hs := rec.Column(nc + 1).(*array.Uint64)
		tg := rec.Column(nc + 2).(*array.Int64)
		n := int(rec.NumRows())
		sel, hashes, tags = sel[:0], hashes[:0], tags[:0]
		oneTag := true
		for i := range n {
			if keyGroups.Contains(int(kg.Value(i))) {
				sel = append(sel, int32(i))
				hashes = append(hashes, hs.Value(i))
				tags = append(tags, tg.Value(i))
				oneTag = oneTag && tags[len(tags)-1] == tags[0]
			}
		}
		if len(sel) == 0 {
			return nil
		}
		rows := array.NewRecordBatch(schema, rec.Columns()[:nc], rec.NumRows())
		defer rows.Release()
		if oneTag {
			s := sel
			if len(sel) == n {
				s = nil
			}
			return restoreRun(rows, s, hashes, tags[0], into, fn)
		}
		// Several tags: one run per tag, in order of first appearance.
		order := make([]int64, 0, 4)
		byTag := map[int64][]int{}
		for k, t := range tags {
			if _, ok := byTag[t]; !ok {
				order = append(order, t)
			}
			byTag[t] = append(byTag[t], k)
		}
		var runSel []int32
		var runHash []uint64
		for _, t := range order {
			runSel, runHash = runSel[:0], runHash[:0]
			for _, k := range byTag[t] {
				runSel = append(runSel, sel[k])
				runHash = append(runHash, hashes[k])
			}
			if err := restoreRun(rows, runSel, runHash, t, into, fn); err != nil {
				return err
			}
		}
		return nil
	})
}

// restoreRun appends rows sel of rows (all: nil) with one tag to the store
// into(tag) gives, then calls fn.
func restoreRun(rows arrow.RecordBatch, sel []int32, hashes []uint64, tag int64,
	into func(tag int64) (*Store, error), fn func(tag int64, s *Store, first RowID, rec arrow.RecordBatch) error) error {
	s, err := into(tag)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("row store: no store to restore the rows of tag %d into", tag)
	}
	first, err := s.Append(rows, sel, hashes)
	if err != nil {
		return err
	}
	if fn == nil {
		return nil
	}
	part := s.appended(first, len(hashes))
	defer part.Release()
	return fn(tag, s, first, part)
}

// appended returns a new reference to rows [first, first+n), which the
// last Append added (they lie in the last chunk, possibly merged with
// earlier rows).
func (s *Store) appended(first RowID, n int) arrow.RecordBatch {
	c := len(s.chunks) - 1
	for s.starts[c] > first {
		c--
	}
	ch := s.chunks[c]
	if s.starts[c] == first && int(ch.NumRows()) == n {
		ch.Retain()
		return ch
	}
	off := int64(first - s.starts[c])
	return ch.NewSlice(off, off+int64(n))
}
