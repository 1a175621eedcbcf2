package blackhole_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/sources/datagen"
)

var ctx = context.Background()

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

func int64Record(mem memory.Allocator, n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

// Driven directly: rows are selected rows, every batch counts (also an
// empty one), commits count Commit calls and aborts count nothing; the
// writers release what they are given.
func TestCountsWhatItIsGiven(t *testing.T) {
	mem := newMem(t)
	s := blackhole.New()
	var wantRows, wantBatches int64
	for sub := 0; sub < 2; sub++ {
		w, err := s.Open(&arrowflow.TaskInfo{Subtask: sub, Parallelism: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			n   int
			sel []int32
		}{{5, nil}, {8, []int32{1, 2, 7}}, {3, []int32{}}, {0, nil}} {
			b := arrowflow.Batch{Record: int64Record(mem, c.n), Sel: c.sel}
			if c.sel != nil {
				wantRows += int64(len(c.sel))
			} else {
				wantRows += int64(c.n)
			}
			wantBatches++
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if p, err := w.PreCommit(ctx, 1); err != nil || p != nil {
			t.Fatalf("pre-commit: %x, %v", p, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, 1, [][]byte{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx, 2, [][]byte{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if s.Rows() != wantRows || s.Batches() != wantBatches || s.Commits() != 1 {
		t.Fatalf("rows %d batches %d commits %d; want %d, %d, 1", s.Rows(), s.Batches(), s.Commits(), wantRows, wantBatches)
	}
}

// countingSource wraps a source and counts the rows and batches its
// readers return: the oracle of what reaches a sink over forward and
// rebalance edges, which pass batches whole.
type countingSource struct {
	arrowflow.Source
	rows, batches atomic.Int64
}

func (s *countingSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r, err := s.Source.Open(info, splits)
	if err != nil {
		return nil, err
	}
	return &countingReader{SourceReader: r, s: s}, nil
}

type countingReader struct {
	arrowflow.SourceReader
	s *countingSource
}

func (r *countingReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	b, err := r.SourceReader.Next(ctx)
	if err == nil && !b.IsZero() {
		r.s.rows.Add(int64(b.NumRows()))
		r.s.batches.Add(1)
	}
	return b, err
}

func TestCountsThroughJob(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      datagen.Config
		interval time.Duration
	}{
		// Unthrottled, one final epoch: datagen makes exactly
		// ceil(rows of split / BatchSize) batches per split.
		{"unthrottled", datagen.Config{Seed: 1, Rows: 10007, BatchSize: 100, Splits: 6}, 0},
		// Throttled to last ~60ms with a checkpoint every 3ms: many
		// epochs, batches of whatever size the pacer admits.
		{"checkpointed", datagen.Config{Seed: 2, Rows: 6000, BatchSize: 100, Splits: 4, RowsPerSecond: 100000}, 3 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(t)
			gen, err := datagen.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			src := &countingSource{Source: gen}
			var recorded atomic.Int64
			sink := blackhole.New()
			g := arrowflow.NewGraph("blackhole")
			in := g.Source("gen", src, 2)
			g.Sink("void", sink, 3, arrowflow.Rebalance(in))
			job, err := g.Plan(arrowflow.Options{
				Allocator:          mem,
				CheckpointInterval: c.interval,
				Recorder: arrowflow.EpochRecorderFunc(func(_ context.Context, cp *arrowflow.Checkpoint) error {
					// Commits happen only after their checkpoint is recorded.
					if got, want := sink.Commits(), recorded.Load(); got != want {
						return fmt.Errorf("recording epoch %d: %d commits so far, %d epochs recorded before", cp.Epoch, got, want)
					}
					recorded.Add(1)
					return nil
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if sink.Rows() != c.cfg.Rows || src.rows.Load() != c.cfg.Rows {
				t.Fatalf("sink counted %d rows, source emitted %d, config %d", sink.Rows(), src.rows.Load(), c.cfg.Rows)
			}
			if sink.Batches() != src.batches.Load() {
				t.Fatalf("sink counted %d batches, source emitted %d", sink.Batches(), src.batches.Load())
			}
			if c.cfg.RowsPerSecond == 0 {
				var want int64
				for s := 0; s < c.cfg.Splits; s++ {
					n := (c.cfg.Rows - int64(s) + int64(c.cfg.Splits) - 1) / int64(c.cfg.Splits)
					want += (n + int64(c.cfg.BatchSize) - 1) / int64(c.cfg.BatchSize)
				}
				if sink.Batches() != want {
					t.Fatalf("sink counted %d batches, datagen makes %d", sink.Batches(), want)
				}
			}
			if sink.Commits() != job.EpochsCompleted() || sink.Commits() != recorded.Load() {
				t.Fatalf("sink counted %d commits; %d epochs completed, %d recorded", sink.Commits(), job.EpochsCompleted(), recorded.Load())
			}
			if c.interval == 0 && sink.Commits() != 1 {
				t.Fatalf("%d commits without periodic checkpoints, want the final one only", sink.Commits())
			}
			if c.interval > 0 && sink.Commits() < 3 {
				t.Fatalf("only %d commits with a checkpoint every %v; the test needs several", sink.Commits(), c.interval)
			}
		})
	}
}

// A failing job commits nothing past what its checkpoints recorded, and
// the sink's writers release every batch they were given.
func TestFailedJobReleasesEverything(t *testing.T) {
	mem := newMem(t)
	gen, err := datagen.New(datagen.Config{Seed: 5, BatchSize: 64}) // unbounded
	if err != nil {
		t.Fatal(err)
	}
	sink := blackhole.New()
	src := &failingSource{Source: gen, after: 50}
	g := arrowflow.NewGraph("blackhole-fail")
	in := g.Source("gen", src, 2)
	g.Sink("void", sink, 2, arrowflow.Forward(in))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("job returned %v, want the injected error", err)
	}
	if sink.Commits() != job.EpochsCompleted() {
		t.Fatalf("%d commits, %d epochs completed", sink.Commits(), job.EpochsCompleted())
	}
	if sink.Rows() > 2*50*64 || sink.Batches() > 2*50 {
		t.Fatalf("sink counted %d rows in %d batches, more than the sources emitted", sink.Rows(), sink.Batches())
	}
}

var errInjected = errors.New("injected failure")

// failingSource fails each reader after `after` batches.
type failingSource struct {
	arrowflow.Source
	after int
}

func (s *failingSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r, err := s.Source.Open(info, splits)
	if err != nil {
		return nil, err
	}
	return &failingReader{SourceReader: r, left: s.after}, nil
}

type failingReader struct {
	arrowflow.SourceReader
	left int
}

func (r *failingReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if r.left == 0 {
		return arrowflow.Batch{}, errInjected
	}
	b, err := r.SourceReader.Next(ctx)
	if err == nil && !b.IsZero() {
		r.left--
	}
	if errors.Is(err, io.EOF) {
		return b, errors.New("unbounded source ended")
	}
	return b, err
}
