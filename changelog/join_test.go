package changelog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

var (
	joinTestLeft = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "t", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "e", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	joinTestRight = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "g", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "t", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	joinKinds = []window.JoinKind{window.JoinInner, window.JoinLeftOuter, window.JoinRightOuter, window.JoinFullOuter}
)

// joinRef is the reference: it materializes each side's changelog into a
// table (a retraction removes one row equal on the stored columns, or
// nothing) and joins the two tables with nested loops.
type joinRef struct {
	j                        Join
	lKey, rKey, lOut, rOut   []int
	lStored, rStored         []int
	residual                 func(l, r []any) bool // nil: none
	leftOuter, rightOuter    bool
	lWidth, rWidth, outWidth int
}

func newJoinRef(t testing.TB, j Join, residual func(l, r []any) bool) *joinRef {
	t.Helper()
	idx := func(s *arrow.Schema, names []string) []int {
		if names == nil {
			var all []int
			for i := range s.NumFields() {
				all = append(all, i)
			}
			return all
		}
		var out []int
		for _, n := range names {
			i := s.FieldIndices(n)
			if len(i) != 1 {
				t.Fatalf("no column %q", n)
			}
			out = append(out, i[0])
		}
		return out
	}
	r := &joinRef{j: j, residual: residual,
		lKey: idx(j.Left, j.LeftKeys), rKey: idx(j.Right, j.RightKeys),
		lOut: idx(j.Left, j.LeftColumns), rOut: idx(j.Right, j.RightColumns),
		leftOuter:  j.Kind == window.JoinLeftOuter || j.Kind == window.JoinFullOuter,
		rightOuter: j.Kind == window.JoinRightOuter || j.Kind == window.JoinFullOuter,
	}
	r.lStored = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(r.lKey), r.lOut...))))
	r.rStored = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(r.rKey), r.rOut...))))
	return r
}

// materialize applies a changelog to a table, removing for a retraction
// one row equal on the stored columns (none: the retraction is skipped).
func joinMaterialize(rows []optest.Row, stored []int) [][]any {
	var table [][]any
	for _, row := range rows {
		vals := optest.Normalize(row.Values)
		if !row.Kind.IsRetraction() {
			table = append(table, vals)
			continue
		}
		i := slices.IndexFunc(table, func(have []any) bool {
			for _, c := range stored {
				if !optest.ValuesEqual(have[c], vals[c]) {
					return false
				}
			}
			return true
		})
		if i >= 0 {
			table = slices.Delete(table, i, i+1)
		}
	}
	return table
}

func (r *joinRef) keysMatch(l, rr []any) bool {
	for i := range r.lKey {
		a, b := l[r.lKey[i]], rr[r.rKey[i]]
		if a == nil || b == nil || !optest.ValuesEqual(a, b) {
			return false
		}
	}
	return true
}

func (r *joinRef) match(l, rr []any) bool {
	return r.keysMatch(l, rr) && (r.residual == nil || r.residual(l, rr))
}

func (r *joinRef) outRow(l, rr []any) []any {
	out := make([]any, 0, len(r.lOut)+len(r.rOut))
	for _, c := range r.lOut {
		if l == nil {
			out = append(out, nil)
		} else {
			out = append(out, l[c])
		}
	}
	for _, c := range r.rOut {
		if rr == nil {
			out = append(out, nil)
		} else {
			out = append(out, rr[c])
		}
	}
	return out
}

// table is the join's result over the two materialized tables.
func (r *joinRef) table(left, right []optest.Row) [][]any {
	L, R := joinMaterialize(left, r.lStored), joinMaterialize(right, r.rStored)
	var out [][]any
	rMatched := make([]bool, len(R))
	for _, l := range L {
		matched := false
		for i, rr := range R {
			if r.match(l, rr) {
				out = append(out, r.outRow(l, rr))
				matched, rMatched[i] = true, true
			}
		}
		if !matched && r.leftOuter {
			out = append(out, r.outRow(l, nil))
		}
	}
	if r.rightOuter {
		for i, rr := range R {
			if !rMatched[i] {
				out = append(out, r.outRow(nil, rr))
			}
		}
	}
	return out
}

// joinBetween is the Go form of r_t BETWEEN l_t AND l_e.
func joinBetween(l, r []any) bool {
	rt, lt, le := r[2], l[1], l[2]
	if rt == nil || lt == nil || le == nil {
		return false
	}
	return lt.(int64) <= rt.(int64) && rt.(int64) <= le.(int64)
}

var joinBetweenExpr = kernels.Between(kernels.Col("r_t"), kernels.Col("l_t"), kernels.Col("l_e"))

// joinGen generates a changelog of n rows over epochs: inserts (some
// duplicating a live row), deletes and update pairs of live rows, and a
// few retractions of rows never inserted. appendOnly makes every row an
// insert.
func joinGen(rng *rand.Rand, n, epochs int, appendOnly bool, mk func() []any) []optest.Row {
	var rows []optest.Row
	var live [][]any
	for i := 0; len(rows) < n; i++ {
		e := len(rows) * epochs / n
		add := func(kind arrowflow.RowKind, vals []any) {
			rows = append(rows, optest.Row{Kind: kind, Values: vals, Epoch: e})
		}
		p := rng.Float64()
		pick := func() int { return rng.IntN(len(live)) }
		switch {
		case appendOnly || len(live) == 0 || p < 0.5:
			vals := mk()
			if p < 0.1 && len(live) > 0 {
				vals = slices.Clone(live[pick()])
			}
			live = append(live, vals)
			add(arrowflow.Insert, vals)
		case p < 0.72:
			j := pick()
			add(arrowflow.Delete, live[j])
			live = slices.Delete(live, j, j+1)
		case p < 0.95:
			j := pick()
			add(arrowflow.UpdateBefore, live[j])
			vals := mk()
			if rng.IntN(2) == 0 {
				vals[0] = live[j][0] // the same key, another row
			}
			live[j] = vals
			add(arrowflow.UpdateAfter, vals)
		default:
			add(arrowflow.Delete, mk()) // most likely not there
		}
	}
	return rows
}

func joinLeftRow(rng *rand.Rand, keys int) func() []any {
	return func() []any {
		var k, t, s any = int64(rng.IntN(keys)), int64(rng.IntN(20)), fmt.Sprint("s", rng.IntN(3))
		if rng.IntN(20) == 0 {
			k = nil
		}
		if rng.IntN(15) == 0 {
			t = nil
		}
		if rng.IntN(10) == 0 {
			s = nil
		}
		e := int64(rng.IntN(20) + 5)
		if t != nil {
			e = t.(int64) + int64(rng.IntN(8))
		}
		return []any{k, t, e, s}
	}
}

func joinRightRow(rng *rand.Rand, keys int) func() []any {
	return func() []any {
		var k, g, t, v any = int64(rng.IntN(keys)), fmt.Sprint("s", rng.IntN(3)), int64(rng.IntN(25)), float64(rng.IntN(8)) / 2
		if rng.IntN(20) == 0 {
			k = nil
		}
		if rng.IntN(10) == 0 {
			g = nil
		}
		if rng.IntN(15) == 0 {
			t = nil
		}
		if rng.IntN(8) == 0 {
			v = nil
		}
		return []any{k, g, t, v}
	}
}

// joinCase builds an optest case of join j over generated changelogs and
// its reference.
//
// With reorder set, the operators order every gather of unordered ids
// (buckets of one id), as large states do, and cut batches into rounds
// of a few candidate pairs.
func joinCase(t *testing.T, name string, j Join, residual func(l, r []any) bool, seed uint64, appendOnly, reorder bool) optest.Case {
	rng := rand.New(rand.NewPCG(seed, 7))
	const epochs = 4
	left := joinGen(rng, 120, epochs, appendOnly, joinLeftRow(rng, 6))
	right := joinGen(rng, 120, epochs, appendOnly, joinRightRow(rng, 6))
	ref := newJoinRef(t, j, residual)
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	return optest.Case{
		Name: name,
		Factory: func() arrowflow.Operator {
			op := j.Factory()().(*joinOp)
			if reorder {
				op.bucketShift = 0 // every id its own bucket
				op.candRows = 3
			}
			return op
		},
		Inputs: []optest.Input{
			{Schema: j.Left, KeyBy: j.LeftKeys, Rows: left},
			{Schema: j.Right, KeyBy: j.RightKeys, Rows: right},
		},
		Want: func(e int) [][]any {
			return ref.table(optest.UpTo(left, e), optest.UpTo(right, e))
		},
		AppendOnly: j.AppendOnlyOutput(appendOnly, appendOnly),
		Epochs:     epochs,
		Seed:       seed,
	}
}

// joinFewConfigs are a few of optest's configurations, for the variants
// of a case that DefaultConfigs already runs in full: each parallelism
// change and batch size once, with and without selections.
var joinFewConfigs = []optest.Config{
	{Parallelism: []int{1}, BatchSize: 7, RandomSel: true},
	{Parallelism: []int{2, 4}, BatchSize: 1},
	{Parallelism: []int{4, 2}, BatchSize: 1000, RandomSel: true},
	{Parallelism: []int{2, 4, 1}, BatchSize: 7},
	{Parallelism: []int{2, 1}, BatchSize: 1, RandomSel: true},
}

func joinBase(kind window.JoinKind) Join {
	return Join{
		Left: joinTestLeft, Right: joinTestRight,
		LeftKeys: []string{"k"}, RightKeys: []string{"k"},
		Kind: kind, LeftPrefix: "l_", RightPrefix: "r_",
	}
}

// TestJoinMatchesReference runs every join kind through the operator
// harness (parallelism 1, 2, 4 and rescales, batch sizes 1, 7 and 1000,
// random selections) over changelogs with duplicates, NULL keys,
// retractions of both sides and unknown retractions, and compares the
// materialized output with the nested-loop reference after every epoch.
func TestJoinMatchesReference(t *testing.T) {
	for ki, kind := range joinKinds {
		t.Run(kind.String(), func(t *testing.T) {
			seed := uint64(ki*100 + 1)
			t.Run("all-columns", func(t *testing.T) {
				optest.Run(t, joinCase(t, "join", joinBase(kind), nil, seed, false, false))
			})
			t.Run("residual", func(t *testing.T) {
				j := joinBase(kind)
				j.LeftColumns, j.RightColumns = []string{"s", "t", "e"}, []string{"v", "t"}
				j.Residual = joinBetweenExpr
				optest.Run(t, joinCase(t, "join", j, joinBetween, seed+1, false, true))
			})
			t.Run("two-keys", func(t *testing.T) {
				j := joinBase(kind)
				j.LeftKeys, j.RightKeys = []string{"k", "s"}, []string{"k", "g"}
				c := joinCase(t, "join", j, nil, seed+2, false, true)
				c.Configs = joinFewConfigs
				optest.Run(t, c)
			})
			t.Run("append-only", func(t *testing.T) {
				j := joinBase(kind)
				j.Residual = joinBetweenExpr
				c := joinCase(t, "join", j, joinBetween, seed+3, true, false)
				c.Configs = joinFewConfigs
				optest.Run(t, c)
			})
		})
	}
}

// TestJoinChurn runs many short-lived keys through the join, so that the
// row stores compact and the key table is rebuilt, and checks the result
// against the reference and that both maintenance steps ran.
func TestJoinChurn(t *testing.T) {
	for _, kind := range []window.JoinKind{window.JoinInner, window.JoinFullOuter} {
		t.Run(kind.String(), func(t *testing.T) {
			j := joinBase(kind)
			j.Residual = kernels.Not(kernels.Eq(kernels.Col("r_v"), kernels.Lit(3.5)))
			residual := func(l, r []any) bool { return r[3] != nil && r[3].(float64) != 3.5 }
			const n, lag, epochs = 12000, 50, 3
			var left, right []optest.Row
			rng := rand.New(rand.NewPCG(3, 3))
			lrow := func(i int) []any { return []any{int64(i), int64(i % 7), int64(i%7 + 3), "x"} }
			rrow := func(i int) []any { return []any{int64(i), "y", int64(i % 5), float64(i % 8)} }
			for i := range n {
				e := i * epochs / n
				left = append(left, optest.Row{Kind: arrowflow.Insert, Values: lrow(i), Epoch: e})
				if rng.IntN(3) > 0 {
					right = append(right, optest.Row{Kind: arrowflow.Insert, Values: rrow(i), Epoch: e})
				}
				if i >= lag { // unknown when right row i-lag was not inserted
					right = append(right, optest.Row{Kind: arrowflow.Delete, Values: rrow(i - lag), Epoch: e})
				}
				if i >= lag {
					left = append(left, optest.Row{Kind: arrowflow.Delete, Values: lrow(i - lag), Epoch: e})
				}
			}
			ref := newJoinRef(t, j, residual)
			var ops []*joinOp
			optest.Run(t, optest.Case{
				Name: "churn",
				Factory: func() arrowflow.Operator {
					op := j.Factory()().(*joinOp)
					ops = append(ops, op)
					return op
				},
				Inputs: []optest.Input{
					{Schema: j.Left, KeyBy: j.LeftKeys, Rows: left},
					{Schema: j.Right, KeyBy: j.RightKeys, Rows: right},
				},
				Want:    func(e int) [][]any { return ref.table(optest.UpTo(left, e), optest.UpTo(right, e)) },
				Epochs:  epochs,
				Configs: []optest.Config{{Parallelism: []int{1}, BatchSize: 1000}, {Parallelism: []int{2, 1}, BatchSize: 500, RandomSel: true}},
			})
			var compactions, rebuilds int
			for _, op := range ops {
				compactions += op.compactions
				rebuilds += op.rebuilds
			}
			if compactions == 0 || rebuilds == 0 {
				t.Errorf("%d compactions and %d key table rebuilds; the churn should cause both", compactions, rebuilds)
			}
		})
	}
}

// joinClock is a processing-time clock the test moves.
type joinClock struct{ now time.Time }

func (c *joinClock) Now() time.Time { return c.now }

// joinHarness drives one join operator instance by direct calls and
// materializes its output.
type joinHarness struct {
	t     testing.TB
	j     Join
	op    arrowflow.Operator
	info  *arrowflow.TaskInfo
	table optest.Multiset
	out   []optest.Change // the changes of the last call
}

func newJoinHarness(t testing.TB, j Join, clock arrowflow.Clock, info *arrowflow.TaskInfo) *joinHarness {
	t.Helper()
	if info == nil {
		info = &arrowflow.TaskInfo{Name: "join", MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Parallelism: 1}
	}
	if info.Allocator == nil {
		info.Allocator = testutil.CheckedAllocator(t)
	}
	info.Clock = clock
	h := &joinHarness{t: t, j: j, op: j.Factory()(), info: info}
	if err := h.op.Open(info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.op.Close() })
	return h
}

func (h *joinHarness) Emit(b arrowflow.Batch) error {
	defer b.Release()
	for _, c := range optest.Changes(b) {
		h.out = append(h.out, c)
		if err := h.table.Apply(c.Kind, c.Values); err != nil {
			h.t.Fatal(err)
		}
	}
	return nil
}

func (h *joinHarness) EmitWatermark(arrowflow.EventTime) error { return nil }

// send processes rows of one input (each "+I", "-D", "-U" or "+U"
// followed by its values) as one batch and returns the changes emitted.
func (h *joinHarness) send(input int, rows ...optest.Row) []optest.Change {
	h.t.Helper()
	schema := h.j.Left
	if input == joinRight {
		schema = h.j.Right
	}
	vals := make([][]any, len(rows))
	kinds := make([]arrowflow.RowKind, len(rows))
	for i, r := range rows {
		vals[i], kinds[i] = r.Values, r.Kind
	}
	rec, err := optest.BuildRecord(h.info.Allocator, schema, vals)
	if err != nil {
		h.t.Fatal(err)
	}
	h.out = nil
	if err := h.op.ProcessBatch(input, arrowflow.NewChangeBatch(rec, kinds), h); err != nil {
		h.t.Fatal(err)
	}
	return h.out
}

func joinChanges(cs []optest.Change) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, " ")
}

func joinRow(kind arrowflow.RowKind, vals ...any) optest.Row {
	return optest.Row{Kind: kind, Values: vals}
}

// TestJoinOuterSequence checks the exact changes of a LEFT join for a
// short sequence, including the retraction and re-emission of padded rows.
func TestJoinOuterSequence(t *testing.T) {
	j := joinBase(window.JoinLeftOuter)
	j.LeftColumns, j.RightColumns = []string{"k", "s"}, []string{"v"}
	h := newJoinHarness(t, j, nil, nil)
	steps := []struct {
		input int
		row   optest.Row
		want  string
	}{
		{joinLeft, joinRow(arrowflow.Insert, 1, 0, 5, "a"), `+I[1 "a" NULL]`},
		{joinRight, joinRow(arrowflow.Insert, 1, "g", 3, 2.5), `-D[1 "a" NULL] +I[1 "a" 2.5]`},
		{joinRight, joinRow(arrowflow.Insert, 1, "g", 4, 1.0), `+I[1 "a" 1]`},
		{joinRight, joinRow(arrowflow.Delete, 1, "g", 3, 2.5), `-D[1 "a" 2.5]`},
		{joinRight, joinRow(arrowflow.UpdateBefore, 1, "g", 4, 1.0), `-D[1 "a" 1] +I[1 "a" NULL]`},
		{joinRight, joinRow(arrowflow.Delete, 9, "g", 4, 1.0), ""},
		{joinLeft, joinRow(arrowflow.Insert, nil, 0, 5, "n"), `+I[NULL "n" NULL]`},
		{joinLeft, joinRow(arrowflow.Delete, nil, 0, 5, "n"), `-D[NULL "n" NULL]`},
		{joinLeft, joinRow(arrowflow.Delete, 1, 0, 5, "a"), `-D[1 "a" NULL]`},
	}
	for i, st := range steps {
		if got := joinChanges(h.send(st.input, st.row)); got != st.want {
			t.Fatalf("step %d: %v %v on input %d: got %q, want %q", i, st.row.Kind, st.row.Values, st.input, got, st.want)
		}
	}
	s := h.op.(JoinStatsReporter).JoinStats()
	if s.UnknownRetractions != 1 || s.StateRows != 0 || s.LeftRows != 4 || s.RightRows != 5 || s.OutputRows != 10 {
		t.Errorf("stats %+v", s)
	}
	if h.table.Len() != 0 {
		t.Errorf("materialized output %v, want empty", h.table.Rows())
	}
}

// TestJoinTTL checks that rows are dropped StateTTL after they were
// stored, without output, and that the storage time survives a snapshot
// and a restore into another parallelism.
func TestJoinTTL(t *testing.T) {
	j := joinBase(window.JoinInner)
	j.StateTTL = time.Minute
	clock := &joinClock{now: time.Unix(1000, 0)}
	h := newJoinHarness(t, j, clock, nil)
	h.send(joinLeft, joinRow(arrowflow.Insert, 1, 0, 5, "a"), joinRow(arrowflow.Insert, 2, 0, 5, "b"))
	clock.now = clock.now.Add(40 * time.Second)
	h.send(joinLeft, joinRow(arrowflow.Insert, 3, 0, 5, "c"))
	if got := joinChanges(h.send(joinRight, joinRow(arrowflow.Insert, 1, "g", 3, 1.0))); got != `+I[1 0 5 "a" 1 "g" 3 1]` {
		t.Fatalf("before expiry: %q", got)
	}
	clock.now = clock.now.Add(20 * time.Second) // keys 1, 2 are 60s old now
	if got := joinChanges(h.send(joinRight, joinRow(arrowflow.Insert, 2, "g", 3, 1.0), joinRow(arrowflow.Insert, 3, "g", 3, 1.0))); got != `+I[3 0 5 "c" 3 "g" 3 1]` {
		t.Fatalf("after expiry of key 2: %q", got)
	}
	if s := h.op.(JoinStatsReporter).JoinStats(); s.ExpiredRows != 2 || s.StateRows != 4 {
		t.Fatalf("stats %+v, want 2 expired and 4 rows held (left 3, right 1, 2, 3)", s)
	}
	// Left 3 and right 1 were stored at 1040s, right 2 and 3 at 1060s.
	// Snapshot, restore into two subtasks at 1100s: left 3 and right 1
	// expire, as they would have without the restore.
	store := state.NewMemoryStore()
	w, err := store.Create(state.SnapshotID{Job: "t", Epoch: 1, Operator: "join"}, state.KeyGroupRange{Start: 0, End: 128})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.op.SnapshotState(1, w); err != nil {
		t.Fatal(err)
	}
	hd, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(40 * time.Second)
	var outs []string
	rows := int64(0)
	for s := range 2 {
		info := &arrowflow.TaskInfo{Name: "join", Subtask: s, Parallelism: 2, MaxParallelism: 128, KeyGroups: state.RangeOf(s, 128, 2)}
		h2 := newJoinHarness(t, j, clock, info)
		r, err := store.Open(hd, info.Allocator)
		if err != nil {
			t.Fatal(err)
		}
		if err := h2.op.RestoreState(r); err != nil {
			t.Fatal(err)
		}
		r.Close()
		for _, k := range []int64{1, 2, 3} {
			kg := joinKeyGroup(t, k)
			if info.KeyGroups.Contains(kg) {
				if got := joinChanges(h2.send(joinLeft, joinRow(arrowflow.Insert, k, 0, 5, "z"))); got != "" {
					outs = append(outs, got)
				}
			}
		}
		st := h2.op.(JoinStatsReporter).JoinStats()
		rows += st.StateRows
	}
	slices.Sort(outs)
	if want := []string{`+I[2 0 5 "z" 2 "g" 3 1]`, `+I[3 0 5 "z" 3 "g" 3 1]`}; !slices.Equal(outs, want) {
		t.Errorf("after restore: %q, want %q", outs, want)
	}
	if rows != 5 { // right 2, 3 and the three new left rows
		t.Errorf("%d rows held after restore, want 5", rows)
	}
}

func joinKeyGroup(t testing.TB, k int64) int {
	rec, err := optest.BuildRecord(testutil.CheckedAllocator(t), arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil), [][]any{{k}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	groups, err := optest.KeyGroups(rec, []string{"k"}, 128)
	if err != nil {
		t.Fatal(err)
	}
	return groups[0]
}

func TestJoinValidate(t *testing.T) {
	good := joinBase(window.JoinFullOuter)
	good.Residual = joinBetweenExpr
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := good.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range out.Fields() {
		if !f.Nullable {
			t.Errorf("FULL join output column %q is not nullable", f.Name)
		}
	}
	inner := joinBase(window.JoinInner)
	out, _ = inner.OutputSchema()
	if f, _ := out.FieldsByName("l_e"); f[0].Nullable {
		t.Errorf("INNER join made the non-nullable l_e nullable")
	}
	if !inner.AppendOnlyOutput(true, true) || inner.AppendOnlyOutput(true, false) || good.AppendOnlyOutput(true, true) {
		t.Errorf("AppendOnlyOutput wrong")
	}
	bad := map[string]func(j *Join){
		"semi":            func(j *Join) { j.Kind = window.JoinSemi },
		"no keys":         func(j *Join) { j.LeftKeys, j.RightKeys = nil, nil },
		"key count":       func(j *Join) { j.RightKeys = []string{"k", "g"} },
		"missing key":     func(j *Join) { j.LeftKeys = []string{"nope"} },
		"key types":       func(j *Join) { j.RightKeys = []string{"g"} },
		"name clash":      func(j *Join) { j.LeftPrefix, j.RightPrefix = "", "" },
		"listed twice":    func(j *Join) { j.LeftColumns = []string{"k", "k"} },
		"residual column": func(j *Join) { j.LeftColumns = []string{"k"}; j.Residual = joinBetweenExpr },
		"residual type":   func(j *Join) { j.Residual = kernels.Col("r_v") },
		"negative ttl":    func(j *Join) { j.StateTTL = -time.Second },
		"residual in case": func(j *Join) {
			j.RightColumns = []string{"k"}
			j.Residual = kernels.Case(kernels.IsNull(kernels.Cast(kernels.Col("r_t"), arrow.PrimitiveTypes.Int32)), kernels.Lit(true)).Otherwise(kernels.Lit(false))
		},
		"no schema": func(j *Join) { j.Right = nil },
	}
	for name, mod := range bad {
		j := joinBase(window.JoinLeftOuter)
		mod(&j)
		if err := j.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, j)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// joinTickClock advances by one millisecond whenever it is read.
type joinTickClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *joinTickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

// TestJoinTTLConsistent runs joins with a short StateTTL over a clock
// that moves as the operator reads it, through every harness
// configuration: rows expire at arbitrary points, the result is stale
// (expired rows no longer match), but the output stays a consistent
// changelog: nothing is retracted that was not emitted, also across
// snapshots and restores (match counts are kept in the snapshot).
func TestJoinTTLConsistent(t *testing.T) {
	for ki, kind := range joinKinds {
		t.Run(kind.String(), func(t *testing.T) {
			j := joinBase(kind)
			j.Residual = joinBetweenExpr
			j.StateTTL = 40 * time.Millisecond
			c := joinCase(t, "join-ttl", j, joinBetween, uint64(ki+50), false, true)
			c.Want = nil
			c.Clock = &joinTickClock{now: time.Unix(0, 0)}
			c.Configs = joinFewConfigs
			optest.Run(t, c)
		})
	}
}

// TestJoinTTLOuterStale checks that an expired match leaves its pair rows
// in a LEFT join's output rather than retracting a padded row never
// emitted.
func TestJoinTTLOuterStale(t *testing.T) {
	j := joinBase(window.JoinLeftOuter)
	j.LeftColumns, j.RightColumns = []string{"k"}, []string{"v"}
	j.StateTTL = time.Minute
	clock := &joinClock{now: time.Unix(1000, 0)}
	h := newJoinHarness(t, j, clock, nil)
	h.send(joinRight, joinRow(arrowflow.Insert, 1, "g", 3, 2.0))
	clock.now = clock.now.Add(30 * time.Second)
	if got := joinChanges(h.send(joinLeft, joinRow(arrowflow.Insert, 1, 0, 5, "a"))); got != "+I[1 2]" {
		t.Fatalf("insert: %q", got)
	}
	clock.now = clock.now.Add(40 * time.Second) // the right row expires
	if got := joinChanges(h.send(joinLeft, joinRow(arrowflow.Delete, 1, 0, 5, "a"))); got != "" {
		t.Fatalf("retraction after the match expired: %q, want nothing", got)
	}
	if rows := h.table.Rows(); len(rows) != 1 {
		t.Fatalf("output %v, want the stale pair", rows)
	}
}

// TestJoinValueEq checks the retraction's value comparison on every
// family of types against the rule: NULL equals NULL, -0 equals +0, NaN
// equals NaN, everything else by value.
func TestJoinValueEq(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	nan := math.NaN()
	cases := []struct {
		dt   arrow.DataType
		vals []any // compared pairwise; equal[i][j] from want
		want func(a, b any) bool
	}{
		{arrow.FixedWidthTypes.Boolean, []any{true, false, nil, true}, nil},
		{arrow.PrimitiveTypes.Int32, []any{int64(1), int64(-1), nil, int64(1)}, nil},
		{arrow.PrimitiveTypes.Float64, []any{0.0, math.Copysign(0, -1), nan, nan, 1.5, nil}, func(a, b any) bool {
			if a == nil || b == nil {
				return a == nil && b == nil
			}
			x, y := a.(float64), b.(float64)
			return x == y || (x != x && y != y)
		}},
		{arrow.BinaryTypes.String, []any{"", "a", nil, "ab", "a"}, nil},
		{arrow.BinaryTypes.LargeString, []any{"", "a", nil, "a"}, nil},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, []any{int64(5), int64(6), nil, int64(5)}, nil},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, []any{"1.50", "-1.50", nil, "1.50"}, nil},
	}
	for _, c := range cases {
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: c.dt, Nullable: true}}, nil)
		rows := make([][]any, len(c.vals))
		for i, v := range c.vals {
			rows[i] = []any{v}
		}
		rec, err := optest.BuildRecord(mem, schema, rows)
		if err != nil {
			t.Fatalf("%s: %v", c.dt, err)
		}
		// A slice, so that array offsets are exercised too.
		sl := rec.NewSlice(1, rec.NumRows())
		eq, err := joinValueEqOf(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == nil {
			want = func(a, b any) bool { return a == b }
		}
		for i := range c.vals {
			for j := 1; j < len(c.vals); j++ {
				got := eq(rec.Column(0), i, sl.Column(0), j-1)
				if w := want(c.vals[i], c.vals[j]); got != w {
					t.Errorf("%s: %v = %v: got %v, want %v", c.dt, c.vals[i], c.vals[j], got, w)
				}
			}
		}
		sl.Release()
		rec.Release()
	}
	if _, err := joinValueEqOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)); err == nil {
		t.Error("list values compared")
	}
}

// TestJoinConstantResidual checks a residual that reads no column: FALSE
// pads every row of a FULL join, TRUE is the plain key join.
func TestJoinConstantResidual(t *testing.T) {
	for _, v := range []bool{false, true} {
		j := joinBase(window.JoinFullOuter)
		j.LeftColumns, j.RightColumns = []string{"k"}, []string{"v"}
		j.Residual = kernels.Lit(v)
		h := newJoinHarness(t, j, nil, nil)
		h.send(joinLeft, joinRow(arrowflow.Insert, 1, 0, 5, "a"))
		got := joinChanges(h.send(joinRight, joinRow(arrowflow.Insert, 1, "g", 3, 2.0)))
		want := map[bool]string{false: `+I[NULL 2]`, true: `-D[1 NULL] +I[1 2]`}[v]
		if got != want {
			t.Errorf("residual %v: %q, want %q", v, got, want)
		}
	}
}
