package changelog

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// overTestSchema is the input of the OVER tests: partition k, event time
// ts, and arguments v, s, f (all nullable but ts).
var overTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

var overTestAggs = []window.Agg{
	{Func: kernels.AggCountStar, Name: "n"},
	{Func: kernels.AggCount, Args: []string{"v"}, Name: "nv"},
	{Func: kernels.AggSum, Args: []string{"v"}, Name: "sv"},
	{Func: kernels.AggAvg, Args: []string{"v"}, Name: "av"},
	{Func: kernels.AggMax, Args: []string{"v"}, Name: "xv"},
	{Func: kernels.AggMin, Args: []string{"s"}, Name: "ms"},
	{Func: kernels.AggSum, Args: []string{"f"}, Name: "sf"},
	{Func: kernels.AggMin, Args: []string{"f"}, Name: "mf"},
}

const overTestBase = int64(1_700_000_000_000) // ms

// overGen makes n rows in epochs epochs over parts partitions (and NULL):
// times advance about 5 ms a row in steps of 10 ms (ties), with up to
// 60 ms of disorder, so that some rows fall behind the watermark of the
// epoch before theirs (late); a few have a null time.
func overGen(seed uint64, n, parts, epochs int) []optest.Row {
	rng := rand.New(rand.NewPCG(seed, 11))
	strs := []string{"", "a", "ab", "b", "zz"}
	var rows []optest.Row
	for i := range n {
		ts := overTestBase + int64(i)*5 + rng.Int64N(60)
		if rng.IntN(10) == 0 {
			ts -= 100 // far behind: late when it follows a watermark
		}
		ts -= ts % 10
		var k, v, s, f, t any = rng.Int64N(int64(parts)), rng.Int64N(200) - 50, strs[rng.IntN(len(strs))], float64(rng.IntN(40)-10) / 2, time.UnixMilli(ts).UTC()
		if rng.IntN(12) == 0 {
			k = nil
		}
		if rng.IntN(6) == 0 {
			v = nil
		}
		if rng.IntN(6) == 0 {
			s = nil
		}
		switch rng.IntN(40) {
		case 0:
			f = math.NaN()
		case 1:
			f = math.Inf(1)
		case 2:
			f = math.Inf(-1)
		}
		if rng.IntN(6) == 0 {
			f = nil
		}
		if rng.IntN(100) == 0 {
			t = nil
		}
		rows = append(rows, optest.Row{Values: []any{k, t, v, s, f}, Epoch: i * epochs / n})
	}
	return rows
}

// overWatermark is the watermark of epoch e: 20 ms behind the latest
// regular time of the rows of epochs up to e.
func overWatermark(rows []optest.Row, e int) int64 {
	hi := -1
	for i, r := range rows {
		if r.Epoch <= e {
			hi = i
		}
	}
	return overTestBase + int64(hi)*5 - 20
}

// overReference computes the materialized output after epoch e: every row
// not late (time after the watermark of the epochs before its own) and at
// or before the watermark of epoch e (all of them after the last epoch),
// with its aggregates over its frame, row at a time.
func overReference(rows []optest.Row, frame OverFrame, partitioned bool, e, epochs int) [][]any {
	wmOf := func(ep int) int64 {
		if ep < 0 {
			return -1 << 62
		}
		return overWatermark(rows, ep)
	}
	type rrow struct {
		idx int
		t   int64
		r   optest.Row
	}
	parts := map[any][]rrow{}
	for i, r := range rows {
		if r.Epoch > e || r.Values[1] == nil {
			continue
		}
		t := r.Values[1].(time.Time).UnixMilli()
		if t <= wmOf(r.Epoch-1) {
			continue // late
		}
		var k any
		if partitioned {
			k = r.Values[0]
		}
		parts[k] = append(parts[k], rrow{i, t, r})
	}
	limit := wmOf(e)
	if e == epochs-1 {
		limit = 1 << 62
	}
	var out [][]any
	for _, p := range parts {
		slices.SortStableFunc(p, func(a, b rrow) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.idx, b.idx)) })
		for i, cur := range p {
			if cur.t > limit {
				continue
			}
			var fr []rrow
			for j, x := range p {
				in := false
				switch {
				case frame.Range && frame.Unbounded:
					in = x.t <= cur.t
				case frame.Range:
					in = x.t <= cur.t && x.t >= cur.t-frame.Interval.Milliseconds()
				case frame.Unbounded:
					in = j <= i
				default:
					in = j <= i && int64(j) >= int64(i)-frame.Rows
				}
				if in {
					fr = append(fr, x)
				}
			}
			var (
				nv        int64
				sv        int64
				xv        any
				ms        any
				sf        float64
				nf        int64
				mf        any
				svAny, av any
				sfAny     any
			)
			for _, x := range fr {
				if v, ok := x.r.Values[2].(int64); ok {
					nv++
					sv += v
					if xv == nil || v > xv.(int64) {
						xv = v
					}
				}
				if s, ok := x.r.Values[3].(string); ok && (ms == nil || s < ms.(string)) {
					ms = s
				}
				if f, ok := x.r.Values[4].(float64); ok {
					nf++
					sf += f
					if mf == nil || overTestLess(f, mf.(float64)) {
						mf = f
					}
				}
			}
			if nv > 0 {
				svAny, av = sv, float64(sv)/float64(nv)
			}
			if nf > 0 {
				sfAny = sf
			}
			row := append(slices.Clone(cur.r.Values), int64(len(fr)), nv, svAny, av, xv, ms, sfAny, mf)
			out = append(out, row)
		}
	}
	return out
}

// overTestLess orders floats as MIN does: NaN above every number.
func overTestLess(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

func TestOverAggregateReference(t *testing.T) {
	const n, epochs = 300, 5
	rows := overGen(1, n, 4, epochs)
	late := 0
	for _, r := range rows {
		if r.Values[1] != nil && r.Epoch > 0 && r.Values[1].(time.Time).UnixMilli() <= overWatermark(rows, r.Epoch-1) {
			late++
		}
	}
	if late == 0 {
		t.Fatal("the generated input has no late rows")
	}
	frames := []OverFrame{OverRows(3), OverRows(0), OverRowsUnbounded(), OverRange(40 * time.Millisecond), OverRangeUnbounded()}
	for _, fr := range frames {
		for _, partitioned := range []bool{true, false} {
			name := strings.ReplaceAll(fr.String(), " ", "_")
			if !partitioned {
				name += "/unpartitioned"
			}
			t.Run(name, func(t *testing.T) {
				cfg := OverAggregate{Input: overTestSchema, Time: "ts", Frame: fr, Aggs: overTestAggs, compactMin: 8}
				var keyBy []string
				if partitioned {
					cfg.PartitionBy, keyBy = []string{"k"}, []string{"k"}
				}
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				optest.Run(t, optest.Case{
					Name:       name,
					Factory:    cfg.Factory(),
					Inputs:     []optest.Input{{Schema: overTestSchema, KeyBy: keyBy, Rows: rows}},
					AppendOnly: true,
					Want:       func(e int) [][]any { return overReference(rows, fr, partitioned, e, epochs) },
					Watermark: func(e int) (arrowflow.EventTime, bool) {
						return arrowflow.EventTime(overWatermark(rows, e) * int64(time.Millisecond)), true
					},
					WantWatermark: func(e int) (arrowflow.EventTime, bool) {
						if e == epochs-1 {
							return arrowflow.MaxEventTime, true
						}
						return arrowflow.EventTime(overWatermark(rows, e) * int64(time.Millisecond)), true
					},
				})
			})
		}
	}
}

// overRun feeds batches to one instance directly and returns its output
// rows and the instance (closed by the caller).
func overRun(t *testing.T, cfg OverAggregate, mem memory.Allocator, batches [][][]any, wms []int64) ([][]any, *overOp) {
	t.Helper()
	op := cfg.Factory()().(*overOp)
	info := &arrowflow.TaskInfo{Name: "over", Parallelism: 1, MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem}
	if err := op.Open(info); err != nil {
		t.Fatal(err)
	}
	em := &overEmitter{}
	for i, rows := range batches {
		rec, err := optest.BuildRecord(mem, cfg.Input, rows)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec}, em); err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessWatermark(arrowflow.EventTime(wms[i]*int64(time.Millisecond)), em); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Finish(em); err != nil {
		t.Fatal(err)
	}
	return em.rows, op
}

type overEmitter struct {
	rows [][]any
	wms  []arrowflow.EventTime
}

func (e *overEmitter) Emit(b arrowflow.Batch) error {
	defer b.Release()
	for _, c := range optest.Changes(b) {
		e.rows = append(e.rows, c.Values)
	}
	return nil
}

func (e *overEmitter) EmitWatermark(wm arrowflow.EventTime) error {
	e.wms = append(e.wms, wm)
	return nil
}

// Rows of equal time: RANGE peers share one result that includes all of
// them; ROWS numbers them in arrival order. Late rows are dropped and
// counted.
func TestOverAggregateTiesAndLate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	ts := func(ms int64) time.Time { return time.UnixMilli(overTestBase + ms).UTC() }
	batches := [][][]any{
		{{1, ts(10), 5, "b", 1.0}, {1, ts(10), 7, "a", 2.0}, {1, ts(5), 1, nil, nil}, {1, ts(30), 2, "c", 0.5}},
		{{1, ts(20), 100, "z", 0.0}, {1, ts(30), 3, "d", nil}}, // ts(20) is late (watermark 20)
	}
	wms := []int64{overTestBase + 20, overTestBase + 40}
	for _, tc := range []struct {
		frame OverFrame
		want  []int64 // count(*) per output row, in output order
		sums  []any
	}{
		{OverRangeUnbounded(), []int64{1, 3, 3, 5, 5}, []any{int64(1), int64(13), int64(13), int64(18), int64(18)}},
		{OverRowsUnbounded(), []int64{1, 2, 3, 4, 5}, []any{int64(1), int64(6), int64(13), int64(15), int64(18)}},
		{OverRows(1), []int64{1, 2, 2, 2, 2}, []any{int64(1), int64(6), int64(12), int64(9), int64(5)}},
		{OverRange(5 * time.Millisecond), []int64{1, 3, 3, 2, 2}, []any{int64(1), int64(13), int64(13), int64(5), int64(5)}},
	} {
		t.Run(tc.frame.String(), func(t *testing.T) {
			cfg := OverAggregate{Input: overTestSchema, PartitionBy: []string{"k"}, Time: "ts", Frame: tc.frame, Aggs: overTestAggs[:3]}
			got, op := overRun(t, cfg, mem, batches, wms)
			defer op.Close()
			if st := op.OverStats(); st.LateRows != 1 || op.LateRows() != 1 {
				t.Errorf("late rows %d (%d), want 1", st.LateRows, op.LateRows())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d rows, want %d: %v", len(got), len(tc.want), got)
			}
			for i, r := range got {
				if r[5] != tc.want[i] || r[7] != tc.sums[i] {
					t.Errorf("row %d %v: count %v sum %v, want %d %v", i, optest.FormatRow(r), r[5], r[7], tc.want[i], tc.sums[i])
				}
			}
		})
	}
}

func TestOverAggregateValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  OverAggregate
		want string
	}{
		{OverAggregate{Input: overTestSchema, Time: "v", Aggs: overTestAggs}, "must be a timestamp"},
		{OverAggregate{Input: overTestSchema, Time: "ts"}, "no aggregates"},
		{OverAggregate{Input: overTestSchema, Time: "ts", Aggs: []window.Agg{{Func: kernels.AggCountDistinct, Args: []string{"v"}, Name: "d"}}}, "not supported over a window"},
		{OverAggregate{Input: overTestSchema, Time: "ts", Aggs: []window.Agg{{Func: kernels.AggSum, Args: []string{"s"}, Name: "d"}}}, "unsupported argument type"},
		{OverAggregate{Input: overTestSchema, Time: "ts", Aggs: []window.Agg{{Func: kernels.AggSum, Args: []string{"v"}, Name: "v"}}}, "already a column"},
		{OverAggregate{Input: overTestSchema, Time: "ts", PartitionBy: []string{"x"}, Aggs: overTestAggs}, `partition column "x" not found`},
		{OverAggregate{Input: overTestSchema, Time: "ts", Frame: OverRows(-1), Aggs: overTestAggs}, "negative"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, tc.want)
		}
	}
}

// A retraction in the input is an error naming it.
func TestOverAggregateRefusesRetractions(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := OverAggregate{Input: overTestSchema, Time: "ts", Frame: OverRowsUnbounded(), Aggs: overTestAggs[:1]}
	op := cfg.Factory()()
	if err := op.Open(&arrowflow.TaskInfo{Name: "over", Parallelism: 1, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	rec, err := optest.BuildRecord(mem, overTestSchema, [][]any{{1, time.UnixMilli(overTestBase).UTC(), 1, "a", 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	err = op.ProcessBatch(0, arrowflow.NewChangeBatch(rec, []arrowflow.RowKind{arrowflow.Delete}), &overEmitter{})
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("ProcessBatch: %v, want an append-only error", err)
	}
}

// Over processing time every row goes out with its batch, its frame in
// arrival order: ROWS frames against a reference, through every optest
// configuration.
func TestOverAggregateProcessingTime(t *testing.T) {
	const epochs = 4
	rows := overGen(4, 200, 3, epochs)
	aggs := overTestAggs[:3]
	for _, fr := range []OverFrame{OverRows(2), OverRowsUnbounded()} {
		t.Run(fr.String(), func(t *testing.T) {
			cfg := OverAggregate{Input: overTestSchema, PartitionBy: []string{"k"}, ProcessingTime: true, Frame: fr, Aggs: aggs, compactMin: 4}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			want := func(e int) [][]any {
				parts := map[any][][]any{}
				var out [][]any
				for _, r := range optest.UpTo(rows, e) {
					k := r.Values[0]
					parts[k] = append(parts[k], r.Values)
					frame := parts[k]
					if !fr.Unbounded {
						frame = frame[max(0, len(frame)-3):]
					}
					var nv, sv int64
					for _, x := range frame {
						if v, ok := x[2].(int64); ok {
							nv++
							sv += v
						}
					}
					var s any
					if nv > 0 {
						s = sv
					}
					out = append(out, append(slices.Clone(r.Values), int64(len(frame)), nv, s))
				}
				return out
			}
			optest.Run(t, optest.Case{
				Name:       "proctime",
				Factory:    cfg.Factory(),
				Inputs:     []optest.Input{{Schema: overTestSchema, KeyBy: []string{"k"}, Rows: rows}},
				AppendOnly: true,
				Want:       want,
			})
		})
	}
	// RANGE UNBOUNDED: the rows of a batch and partition are peers.
	mem := testutil.CheckedAllocator(t)
	cfg := OverAggregate{Input: overTestSchema, PartitionBy: []string{"k"}, ProcessingTime: true, Frame: OverRangeUnbounded(), Aggs: aggs[:1]}
	ts := time.UnixMilli(overTestBase).UTC()
	got, op := overRun(t, cfg, mem, [][][]any{{{1, ts, 1, nil, nil}, {1, nil, 2, nil, nil}, {2, ts, 3, nil, nil}}, {{1, ts, 4, nil, nil}}}, []int64{0, 0})
	defer op.Close()
	var counts []int64
	for _, r := range got {
		counts = append(counts, r[5].(int64))
	}
	if !slices.Equal(counts, []int64{2, 2, 1, 3}) {
		t.Errorf("RANGE UNBOUNDED over processing time: counts %v, want [2 2 1 3]", counts)
	}
	if err := (OverAggregate{Input: overTestSchema, ProcessingTime: true, Frame: OverRange(time.Second), Aggs: aggs}).Validate(); err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Errorf("RANGE INTERVAL over processing time: %v, want refused", err)
	}
}
