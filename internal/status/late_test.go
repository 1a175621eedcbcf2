package status_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/datagen"
	"github.com/weirflow/weir/window"
)

// lateGraph is datagen (2 subtasks, rows up to 200 ms out of order) ->
// a watermark of `ts` itself, with no bound, so that rows behind the
// newest of the batches before theirs are late -> keyed by key -> a
// count per key in tumbling 10 ms windows -> a collect sink.
func lateGraph(t *testing.T, rows int64) *arrowflow.Graph {
	t.Helper()
	src, err := datagen.New(datagen.Config{Seed: 3, Rows: rows, BatchSize: 64, Splits: 2,
		EventTime: datagen.EventTimeConfig{MaxOutOfOrderness: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	agg := window.Aggregate{
		Input: src.Schema(), Time: "ts", Window: window.Tumbling(10 * time.Millisecond), Keys: []string{"key"},
		Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "rows"}},
	}
	if err := agg.Validate(); err != nil {
		t.Fatal(err)
	}
	g := arrowflow.NewGraph("late-test")
	gen := g.Source("gen", src, 2)
	wm := g.Operator("wm", ops.AssignWatermarks(kernels.Col("ts")), 2, arrowflow.Forward(gen))
	win := g.Operator("per-key", agg.Factory(), 2, arrowflow.KeyBy(wm, "key"))
	g.Sink("out", collect.New(), 2, arrowflow.Forward(win))
	return g
}

// The late rows window operators drop show in /status, per operator
// subtask and in all, and in /metrics as weir_operator_late_rows_total,
// the same numbers; operators that drop none (the watermark assigner)
// are not listed.
func TestLateRowsInStatusAndMetrics(t *testing.T) {
	r := runJob(t, lateGraph(t, 20_000), "")
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
		r.done <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("the bounded job did not end")
	}
	st := getStatus(t, r)
	if len(st.LateRows) != 2 {
		t.Fatalf("late rows %+v, want per-key's 2 subtasks", st.LateRows)
	}
	var sum int64
	for i, l := range st.LateRows {
		if l.Operator != "per-key" || l.Subtask != i {
			t.Fatalf("late rows %+v, want per-key's subtasks 0 and 1 in order", st.LateRows)
		}
		sum += l.Rows
	}
	if sum == 0 || sum != st.LateRowsTotal {
		t.Fatalf("late rows %+v sum to %d, total %d; want a non-zero total equal to the sum", st.LateRows, sum, st.LateRowsTotal)
	}
	if w := task(st, "per-key"); w == nil || sum >= w.RowsIn {
		t.Fatalf("%d late rows of the windows' %+v", sum, w)
	}
	m := scrape(t, r)
	if m.types["weir_operator_late_rows_total"] != "counter" {
		t.Fatalf("weir_operator_late_rows_total has type %q, want counter", m.types["weir_operator_late_rows_total"])
	}
	for _, l := range st.LateRows {
		labels := fmt.Sprintf(`{operator=%q,subtask="%d"}`, l.Operator, l.Subtask)
		if v := m.value(t, "weir_operator_late_rows_total", labels); v != float64(l.Rows) {
			t.Fatalf("weir_operator_late_rows_total%s %v, status %d", labels, v, l.Rows)
		}
	}
	for key := range m.values {
		if key.name == "weir_operator_late_rows_total" && key.labels != `{operator="per-key",subtask="0"}` && key.labels != `{operator="per-key",subtask="1"}` {
			t.Fatalf("weir_operator_late_rows_total%s: an operator that drops no late rows is listed", key.labels)
		}
	}
}

// A job whose rows are in order lists its window operator with zero late
// rows; before the job is planned there are none, and no such metric.
func TestNoLateRows(t *testing.T) {
	r := runJob(t, testGraph(t, 5_000, 0, nil), "")
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
		r.done <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("the bounded job did not end")
	}
	st := getStatus(t, r)
	if len(st.LateRows) != 2 || st.LateRowsTotal != 0 || st.LateRows[0] != (status.OperatorLateRows{Operator: "per-key", Subtask: 0}) {
		t.Fatalf("late rows %+v, total %d; want per-key's 2 subtasks at 0", st.LateRows, st.LateRowsTotal)
	}
	if v := scrape(t, r).value(t, "weir_operator_late_rows_total", `{operator="per-key",subtask="1"}`); v != 0 {
		t.Fatalf("weir_operator_late_rows_total %v, want 0", v)
	}

	idle := serve(t, status.Config{Name: "idle"})
	st = getStatus(t, idle)
	if st.LateRows == nil || len(st.LateRows) != 0 || st.LateRowsTotal != 0 {
		t.Fatalf("without a job: late rows %#v, total %d; want an empty list", st.LateRows, st.LateRowsTotal)
	}
	if m := scrape(t, idle); m.types["weir_operator_late_rows_total"] != "" {
		t.Fatal("without a job, /metrics lists weir_operator_late_rows_total")
	}
}
