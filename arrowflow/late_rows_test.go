package arrowflow_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/blackhole"
)

// lateOp passes batches on and counts as "late" the rows with an odd id,
// plus one per watermark call and 100 in Finish, so that a test can tell
// which calls the runtime published the count after.
type lateOp struct {
	arrowflow.BaseOperator
	late int64
}

func (o *lateOp) LateRows() int64 { return o.late }

func (o *lateOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	ids := b.Record.Column(0).(*array.Int64)
	for k := 0; k < b.NumRows(); k++ {
		if ids.Value(b.Row(k))%2 == 1 {
			o.late++
		}
	}
	return out.Emit(b)
}

func (o *lateOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	o.late++
	return out.EmitWatermark(wm)
}

func (o *lateOp) Finish(arrowflow.Emitter) error {
	o.late += 100
	return nil
}

// gatedSource emits, from each split, first batches of rec, then waits
// until gate is closed, then emits rest more and ends.
type gatedSource struct {
	rec         arrow.RecordBatch
	splits      int
	first, rest int
	gate        chan struct{}
}

func (s *gatedSource) Schema() *arrow.Schema { return s.rec.Schema() }

func (s *gatedSource) Splits(context.Context) ([]string, error) {
	ids := make([]string, s.splits)
	for i := range ids {
		ids[i] = string(rune('a' + i))
	}
	return ids, nil
}

func (s *gatedSource) Open(_ *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	return &gatedReader{s: s, left: len(splits) * (s.first + s.rest), held: len(splits) * s.rest}, nil
}

type gatedReader struct {
	s          *gatedSource
	left, held int // batches still to emit; of which after the gate
}

func (r *gatedReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if r.left == 0 {
		return arrowflow.Batch{}, io.EOF
	}
	if r.left == r.held {
		select {
		case <-r.s.gate:
			r.held = -1
		case <-ctx.Done():
			return arrowflow.Batch{}, nil
		case <-time.After(10 * time.Millisecond):
			return arrowflow.Batch{}, nil
		}
	}
	r.left--
	r.s.rec.Retain()
	return arrowflow.NewBatch(r.s.rec), nil
}

func (r *gatedReader) Watermark() arrowflow.EventTime { return arrowflow.MinEventTime }

func (r *gatedReader) Positions() ([]arrowflow.SplitState, error) { return nil, nil }

func (r *gatedReader) Close() error { return nil }

// The runtime publishes each LateRowCounter's count after every
// ProcessBatch, ProcessWatermark and Finish: Job.OperatorCounts shows it
// while the job runs (read concurrently, race-free) and after it ended,
// per operator subtask in plan order, and leaves out operators that do
// not count late rows.
func TestOperatorCountsPublishLateRows(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 10, 3) // ids 0..9: five odd
	defer rec.Release()
	const oddPerBatch, first, rest = 5, 3, 4
	src := &gatedSource{rec: rec, splits: 2, first: first, rest: rest, gate: make(chan struct{})}
	g := arrowflow.NewGraph("late")
	s := g.Source("src", src, 2)
	a := g.Operator("late-a", func() arrowflow.Operator { return &lateOp{} }, 2, arrowflow.Forward(s))
	b := g.Operator("late-b", func() arrowflow.Operator { return &lateOp{} }, 3, arrowflow.KeyBy(a, "key"))
	p := g.Operator("plain", ops.Filter(func(arrow.RecordBatch, int) bool { return true }), 3, arrowflow.Forward(b))
	g.Sink("sink", blackhole.New(), 3, arrowflow.Forward(p))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if c := job.OperatorCounts(); len(c) != 0 {
		t.Fatalf("counts before the job opened: %+v", c)
	}
	sum := func(cs []arrowflow.OperatorCount, op string) (n int64, subtasks int) {
		for _, c := range cs {
			if c.Operator == op {
				n += c.LateRows
				subtasks++
			}
		}
		return n, subtasks
	}

	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	// Mid-run: every source subtask waits at the gate after its first
	// batches; the counts of those batches must already be published.
	midA, midB := int64(2*first*oddPerBatch), int64(2*first*oddPerBatch)
	deadline := time.Now().Add(20 * time.Second)
	prev := map[[2]any]int64{}
	for {
		cs := job.OperatorCounts()
		for _, c := range cs {
			k := [2]any{c.Operator, c.Subtask}
			if c.LateRows < prev[k] {
				t.Fatalf("%s[%d]: late rows went back from %d to %d", c.Operator, c.Subtask, prev[k], c.LateRows)
			}
			prev[k] = c.LateRows
		}
		na, sa := sum(cs, "late-a")
		nb, sb := sum(cs, "late-b")
		if na == midA && nb == midB && sa == 2 && sb == 3 {
			break
		}
		if na > midA || nb > midB || time.Now().After(deadline) {
			t.Fatalf("while the sources wait: late-a %d over %d subtasks, late-b %d over %d; want %d and %d over 2 and 3", na, sa, nb, sb, midA, midB)
		}
		time.Sleep(time.Millisecond)
	}
	close(src.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	cs := job.OperatorCounts()
	want := []struct {
		op      string
		subtask int
	}{{"late-a", 0}, {"late-a", 1}, {"late-b", 0}, {"late-b", 1}, {"late-b", 2}}
	if len(cs) != len(want) {
		t.Fatalf("counts after the end: %+v; want late-a's 2 and late-b's 3 subtasks, not plain's", cs)
	}
	for i, w := range want {
		if cs[i].Operator != w.op || cs[i].Subtask != w.subtask {
			t.Fatalf("count %d is %s[%d], want %s[%d]: %+v", i, cs[i].Operator, cs[i].Subtask, w.op, w.subtask, cs)
		}
	}
	// One final watermark and Finish per subtask on top of the rows.
	for _, c := range cs[:2] {
		if w := int64((first+rest)*oddPerBatch + 1 + 100); c.LateRows != w {
			t.Fatalf("late-a[%d]: %d late rows, want %d", c.Subtask, c.LateRows, w)
		}
	}
	if nb, _ := sum(cs, "late-b"); nb != int64(2*(first+rest)*oddPerBatch+3*(1+100)) {
		t.Fatalf("late-b: %d late rows in all, want %d", nb, 2*(first+rest)*oddPerBatch+3*101)
	}
}
