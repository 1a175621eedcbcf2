package optest_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// The harness runs a real operator of weir: window.Aggregate's keyed
// tumbling sum and count, with a watermark per epoch, against a plain
// reference.
func TestRunWindowAggregate(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	const epochs, perEpoch, sizeMs = 4, 150, 1000
	rng := rand.New(rand.NewPCG(3, 4))
	base := int64(1_700_000_000_000)
	var rows []optest.Row
	for i := range epochs * perEpoch {
		// Event times advance 10 ms a row with up to 50 ms of disorder.
		ts := base + int64(i)*10 + rng.Int64N(50)
		var key, v any = rng.Int64N(5), rng.Int64N(100) - 20
		if rng.IntN(15) == 0 {
			key = nil
		}
		if rng.IntN(8) == 0 {
			v = nil
		}
		rows = append(rows, optest.Row{Values: []any{key, time.UnixMilli(ts).UTC(), v}, Epoch: i / perEpoch})
	}
	// The watermark of epoch e is just behind every row of later epochs,
	// so no row is late.
	wm := func(e int) int64 {
		m := int64(1<<62 - 1)
		for _, r := range rows {
			if r.Epoch > e {
				m = min(m, r.Values[1].(time.Time).UnixMilli())
			}
		}
		return m - 1
	}
	type group struct {
		start int64
		key   any
	}
	type acc struct {
		sum    int64
		sumOK  bool
		n      int64
		fields []any
	}
	want := func(e int) [][]any {
		limit := int64(1<<62 - 1)
		if e < epochs-1 {
			limit = wm(e)
		}
		accs := map[group]*acc{}
		var order []group
		for _, r := range rows {
			ts := r.Values[1].(time.Time).UnixMilli()
			start := ts - ts%sizeMs
			if start+sizeMs-1 > limit {
				continue // the window has not fired
			}
			g := group{start, r.Values[0]}
			a := accs[g]
			if a == nil {
				a = &acc{}
				accs[g] = a
				order = append(order, g)
			}
			a.n++
			if v, ok := r.Values[2].(int64); ok {
				a.sum += v
				a.sumOK = true
			}
		}
		var out [][]any
		for _, g := range order {
			a := accs[g]
			var s any
			if a.sumOK {
				s = a.sum
			}
			out = append(out, []any{time.UnixMilli(g.start).UTC(), time.UnixMilli(g.start + sizeMs).UTC(), g.key, s, a.n})
		}
		return out
	}
	agg := window.Aggregate{
		Input:  schema,
		Time:   "ts",
		Window: window.Tumbling(sizeMs * time.Millisecond),
		Keys:   []string{"key"},
		Aggs: []window.Agg{
			{Func: kernels.AggSum, Args: []string{"v"}, Name: "s"},
			{Func: kernels.AggCountStar, Name: "n"},
		},
	}
	if err := agg.Validate(); err != nil {
		t.Fatal(err)
	}
	optest.Run(t, optest.Case{
		Name:       "tumbling",
		Factory:    agg.Factory(),
		Inputs:     []optest.Input{{Schema: schema, KeyBy: []string{"key"}, Rows: rows}},
		Want:       want,
		AppendOnly: true,
		Watermark: func(e int) (arrowflow.EventTime, bool) {
			return arrowflow.EventTime(wm(e) * int64(time.Millisecond)), e < epochs-1
		},
	})
}
