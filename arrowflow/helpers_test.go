package arrowflow_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checkedAlloc is a checked allocator: the test fails if anything is left.
var checkedAlloc = testutil.CheckedAllocator

// replaySource emits the same record over and over from every split: a
// source with no cost of its own, for runtime benchmarks and backpressure
// tests. Each of its splits emits `per` batches (0: forever).
type replaySource struct {
	rec      arrow.RecordBatch
	splits   int
	per      int64
	produced *atomic.Int64
}

func (s *replaySource) Schema() *arrow.Schema { return s.rec.Schema() }

func (s *replaySource) Splits(context.Context) ([]string, error) {
	ids := make([]string, s.splits)
	for i := range ids {
		ids[i] = fmt.Sprintf("replay-%d", i)
	}
	return ids, nil
}

func (s *replaySource) Open(_ *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r := &replayReader{s: s}
	for _, sp := range splits {
		var n int64
		if sp.Position != nil {
			n = int64(binary.BigEndian.Uint64(sp.Position))
		}
		r.ids = append(r.ids, sp.Split)
		r.done = append(r.done, n)
	}
	return r, nil
}

type replayReader struct {
	s    *replaySource
	ids  []string
	done []int64
	next int
}

func (r *replayReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	for k := 0; k < len(r.ids); k++ {
		i := (r.next + k) % len(r.ids)
		if r.s.per > 0 && r.done[i] >= r.s.per {
			continue
		}
		r.next = i + 1
		r.done[i]++
		if r.s.produced != nil {
			r.s.produced.Add(1)
		}
		r.s.rec.Retain()
		return arrowflow.NewBatch(r.s.rec), nil
	}
	return arrowflow.Batch{}, io.EOF
}

func (r *replayReader) Watermark() arrowflow.EventTime { return arrowflow.MinEventTime }

func (r *replayReader) Positions() ([]arrowflow.SplitState, error) {
	out := make([]arrowflow.SplitState, len(r.ids))
	for i, id := range r.ids {
		out[i] = arrowflow.SplitState{Split: id, Position: binary.BigEndian.AppendUint64(nil, uint64(r.done[i]))}
	}
	return out, nil
}

func (r *replayReader) Close() error { return nil }

// int64Record builds a record of n rows: id = 0..n-1, key = id % keys,
// val = id / 2.
func int64Record(mem memory.Allocator, n, keys int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids, ks := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder)
	vals := b.Field(2).(*array.Float64Builder)
	for i := 0; i < n; i++ {
		ids.Append(int64(i))
		ks.Append(int64(i % keys))
		vals.Append(float64(i) / 2)
	}
	return b.NewRecordBatch()
}

// funcSink is a sink whose writer calls a function per batch.
type funcSink struct {
	write func(b arrowflow.Batch) error
}

func (s *funcSink) Open(*arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	return &funcWriter{s}, nil
}
func (s *funcSink) Commit(context.Context, uint64, [][]byte) error { return nil }
func (s *funcSink) Abort(context.Context, uint64, [][]byte) error  { return nil }

type funcWriter struct{ s *funcSink }

func (w *funcWriter) Write(_ context.Context, b arrowflow.Batch) error {
	defer b.Release()
	return w.s.write(b)
}
func (w *funcWriter) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }
func (w *funcWriter) Close() error                                      { return nil }
