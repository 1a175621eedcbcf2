package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
)

var (
	tsMs  = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	tsUs  = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	durMs = &arrow.DurationType{Unit: arrow.Millisecond}
)

// exprSchema is the input of the randomized expression tests: one or two
// columns of every kind the evaluator handles.
var exprSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "ts", Type: tsMs, Nullable: true},
	{Name: "tsu", Type: tsUs, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "dur", Type: durMs, Nullable: true},
}, nil)

var exprStrings = []string{"", "a", "abc", "b%c", "ß", "日本", "x_y", "ABC", "a b"}

// exprInt draws mostly small integers (so that equal values meet), some
// zeros (division) and some extremes (overflow).
func exprInt(rng *rand.Rand) int64 {
	switch rng.IntN(40) {
	case 0:
		return math.MaxInt64 - int64(rng.IntN(3))
	case 1:
		return math.MinInt64 + int64(rng.IntN(3))
	case 2:
		return math.MaxInt32 - int64(rng.IntN(3))
	case 3:
		return math.MinInt32
	case 4, 5, 6:
		return 0
	}
	return int64(rng.IntN(41) - 20)
}

func exprFloat(rng *rand.Rand) float64 {
	switch rng.IntN(30) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*rng.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	}
	return float64(rng.IntN(81)-40) / 4
}

// exprBatch builds a batch of n rows over exprSchema. Columns are sliced
// from longer arrays so that kernels see non-zero offsets.
func exprBatch(t testing.TB, mem memory.Allocator, rng *rand.Rand, n int, nullRate float64) arrow.RecordBatch {
	t.Helper()
	off := rng.IntN(3)
	cols := make([]arrow.Array, exprSchema.NumFields())
	for c, f := range exprSchema.Fields() {
		b := array.NewBuilder(mem, f.Type)
		for i := 0; i < n+off; i++ {
			if rng.Float64() < nullRate {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int64Builder:
				bb.Append(exprInt(rng))
			case *array.Uint32Builder:
				bb.Append(uint32(rng.IntN(40)) + uint32(rng.IntN(2))*(math.MaxUint32-50))
			case *array.Int32Builder:
				x := exprInt(rng)
				if x > math.MaxInt32 || x < math.MinInt32 {
					x = math.MaxInt32
				}
				bb.Append(int32(x))
			case *array.Int16Builder:
				bb.Append(int16(rng.IntN(41) - 20))
			case *array.Float64Builder:
				bb.Append(exprFloat(rng))
			case *array.Float32Builder:
				bb.Append(float32(exprFloat(rng)))
			case *array.BooleanBuilder:
				bb.Append(rng.IntN(2) == 0)
			case *array.StringBuilder:
				bb.Append(exprStrings[rng.IntN(len(exprStrings))])
			case *array.LargeStringBuilder:
				bb.Append(exprStrings[rng.IntN(len(exprStrings))])
			case *array.TimestampBuilder:
				// Around the epoch, both signs, a few distinct values.
				bb.Append(arrow.Timestamp(int64(rng.IntN(21)-10) * 86_400_000 / 3 * unitScale(f.Type)))
			case *array.Date32Builder:
				bb.Append(arrow.Date32(rng.IntN(21) - 10))
			case *array.DurationBuilder:
				bb.Append(arrow.Duration(int64(rng.IntN(21)-10) * 3_600_000))
			default:
				t.Fatalf("no generator for %s", f.Type)
			}
		}
		full := b.NewArray()
		b.Release()
		cols[c] = array.NewSlice(full, int64(off), int64(off+n))
		full.Release()
	}
	rec := array.NewRecordBatch(exprSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func unitScale(dt arrow.DataType) int64 {
	if dt.(*arrow.TimestampType).Unit == arrow.Microsecond {
		return 1000
	}
	return 1
}

// exprGen draws random well-typed expressions over exprSchema. Kinds:
// b bool, i int32, l int64, f float64, s string, t timestamp.
type exprGen struct {
	rng   *rand.Rand
	extra func(g *exprGen, kind byte, depth int) Expr // more functions, or nil
}

var exprCols = map[byte][]string{
	'b': {"b"}, 'i': {"i32", "i16"}, 'l': {"i64", "u32"}, 'f': {"f64", "f32"},
	's': {"s", "ls"}, 't': {"ts", "tsu"},
}

func (g *exprGen) pick(n int) int { return g.rng.IntN(n) }

func (g *exprGen) leaf(k byte) Expr {
	if g.pick(10) == 0 {
		switch g.pick(3) {
		case 0:
			if k != 't' { // NULL - INTERVAL would be an interval
				return Lit(nil)
			}
			return Null(tsMs)
		default:
			return Null(map[byte]arrow.DataType{'b': arrow.FixedWidthTypes.Boolean, 'i': arrow.PrimitiveTypes.Int32,
				'l': arrow.PrimitiveTypes.Int64, 'f': arrow.PrimitiveTypes.Float64, 's': arrow.BinaryTypes.String, 't': tsMs}[k])
		}
	}
	if g.pick(3) > 0 {
		cols := exprCols[k]
		return Col(cols[g.pick(len(cols))])
	}
	switch k {
	case 'b':
		return Lit(g.pick(2) == 0)
	case 'i':
		return Lit(int32(exprInt(g.rng) % 1000))
	case 'l':
		return Lit(exprInt(g.rng))
	case 'f':
		return Lit(exprFloat(g.rng))
	case 's':
		return Lit(exprStrings[g.pick(len(exprStrings))])
	case 't':
		return &LiteralExpr{Value: arrow.Timestamp(int64(g.pick(21)-10) * 86_400_000 / 3), Type: tsMs}
	}
	panic("kind")
}

var numKinds = []byte{'i', 'l', 'f'}

func (g *exprGen) num() byte { return numKinds[g.pick(3)] }

func (g *exprGen) expr(k byte, depth int) Expr {
	if depth <= 0 || g.pick(4) == 0 {
		return g.leaf(k)
	}
	d := depth - 1
	if g.extra != nil && g.pick(4) == 0 {
		if e := g.extra(g, k, d); e != nil {
			return e
		}
	}
	switch g.pick(4) {
	case 0: // CASE and friends work for every kind
		switch g.pick(4) {
		case 0:
			c := Case(g.expr('b', d), g.expr(k, d))
			for i := g.pick(2); i > 0; i-- {
				c.When(g.expr('b', d), g.expr(k, d))
			}
			if g.pick(3) > 0 {
				c.Otherwise(g.expr(k, d))
			}
			return c
		case 1:
			return Call("coalesce", g.expr(k, d), g.expr(k, d))
		case 2:
			return Call("if", g.expr('b', d), g.expr(k, d), g.expr(k, d))
		default:
			return Call("nullif", g.expr(k, d), g.expr(k, d))
		}
	}
	switch k {
	case 'b':
		switch g.pick(9) {
		case 0:
			ops := []string{"eq", "ne", "lt", "le", "gt", "ge"}
			return Call(ops[g.pick(6)], g.expr(g.num(), d), g.expr(g.num(), d))
		case 1:
			ops := []string{"eq", "ne", "lt", "le", "gt", "ge"}
			kk := []byte{'s', 't', 'b'}[g.pick(3)]
			return Call(ops[g.pick(6)], g.expr(kk, d), g.expr(kk, d))
		case 2:
			return And(g.expr('b', d), g.expr('b', d))
		case 3:
			return Or(g.expr('b', d), g.expr('b', d), g.expr('b', d))
		case 4:
			return Not(g.expr('b', d))
		case 5:
			fns := []string{"is_null", "is_not_null"}
			return Call(fns[g.pick(2)], g.expr([]byte("bilfst")[g.pick(6)], d))
		case 6:
			kk := []byte{'l', 'f', 's', 'i'}[g.pick(4)]
			list := []Expr{g.expr(kk, d)}
			for i := g.pick(4); i >= 0; i-- {
				if g.pick(2) == 0 {
					list = append(list, g.leaf(kk))
				} else {
					list = append(list, g.expr(kk, d))
				}
			}
			if g.pick(2) == 0 {
				return Call("not_in", list...)
			}
			return Call("in", list...)
		case 7:
			return Between(g.expr(g.num(), d), g.expr(g.num(), d), g.expr(g.num(), d))
		default:
			return Cast(g.expr(g.num(), d), arrow.FixedWidthTypes.Boolean)
		}
	case 'i', 'l', 'f':
		switch g.pick(4) {
		case 0, 1:
			ops := []string{"add", "sub", "mul", "div", "mod"}
			a, b := k, k
			if k == 'l' && g.pick(2) == 0 {
				b = 'i'
			}
			if k == 'f' {
				a = g.num()
			}
			return Call(ops[g.pick(5)], g.expr(a, d), g.expr(b, d))
		case 2:
			return Neg(g.expr(k, d))
		default:
			to := map[byte][]arrow.DataType{
				'i': {arrow.PrimitiveTypes.Int32},
				'l': {arrow.PrimitiveTypes.Int64},
				'f': {arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32},
			}[k]
			from := []byte{'i', 'l', 'f', 'b'}[g.pick(4)]
			e := g.expr(from, d)
			if g.pick(2) == 0 {
				return TryCast(e, to[g.pick(len(to))])
			}
			return Cast(e, to[g.pick(len(to))])
		}
	case 't':
		switch g.pick(3) {
		case 0:
			return Add(g.expr('t', d), Col("dur"))
		case 1:
			return Sub(g.expr('t', d), Lit(time.Duration(g.pick(48))*time.Hour))
		default:
			return Cast(Col("d"), tsMs)
		}
	}
	return g.leaf(k)
}

// checkExpr evaluates e over rec and sel and compares every selected row
// with the reference interpreter: both fail, or both agree on each value.
func checkExpr(t testing.TB, mem memory.Allocator, e Expr, rec arrow.RecordBatch, sel []int32, extra map[string]func([]any) (any, error)) {
	t.Helper()
	prog, err := Compile(e, rec.Schema())
	if err != nil {
		t.Fatalf("compile %s: %v", e, err)
	}
	rc := &refCompiler{rec: rec, extra: extra}
	rtype, ref := rc.compile(e)
	if rtype.k != '?' && rtype.k != 'n' && prog.Type().ID() != arrow.NULL && refTypeOf(prog.Type()) != rtype {
		t.Fatalf("%s: evaluator type %s, reference type %c/%v", e, prog.Type(), rtype.k, rtype.unit)
	}
	rows := sel
	if rows == nil {
		rows = make([]int32, rec.NumRows())
		for i := range rows {
			rows[i] = int32(i)
		}
	}
	want := make([]any, len(rows))
	var refErr error
	for k, r := range rows {
		want[k], refErr = ref(int(r))
		if refErr != nil {
			refErr = fmt.Errorf("row %d: %w", r, refErr)
			break
		}
	}
	got, err := prog.Eval(mem, rec, sel)
	if refErr != nil {
		if err == nil {
			got.Release()
			t.Fatalf("%s: reference fails (%v), evaluator succeeded", e, refErr)
		}
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row < 0 {
			t.Fatalf("%s: evaluation error should name a row: %v", e, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: evaluator fails, reference succeeds: %v", e, err)
	}
	defer got.Release()
	if got.Len() != len(rows) {
		t.Fatalf("%s: %d values for %d rows", e, got.Len(), len(rows))
	}
	for k, r := range rows {
		g := refValue(got, k)
		if !sameValue(g, want[k]) {
			t.Fatalf("%s: row %d: got %v (%T), want %v (%T)", e, r, g, g, want[k], want[k])
		}
	}
}

func sameValue(a, b any) bool {
	fa, oka := a.(float64)
	fb, okb := b.(float64)
	if oka && okb {
		return fa == fb && math.Signbit(fa) == math.Signbit(fb) || (fa != fa && fb != fb)
	}
	return a == b
}

// exprSel returns nil or a random increasing subset of [0, n).
func exprSel(rng *rand.Rand, n int, use bool) []int32 {
	if !use {
		return nil
	}
	sel := make([]int32, 0, n)
	keep := rng.Float64()
	for r := 0; r < n; r++ {
		if rng.Float64() < keep {
			sel = append(sel, int32(r))
		}
	}
	return sel
}

func TestExprRandom(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	sizes := []int{1, 7, 1024, 65536}
	exprs := 60
	if testing.Short() {
		exprs = 15
	}
	for _, n := range sizes {
		for _, nulls := range []bool{false, true} {
			for _, useSel := range []bool{false, true} {
				name := fmt.Sprintf("rows=%d/nulls=%v/sel=%v", n, nulls, useSel)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(n), uint64(b2i(nulls)*2+b2i(useSel))))
					nullRate := 0.0
					if nulls {
						nullRate = 0.2
					}
					rec := exprBatch(t, mem, rng, n, nullRate)
					defer rec.Release()
					g := &exprGen{rng: rng, extra: extraExprGen}
					count := exprs
					if n == 65536 {
						count = exprs / 4
					}
					for i := 0; i < count; i++ {
						k := []byte("bilfst")[rng.IntN(6)]
						e := g.expr(k, 4)
						checkExpr(t, mem, e, rec, exprSel(rng, n, useSel), extraRefFuncs)
					}
				})
			}
		}
	}
}

// extraExprGen and extraRefFuncs let other test files add functions to
// the random expressions; nil when none do.
var (
	extraExprGen  func(g *exprGen, kind byte, depth int) Expr
	extraRefFuncs map[string]func([]any) (any, error)
)

// FuzzExpr drives the random expression generator from the fuzzer's
// bytes: any input gives a well-typed expression and a batch, and the
// evaluator must agree with the reference interpreter.
func FuzzExpr(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42} {
		f.Add(s, uint64(7), uint8(4), false)
	}
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, depth uint8, useSel bool) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rng := rand.New(rand.NewPCG(seed1, seed2))
		n := []int{1, 7, 100}[rng.IntN(3)]
		rec := exprBatch(t, mem, rng, n, []float64{0, 0.3}[rng.IntN(2)])
		defer rec.Release()
		g := &exprGen{rng: rng, extra: extraExprGen}
		e := g.expr([]byte("bilfst")[rng.IntN(6)], int(depth%6))
		checkExpr(t, mem, e, rec, exprSel(rng, n, useSel), extraRefFuncs)
	})
}

func TestExprCompileErrors(t *testing.T) {
	cases := []struct {
		e    Expr
		want string
	}{
		{Col("nope"), `no column "nope"`},
		{Add(Col("s"), Lit(1)), "cannot apply add to utf8 and int64"},
		{Eq(Col("s"), Col("i64")), "cannot compare utf8 with int64"},
		{And(Col("i64"), Lit(true)), "argument 1 (i64) has type int64, want boolean"},
		{Case(Col("i32"), Lit(1)), "WHEN condition 1 (i32) has type int32, want boolean"},
		{Case(Col("b"), Lit(1)).Otherwise(Lit("x")), "incompatible types"},
		{Call("frobnicate", Col("i64")), `unknown function "frobnicate"`},
		{Cast(Col("b"), tsMs), "cannot cast bool to timestamp"},
		{Call("add", Col("i64")), "add takes 2 arguments"},
		{Mod(Col("ts"), Col("dur")), "cannot apply mod"},
	}
	for _, c := range cases {
		_, err := Compile(c.e, exprSchema)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile(%s) = %v, want error containing %q", c.e, err, c.want)
			continue
		}
		var ee *ExprError
		if !errors.As(err, &ee) {
			t.Errorf("Compile(%s): error %T is not an *ExprError", c.e, err)
		}
	}
	if _, err := CompileFilter(Col("i64"), exprSchema); err == nil || !strings.Contains(err.Error(), "must be boolean") {
		t.Errorf("CompileFilter(i64) = %v", err)
	}
}

func TestExprOverflowNamesRow(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, math.MaxInt64, 4}, nil)
	ib.AppendNull()
	col := ib.NewArray()
	ib.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 5)
	col.Release()
	defer rec.Release()
	p, err := Compile(Add(Col("x"), Lit(1)), schema)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Eval(mem, rec, nil)
	var ee *ExprError
	if !errors.As(err, &ee) || ee.Row != 2 || !strings.Contains(err.Error(), "integer overflow") {
		t.Fatalf("got %v, want an overflow error at row 2", err)
	}
	// Skipping the row makes the batch fine; the null row never fails.
	out, err := p.Eval(mem, rec, []int32{0, 1, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := out.(*array.Int64); got.Value(2) != 5 || !got.IsNull(3) {
		t.Fatalf("got %v", got)
	}
	d, err := Compile(Div(Lit(10), Sub(Col("x"), Col("x"))), schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Eval(mem, rec, nil); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("got %v, want division by zero", err)
	}
	// A guard in AND keeps the division from running on the bad rows.
	f, err := CompileFilter(And(NotEq(Col("x"), Lit(2)), Greater(Div(Lit(10), Sub(Col("x"), Lit(2))), Lit(-100))), schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Select(rec, nil, nil); err != nil {
		t.Fatalf("guarded division failed: %v", err)
	}
}

func TestFilterAndProjection(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 7, 1024, 65536} {
		for _, useSel := range []bool{false, true} {
			rec := exprBatch(t, mem, rng, n, 0.2)
			pred := Or(Greater(Col("i64"), Lit(3)), And(IsNull(Col("s")), Col("b")))
			f, err := CompileFilter(pred, exprSchema)
			if err != nil {
				t.Fatal(err)
			}
			sel := exprSel(rng, n, useSel)
			got, err := f.Select(rec, sel, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, ref := (&refCompiler{rec: rec}).compile(pred)
			var want []int32
			forSel(sel, n, func(r int32) {
				if v, _ := ref(int(r)); v == true {
					want = append(want, r)
				}
			})
			if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("n=%d: filter kept %d rows, reference %d", n, len(got), len(want))
			}
			// Narrowing in place gives the same answer.
			var inPlace []int32
			if sel != nil {
				inPlace = append([]int32{}, sel...)
			}
			inPlace, err = f.Select(rec, inPlace, inPlace)
			if err != nil || fmt.Sprint(inPlace) != fmt.Sprint(got) {
				t.Fatalf("in-place select differs: %v\n%v\n%v", err, inPlace, got)
			}

			exprs := []Expr{Col("s"), Mul(Col("f64"), Lit(0.5)), Col("ts"), Add(Col("i16"), Col("i16"))}
			p, err := CompileProjection(exprs, []string{"s", "half", "ts", "sum"}, exprSchema)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Project(mem, rec, got)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Schema().Equal(p.Schema()) || out.NumRows() != int64(len(got)) {
				t.Fatalf("projection schema %v rows %d", out.Schema(), out.NumRows())
			}
			if out.Schema().Field(2).Type.(*arrow.TimestampType).Unit != arrow.Millisecond {
				t.Fatal("a bare column must keep its type")
			}
			for c, e := range exprs {
				_, ref := (&refCompiler{rec: rec}).compile(e)
				for k, r := range got {
					w, _ := ref(int(r))
					if g := refValue(out.Column(c), k); !sameValue(g, w) {
						t.Fatalf("column %d row %d: got %v want %v", c, r, g, w)
					}
				}
			}
			out.Release()
			rec.Release()
		}
	}
}

func TestExprString(t *testing.T) {
	e := Case(Between(Col("x"), Lit(1), Lit(2)), Lit("in")).When(In(Col("y"), Lit(1), Lit(nil)), Lit("it's")).Otherwise(Cast(Neg(Col("z")), arrow.BinaryTypes.String))
	want := "CASE WHEN (x BETWEEN 1 AND 2) THEN 'in' WHEN (y IN (1, NULL)) THEN 'it''s' ELSE CAST((-z) AS utf8) END"
	if e.String() != want {
		t.Fatalf("got  %s\nwant %s", e, want)
	}
}

// The evaluator allocates nothing per batch once its scratch space has
// grown to the batch size: a filter of every operator family, evaluated
// again and again, makes zero allocations.
func TestFilterSteadyStateAllocs(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(8, 8))
	rec := exprBatch(t, mem, rng, 4096, 0.1)
	defer rec.Release()
	preds := []Expr{
		Greater(Col("i64"), Lit(3)),
		And(Or(Less(Col("f64"), Lit(1.5)), IsNull(Col("s"))), Not(Col("b"))),
		In(Col("s"), Lit("a"), Lit("abc")),
		Between(Add(Col("i16"), Col("i16")), Lit(-5), Lit(5)),
		Eq(Case(Col("b"), Col("s")).Otherwise(Col("ls")), Lit("ß")),
		Greater(Cast(Col("u32"), arrow.PrimitiveTypes.Float64), Mul(Col("f32"), Lit(2.0))),
		Less(Sub(Col("ts"), Col("dur")), Col("tsu")),
		GreaterEq(Call("coalesce", Col("i64"), Col("i32")), Lit(0)),
	}
	sel := exprSel(rng, 4096, true)
	dst := make([]int32, 0, 4096)
	for _, p := range preds {
		f, err := CompileFilter(p, exprSchema)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range [][]int32{nil, sel} {
			if _, err := f.Select(rec, s, dst); err != nil { // grow scratch
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(5, func() {
				if _, err := f.Select(rec, s, dst); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s (sel=%v): %.0f allocations per batch, want 0", p, s != nil, allocs)
			}
		}
	}
}

func TestFunctionConstructors(t *testing.T) {
	cases := map[string]Expr{
		"coalesce":    Coalesce(Col("s"), Lit("x")),
		"like":        Like(Col("s"), "a%"),
		"concat":      Concat(Col("s"), Col("ls")),
		"lower":       Lower(Col("s")),
		"upper":       Upper(Col("s")),
		"substring":   Substring(Col("s"), Lit(2), Lit(3)),
		"char_length": CharLength(Col("s")),
		"floor_time":  FloorTime(Col("ts"), "HOUR"),
		"extract":     Extract("DOW", Col("ts")),
		"date_format": DateFormat(Col("ts"), "yyyy-MM-dd"),
	}
	for fn, e := range cases {
		if c, ok := e.(*CallExpr); !ok || c.Func != fn {
			t.Errorf("%s builds %s", fn, e)
		}
		if _, err := Compile(e, exprSchema); err != nil {
			t.Errorf("%s: %v", fn, err)
		}
	}
	for _, name := range FuncNames() {
		if _, ok := funcs[name]; !ok {
			t.Errorf("FuncNames lists unknown %q", name)
		}
	}
}
