package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
)

// gbKeyLayouts are the key layouts of the GroupBy state tests.
var gbKeyLayouts = []struct {
	name string
	cols []gbCol
}{
	{"int64", []gbCol{{"k", arrow.PrimitiveTypes.Int64, 300, 0.05}}},
	{"string", []gbCol{{"k", arrow.BinaryTypes.String, 300, 0.05}}},
	{"int32,string", []gbCol{{"a", arrow.PrimitiveTypes.Int32, 5, 0.05}, {"b", arrow.BinaryTypes.String, 60, 0.05}}},
	{"global", nil},
}

// gbMergeInput generates an input with the layout's keys and the value
// columns of gbAllAggs.
func gbMergeInput(t testing.TB, rng *rand.Rand, keyCols []gbCol, rows, batch int) (*gbInput, []int, []AggregateSpec) {
	cols := append(append([]gbCol(nil), keyCols...), gbValueCols(0.1)...)
	in := gbGenInput(t, rng, cols, rows, batch, true)
	return in, iotaIdx(len(keyCols)), gbAllAggs(len(keyCols))
}

// TestGroupByMergeParts splits the input into parts, aggregates each part
// on its own, and merges the exported states, in order, into a fresh
// GroupBy: the result must be the reference's over the whole input.
func TestGroupByMergeParts(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, layout := range gbKeyLayouts {
		for _, parts := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("key=%s/parts=%d", layout.name, parts), func(t *testing.T) {
				in, keys, aggs := gbMergeInput(t, rng, layout.cols, 4000, 250)
				defer in.release()
				ref := gbRefRun(in, keys, aggs)

				merged := gbNewGroupBy(t, in.schema, keys, aggs, false)
				per := (len(in.batches) + parts - 1) / parts
				for p := 0; p < parts; p++ {
					part := gbNewGroupBy(t, in.schema, keys, aggs, p%2 == 1)
					for b := p * per; b < min(len(in.batches), (p+1)*per); b++ {
						if err := part.Update(in.batches[b], in.sels[b]); err != nil {
							t.Fatal(err)
						}
					}
					state, err := part.ExportState(mem)
					if err != nil {
						t.Fatal(err)
					}
					if !state.Schema().Equal(part.StateSchema()) {
						t.Fatalf("state schema %s, StateSchema says %s", state.Schema(), part.StateSchema())
					}
					if err := merged.Merge(state, nil); err != nil {
						t.Fatal(err)
					}
					state.Release()
				}
				out, err := merged.Finish(mem)
				if err != nil {
					t.Fatal(err)
				}
				defer out.Release()
				gbCheck(t, ref, in.schema, out)
			})
		}
	}
}

// TestGroupByMergeByKeyRange merges the rows of one exported state into
// two GroupBys by key hash, as a rescaled job restoring its key ranges
// would: each must hold exactly its keys, with the reference's values.
func TestGroupByMergeByKeyRange(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(23, 24))
	for _, layout := range gbKeyLayouts[:3] {
		t.Run("key="+layout.name, func(t *testing.T) {
			in, keys, aggs := gbMergeInput(t, rng, layout.cols, 3000, 500)
			defer in.release()
			ref := gbRefRun(in, keys, aggs)
			whole := gbNewGroupBy(t, in.schema, keys, aggs, false)
			for b, rec := range in.batches {
				if err := whole.Update(rec, in.sels[b]); err != nil {
					t.Fatal(err)
				}
			}
			state, err := whole.ExportState(mem)
			if err != nil {
				t.Fatal(err)
			}
			defer state.Release()
			n := int(state.NumRows())
			hashes := make([]uint64, n)
			if err := HashColumns(state.Columns()[:len(keys)], nil, hashes); err != nil {
				t.Fatal(err)
			}
			var sels [2][]int32
			for i, h := range hashes {
				sels[h%2] = append(sels[h%2], int32(i))
			}
			total := 0
			for half, sel := range sels {
				g := gbNewGroupBy(t, in.schema, keys, aggs, half == 1)
				if err := g.Merge(state, sel); err != nil {
					t.Fatal(err)
				}
				out, err := g.Finish(mem)
				if err != nil {
					t.Fatal(err)
				}
				if int(out.NumRows()) != len(sel) {
					t.Fatalf("half %d: %d groups, selected %d", half, out.NumRows(), len(sel))
				}
				gbCheckUnordered(t, ref, in.schema, out)
				total += int(out.NumRows())
				out.Release()
			}
			if total != n {
				t.Fatalf("halves hold %d groups, state %d", total, n)
			}
		})
	}
}

// gbCheckUnordered is gbCheck for a result holding a subset of the
// reference's groups, in any order.
func gbCheckUnordered(t testing.TB, ref *gbRef, schema *arrow.Schema, out arrow.RecordBatch) {
	t.Helper()
	nk := len(ref.keys)
	for g := 0; g < int(out.NumRows()); g++ {
		key := gbKeyString(out.Columns()[:nk], g)
		rg, ok := ref.index[string(gbAppendKey(nil, out.Columns()[:nk], g))]
		if !ok {
			t.Fatalf("group %d: key %s not in the reference", g, key)
		}
		for a, spec := range ref.aggs {
			var argType arrow.DataType
			if len(spec.Args) > 0 {
				argType = schema.Field(spec.Args[0]).Type
			}
			want, approx, tol := ref.expected(rg, a, argType)
			if got := gbValueOf(out.Column(nk+a), g); !gbMatch(got, want, approx, tol) {
				t.Fatalf("key %s, %s: got %s, want %s", key, out.Schema().Field(nk+a).Name, got, want)
			}
		}
	}
}

// TestGroupByExportRebuild rebuilds a GroupBy from its exported state and
// checks that the copy answers, and goes on answering, exactly like the
// original: same groups, same order, same values.
func TestGroupByExportRebuild(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(25, 26))
	for _, layout := range gbKeyLayouts {
		t.Run("key="+layout.name, func(t *testing.T) {
			in, keys, aggs := gbMergeInput(t, rng, layout.cols, 3000, 300)
			defer in.release()
			orig := gbNewGroupBy(t, in.schema, keys, aggs, false)
			half := len(in.batches) / 2
			for b := 0; b < half; b++ {
				if err := orig.Update(in.batches[b], in.sels[b]); err != nil {
					t.Fatal(err)
				}
			}
			state, err := orig.ExportState(mem)
			if err != nil {
				t.Fatal(err)
			}
			copy := gbNewGroupBy(t, in.schema, keys, aggs, true)
			if err := copy.Merge(state, nil); err != nil {
				t.Fatal(err)
			}
			state.Release()
			gbSameResult(t, mem, orig, copy)
			for b := half; b < len(in.batches); b++ {
				for _, g := range []*GroupBy{orig, copy} {
					if err := g.Update(in.batches[b], in.sels[b]); err != nil {
						t.Fatal(err)
					}
				}
			}
			gbSameResult(t, mem, orig, copy)
			// And the states themselves agree.
			s1, err := orig.ExportState(mem)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := copy.ExportState(mem)
			if err != nil {
				t.Fatal(err)
			}
			if !array.RecordApproxEqual(s1, s2, array.WithNaNsEqual(true)) {
				t.Errorf("states differ:\n%v\n%v", s1, s2)
			}
			s1.Release()
			s2.Release()
		})
	}
}

func gbSameResult(t *testing.T, mem memory.Allocator, a, b *GroupBy) {
	t.Helper()
	ra, err := a.Finish(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Release()
	rb, err := b.Finish(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Release()
	if !ra.Schema().Equal(rb.Schema()) || !array.RecordApproxEqual(ra, rb, array.WithNaNsEqual(true)) {
		t.Fatalf("results differ:\n%v\n%v", ra, rb)
	}
}

// TestGroupByGlobal checks the aggregation without keys: one group even
// for no input, with SQL's answers for it.
func TestGroupByGlobal(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	aggs := []AggregateSpec{{Func: AggCountStar, Name: "n"}, {Func: AggSum, Args: []int{0}, Name: "s"}, {Func: AggMin, Args: []int{0}, Name: "lo"}}
	g, err := NewGroupBy(schema, nil, aggs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Finish(mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out.Columns()); got != "[[0] [(null)] [(null)]]" || g.Groups() != 1 {
		t.Errorf("empty input: %s with %d groups", got, g.Groups())
	}
	out.Release()
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{5, -2, 0, 9}, []bool{true, true, false, true})
	arr := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 4)
	arr.Release()
	defer rec.Release()
	if err := g.Update(rec, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	out, err = g.Finish(mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out.Columns()); got != "[[3] [3] [-2]]" {
		t.Errorf("rows 0..2: %s", got)
	}
	out.Release()
}

// TestGroupByNullGroupsAndFloats pins the SQL grouping rules on a small
// hand-written input: null is its own key, -0 groups with +0, NaN with
// NaN; aggregates over only nulls are null.
func TestGroupByNullGroupsAndFloats(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	kb := array.NewFloat64Builder(mem)
	kb.AppendValues([]float64{0, math.Copysign(0, -1), math.NaN(), 0, -math.NaN(), 1}, nil)
	kb.AppendNull()
	kb.AppendNull()
	vb := array.NewInt32Builder(mem)
	vb.AppendValues([]int32{1, 2, 3, 4, 5, 0, 7, 8}, []bool{true, true, true, true, true, false, true, false})
	ks, vs := kb.NewArray(), vb.NewArray()
	kb.Release()
	vb.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{ks, vs}, 8)
	ks.Release()
	vs.Release()
	defer rec.Release()
	for _, general := range []bool{false, true} {
		g := gbNewGroupBy(t, schema, []int{0}, []AggregateSpec{
			{Func: AggSum, Args: []int{1}, Name: "s"},
			{Func: AggCount, Args: []int{1}, Name: "c"},
		}, general)
		if err := g.Update(rec, nil); err != nil {
			t.Fatal(err)
		}
		out, err := g.Finish(mem)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(out.Columns()), "[[0 NaN 1 (null)] [7 8 (null) 7] [3 2 0 1]]"; got != want {
			t.Errorf("general=%v: %s, want %s", general, got, want)
		}
		out.Release()
	}
}

// TestGroupByResetReuse checks that a Reset GroupBy answers like a new one
// and does not grow on the same input.
func TestGroupByResetReuse(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(27, 28))
	for _, layout := range gbKeyLayouts {
		in, keys, aggs := gbMergeInput(t, rng, layout.cols, 2000, 500)
		g := gbNewGroupBy(t, in.schema, keys, aggs, false)
		run := func() int64 {
			for b, rec := range in.batches {
				if err := g.Update(rec, in.sels[b]); err != nil {
					t.Fatal(err)
				}
			}
			out, err := g.Finish(mem)
			if err != nil {
				t.Fatal(err)
			}
			gbCheck(t, gbRefRun(in, keys, aggs), in.schema, out)
			out.Release()
			size := g.SizeBytes()
			g.Reset()
			return size
		}
		run()
		second := run()
		if third := run(); third != second {
			t.Errorf("%s: SizeBytes %d after a reused run, %d after the one before", layout.name, third, second)
		}
		if second <= 0 {
			t.Errorf("%s: SizeBytes %d", layout.name, second)
		}
		in.release()
	}
}

// TestGroupByZeroAllocs checks the steady state: once every group of a
// batch exists, Update allocates nothing, with every aggregate, with and
// without selection and nulls.
func TestGroupByZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, layout := range gbKeyLayouts {
		for _, withSel := range []bool{false, true} {
			in, keys, aggs := gbMergeInput(t, rng, layout.cols, 4096, 4096)
			g := gbNewGroupBy(t, in.schema, keys, aggs, false)
			var sel []int32
			if withSel {
				sel = randomSel(rng, 4096)
			}
			if err := g.Update(in.batches[0], sel); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(5, func() {
				if err := g.Update(in.batches[0], sel); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("key=%s sel=%v: %v allocations per batch", layout.name, withSel, allocs)
			}
			in.release()
		}
	}
}

func TestGroupBySchemas(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	}, nil)
	g, err := NewGroupBy(schema, []int{0}, []AggregateSpec{
		{Func: AggAvg, Args: []int{1}, Name: "avg_price"},
		{Func: AggCountStar},
		{Func: AggLast, Args: []int{1, 2}},
		{Func: AggCountDistinct, Args: []int{1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "user:utf8 avg_price:float64? count(*):int64 last(price, ts):float64? count(distinct price):int64"
	if got := gbFieldsString(g.OutputSchema()); got != want {
		t.Errorf("output schema %s, want %s", got, want)
	}
	want = "user:utf8 avg_price.sum:float64 avg_price.count:int64 count(*).count:int64 " +
		"last(price, ts).value:float64? last(price, ts).time:timestamp[ms, tz=UTC]? count(distinct price).distinct:list<item: float64, nullable>"
	if got := gbFieldsString(g.StateSchema()); got != want {
		t.Errorf("state schema %s, want %s", got, want)
	}
}

func gbFieldsString(s *arrow.Schema) string {
	var parts []string
	for _, f := range s.Fields() {
		p := f.Name + ":" + f.Type.String()
		if f.Nullable {
			p += "?"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func TestGroupByErrors(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, nil)
	bad := []struct {
		name string
		keys []int
		aggs []AggregateSpec
		want string
	}{
		{"key out of range", []int{3}, nil, "out of range"},
		{"list key", []int{2}, nil, "key column 0: unsupported type list"},
		{"argument out of range", []int{0}, []AggregateSpec{{Func: AggSum, Args: []int{-1}}}, "out of range"},
		{"sum of strings", []int{0}, []AggregateSpec{{Func: AggSum, Args: []int{1}}}, "sum: unsupported argument type utf8"},
		{"count(*) with an argument", []int{0}, []AggregateSpec{{Func: AggCountStar, Args: []int{1}}}, "1 arguments, want 0"},
		{"first without time", []int{0}, []AggregateSpec{{Func: AggFirst, Args: []int{1}}}, "1 arguments, want 2"},
		{"first by string time", []int{0}, []AggregateSpec{{Func: AggFirst, Args: []int{0, 1}}}, "unsupported event-time type utf8"},
		{"unknown function", []int{0}, []AggregateSpec{{Func: AggFunc(99), Args: []int{0}}}, "unknown function"},
	}
	for _, c := range bad {
		_, err := NewGroupBy(schema, c.keys, c.aggs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}

	// Per-batch errors.
	small := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	g, err := NewGroupBy(small, []int{0}, []AggregateSpec{{Func: AggSum, Args: []int{1}, Name: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, 1}, nil)
	k := ib.NewArray()
	ib.AppendValues([]int64{math.MaxInt64 - 1, 5, 2}, nil)
	v := ib.NewArray()
	ib.AppendValues([]int64{1, 2, 3}, nil)
	other := ib.NewArray()
	ib.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "b", "c"}, nil)
	strs := sb.NewArray()
	sb.Release()
	defer gbRelease([]arrow.Array{k, v, other, strs})
	rec := array.NewRecordBatch(small, []arrow.Array{k, v}, 3)
	defer rec.Release()
	if err := g.Update(rec, []int32{0, 3}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("selection out of range: %v", err)
	}
	if err := g.Update(rec, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	// Row 2 pushes group 0 (key 1) past MaxInt64.
	if err := g.Update(rec, []int32{1, 2}); err == nil || err.Error() != `group by: aggregate "s": sum overflows int64 in group 0` {
		t.Errorf("overflow: %v", err)
	}
	wrongType := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil),
		[]arrow.Array{other, strs}, 3)
	defer wrongType.Release()
	if err := g.Update(wrongType, nil); err == nil || !strings.Contains(err.Error(), "type utf8") {
		t.Errorf("string values for an int64 sum: %v", err)
	}
	if err := g.Merge(wrongType, nil); err == nil || !strings.Contains(err.Error(), "state column 1 (s.sum)") {
		t.Errorf("merging a batch that is not state: %v", err)
	}
}

// TestSumOverflow pins where the sign-trick check fires: on the first
// partial sum outside int64, including single uint64 values above
// MaxInt64, and on merged partial sums.
func TestSumOverflow(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	gids := []uint32{0, 1, 1, 0, 1}
	cases := []struct {
		name string
		arr  func() arrow.Array
		want string // "" for no error
	}{
		{"int64 fits", func() arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{math.MaxInt64, 1, -5, -1, math.MaxInt64}, nil)
			return b.NewArray()
		}, ""},
		{"int64 overflows up", func() arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{1, math.MaxInt64, 1, 2, 0}, nil)
			return b.NewArray()
		}, "sum overflows int64 in group 1"},
		{"int64 overflows down", func() arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{math.MinInt64, 0, 0, -1, 0}, nil)
			return b.NewArray()
		}, "sum overflows int64 in group 0"},
		{"uint64 above MaxInt64", func() arrow.Array {
			b := array.NewUint64Builder(mem)
			defer b.Release()
			b.AppendValues([]uint64{1, 2, 3, math.MaxInt64 + 1, 4}, nil)
			return b.NewArray()
		}, "sum overflows int64 in group 0"},
		{"uint32 sums fit", func() arrow.Array {
			b := array.NewUint32Builder(mem)
			defer b.Release()
			b.AppendValues([]uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32, math.MaxUint32, 1}, nil)
			return b.NewArray()
		}, ""},
	}
	for _, c := range cases {
		arr := c.arr()
		acc, err := NewAccumulator(AggSum, []arrow.DataType{arr.DataType()})
		if err != nil {
			t.Fatal(err)
		}
		acc.Grow(2)
		err = acc.Update([]arrow.Array{arr}, nil, gids)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		arr.Release()
	}

	// Merging two partial sums that overflow together.
	acc, _ := NewAccumulator(AggSum, []arrow.DataType{arrow.PrimitiveTypes.Int64})
	acc.Grow(1)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{math.MaxInt64 / 2, math.MaxInt64/2 + 2}, nil)
	state := b.NewArray()
	b.Release()
	defer state.Release()
	if err := acc.Merge([]arrow.Array{state}, nil, []uint32{0, 0}); err == nil || err.Error() != "sum overflows int64 in group 0" {
		t.Errorf("merge overflow: %v", err)
	}
}

func TestAccumulatorArgumentErrors(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3}, nil)
	a3 := b.NewArray()
	b.AppendValues([]int64{1, 2}, nil)
	a2 := b.NewArray()
	b.Release()
	defer gbRelease([]arrow.Array{a3, a2})
	for f := AggCountStar; f <= AggLast; f++ {
		types := make([]arrow.DataType, f.Arity())
		for i := range types {
			types[i] = arrow.PrimitiveTypes.Int64
		}
		acc, err := NewAccumulator(f, types)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		acc.Grow(1)
		args := make([]arrow.Array, f.Arity())
		for i := range args {
			args[i] = a3
		}
		if err := acc.Update(args, nil, make([]uint32, 2)); err == nil && f.Arity() > 0 {
			t.Errorf("%s: 2 group ids for 3 rows accepted", f)
		}
		if err := acc.Update(append(args, a3), nil, make([]uint32, 3)); err == nil {
			t.Errorf("%s: an extra column accepted", f)
		}
		if f.Arity() == 2 {
			if err := acc.Update([]arrow.Array{a3, a2}, nil, make([]uint32, 3)); err == nil {
				t.Errorf("%s: columns of different lengths accepted", f)
			}
		}
		if err := acc.Merge(nil, nil, make([]uint32, 3)); err == nil {
			t.Errorf("%s: merge without state accepted", f)
		}
		if err := acc.Update(args, nil, make([]uint32, 3)); err != nil {
			t.Errorf("%s: valid update: %v", f, err)
		}
	}
}

func TestAggFuncString(t *testing.T) {
	want := []string{"count(*)", "count", "sum", "min", "max", "avg", "count(distinct)", "first", "last"}
	for f := AggCountStar; f <= AggLast; f++ {
		if f.String() != want[f] {
			t.Errorf("AggFunc(%d).String() = %q, want %q", int(f), f.String(), want[f])
		}
	}
	if s := AggFunc(42).String(); s != "AggFunc(42)" {
		t.Errorf("unknown function prints as %q", s)
	}
}
