package state

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/kernels"
)

// benchSchema is realistic aggregate state: a key, a count, a sum and a
// short string per key, with the key's group.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sum", Type: arrow.PrimitiveTypes.Float64},
	{Name: "name", Type: arrow.BinaryTypes.String},
}, nil)

// benchState returns rows of benchSchema in batches of 64Ki rows, keys in
// random order (so the writer sorts every batch by key group), and their
// size in memory.
func benchState(mem memory.Allocator, schema *arrow.Schema, rows int) ([]arrow.RecordBatch, int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []arrow.RecordBatch
	var size int64
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for done := 0; done < rows; {
		n := min(rows-done, 1<<16)
		for range n {
			key := rng.Int64N(1 << 40)
			b.Field(0).(*array.Uint16Builder).Append(uint16(KeyGroupOf(kernels.HashUint64(uint64(key)), DefaultMaxParallelism)))
			b.Field(1).(*array.Int64Builder).Append(key)
			b.Field(2).(*array.Int64Builder).Append(1 + rng.Int64N(1000))
			switch fb := b.Field(3).(type) {
			case *array.Float64Builder:
				fb.Append(float64(rng.IntN(10_000_000)) / 100)
			case *array.ListBuilder:
				fb.Append(true)
				for k := rng.IntN(4); k > 0; k-- {
					fb.ValueBuilder().(*array.Float64Builder).Append(float64(rng.IntN(10_000_000)) / 100)
				}
			}
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("user%06d", rng.IntN(1_000_000)))
		}
		rec := b.NewRecordBatch()
		for _, c := range rec.Columns() {
			size += arraySize(c.Data())
		}
		out = append(out, rec)
		done += n
	}
	return out, size
}

func arraySize(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arraySize(c)
	}
	return n
}

// BenchmarkSnapshotFile writes and reads one subtask's snapshot of 1e6
// state rows (in a FileStore: including sorting by key group, compression,
// checksums and fsync; in a MemoryStore for comparison), and reads back all
// of it or the quarter of the key groups a subtask gets when the job is
// rescaled to 4 times the parallelism. MB/s counts the rows' Arrow size in
// memory; B/row is the snapshot's size per row.
func BenchmarkSnapshotFile(b *testing.B) {
	const rows = 1_000_000
	listSchema := arrow.NewSchema([]arrow.Field{
		benchSchema.Field(0), benchSchema.Field(1), benchSchema.Field(2),
		{Name: "sums", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
		benchSchema.Field(4),
	}, nil)
	all := KeyGroupRange{0, DefaultMaxParallelism}
	quarter := KeyGroupRange{0, DefaultMaxParallelism / 4}
	for _, c := range []struct {
		schema string
		store  string
		rows   int
	}{
		{"flat", "file", rows},
		{"flat", "memory", rows},
		// Nested columns are sorted by concatenating runs (kernels.Take
		// has no lists): the slow path.
		{"lists", "file", rows / 10},
	} {
		schema := benchSchema
		if c.schema == "lists" {
			schema = listSchema
		}
		mem := memory.NewGoAllocator()
		recs, size := benchState(mem, schema, c.rows)
		newStore := func(b *testing.B) Store {
			if c.store == "memory" {
				return NewMemoryStore()
			}
			s, err := NewFileStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		write := func(b *testing.B, store Store, epoch uint64) Handle {
			w, err := store.Create(SnapshotID{Job: "bench", Epoch: epoch, Operator: "agg", Subtask: 0}, all)
			if err != nil {
				b.Fatal(err)
			}
			for _, rec := range recs {
				if err := w.Write("groups", rec); err != nil {
					b.Fatal(err)
				}
			}
			h, err := w.Finish()
			if err != nil {
				b.Fatal(err)
			}
			return h
		}
		name := fmt.Sprintf("schema=%s/store=%s/rows=%d", c.schema, c.store, c.rows)
		b.Run("op=write/"+name, func(b *testing.B) {
			store := newStore(b)
			b.ReportAllocs()
			b.SetBytes(size)
			var h Handle
			for i := 0; b.Loop(); i++ {
				h = write(b, store, uint64(i))
				if fs, ok := store.(*FileStore); ok {
					b.StopTimer()
					_ = os.Remove(filepath.Join(fs.dir, filepath.FromSlash(h.ID)))
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(h.Bytes)/float64(c.rows), "B/row")
		})
		for _, r := range []KeyGroupRange{all, quarter} {
			part := "all"
			if r != all {
				part = "quarter"
			}
			b.Run(fmt.Sprintf("op=read/keygroups=%s/%s", part, name), func(b *testing.B) {
				store := newStore(b)
				h := write(b, store, 0)
				b.ReportAllocs()
				b.SetBytes(size * int64(r.Len()) / int64(all.Len()))
				var got int64
				for b.Loop() {
					rd, err := OpenKeyGroups(store, h, r, mem)
					if err != nil {
						b.Fatal(err)
					}
					got = 0
					if err := rd.Read("groups", func(rec arrow.RecordBatch) error {
						got += rec.NumRows()
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					rd.Close()
				}
				if want := int64(c.rows) * int64(r.Len()) / int64(all.Len()); got < want*9/10 || got > want*11/10 {
					b.Fatalf("read %d rows, want about %d", got, want)
				}
				b.ReportMetric(float64(h.Bytes)/float64(c.rows), "B/row")
			})
		}
		for _, rec := range recs {
			rec.Release()
		}
	}
}
