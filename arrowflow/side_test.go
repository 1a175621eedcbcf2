package arrowflow_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/blackhole"
)

// splitOp sends rows with an even id to its main output and the others to
// its side output "odd".
type splitOp struct{ arrowflow.BaseOperator }

func (splitOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	ids := b.Record.Column(0).(*array.Int64)
	var even, odd []int32
	for k := 0; k < b.NumRows(); k++ {
		r := b.Row(k)
		if ids.Value(r)%2 == 0 {
			even = append(even, int32(r))
		} else {
			odd = append(odd, int32(r))
		}
	}
	side := b.Share()
	side.Sel = append([]int32{}, odd...)
	b.Sel = append([]int32{}, even...)
	if err := out.Emit(b); err != nil {
		side.Release()
		return err
	}
	return out.(arrowflow.SideEmitter).EmitSide("odd", side)
}

func TestSideOutput(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 100, 10)
	defer rec.Release()
	var mu sync.Mutex
	seen := map[string]map[int64]int{"main": {}, "odd": {}}
	record := func(which string) func(arrowflow.Batch) error {
		return func(b arrowflow.Batch) error {
			ids := b.Record.Column(0).(*array.Int64)
			mu.Lock()
			defer mu.Unlock()
			for k := 0; k < b.NumRows(); k++ {
				seen[which][ids.Value(b.Row(k))]++
			}
			return nil
		}
	}
	g := arrowflow.NewGraph("side")
	src := g.Source("src", &replaySource{rec: rec, splits: 2, per: 3}, 2)
	split := g.Operator("split", func() arrowflow.Operator { return splitOp{} }, 2, arrowflow.Forward(src))
	g.Sink("evens", &funcSink{write: record("main")}, 2, arrowflow.Forward(split))
	g.Sink("odds", &funcSink{write: record("odd")}, 1, arrowflow.Rebalance(split).FromSide("odd"))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(job.Explain(), `(split, side output "odd")`) {
		t.Errorf("the plan does not show the side output:\n%s", job.Explain())
	}
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	// 2 splits x 3 batches of ids 0..99: each id 6 times, on its side.
	for id := int64(0); id < 100; id++ {
		which, other := "main", "odd"
		if id%2 == 1 {
			which, other = other, which
		}
		if seen[which][id] != 6 || seen[other][id] != 0 {
			t.Fatalf("id %d: %d times on %s, %d on %s; want 6 and 0", id, seen[which][id], which, seen[other][id], other)
		}
	}
}

func TestSideOutputValidation(t *testing.T) {
	g := arrowflow.NewGraph("side-only")
	mem := checkedAlloc(t)
	rec := int64Record(mem, 10, 2)
	defer rec.Release()
	src := g.Source("src", &replaySource{rec: rec, splits: 1, per: 1}, 1)
	split := g.Operator("split", func() arrowflow.Operator { return splitOp{} }, 1, arrowflow.Forward(src))
	g.Sink("odds", blackhole.New(), 1, arrowflow.Forward(split).FromSide("odd"))
	g.Sink("bad", blackhole.New(), 1, arrowflow.Forward(src).FromSide("x"))
	_, err := g.Plan(arrowflow.Options{})
	if err == nil || !strings.Contains(err.Error(), `operator "split": output is not consumed`) ||
		!strings.Contains(err.Error(), `only operators have side outputs`) {
		t.Fatalf("got %v", err)
	}
}
