package arrowflow_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/datagen"
)

// The jobs below read datagen's default fields (id, key, category, price,
// ts), keep rows whose price is not null and whose key is not a multiple
// of 3, and then (a) drop the ts column after a keyed exchange and (b)
// count rows and sum prices per key.

func keep(price any, key int64) bool { return price != nil && key%3 != 0 }

func keepFilter() arrowflow.OperatorFactory {
	return ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		p := rec.Column(3)
		k := rec.Column(1).(*array.Int64).Value(i)
		return p.IsValid(i) && k%3 != 0
	})
}

func dropTS() arrowflow.OperatorFactory {
	return ops.MapRecords(func(rec arrow.RecordBatch, _ memory.Allocator) (arrow.RecordBatch, error) {
		cols := []arrow.Array{rec.Column(0), rec.Column(1), rec.Column(2), rec.Column(3)}
		schema := arrow.NewSchema(rec.Schema().Fields()[:4], nil)
		return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
	})
}

// rowKey is the canonical form of a projected row (id, key, category,
// price) for multiset comparison.
func rowKey(id, key int64, category string, price float64) string {
	return fmt.Sprintf("%d|%d|%s|%.2f", id, key, category, price)
}

type keyTotals struct {
	count int64
	sum   float64
}

// oracle computes, row at a time from datagen's own definition of each
// row, what the jobs must output for the rows whose numbers satisfy in.
func oracle(src *datagen.Source, rows int64, in func(r int64) bool) (projected []string, totals map[int64]keyTotals) {
	totals = make(map[int64]keyTotals)
	for r := int64(0); r < rows; r++ {
		if in != nil && !in(r) {
			continue
		}
		v := src.Row(r)
		key := v[1].(int64)
		if !keep(v[3], key) {
			continue
		}
		price := v[3].(float64)
		projected = append(projected, rowKey(v[0].(int64), key, v[2].(string), price))
		t := totals[key]
		t.count++
		t.sum += price
		totals[key] = t
	}
	sort.Strings(projected)
	return projected, totals
}

func collectedProjected(t *testing.T, s *collect.Sink) []string {
	t.Helper()
	var out []string
	for _, r := range s.Rows() {
		if len(r) != 4 {
			t.Fatalf("projected row has %d columns: %v", len(r), r)
		}
		out = append(out, rowKey(r[0].(int64), r[1].(int64), r[2].(string), r[3].(float64)))
	}
	sort.Strings(out)
	return out
}

func collectedTotals(t *testing.T, s *collect.Sink) map[int64]keyTotals {
	t.Helper()
	out := make(map[int64]keyTotals)
	for _, r := range s.Rows() {
		k := r[0].(int64)
		if _, dup := out[k]; dup {
			t.Fatalf("key %d emitted twice", k)
		}
		out[k] = keyTotals{count: r[1].(int64), sum: r[2].(float64)}
	}
	return out
}

func sameMultiset(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, oracle %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: first difference at sorted row %d: got %s, oracle %s", what, i, got[i], want[i])
		}
	}
}

func sameTotals(t *testing.T, what string, got, want map[int64]keyTotals) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, oracle %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: key %d missing", what, k)
		}
		// Counts are exact; float sums depend on the order of additions,
		// which differs with parallelism, so allow rounding error.
		if g.count != w.count || math.Abs(g.sum-w.sum) > 1e-9*math.Abs(w.sum) {
			t.Fatalf("%s: key %d: got count %d sum %v, oracle count %d sum %v", what, k, g.count, g.sum, w.count, w.sum)
		}
	}
}

// buildJob builds datagen -> filter, fanned out to a keyed projection
// into sink a and a keyed count into sink b.
func buildJob(src *datagen.Source, srcPar, par int, a, b arrowflow.Sink, extra arrowflow.OperatorFactory) *arrowflow.Graph {
	g := arrowflow.NewGraph("oracle")
	s := g.Source("gen", src, srcPar)
	f := g.Operator("keep", keepFilter(), srcPar, arrowflow.Forward(s))
	p := g.Operator("project", dropTS(), par, arrowflow.KeyBy(f, "key"))
	if extra != nil {
		p = g.Operator("extra", extra, par, arrowflow.Forward(p))
	}
	g.Sink("projected", a, par, arrowflow.Forward(p))
	c := g.Operator("count", ops.CountByKey{Key: "key", Value: "price"}.Factory(), par, arrowflow.KeyBy(f, "key"))
	g.Sink("totals", b, par, arrowflow.Forward(c))
	return g
}

func TestKeyedExchangeMatchesRowOracle(t *testing.T) {
	for _, batch := range []int{1, 7, 1024} {
		rows := int64(20000)
		if batch == 1 {
			rows = 2000
		}
		for _, par := range []int{1, 2, 4} {
			for _, srcPar := range []int{1, 3} {
				t.Run(fmt.Sprintf("batch=%d/par=%d/srcpar=%d", batch, par, srcPar), func(t *testing.T) {
					mem := checkedAlloc(t)
					src, err := datagen.New(datagen.Config{Seed: 42, Rows: rows, BatchSize: batch,
						EventTime: datagen.EventTimeConfig{MaxOutOfOrderness: 50 * time.Millisecond}})
					if err != nil {
						t.Fatal(err)
					}
					a, b := collect.New(), collect.New()
					job, err := buildJob(src, srcPar, par, a, b, nil).Plan(arrowflow.Options{Allocator: mem})
					if err != nil {
						t.Fatal(err)
					}
					if err := job.Run(context.Background()); err != nil {
						t.Fatal(err)
					}
					wantRows, wantTotals := oracle(src, rows, nil)
					sameMultiset(t, "projected", collectedProjected(t, a), wantRows)
					sameTotals(t, "totals", collectedTotals(t, b), wantTotals)
					if job.EpochsCompleted() != 1 {
						t.Fatalf("bounded job without checkpoints committed %d epochs, want the final one", job.EpochsCompleted())
					}
				})
			}
		}
	}
}

// lateChecker counts rows at or behind the watermark it last saw, and
// records every watermark.
type lateChecker struct {
	arrowflow.BaseOperator
	wm    arrowflow.EventTime
	late  *int
	rows  *int
	marks *[]arrowflow.EventTime
}

func (c *lateChecker) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	col, ok := arrowflow.EventTimeColumn(b.Schema())
	if !ok {
		return fmt.Errorf("no event-time column in %s", b.Schema())
	}
	ts := b.Record.Column(col).(*array.Timestamp)
	unit := ts.DataType().(*arrow.TimestampType).Unit
	for k := 0; k < b.NumRows(); k++ {
		*c.rows++
		if arrowflow.TimestampToEventTime(ts.Value(b.Row(k)), unit) <= c.wm {
			*c.late++
		}
	}
	return out.Emit(b)
}

func (c *lateChecker) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	c.wm = wm
	*c.marks = append(*c.marks, wm)
	return out.EmitWatermark(wm)
}

// Watermarks combine as the minimum over a task's inputs, so rows that
// were in order with respect to their source's watermark stay so after a
// keyed exchange from several source subtasks.
func TestWatermarksAcrossExchangeNeverMakeRowsLate(t *testing.T) {
	mem := checkedAlloc(t)
	const rows = 50000
	src, err := datagen.New(datagen.Config{Seed: 7, Rows: rows, BatchSize: 256, Splits: 6,
		EventTime: datagen.EventTimeConfig{MaxOutOfOrderness: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	const par = 2
	late, seen := make([]int, par), make([]int, par)
	marks := make([][]arrowflow.EventTime, par)
	next := 0
	g := arrowflow.NewGraph("watermarks")
	s := g.Source("gen", src, 3)
	c := g.Operator("check", func() arrowflow.Operator {
		i := next
		next++
		return &lateChecker{wm: arrowflow.MinEventTime, late: &late[i], rows: &seen[i], marks: &marks[i]}
	}, par, arrowflow.KeyBy(s, "key"))
	out := collect.New()
	g.Sink("out", out, 1, arrowflow.Rebalance(c))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := 0; i < par; i++ {
		total += seen[i]
		if late[i] != 0 {
			t.Errorf("subtask %d saw %d late rows", i, late[i])
		}
		m := marks[i]
		if len(m) < 10 {
			t.Fatalf("subtask %d saw only %d watermarks", i, len(m))
		}
		if !slices.IsSorted(m) {
			t.Errorf("subtask %d: watermarks went backwards", i)
		}
		if m[len(m)-1] != arrowflow.MaxEventTime {
			t.Errorf("subtask %d: last watermark %s, want +inf at end of input", i, m[len(m)-1])
		}
		if m[len(m)-2] == arrowflow.MinEventTime {
			t.Errorf("subtask %d: watermark never advanced before the end", i)
		}
	}
	if total != rows || len(out.Rows()) != rows {
		t.Fatalf("checked %d rows, sink got %d, want %d", total, len(out.Rows()), rows)
	}
}
