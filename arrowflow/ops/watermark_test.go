package ops_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
)

var wmSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func wmBatch(mem memory.Allocator, ts []*int64, sel []int32) arrowflow.Batch {
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	vb := array.NewInt64Builder(mem)
	defer tb.Release()
	defer vb.Release()
	for i, t := range ts {
		if t == nil {
			tb.AppendNull()
		} else {
			tb.Append(arrow.Timestamp(*t))
		}
		vb.Append(int64(i))
	}
	ta, va := tb.NewArray(), vb.NewArray()
	defer ta.Release()
	defer va.Release()
	b := arrowflow.NewBatch(array.NewRecordBatch(wmSchema, []arrow.Array{ta, va}, int64(len(ts))))
	b.Sel = sel
	return b
}

// The watermark is the running maximum of ts - 5 s over the live rows
// (NULLs and rows outside the selection do not count), emitted after a
// batch only when it grew; upstream watermarks are dropped except the end
// of input. Checked against a row-at-a-time reference over random
// batches.
func TestAssignWatermarksMatchesRunningMax(t *testing.T) {
	delay := 5 * time.Second
	for _, expr := range []kernels.Expr{
		kernels.Sub(kernels.Col("ts"), kernels.Lit(delay)),                                                        // the fast path
		kernels.Sub(kernels.Sub(kernels.Col("ts"), kernels.Lit(2*time.Second)), kernels.Lit(delay-2*time.Second)), // evaluated
	} {
		t.Run(expr.String(), func(t *testing.T) { testAssignWatermarks(t, expr, delay) })
	}
}

func testAssignWatermarks(t *testing.T, expr kernels.Expr, delay time.Duration) {
	mem := newMem(t)
	op := openOp(t, ops.AssignWatermarks(expr), taskInfo(mem))
	out := newEmitter(t)
	rng := rand.New(rand.NewPCG(1, 2))
	ref := arrowflow.MinEventTime
	var want []arrowflow.EventTime
	rows := 0
	for range 200 {
		n := 1 + rng.IntN(20)
		ts := make([]*int64, n)
		for i := range ts {
			if rng.IntN(10) > 0 {
				v := int64(1_700_000_000_000 + rng.IntN(100_000))
				ts[i] = &v
			}
		}
		sel := makeSel(rng, n, selMode(rng.IntN(4)))
		for _, i := range selected(n, sel) {
			if ts[i] != nil {
				if e := arrowflow.EventTime((*ts[i])*int64(time.Millisecond) - int64(delay)); e > ref {
					ref = e
				}
			}
		}
		// one watermark per batch that raised the maximum
		if len(want) == 0 && ref != arrowflow.MinEventTime || len(want) > 0 && ref > want[len(want)-1] {
			want = append(want, ref)
		}
		rows += len(selected(n, sel))
		if err := op.ProcessBatch(0, wmBatch(mem, ts, sel), out); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(5) == 0 { // an upstream watermark is dropped
			if err := op.ProcessWatermark(arrowflow.EventTime(rng.Int64()), out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
		t.Fatal(err)
	}
	want = append(want, arrowflow.MaxEventTime)
	if len(out.wms) != len(want) {
		t.Fatalf("%d watermarks, want %d: %v vs %v", len(out.wms), len(want), out.wms, want)
	}
	for i := range want {
		if out.wms[i] != want[i] {
			t.Fatalf("watermark %d: %v, want %v", i, out.wms[i], want[i])
		}
	}
	got := 0
	for _, b := range out.batches {
		got += b.NumRows()
	}
	if got != rows {
		t.Fatalf("%d rows passed, want %d", got, rows)
	}
}

func TestAssignWatermarksRejectsNonTimestamps(t *testing.T) {
	mem := newMem(t)
	for _, e := range []kernels.Expr{kernels.Col("v"), kernels.Col("nope")} {
		op := openOp(t, ops.AssignWatermarks(e), taskInfo(mem))
		v := int64(1)
		if err := op.ProcessBatch(0, wmBatch(mem, []*int64{&v}, nil), newEmitter(t)); err == nil {
			t.Errorf("%s: no error", e)
		}
	}
}
