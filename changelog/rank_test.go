package changelog

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
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
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// rankTestSchema is the input of most rank tests: partition k, order
// candidates v (small domain, ties), s, f, and a unique id.
var rankTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// rankGen makes n input rows over parts partitions (and NULL), in epochs
// epochs; with retract, about a third of the rows retract a live row
// (-D, or -U followed by +U of a new version). One insert in ten
// duplicates a live row exactly.
func rankGen(seed uint64, n, parts, epochs int, retract bool) []optest.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	strs := []string{"", "a", "ab", "b", "a\x00", "zz", "\x00"}
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2, math.Inf(1), math.Inf(-1), math.NaN(), 3}
	nullable := func(p int, v any) any {
		if rng.IntN(p) == 0 {
			return nil
		}
		return v
	}
	id := int64(0)
	newRow := func() []any {
		id++
		return []any{nullable(10, int64(rng.IntN(parts))), nullable(6, int64(rng.IntN(8))),
			nullable(8, strs[rng.IntN(len(strs))]), nullable(8, floats[rng.IntN(len(floats))]), id}
	}
	var rows []optest.Row
	var live [][]any
	for i := 0; len(rows) < n; i++ {
		e := len(rows) * epochs / n
		if retract && len(live) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(live))
			old := live[j]
			live = slices.Delete(live, j, j+1)
			if rng.IntN(2) == 0 {
				rows = append(rows, optest.Row{Kind: arrowflow.Delete, Values: old, Epoch: e})
				continue
			}
			nw := newRow()
			nw[0] = old[0] // an update keeps its partition
			rows = append(rows, optest.Row{Kind: arrowflow.UpdateBefore, Values: old, Epoch: e},
				optest.Row{Kind: arrowflow.UpdateAfter, Values: nw, Epoch: e})
			live = append(live, nw)
			continue
		}
		r := newRow()
		if len(live) > 0 && rng.IntN(10) == 0 {
			r = live[rng.IntN(len(live))] // an exact duplicate
		}
		live = append(live, r)
		rows = append(rows, optest.Row{Kind: arrowflow.Insert, Values: r, Epoch: e})
	}
	return rows
}

// rankDec is a decimal value in the key-order test.
type rankDec struct{ *big.Rat }

// rankRefCompare orders two values of an ORDER BY column as SQL does:
// NULLs last unless nullsFirst (in either direction), NaN below every
// number, -0 equal to +0.
func rankRefCompare(a, b any, desc, nullsFirst bool) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		if nullsFirst {
			return -1
		}
		return 1
	case b == nil:
		if nullsFirst {
			return 1
		}
		return -1
	}
	var c int
	switch x := a.(type) {
	case int64:
		c = cmp.Compare(x, b.(int64))
	case uint64:
		c = cmp.Compare(x, b.(uint64))
	case float64:
		c = cmp.Compare(x, b.(float64))
	case string:
		c = strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		c = cmp.Compare(rankBtoi(x), rankBtoi(y))
	case time.Time:
		c = x.Compare(b.(time.Time))
	case rankDec:
		c = x.Cmp(b.(rankDec).Rat)
	default:
		panic(fmt.Sprintf("rank reference: cannot order %T", a))
	}
	if desc {
		return -c
	}
	return c
}

func rankBtoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rankReference is the plain reference: the table the query describes
// after the rows of epochs 0..epoch. Per partition it materializes the
// input changelog (rows in arrival order, a retraction removing the last
// equal row), sorts the rows stably by the ORDER BY (with
// LaterFirstOnTies, the rows in reverse arrival order first, so that tied
// rows rank the later first) and ranks them.
func rankReference(r Rank, rows []optest.Row, epoch int) [][]any {
	idx := func(name string) int { return r.Input.FieldIndices(name)[0] }
	var partIdx []int
	for _, p := range r.PartitionBy {
		partIdx = append(partIdx, idx(p))
	}
	parts := map[string][][]any{}
	var order []string
	for _, row := range rows {
		if row.Epoch > epoch {
			break
		}
		v := optest.Normalize(row.Values)
		var kv []any
		for _, i := range partIdx {
			kv = append(kv, v[i])
		}
		key := optest.FormatRow(kv)
		if _, ok := parts[key]; !ok {
			order = append(order, key)
		}
		if !row.Kind.IsRetraction() {
			parts[key] = append(parts[key], v)
			continue
		}
		p := parts[key]
		for j := len(p) - 1; j >= 0; j-- {
			if optest.RowsEqual(p[j], v) {
				parts[key] = slices.Delete(p, j, j+1)
				break
			}
		}
	}
	var out [][]any
	for _, key := range order {
		p := slices.Clone(parts[key])
		if r.KeepFirst() {
			// Test data orders keep-first rows by arrival.
			if len(p) > 0 {
				out = append(out, p[0])
			}
			continue
		}
		cmpRows := func(a, b []any) int {
			for _, o := range r.OrderBy {
				i := idx(o.Column)
				if c := rankRefCompare(a[i], b[i], o.Desc, o.NullsFirst); c != 0 {
					return c
				}
			}
			return 0
		}
		if r.LaterFirstOnTies {
			slices.Reverse(p)
		}
		slices.SortStableFunc(p, cmpRows)
		var rank, dense int64
		for i, row := range p {
			tied := i > 0 && cmpRows(p[i-1], row) == 0
			if !tied {
				rank = int64(i + 1)
				dense++
			}
			var rk int64
			switch r.Func {
			case RowNumber:
				rk = int64(i + 1)
			case RankWithGaps:
				rk = rank
			case DenseRank:
				rk = dense
			}
			if rk > r.N {
				break
			}
			if r.RankColumn != "" {
				row = append(slices.Clone(row), rk)
			}
			out = append(out, row)
		}
	}
	return out
}

func rankAsc(col string) window.OrderKey  { return window.OrderKey{Column: col} }
func rankDesc(col string) window.OrderKey { return window.OrderKey{Column: col, Desc: true} }

// TestRank runs Top-N, deduplication and their retracting forms through
// the operator harness (parallelism 1, 2, 4, rescales 2->1, 2->4, 4->2,
// batch sizes 1, 7, 1000, random selections) and compares the
// materialized output after every epoch with the reference.
func TestRank(t *testing.T) {
	base := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}}
	with := func(f func(r *Rank)) Rank {
		r := base
		f(&r)
		return r
	}
	cases := []struct {
		name    string
		cfg     Rank
		retract bool
		parts   int
	}{
		{"rownumber/n1", with(func(r *Rank) { r.OrderBy, r.N = []window.OrderKey{rankAsc("v"), rankAsc("id")}, 1 }), false, 5},
		{"rownumber/n3/desc/nullsfirst/rn", with(func(r *Rank) {
			r.OrderBy = []window.OrderKey{{Column: "v", Desc: true, NullsFirst: true}, rankAsc("id")}
			r.N, r.RankColumn = 3, "rn"
		}), false, 5},
		{"rownumber/n3/ties-by-arrival/rn", with(func(r *Rank) { r.OrderBy, r.N, r.RankColumn = []window.OrderKey{rankAsc("v")}, 3, "rn" }), false, 4},
		{"rownumber/n3/float/string", with(func(r *Rank) {
			r.OrderBy, r.N = []window.OrderKey{rankAsc("f"), rankDesc("s"), rankDesc("id")}, 3
		}), false, 4},
		{"rank/n1", with(func(r *Rank) { r.Func, r.OrderBy, r.N = RankWithGaps, []window.OrderKey{rankDesc("v")}, 1 }), false, 5},
		{"rank/n3/rn", with(func(r *Rank) {
			r.Func, r.OrderBy, r.N, r.RankColumn = RankWithGaps, []window.OrderKey{rankAsc("v")}, 3, "rn"
		}), false, 4},
		{"dense/n1", with(func(r *Rank) { r.Func, r.OrderBy, r.N = DenseRank, []window.OrderKey{rankAsc("f")}, 1 }), false, 4},
		{"dense/n3/rn", with(func(r *Rank) {
			r.Func, r.OrderBy, r.N, r.RankColumn, r.chunkMax = DenseRank, []window.OrderKey{{Column: "s", Desc: true, NullsFirst: true}}, 3, "rn", 2
		}), false, 4},
		{"eventtime-first", with(func(r *Rank) { r.OrderBy, r.N = []window.OrderKey{rankAsc("id")}, 1 }), false, 6},
		{"proctime/keepfirst", with(func(r *Rank) { r.N = 1 }), false, 6},
		{"proctime/rownumber/n2/rn", with(func(r *Rank) { r.N, r.RankColumn = 2, "rn" }), false, 4},
		{"proctime/retract/n1", with(func(r *Rank) { r.N, r.Retracting = 1, true }), true, 4},
		// A TTL nothing reaches: access times go through snapshots and rescales.
		{"ttl/proctime/keepfirst", with(func(r *Rank) { r.N, r.StateTTL = 1, time.Hour }), false, 6},
		{"ttl/retract/rownumber/n2", with(func(r *Rank) {
			r.OrderBy, r.N, r.Retracting, r.StateTTL = []window.OrderKey{rankDesc("v"), rankAsc("id")}, 2, true, time.Hour
		}), true, 4},
		{"keeplast", with(func(r *Rank) { r.OrderBy, r.N = []window.OrderKey{rankDesc("id")}, 1 }), false, 6},
		// Keep-last deduplication over a time with many ties (v): of tied
		// rows the later stays, as Flink's.
		{"keeplast/later-on-ties", with(func(r *Rank) { r.OrderBy, r.N, r.LaterFirstOnTies = []window.OrderKey{rankDesc("v")}, 1, true }), false, 5},
		{"keeplast/later-on-ties/chunks", with(func(r *Rank) {
			r.OrderBy, r.N, r.LaterFirstOnTies, r.chunkMax = []window.OrderKey{{Column: "v", Desc: true, NullsFirst: true}}, 1, true, 2
		}), false, 3},
		{"later-on-ties/rownumber/n3/rn", with(func(r *Rank) {
			r.OrderBy, r.N, r.RankColumn, r.LaterFirstOnTies = []window.OrderKey{rankAsc("v")}, 3, "rn", true
		}), false, 4},
		{"later-on-ties/proctime/n1", with(func(r *Rank) { r.N, r.LaterFirstOnTies = 1, true }), false, 6},
		{"later-on-ties/rank/n2/rn", with(func(r *Rank) {
			r.Func, r.OrderBy, r.N, r.RankColumn, r.LaterFirstOnTies = RankWithGaps, []window.OrderKey{rankDesc("v")}, 2, "rn", true
		}), false, 4},
		{"later-on-ties/retract/keeplast", with(func(r *Rank) {
			r.OrderBy, r.N, r.Retracting, r.LaterFirstOnTies = []window.OrderKey{rankDesc("v")}, 1, true, true
		}), true, 4},
		{"later-on-ties/retract/rownumber/n3/rn/chunks", with(func(r *Rank) {
			r.OrderBy, r.N, r.RankColumn, r.Retracting, r.LaterFirstOnTies, r.chunkMax = []window.OrderKey{rankDesc("s")}, 3, "rn", true, true, 2
		}), true, 3},
		{"retract/rownumber/n1", with(func(r *Rank) { r.OrderBy, r.N, r.Retracting = []window.OrderKey{rankDesc("v"), rankAsc("id")}, 1, true }), true, 4},
		{"retract/rownumber/n3/rn", with(func(r *Rank) {
			r.OrderBy, r.N, r.RankColumn, r.Retracting = []window.OrderKey{rankAsc("v"), rankDesc("id")}, 3, "rn", true
		}), true, 4},
		{"retract/rownumber/n3/chunks", with(func(r *Rank) {
			r.OrderBy, r.N, r.Retracting, r.chunkMax = []window.OrderKey{rankDesc("s"), rankDesc("id")}, 3, true, 2
		}), true, 2},
		{"retract/rank/n3/rn", with(func(r *Rank) {
			r.Func, r.OrderBy, r.N, r.RankColumn, r.Retracting, r.chunkMax = RankWithGaps, []window.OrderKey{rankAsc("v")}, 3, "rn", true, 3
		}), true, 3},
		{"retract/dense/n2", with(func(r *Rank) {
			r.Func, r.OrderBy, r.N, r.Retracting, r.chunkMax = DenseRank, []window.OrderKey{rankDesc("f")}, 2, true, 4
		}), true, 3},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			rows := rankGen(uint64(i), 240, c.parts, 4, c.retract)
			optest.Run(t, optest.Case{
				Name:       c.name,
				Factory:    c.cfg.Factory(),
				Inputs:     []optest.Input{{Schema: rankTestSchema, KeyBy: []string{"k"}, Rows: rows}},
				Want:       func(e int) [][]any { return rankReference(c.cfg, rows, e) },
				AppendOnly: c.cfg.KeepFirst(),
				Seed:       uint64(i),
			})
		})
	}
}

// TestRankNoPartition ranks the whole input as one partition, at
// parallelism 1.
func TestRankNoPartition(t *testing.T) {
	for _, retract := range []bool{false, true} {
		cfg := Rank{Input: rankTestSchema, OrderBy: []window.OrderKey{rankDesc("v"), rankAsc("id")}, N: 3, RankColumn: "rn", Retracting: retract}
		rows := rankGen(3, 200, 1, 3, retract)
		t.Run(fmt.Sprintf("retract=%v", retract), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "nopartition",
				Factory: cfg.Factory(),
				Inputs:  []optest.Input{{Schema: rankTestSchema, Rows: rows}},
				Want:    func(e int) [][]any { return rankReference(cfg, rows, e) },
				// Watermarks pass through (the harness checks their order).
				Watermark: func(e int) (arrowflow.EventTime, bool) { return arrowflow.EventTime(e * 1000), e != 1 },
			})
		})
	}
}

// TestRankLarge runs enough rows through few configurations that the
// row store compacts (pruned candidates, retracted rows) between epochs.
func TestRankLarge(t *testing.T) {
	configs := []optest.Config{{Parallelism: []int{1}, BatchSize: 1000}, {Parallelism: []int{2, 4}, BatchSize: 333, RandomSel: true}}
	for _, retract := range []bool{false, true} {
		cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, Func: RankWithGaps,
			OrderBy: []window.OrderKey{rankAsc("f"), rankDesc("v")}, N: 2, RankColumn: "r", Retracting: retract, compactMin: 1, chunkMax: 8}
		rows := rankGen(9, 12000, 40, 3, retract)
		t.Run(fmt.Sprintf("retract=%v", retract), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "large",
				Factory: cfg.Factory(),
				Inputs:  []optest.Input{{Schema: rankTestSchema, KeyBy: []string{"k"}, Rows: rows}},
				Want:    func(e int) [][]any { return rankReference(cfg, rows, e) },
				Configs: configs,
			})
		})
	}
}

// rankCollector is an Emitter that materializes what it receives.
type rankCollector struct {
	t       *testing.T
	table   optest.Multiset
	changes []optest.Change
	batches int
	wms     []arrowflow.EventTime
}

func (c *rankCollector) Emit(b arrowflow.Batch) error {
	defer b.Release()
	if err := b.Validate(); err != nil {
		c.t.Fatal(err)
	}
	c.batches++
	for _, ch := range optest.Changes(b) {
		c.changes = append(c.changes, ch)
		if err := c.table.Apply(ch.Kind, ch.Values); err != nil {
			c.t.Fatal(err)
		}
	}
	return nil
}

func (c *rankCollector) EmitWatermark(wm arrowflow.EventTime) error {
	c.wms = append(c.wms, wm)
	return nil
}

// rankFakeClock is a processing-time clock the test moves.
type rankFakeClock struct{ now time.Time }

func (c *rankFakeClock) Now() time.Time { return c.now }

// rankHarness runs one operator instance by direct calls.
type rankHarness struct {
	t   *testing.T
	mem memory.Allocator
	op  arrowflow.Operator
	out *rankCollector
}

func rankNewHarness(t *testing.T, cfg Rank, clock arrowflow.Clock) *rankHarness {
	t.Helper()
	return newOpHarness(t, cfg.Factory(), clock)
}

// newOpHarness runs one instance of an operator over rankTestSchema by
// direct calls.
func newOpHarness(t *testing.T, factory arrowflow.OperatorFactory, clock arrowflow.Clock) *rankHarness {
	t.Helper()
	mem := testutil.CheckedAllocator(t)
	h := &rankHarness{t: t, mem: mem, op: factory(), out: &rankCollector{t: t}}
	info := &arrowflow.TaskInfo{Name: "rank", Parallelism: 1, MaxParallelism: 128,
		KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem, Clock: clock}
	if err := h.op.Open(info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.op.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// send processes rows (values of rankTestSchema) with kinds (nil:
// append-only).
func (h *rankHarness) send(kinds []arrowflow.RowKind, rows ...[]any) error {
	h.t.Helper()
	rec, err := optest.BuildRecord(h.mem, rankTestSchema, rows)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.op.ProcessBatch(0, arrowflow.NewChangeBatch(rec, kinds), h.out)
}

func (h *rankHarness) flush() {
	h.t.Helper()
	if err := h.op.(arrowflow.EpochFlusher).FlushEpoch(0, h.out); err != nil {
		h.t.Fatal(err)
	}
}

func (h *rankHarness) want(rows ...[]any) {
	h.t.Helper()
	if d := optest.Diff(h.out.table.Rows(), rows); d != "" {
		h.t.Fatalf("materialized output: %s", d)
	}
}

func (h *rankHarness) stats() RankStats { return h.op.(RankStatsReporter).RankStats() }

func TestRankValidate(t *testing.T) {
	ok := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankAsc("v")}, N: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		f    func(r *Rank)
		want string
	}{
		{"no schema", func(r *Rank) { r.Input = nil }, "no input schema"},
		{"n0", func(r *Rank) { r.N = 0 }, "N must be at least 1"},
		{"func", func(r *Rank) { r.Func = 7 }, "unknown ranking function"},
		{"partition", func(r *Rank) { r.PartitionBy = []string{"nope"} }, `partition column "nope" not found`},
		{"order", func(r *Rank) { r.OrderBy = []window.OrderKey{rankAsc("nope")} }, `order column "nope" not found`},
		{"rank column", func(r *Rank) { r.RankColumn = "id" }, `rank column "id" is already`},
		{"ttl", func(r *Rank) { r.StateTTL = -time.Second }, "negative"},
		{"order type", func(r *Rank) {
			r.Input = arrow.NewSchema(append(rankTestSchema.Fields(), arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}), nil)
		}, `"l" has type list`},
	}
	for _, b := range bad {
		r := ok
		b.f(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want an error containing %q", b.name, err, b.want)
		}
	}
	s, err := Rank{Input: rankTestSchema, OrderBy: []window.OrderKey{rankAsc("v")}, N: 2, RankColumn: "rn"}.OutputSchema()
	if err != nil || s.NumFields() != 6 || s.Field(5).Name != "rn" || s.Field(5).Type.ID() != arrow.INT64 {
		t.Fatalf("output schema %v, %v", s, err)
	}
	if s, _ := ok.OutputSchema(); !s.Equal(rankTestSchema) {
		t.Fatalf("output schema without rank column: %s", s)
	}
}

func TestRankFuncNames(t *testing.T) {
	for _, f := range []RankFunc{RowNumber, RankWithGaps, DenseRank} {
		g, err := ParseRankFunc(f.String())
		if err != nil || g != f {
			t.Errorf("ParseRankFunc(%q) = %v, %v", f.String(), g, err)
		}
	}
	if RowNumber.String() != "ROW_NUMBER" || RankWithGaps.String() != "RANK" || DenseRank.String() != "DENSE_RANK" {
		t.Error("SQL names")
	}
	if _, err := ParseRankFunc("NTILE"); err == nil {
		t.Error("NTILE parsed")
	}
}

func TestRankKeepFirstPredicate(t *testing.T) {
	r := Rank{Input: rankTestSchema, N: 1}
	if !r.KeepFirst() {
		t.Fatal("ROW_NUMBER without ORDER BY (processing time), N 1 is keep-first")
	}
	for name, f := range map[string]func(r *Rank){
		"asc":        func(r *Rank) { r.OrderBy = []window.OrderKey{rankAsc("id")} },
		"desc":       func(r *Rank) { r.OrderBy = []window.OrderKey{rankDesc("id")} },
		"n2":         func(r *Rank) { r.N = 2 },
		"rank":       func(r *Rank) { r.Func = RankWithGaps },
		"rn":         func(r *Rank) { r.RankColumn = "rn" },
		"retracting": func(r *Rank) { r.Retracting = true },
		"two keys":   func(r *Rank) { r.OrderBy = []window.OrderKey{rankAsc("id"), rankAsc("v")} },
	} {
		x := r
		f(&x)
		if x.KeepFirst() {
			t.Errorf("%s: KeepFirst", name)
		}
	}
}

// TestRankRetractionRefused: a retraction reaching a non-retracting rank
// is an error naming the row.
func TestRankRetractionRefused(t *testing.T) {
	for _, first := range []bool{false, true} {
		cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankAsc("id")}, N: 2}
		if first {
			cfg.N, cfg.OrderBy = 1, nil
		}
		h := rankNewHarness(t, cfg, nil)
		err := h.send([]arrowflow.RowKind{arrowflow.Insert, arrowflow.Delete}, []any{1, 1, "a", 1.0, 1}, []any{1, 1, "a", 1.0, 1})
		if err == nil || !strings.Contains(err.Error(), "row 1") {
			t.Errorf("keepfirst=%v: got %v", first, err)
		}
	}
	// A retracting rank refuses the retraction of a row it never held.
	cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankAsc("id")}, N: 2, Retracting: true}
	h := rankNewHarness(t, cfg, nil)
	if err := h.send([]arrowflow.RowKind{arrowflow.Delete}, []any{1, 1, "a", 1.0, 1}); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("retraction of an unknown row: got %v", err)
	}
}

// TestRankFolding: updates of one partition within an epoch leave it as
// one change; PerRowOutputRows counts what per-row emission would have
// sent.
func TestRankFolding(t *testing.T) {
	cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankDesc("v")}, N: 1}
	h := rankNewHarness(t, cfg, nil)
	for v := 1; v <= 5; v++ {
		if err := h.send(nil, []any{1, v, "a", 1.0, v}); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.out.changes) != 0 {
		t.Fatalf("emitted before the epoch closed: %v", h.out.changes)
	}
	h.flush()
	if got := fmt.Sprint(h.out.changes); got != `[+I[1 5 "a" 1 5]]` {
		t.Fatalf("changes %s", got)
	}
	if err := h.send(nil, []any{1, 7, "b", 1.0, 7}); err != nil {
		t.Fatal(err)
	}
	h.flush()
	if got := fmt.Sprint(h.out.changes[1:]); got != `[-U[1 5 "a" 1 5] +U[1 7 "b" 1 7]]` {
		t.Fatalf("changes %s", got)
	}
	s := h.stats()
	// Per row: +I, then four -U/+U pairs, then one more pair.
	if s.InputRows != 6 || s.OutputRows != 3 || s.PerRowOutputRows != 11 || s.Partitions != 1 || s.StateRows != 1 {
		t.Fatalf("stats %+v", s)
	}
	if err := h.op.ProcessWatermark(42, h.out); err != nil || !slices.Equal(h.out.wms, []arrowflow.EventTime{42}) {
		t.Fatalf("watermark: %v %v", err, h.out.wms)
	}
}

// TestRankDedupFirst: without ORDER BY (processing time) the first row
// to arrive in each partition goes out at once, as an insert, and is
// never replaced; ordered by an event time, the first row is the
// smallest, updated when a smaller one arrives later (ties: the earlier
// row).
func TestRankDedupFirst(t *testing.T) {
	t.Run("proctime", func(t *testing.T) {
		cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, N: 1}
		h := rankNewHarness(t, cfg, nil)
		err := h.send(nil, []any{1, 5, "a", 1.0, 1}, []any{2, 3, "b", 1.0, 2}, []any{1, 2, "c", 1.0, 3}, []any{nil, 9, "e", 1.0, 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.send(nil, []any{1, 0, "f", 1.0, 6}, []any{3, 1, "g", 1.0, 7}); err != nil {
			t.Fatal(err)
		}
		// Emitted from ProcessBatch, without a flush.
		h.want([]any{1, 5, "a", 1.0, 1}, []any{2, 3, "b", 1.0, 2}, []any{nil, 9, "e", 1.0, 5}, []any{3, 1, "g", 1.0, 7})
		for _, c := range h.out.changes {
			if c.Kind != arrowflow.Insert {
				t.Fatalf("change %s", c)
			}
		}
		if s := h.stats(); s.InputRows != 6 || s.OutputRows != 4 || s.Partitions != 4 {
			t.Fatalf("stats %+v", s)
		}
		if err := h.op.Finish(h.out); err != nil || h.out.table.Len() != 4 {
			t.Fatalf("finish: %v", err)
		}
	})
	t.Run("eventtime", func(t *testing.T) {
		cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankAsc("v")}, N: 1}
		h := rankNewHarness(t, cfg, nil)
		err := h.send(nil, []any{1, 5, "a", 1.0, 1}, []any{2, 3, "b", 1.0, 2}, []any{1, 2, "c", 1.0, 3}, []any{1, 2, "d", 1.0, 4}, []any{nil, 9, "e", 1.0, 5})
		if err != nil {
			t.Fatal(err)
		}
		h.flush()
		h.want([]any{1, 2, "c", 1.0, 3}, []any{2, 3, "b", 1.0, 2}, []any{nil, 9, "e", 1.0, 5})
		if err := h.send(nil, []any{1, 0, "f", 1.0, 6}, []any{3, 1, "g", 1.0, 7}, []any{2, 3, "h", 1.0, 8}); err != nil {
			t.Fatal(err)
		}
		h.flush()
		h.want([]any{1, 0, "f", 1.0, 6}, []any{2, 3, "b", 1.0, 2}, []any{nil, 9, "e", 1.0, 5}, []any{3, 1, "g", 1.0, 7})
	})
}

// TestRankTTL: a partition no row reached for the TTL is dropped without
// output, and its next row starts it afresh, as Flink's state TTL does.
func TestRankTTL(t *testing.T) {
	for _, keepFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepfirst=%v", keepFirst), func(t *testing.T) {
			clock := &rankFakeClock{now: time.Unix(1000, 0)}
			cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, N: 1, StateTTL: time.Minute}
			if !keepFirst {
				cfg.OrderBy = []window.OrderKey{rankAsc("v"), rankAsc("id")}
			}
			h := rankNewHarness(t, cfg, clock)
			if cfg.KeepFirst() != keepFirst {
				t.Fatal("config")
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(h.send(nil, []any{1, 5, "a", 1.0, 1}, []any{2, 5, "b", 1.0, 2}))
			h.flush()
			clock.now = clock.now.Add(40 * time.Second)
			must(h.send(nil, []any{2, 6, "c", 1.0, 3})) // keeps partition 2 alive
			h.flush()
			clock.now = clock.now.Add(30 * time.Second) // partition 1 idle for 70s
			h.flush()
			s := h.stats()
			if s.ExpiredPartitions != 1 || s.Partitions != 1 {
				t.Fatalf("after expiry: %+v", s)
			}
			must(h.send(nil, []any{1, 9, "d", 1.0, 4}, []any{2, 7, "e", 1.0, 5}))
			h.flush()
			// Partition 1 starts afresh: its old row stays downstream and
			// the new one is inserted; partition 2 still holds v=5.
			h.want([]any{1, 5, "a", 1.0, 1}, []any{2, 5, "b", 1.0, 2}, []any{1, 9, "d", 1.0, 4})
			if s := h.stats(); s.Partitions != 2 || s.ExpiredPartitions != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
	// With a TTL, a retraction of a row that expired is ignored and
	// counted.
	clock := &rankFakeClock{now: time.Unix(0, 0)}
	cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankAsc("v")}, N: 1, StateTTL: time.Minute, Retracting: true}
	h := rankNewHarness(t, cfg, clock)
	row := []any{1, 5, "a", 1.0, 1}
	if err := h.send(nil, row); err != nil {
		t.Fatal(err)
	}
	h.flush()
	clock.now = clock.now.Add(time.Hour)
	if err := h.send([]arrowflow.RowKind{arrowflow.Delete}, row); err != nil {
		t.Fatal(err)
	}
	h.flush()
	if s := h.stats(); s.IgnoredRetractions != 1 || s.StateRows != 0 || s.Partitions != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRankEarlyFlush: more than 64K changed partitions flush without
// waiting for the epoch.
func TestRankEarlyFlush(t *testing.T) {
	cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankDesc("v")}, N: 1}
	h := rankNewHarness(t, cfg, nil)
	n := rankMaxDirty + 10
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{i, i, nil, nil, i}
	}
	if err := h.send(nil, rows...); err != nil {
		t.Fatal(err)
	}
	if h.out.table.Len() != n {
		t.Fatalf("%d rows emitted before the epoch closed, want %d", h.out.table.Len(), n)
	}
	if err := h.op.Finish(h.out); err != nil {
		t.Fatal(err)
	}
	if h.out.table.Len() != n {
		t.Fatalf("%d rows after Finish", h.out.table.Len())
	}
}

// TestRankSnapshotNeedsFlush: a snapshot of unflushed changes would lose
// them; the runtime always flushes first.
func TestRankSnapshotNeedsFlush(t *testing.T) {
	cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankDesc("v")}, N: 1}
	h := rankNewHarness(t, cfg, nil)
	if err := h.send(nil, []any{1, 1, "a", 1.0, 1}); err != nil {
		t.Fatal(err)
	}
	store := state.NewMemoryStore()
	w, err := store.Create(state.SnapshotID{Job: "j", Operator: "rank"}, state.KeyGroupRange{Start: 0, End: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := h.op.SnapshotState(0, w); err == nil || !strings.Contains(err.Error(), "FlushEpoch") {
		t.Fatalf("got %v", err)
	}
	h.flush()
}

// TestRankKeyOrder checks the normalized keys against the reference
// comparison, over every supported kind of value, NULLs first and last,
// ascending and descending.
func TestRankKeyOrder(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...any) any { return vs[rng.IntN(len(vs))] }
	var rows [][]any
	for range 300 {
		rows = append(rows, []any{
			pick(nil, int64(math.MinInt64), int64(-1), int64(0), int64(1), int64(math.MaxInt64)),
			pick(nil, int64(math.MinInt32), int64(-7), int64(0), int64(255), int64(math.MaxInt32)),
			pick(nil, float32(math.NaN()), float32(math.Inf(-1)), float32(-1.5), float32(math.Copysign(0, -1)), float32(0), float32(2), float32(math.Inf(1))),
			pick(nil, "", "\x00", "\x00\x00", "a", "a\x00", "a\x00b", "ab", "\xff"),
			pick(nil, false, true),
			pick(nil, "-99999999999999999999999999999999999.99", "-1.00", "-0.01", "0.00", "0.01", "1.00", "18446744073709551616.00", "99999999999999999999999999999999999.99"),
		})
	}
	rec, err := optest.BuildRecord(mem, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	all := make([]int32, len(rows))
	for i := range all {
		all[i] = int32(i)
	}
	for c := range schema.NumFields() {
		for _, d := range []bool{false, true} {
			for _, nf := range []bool{false, true} {
				k, ok := rankKeyColFor(schema.Field(c).Type, c, d, nf)
				if !ok {
					t.Fatalf("column %d not rankable", c)
				}
				keys, off, _ := rankEncodeKeys([]rankKeyCol{k}, rec, all, nil, nil, nil)
				vals := make([]any, len(rows))
				for i := range rows {
					vals[i] = optest.Normalize(rows[i])[c]
					if s, ok := vals[i].(string); ok && schema.Field(c).Type.ID() == arrow.DECIMAL128 {
						r, _ := new(big.Rat).SetString(s)
						vals[i] = rankDec{r}
					}
				}
				for i := range rows {
					for j := range rows {
						got := bytes.Compare(keys[off[i]:off[i+1]], keys[off[j]:off[j+1]])
						a, b := vals[i], vals[j]
						if want := rankRefCompare(a, b, d, nf); got != want {
							t.Fatalf("column %s desc=%v nullsFirst=%v: %v vs %v: keys compare %d, want %d", schema.Field(c).Name, d, nf, a, b, got, want)
						}
					}
				}
			}
		}
	}
}

// TestRankTTLCompaction: partitions come and go; the TTL drops the ones
// gone and the partition table is rebuilt without them, while the
// partitions still alive keep ranking correctly. No dropped partition
// comes back, so the materialized output is the plain reference's.
func TestRankTTLCompaction(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Rank
	}{
		{"top2", Rank{OrderBy: []window.OrderKey{rankDesc("v"), rankAsc("id")}, N: 2, RankColumn: "rn"}},
		{"retract/rank2", Rank{Func: RankWithGaps, OrderBy: []window.OrderKey{rankAsc("v")}, N: 2, Retracting: true}},
		{"keepfirst", Rank{N: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Input, cfg.PartitionBy, cfg.StateTTL, cfg.compactMin = rankTestSchema, []string{"k"}, time.Minute, 4
			clock := &rankFakeClock{now: time.Unix(5000, 0)}
			h := rankNewHarness(t, cfg, clock)
			rng := rand.New(rand.NewPCG(5, 5))
			var all []optest.Row
			id := 0
			for g := range 12 {
				var rows [][]any
				var kinds []arrowflow.RowKind
				keys := []int{0}
				for k := range 10 {
					keys = append(keys, 1+10*g+k)
				}
				for _, k := range keys {
					var mine [][]any
					for range 4 {
						id++
						r := []any{int64(k), int64(rng.IntN(5)), "x", 1.0, int64(id)}
						mine = append(mine, r)
						rows, kinds = append(rows, r), append(kinds, arrowflow.Insert)
						all = append(all, optest.Row{Kind: arrowflow.Insert, Values: r})
					}
					if cfg.Retracting {
						r := mine[rng.IntN(len(mine))]
						rows, kinds = append(rows, r), append(kinds, arrowflow.Delete)
						all = append(all, optest.Row{Kind: arrowflow.Delete, Values: r})
					}
				}
				if !cfg.Retracting {
					kinds = nil
				}
				if err := h.send(kinds, rows...); err != nil {
					t.Fatal(err)
				}
				h.flush()
				h.want(rankReference(cfg, all, 0)...)
				clock.now = clock.now.Add(40 * time.Second)
			}
			s := h.stats()
			// Sweeps run once per TTL: up to three generations are held.
			if s.ExpiredPartitions < 80 || s.Partitions > 31 {
				t.Fatalf("stats %+v", s)
			}
			held, table := 0, 0
			switch op := h.op.(type) {
			case *rankOp:
				held, table = len(op.p), op.parts.Len()
			case *rankFirstOp:
				held, table = len(op.seen), op.parts.Len()
			}
			if held > 2*31 || held != table {
				t.Fatalf("%d partitions held after compaction (%d in the table), %d live", held, table, s.Partitions)
			}
		})
	}
}

// TestRankList checks the chunked list against a flat slice under random
// inserts at searched positions, deletes, truncation and rebuilds.
func TestRankList(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	o := &rankOp{keyOff: []int64{0}}
	const ids = 3000
	for range ids {
		o.keys = append(o.keys, byte(rng.IntN(40)))
		o.keyOff = append(o.keyOff, int64(len(o.keys)))
	}
	for _, max := range []int{1, 2, 3, 16} {
		var l rankList
		var flat []int32
		check := func(what string) {
			t.Helper()
			got := l.first(l.len()+5, nil)
			if !slices.Equal(got, flat) || l.len() != len(flat) {
				t.Fatalf("max %d, after %s: list %v, want %v", max, what, got, flat)
			}
			for _, ch := range l.chunks {
				if len(ch) == 0 || len(ch) > max {
					t.Fatalf("max %d: chunk of %d entries", max, len(ch))
				}
			}
		}
		next := int32(0)
		for step := range 2000 {
			switch r := rng.IntN(10); {
			case r < 6 && next < ids:
				key := o.key(next)
				upper := rng.IntN(2) == 0
				at := l.search(o, key, upper)
				p := l.index(at, 1<<30)
				want := 0 // entries before key (upper: or tied with it)
				for _, r := range flat {
					if c := slices.Compare(o.key(r), key); c < 0 || upper && c == 0 {
						want++
					}
				}
				if p != want {
					t.Fatalf("max %d: search(upper=%v) at index %d, want %d", max, upper, p, want)
				}
				l.insert(at, next, max)
				flat = slices.Insert(flat, p, next)
				next++
				// Sorted by key: the searched position keeps the order.
				if !slices.IsSortedFunc(flat, func(a, b int32) int { return slices.Compare(o.key(a), o.key(b)) }) {
					t.Fatalf("max %d: insert at %d broke the order", max, p)
				}
				check("insert")
			case r < 9 && len(flat) > 0:
				i := rng.IntN(len(flat))
				// Walk to index i from the end with prev.
				at, ok := rankPos{len(l.chunks) - 1, len(l.chunks[len(l.chunks)-1])}, true
				for range len(flat) - i {
					at, ok = l.prev(at)
				}
				if !ok || l.at(at) != flat[i] || l.index(at, 1<<30) != i || l.index(at, 2) != min(i, 2) {
					t.Fatalf("max %d: position of index %d", max, i)
				}
				l.delete(at)
				flat = slices.Delete(flat, i, i+1)
				check("delete")
			case step%97 == 0:
				c := rng.IntN(len(flat) + 1)
				var dropped []int32
				l.truncate(c, func(r int32) { dropped = append(dropped, r) })
				if !slices.Equal(dropped, flat[c:]) {
					t.Fatalf("max %d: truncate dropped %v, want %v", max, dropped, flat[c:])
				}
				flat = flat[:c]
				check("truncate")
			case step%89 == 0:
				l.set(slices.Clone(flat), max)
				check("set")
			}
		}
	}
}

// TestRankTTLRestore: access times survive a snapshot, so a restore does
// not extend a partition's life.
func TestRankTTLRestore(t *testing.T) {
	for _, keepFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepfirst=%v", keepFirst), func(t *testing.T) {
			clock := &rankFakeClock{now: time.Unix(1000, 0)}
			cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, N: 1, StateTTL: time.Minute}
			if !keepFirst {
				cfg.OrderBy = []window.OrderKey{rankDesc("id")}
			}
			h := rankNewHarness(t, cfg, clock)
			if err := h.send(nil, []any{1, 1, "a", 1.0, 1}); err != nil {
				t.Fatal(err)
			}
			clock.now = clock.now.Add(50 * time.Second)
			if err := h.send(nil, []any{2, 1, "b", 1.0, 2}); err != nil {
				t.Fatal(err)
			}
			h.flush()
			store := state.NewMemoryStore()
			w, err := store.Create(state.SnapshotID{Job: "j", Operator: "rank"}, state.KeyGroupRange{Start: 0, End: 128})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.op.SnapshotState(0, w); err != nil {
				t.Fatal(err)
			}
			handle, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			h2 := rankNewHarness(t, cfg, clock)
			h2.out = h.out // the same downstream table
			mark := len(h.out.changes)
			rd, err := store.Open(handle, h2.mem)
			if err != nil {
				t.Fatal(err)
			}
			err = h2.op.RestoreState(rd)
			_ = rd.Close()
			if err != nil {
				t.Fatal(err)
			}
			clock.now = clock.now.Add(20 * time.Second) // partition 1 idle 70s, 2 20s
			if err := h2.send(nil, []any{1, 1, "c", 1.0, 3}, []any{2, 1, "d", 1.0, 4}); err != nil {
				t.Fatal(err)
			}
			h2.flush()
			s := h2.stats()
			if s.ExpiredPartitions != 1 || s.Partitions != 2 {
				t.Fatalf("stats %+v", s)
			}
			// Partition 1 started afresh: +I of its new row. Partition 2
			// keeps its first row, or (keep-last) replaces it.
			want := [][]any{{1, 1, "c", 1.0, 3}}
			var got []string
			for _, c := range h2.out.changes[mark:] {
				got = append(got, c.String())
			}
			if keepFirst && len(got) != 1 || !keepFirst && len(got) != 3 || got[0] != "+I"+optest.FormatRow(optest.Normalize(want[0])) {
				t.Fatalf("changes after the restore: %v", got)
			}
		})
	}
}

// rankSnapshotRestore snapshots h's operator (after a flush) and restores
// it into a new instance of cfg that emits into the same downstream table.
func rankSnapshotRestore(t *testing.T, h *rankHarness, cfg Rank) *rankHarness {
	t.Helper()
	store := state.NewMemoryStore()
	w, err := store.Create(state.SnapshotID{Job: "j", Operator: "rank"}, state.KeyGroupRange{Start: 0, End: 128})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.op.SnapshotState(0, w); err != nil {
		t.Fatal(err)
	}
	handle, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	h2 := rankNewHarness(t, cfg, nil)
	h2.out = h.out
	rd, err := store.Open(handle, h2.mem)
	if err != nil {
		t.Fatal(err)
	}
	err = h2.op.RestoreState(rd)
	_ = rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	return h2
}

// TestRankLaterFirstOnTies: a keep-last deduplication (ORDER BY v DESC,
// N = 1) with LaterFirstOnTies keeps, of rows with an equal v, the one
// that arrived last, within a batch, across batches and across a
// snapshot and restore; without the flag the earlier stays.
func TestRankLaterFirstOnTies(t *testing.T) {
	for _, retracting := range []bool{false, true} {
		for _, later := range []bool{false, true} {
			t.Run(fmt.Sprintf("retracting=%v/later=%v", retracting, later), func(t *testing.T) {
				cfg := Rank{Input: rankTestSchema, PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{rankDesc("v")},
					N: 1, Retracting: retracting, LaterFirstOnTies: later}
				if cfg.KeepFirst() {
					t.Fatal("KeepFirst with an ORDER BY")
				}
				pick := func(earlier, latest []any) []any {
					if later {
						return latest
					}
					return earlier
				}
				h := rankNewHarness(t, cfg, nil)
				// Two batches, equal times: the second batch's row is later.
				if err := h.send(nil, []any{1, 5, "a", 1.0, 1}, []any{2, 7, "b", 1.0, 2}); err != nil {
					t.Fatal(err)
				}
				h.flush()
				h.want([]any{1, 5, "a", 1.0, 1}, []any{2, 7, "b", 1.0, 2})
				if err := h.send(nil, []any{1, 5, "c", 1.0, 3}, []any{2, 6, "d", 1.0, 4}); err != nil {
					t.Fatal(err)
				}
				h.flush()
				p1 := pick([]any{1, 5, "a", 1.0, 1}, []any{1, 5, "c", 1.0, 3})
				h.want(p1, []any{2, 7, "b", 1.0, 2})
				if later {
					// The replacement is one update pair.
					got := h.out.changes[len(h.out.changes)-2:]
					if got[0].Kind != arrowflow.UpdateBefore || got[1].Kind != arrowflow.UpdateAfter {
						t.Fatalf("changes %v", got)
					}
				}
				// Ties within one batch: the batch's last row is the latest.
				if err := h.send(nil, []any{2, 7, "e", 1.0, 5}, []any{2, 7, "f", 1.0, 6}, []any{2, 6, "g", 1.0, 7}); err != nil {
					t.Fatal(err)
				}
				h.flush()
				p2 := pick([]any{2, 7, "b", 1.0, 2}, []any{2, 7, "f", 1.0, 6})
				h.want(p1, p2)
				// Arrival order survives a restore: the rows tied with the
				// kept one that the restore reorders (Retracting keeps them
				// all) still rank as they arrived.
				h2 := rankSnapshotRestore(t, h, cfg)
				h2.flush()
				h2.want(p1, p2)
				if retracting {
					// Retracting the kept row brings up the next tied row
					// (the restore sorted them all): by arrival, later or
					// earlier first.
					if err := h2.send([]arrowflow.RowKind{arrowflow.Delete}, p2); err != nil {
						t.Fatal(err)
					}
					h2.flush()
					h2.want(p1, []any{2, 7, "e", 1.0, 5})
					if err := h2.send([]arrowflow.RowKind{arrowflow.Delete}, []any{2, 7, "e", 1.0, 5}); err != nil {
						t.Fatal(err)
					}
					h2.flush()
					p2 = pick([]any{2, 7, "f", 1.0, 6}, []any{2, 7, "b", 1.0, 2})
					h2.want(p1, p2)
				}
				// A tie arriving after the restore is later than the kept row.
				if err := h2.send(nil, []any{1, 5, "h", 1.0, 8}); err != nil {
					t.Fatal(err)
				}
				h2.flush()
				h2.want(pick(p1, []any{1, 5, "h", 1.0, 8}), p2)
				if err := h2.op.Finish(h2.out); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
