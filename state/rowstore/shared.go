package rowstore

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/kernels"
)

// AppendShared adds every row of rec like Append(rec, nil, hashes), but
// without copying a batch of at least 1024 rows: the store keeps a
// reference to rec's columns (arrays are immutable, so this is safe; the
// buffers count in SizeBytes in full, and stay alive as long as the
// rows). Smaller batches are copied, as Append does, so that a store fed
// tiny batches does not hold one record per batch. rec must have the
// store's schema; the caller keeps its reference.
func (s *Store) AppendShared(rec arrow.RecordBatch, hashes []uint64) (RowID, error) {
	n := int(rec.NumRows())
	if n < mergeRows {
		return s.Append(rec, nil, hashes)
	}
	if len(hashes) != n {
		return 0, fmt.Errorf("row store: %d hashes for %d rows", len(hashes), n)
	}
	if err := s.checkSchema(rec); err != nil {
		return 0, err
	}
	if int64(s.nrows)+int64(n) > int64(^uint32(0)>>1) {
		return 0, fmt.Errorf("row store: more than %d rows", int64(^uint32(0)>>1))
	}
	first := RowID(s.nrows)
	s.hashes = growDouble(s.hashes, n)
	s.dead = growDouble(s.dead, n)
	rec.Retain()
	s.push(rec)
	s.hashes = append(s.hashes, hashes...)
	s.dead = s.dead[:len(s.dead)+n]
	clear(s.dead[len(s.dead)-n:])
	s.live += n
	return first, nil
}

// growDouble makes room for n more elements, at least doubling the
// capacity when it must grow (append grows large slices by a quarter,
// which for a store of millions of rows means many more copies).
func growDouble[T any](xs []T, n int) []T {
	if len(xs)+n <= cap(xs) {
		return xs
	}
	grown := make([]T, len(xs), max(2*cap(xs), len(xs)+n))
	copy(grown, xs)
	return grown
}

// checkSchema reports an error unless rec's columns have the store's
// types.
func (s *Store) checkSchema(rec arrow.RecordBatch) error {
	if rec.Schema().Equal(s.schema) {
		return nil
	}
	if int(rec.NumCols()) != s.schema.NumFields() {
		return fmt.Errorf("row store: a batch of %d columns, the store holds %d", rec.NumCols(), s.schema.NumFields())
	}
	for i, f := range s.schema.Fields() {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("row store: column %q is %s in the batch, %s in the store", f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	return nil
}

// CompactChunks drops the deleted rows like Compact, with the same
// renumbering (remap[old] is a live row's new id, -1 for a deleted one;
// nil when no row is deleted), but copies less: a chunk without deleted
// rows is kept as it is, a chunk of deleted rows only is dropped, a chunk
// whose live rows are one run of at least half its rows becomes a slice
// of itself (its buffers stay whole), and only the live rows of the other
// chunks are copied, chunk by chunk; the
// per-row hashes and flags are compacted in place, keeping their
// capacity. It suits stores whose rows die in about the order they came
// (expiry by time), where Compact would copy every live row each time.
func (s *Store) CompactChunks() ([]RowID, error) {
	if s.live == s.nrows {
		return nil, nil
	}
	var (
		chunks []arrow.RecordBatch
		starts []RowID
		remap  = make([]RowID, s.nrows)
		next   RowID // the next new id
		sel    []int32
	)
	for c, ch := range s.chunks {
		start := s.starts[c]
		n := int(ch.NumRows())
		sel = slices.Grow(sel[:0], n)
		for i := range n {
			id := start + RowID(i)
			if s.dead[id] {
				remap[id] = -1
				continue
			}
			remap[id] = next + RowID(len(sel))
			sel = append(sel, int32(i))
		}
		m := len(sel)
		if m == 0 {
			continue
		}
		var kept arrow.RecordBatch
		switch {
		case m == n:
			ch.Retain()
			kept = ch
		case int(sel[m-1]-sel[0])+1 == m && 2*m >= n:
			// One run of live rows, at least half the chunk (rows that
			// expire in order leave a dead prefix): a slice, not a copy.
			kept = ch.NewSlice(int64(sel[0]), int64(sel[m-1])+1)
		default:
			var err error
			if kept, err = kernels.TakeRecord(s.mem, ch, sel); err != nil {
				for _, k := range chunks {
					k.Release()
				}
				return nil, fmt.Errorf("row store: compact: %w", err)
			}
		}
		chunks = append(chunks, kept)
		starts = append(starts, next)
		next += RowID(len(sel))
	}
	// Nothing can fail any more: move the hashes down in place (a row's
	// new id is at most its old one) and reuse the deleted flags.
	for id, nid := range remap {
		if nid >= 0 {
			s.hashes[nid] = s.hashes[id]
		}
	}
	s.releaseChunks()
	s.chunks, s.starts = chunks, starts
	s.nrows = int(next)
	s.hashes = s.hashes[:s.nrows]
	s.dead = s.dead[:s.nrows]
	clear(s.dead)
	s.bytes, s.small = 0, 0
	for _, ch := range chunks {
		s.bytes += recordBytes(ch)
	}
	for i := len(chunks) - 1; i >= 0 && chunks[i].NumRows() < mergeRows; i-- {
		s.small++
	}
	return remap, nil
}
