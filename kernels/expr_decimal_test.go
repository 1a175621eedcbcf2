package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	randv2 "math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The DECIMAL kernels are checked against math/big: the exact result as
// a big.Rat, rounded HALF_UP (half away from zero) to the result scale,
// NULL when it needs more digits than the result precision.

// bigPow10 is 10^k.
func bigPow10(k int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }

// refRound is r rounded HALF_UP to s decimal places, as an unscaled integer.
func refRound(r *big.Rat, s int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(bigPow10(max(s, 0))))
	if s < 0 {
		x.Quo(r, new(big.Rat).SetInt(bigPow10(-s)))
	}
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	rem.Abs(rem).Lsh(rem, 1)
	if rem.Cmp(x.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(x.Sign())))
	}
	return q
}

// refFit is the unscaled value u if it fits precision p, else nil.
func refFit(u *big.Int, p int) *big.Int {
	if new(big.Int).Abs(u).Cmp(bigPow10(p)) >= 0 {
		return nil
	}
	return u
}

// ratOf is unscaled × 10^-s.
func ratOf(u *big.Int, s int) *big.Rat {
	return new(big.Rat).SetFrac(u, bigPow10(s))
}

// refRound38 rounds r to 38 significant digits, HALF_UP (Java's
// MathContext(38, HALF_UP)).
func refRound38(r *big.Rat) *big.Rat {
	if r.Sign() == 0 {
		return r
	}
	abs := new(big.Rat).Abs(r)
	// e with 10^(e-1) <= |r| < 10^e
	e := len(new(big.Int).Quo(abs.Num(), abs.Denom()).String())
	if abs.Cmp(big.NewRat(1, 1)) < 0 {
		e = 0
		for new(big.Rat).Mul(abs, new(big.Rat).SetInt(bigPow10(-e+1))).Cmp(big.NewRat(1, 1)) < 0 {
			e--
		}
	}
	k := 38 - e
	u := refRound(r, k)
	if k >= 0 {
		return new(big.Rat).SetFrac(u, bigPow10(k))
	}
	return new(big.Rat).SetInt(new(big.Int).Mul(u, bigPow10(-k)))
}

// refArithType is Flink's result type, written out independently.
func refArithType(op string, p1, s1, p2, s2 int) (int, int) {
	var p, s int
	switch op {
	case "add", "sub":
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	case "mul":
		p, s = p1+p2, s1+s2
	case "div":
		s = max(6, s1+p2+1)
		p = p1 - s1 + s2 + s
	case "mod":
		s = max(s1, s2)
		p = min(p1-s1, p2-s2) + s
	}
	if p > 38 {
		s = max(38-(p-s), min(s, 6))
		p = 38
	}
	return p, s
}

// randDecimal draws an unscaled value of DECIMAL(p, s): anything up to
// 10^p - 1, often near a .5 rounding boundary or the precision limit.
func randDecimal(rng *rand.Rand, p, s int) *big.Int {
	var u *big.Int
	switch rng.Intn(5) {
	case 0: // at the precision limit
		u = new(big.Int).Sub(bigPow10(p), big.NewInt(int64(1+rng.Intn(3))))
	case 1: // a few digits ending in 5, and trailing-5 tails
		digits := 1 + rng.Intn(p)
		u = new(big.Int).Rand(rng, bigPow10(digits))
		u.Mul(u, big.NewInt(10)).Add(u, big.NewInt(5))
		if u.Cmp(bigPow10(p)) >= 0 {
			u.Quo(u, big.NewInt(10))
		}
	case 2: // small
		u = big.NewInt(int64(rng.Intn(2000)))
	default:
		u = new(big.Int).Rand(rng, bigPow10(1+rng.Intn(p)))
	}
	u.Mod(u, bigPow10(p))
	if rng.Intn(2) == 0 {
		u.Neg(u)
	}
	return u
}

func randDecType(rng *rand.Rand) (int, int) {
	var p int
	switch rng.Intn(3) {
	case 0:
		p = 1 + rng.Intn(18)
	case 1:
		p = 19 + rng.Intn(20)
	default:
		p = 1 + rng.Intn(38)
	}
	return p, rng.Intn(p + 1)
}

// decArray builds a decimal128 column; nil values are NULL.
func decArray(mem memory.Allocator, p, s int, vals []*big.Int) arrow.Array {
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)})
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		b.Append(decimal128.FromBigInt(v))
	}
	return b.NewArray()
}

// evalDecimals evaluates e over rec with every row selected and with a
// random selection, and returns the results per input row (nil = NULL,
// else the unscaled value), checking the result type is want.
func evalDecimals(t *testing.T, mem memory.Allocator, rng *rand.Rand, e Expr, rec arrow.RecordBatch, want arrow.DataType) [][]*big.Int {
	t.Helper()
	prog, err := Compile(e, rec.Schema())
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	if want != nil && !arrow.TypeEqual(prog.Type(), want) {
		t.Fatalf("%s: type %s, want %s", e, prog.Type(), want)
	}
	var runs [][]*big.Int
	for _, sel := range [][]int32{nil, randomSel(randv2.New(randv2.NewPCG(uint64(rng.Int63()), 1)), int(rec.NumRows()))} {
		arr, err := prog.Eval(mem, rec, sel)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		got := make([]*big.Int, rec.NumRows())
		d := arr.(*array.Decimal128)
		for k := 0; k < arr.Len(); k++ {
			r := k
			if sel != nil {
				r = int(sel[k])
			}
			if d.IsValid(k) {
				got[r] = d.Value(k).BigInt()
			}
		}
		arr.Release()
		// rows outside the selection are marked unknown by a sentinel
		if sel != nil {
			in := map[int]bool{}
			for _, r := range sel {
				in[int(r)] = true
			}
			for r := range got {
				if !in[r] {
					got[r] = big.NewInt(-424242)
				}
			}
		}
		runs = append(runs, got)
	}
	return runs
}

func fmtUnscaled(u *big.Int, s int) string {
	if u == nil {
		return "NULL"
	}
	return Decimal{Unscaled: decimal128.FromBigInt(u), Scale: int32(s)}.String()
}

func TestDecimalArithMatchesBig(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(1))
	const rows = 200
	for iter := 0; iter < 300; iter++ {
		p1, s1 := randDecType(rng)
		p2, s2 := randDecType(rng)
		if iter < 20 { // q1's shape: DECIMAL(4, 3) * BIGINT's DECIMAL(19, 0)
			p1, s1, p2, s2 = 4, 3, 19, 0
		}
		a, b := make([]*big.Int, rows), make([]*big.Int, rows)
		for r := range a {
			if rng.Intn(10) > 0 {
				a[r] = randDecimal(rng, p1, s1)
			}
			if rng.Intn(10) > 0 {
				b[r] = randDecimal(rng, p2, s2)
			}
		}
		aa, ba := decArray(mem, p1, s1, a), decArray(mem, p2, s2, b)
		schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: aa.DataType(), Nullable: true}, {Name: "b", Type: ba.DataType(), Nullable: true}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{aa, ba}, rows)
		aa.Release()
		ba.Release()
		for _, op := range []string{"add", "sub", "mul", "div", "mod"} {
			p, s := refArithType(op, p1, s1, p2, s2)
			var e Expr = Call(op, Col("a"), Col("b"))
			if op == "div" || op == "mod" { // keep zero divisors out
				e = Call(op, Col("a"), Call("nullif", Col("b"), Lit(int64(0))))
			}
			want := &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
			for _, got := range evalDecimals(t, mem, rng, e, rec, want) {
				for r := range rows {
					if got[r] != nil && got[r].Cmp(big.NewInt(-424242)) == 0 {
						continue
					}
					var ref *big.Int
					if a[r] != nil && b[r] != nil && !(b[r].Sign() == 0 && (op == "div" || op == "mod")) {
						x, y := ratOf(a[r], s1), ratOf(b[r], s2)
						var z *big.Rat
						switch op {
						case "add":
							z = new(big.Rat).Add(x, y)
						case "sub":
							z = new(big.Rat).Sub(x, y)
						case "mul":
							z = new(big.Rat).Mul(x, y)
						case "div":
							z = refRound38(new(big.Rat).Quo(x, y))
						case "mod":
							// x - trunc(x/y)*y
							q := new(big.Rat).Quo(x, y)
							tq := new(big.Int).Quo(q.Num(), q.Denom())
							z = new(big.Rat).Sub(x, new(big.Rat).Mul(new(big.Rat).SetInt(tq), y))
						}
						ref = refFit(refRound(z, s), p)
					}
					if (ref == nil) != (got[r] == nil) || ref != nil && ref.Cmp(got[r]) != 0 {
						t.Fatalf("DECIMAL(%d,%d) %s DECIMAL(%d,%d) -> DECIMAL(%d,%d): %s %s %s = %s, want %s",
							p1, s1, op, p2, s2, p, s, fmtUnscaled(a[r], s1), op, fmtUnscaled(b[r], s2),
							fmtUnscaled(got[r], s), fmtUnscaled(ref, s))
					}
				}
			}
		}
		rec.Release()
	}
}

func TestDecimalDivisionByZeroFails(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	aa := decArray(mem, 5, 2, []*big.Int{big.NewInt(100), big.NewInt(5)})
	ba := decArray(mem, 3, 0, []*big.Int{big.NewInt(3), big.NewInt(0)})
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: aa.DataType()}, {Name: "b", Type: ba.DataType()}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{aa, ba}, 2)
	defer rec.Release()
	aa.Release()
	ba.Release()
	for _, op := range []string{"div", "mod"} {
		prog, err := Compile(Call(op, Col("a"), Col("b")), schema)
		if err != nil {
			t.Fatal(err)
		}
		_, err = prog.Eval(mem, rec, nil)
		if err == nil || !strings.Contains(err.Error(), "row 1: division by zero") {
			t.Fatalf("%s: %v, want a division by zero at row 1", op, err)
		}
	}
}

func TestDecimalCastMatchesBig(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(2))
	const rows = 200
	for iter := 0; iter < 200; iter++ {
		p1, s1 := randDecType(rng)
		p2, s2 := randDecType(rng)
		a := make([]*big.Int, rows)
		ints := array.NewInt64Builder(mem)
		floats := array.NewFloat64Builder(mem)
		strs := array.NewStringBuilder(mem)
		intVals := make([]int64, rows)
		floatVals := make([]float64, rows)
		strVals := make([]string, rows)
		for r := range a {
			if rng.Intn(10) > 0 {
				a[r] = randDecimal(rng, p1, s1)
			}
			intVals[r] = rng.Int63n(1<<62) - 1<<61
			if rng.Intn(3) == 0 {
				intVals[r] = int64(rng.Intn(20001) - 10000)
			}
			floatVals[r] = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(30)-10))
			if rng.Intn(4) == 0 {
				floatVals[r] = float64(rng.Intn(2001)-1000) / 8 // exact halves and eighths
			}
			x := randDecimal(rng, 38, rng.Intn(39))
			strVals[r] = fmtUnscaled(x, rng.Intn(20))
			switch rng.Intn(4) {
			case 0:
				strVals[r] = " " + strVals[r] + " "
			case 1:
				strVals[r] += "e" + strconv.Itoa(rng.Intn(10)-5)
			}
			ints.Append(intVals[r])
			floats.Append(floatVals[r])
			strs.Append(strVals[r])
		}
		aa := decArray(mem, p1, s1, a)
		ia, fa, sa := ints.NewArray(), floats.NewArray(), strs.NewArray()
		ints.Release()
		floats.Release()
		strs.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: aa.DataType(), Nullable: true},
			{Name: "i", Type: ia.DataType()}, {Name: "f", Type: fa.DataType()}, {Name: "s", Type: sa.DataType()}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{aa, ia, fa, sa}, rows)
		for _, c := range []arrow.Array{aa, ia, fa, sa} {
			c.Release()
		}
		to := &arrow.Decimal128Type{Precision: int32(p2), Scale: int32(s2)}
		check := func(what string, got []*big.Int, src func(r int) *big.Rat) {
			for r := range rows {
				if got[r] != nil && got[r].Cmp(big.NewInt(-424242)) == 0 {
					continue
				}
				var ref *big.Int
				if x := src(r); x != nil {
					ref = refFit(refRound(x, s2), p2)
				}
				if (ref == nil) != (got[r] == nil) || ref != nil && ref.Cmp(got[r]) != 0 {
					t.Fatalf("CAST(%s AS %s) row %d: %s, want %s", what, to, r, fmtUnscaled(got[r], s2), fmtUnscaled(ref, s2))
				}
			}
		}
		for _, got := range evalDecimals(t, mem, rng, Cast(Col("a"), to), rec, to) {
			check(fmt.Sprintf("decimal(%d,%d)", p1, s1), got, func(r int) *big.Rat {
				if a[r] == nil {
					return nil
				}
				return ratOf(a[r], s1)
			})
		}
		for _, got := range evalDecimals(t, mem, rng, Cast(Col("i"), to), rec, to) {
			check("bigint", got, func(r int) *big.Rat { return new(big.Rat).SetInt64(intVals[r]) })
		}
		for _, got := range evalDecimals(t, mem, rng, Cast(Col("f"), to), rec, to) {
			check("double", got, func(r int) *big.Rat {
				x, _ := new(big.Rat).SetString(strconv.FormatFloat(floatVals[r], 'e', -1, 64))
				return x
			})
		}
		for _, got := range evalDecimals(t, mem, rng, Cast(Col("s"), to), rec, to) {
			check("string", got, func(r int) *big.Rat {
				x, ok := new(big.Rat).SetString(strings.TrimSpace(strVals[r]))
				if !ok {
					t.Fatalf("bad test string %q", strVals[r])
				}
				return x
			})
		}
		// DECIMAL -> BIGINT truncates toward zero; DECIMAL -> STRING
		// prints every scale digit; DECIMAL -> DOUBLE.
		for _, sel := range [][]int32{nil, randomSel(randv2.New(randv2.NewPCG(uint64(rng.Int63()), 1)), rows)} {
			for _, target := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64} {
				prog, err := Compile(TryCast(Col("a"), target), schema)
				if err != nil {
					t.Fatal(err)
				}
				arr, err := prog.Eval(mem, rec, sel)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; k < arr.Len(); k++ {
					r := k
					if sel != nil {
						r = int(sel[k])
					}
					if a[r] == nil {
						if arr.IsValid(k) {
							t.Fatalf("CAST(NULL AS %s) is not NULL", target)
						}
						continue
					}
					switch v := arr.(type) {
					case *array.Int64:
						q := new(big.Int).Quo(a[r], bigPow10(s1))
						if !q.IsInt64() {
							if v.IsValid(k) {
								t.Fatalf("TRY_CAST(%s AS BIGINT) = %d, want NULL (out of range)", fmtUnscaled(a[r], s1), v.Value(k))
							}
						} else if !v.IsValid(k) || v.Value(k) != q.Int64() {
							t.Fatalf("CAST(%s AS BIGINT) = %d, want %d", fmtUnscaled(a[r], s1), v.Value(k), q)
						}
					case *array.String:
						want := ratOf(a[r], s1).FloatString(s1)
						if s1 == 0 {
							want = a[r].String()
						}
						if v.Value(k) != want {
							t.Fatalf("CAST(%s AS STRING) = %q, want %q", a[r], v.Value(k), want)
						}
					case *array.Float64:
						var want float64
						if p1 <= 18 {
							want = float64(a[r].Int64()) / math.Pow10(s1)
						} else {
							want, _ = ratOf(a[r], s1).Float64()
						}
						if v.Value(k) != want {
							t.Fatalf("CAST(%s AS DOUBLE) = %v, want %v", fmtUnscaled(a[r], s1), v.Value(k), want)
						}
					}
				}
				arr.Release()
			}
		}
		rec.Release()
	}
}

// Rounding is HALF_UP at .5 boundaries, on both signs, and overflow is
// NULL: literal cases a reader can check by hand.
func TestDecimalRoundingAndOverflowCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(mem)
	b.Append(1)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	col.Release()
	defer rec.Release()
	dec := func(s string) Expr {
		d, p, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return &LiteralExpr{Value: d, Type: &arrow.Decimal128Type{Precision: max(p, d.Scale), Scale: d.Scale}}
	}
	dt := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	cases := []struct {
		e    Expr
		want string // NULL for NULL
	}{
		{Cast(dec("2.5"), dt(1, 0)), "3"},
		{Cast(dec("-2.5"), dt(1, 0)), "-3"},
		{Cast(dec("2.49"), dt(1, 0)), "2"},
		{Cast(dec("-2.49"), dt(1, 0)), "-2"},
		{Cast(dec("0.125"), dt(3, 2)), "0.13"},
		{Cast(dec("-0.125"), dt(3, 2)), "-0.13"},
		{Cast(dec("9.5"), dt(1, 0)), "NULL"},   // rounds to 10: two digits
		{Cast(dec("99.99"), dt(3, 1)), "NULL"}, // 100.0 needs four digits
		{Cast(dec("99.99"), dt(4, 1)), "100.0"},
		{Cast(dec("99.94"), dt(3, 1)), "99.9"},
		{Cast(dec("817.2"), dt(23, 3)), "817.200"},
		{Mul(dec("0.908"), Col("x")), "0.908"},
		{Div(dec("1"), dec("3")), "0.333333"},                                  // DECIMAL(1,0)/DECIMAL(1,0) -> DECIMAL(8,6)
		{Div(dec("2"), dec("3")), "0.666667"},                                  // HALF_UP
		{Div(dec("-2"), dec("3")), "-0.666667"},                                // half away from zero
		{Mod(dec("-7.5"), dec("2")), "-1.5"},                                   // the sign of the dividend
		{Add(dec("99999999999999999999999999999999999999"), dec("1")), "NULL"}, // DECIMAL(38,0) + 1 overflows to NULL
		{Neg(dec("-1.50")), "1.50"},
		{Cast(Lit("  12.345 "), dt(4, 2)), "12.35"},
		{Cast(Lit(-0.125), dt(3, 2)), "-0.13"},
		{Cast(Lit(int64(123)), dt(2, 0)), "NULL"},
	}
	for _, c := range cases {
		prog, err := Compile(c.e, schema)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		arr, err := prog.Eval(mem, rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		got := "NULL"
		if arr.IsValid(0) {
			d := arr.(*array.Decimal128)
			got = Decimal{Unscaled: d.Value(0), Scale: d.DataType().(*arrow.Decimal128Type).Scale}.String()
		}
		arr.Release()
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.e, got, c.want)
		}
	}
}

func TestDecimalCompareMatchesBig(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	const rows = 300
	for iter := 0; iter < 100; iter++ {
		p1, s1 := randDecType(rng)
		p2, s2 := randDecType(rng)
		a, b := make([]*big.Int, rows), make([]*big.Int, rows)
		iv := make([]int64, rows)
		ib := array.NewInt64Builder(mem)
		for r := range a {
			if rng.Intn(10) > 0 {
				a[r] = randDecimal(rng, p1, s1)
			}
			b[r] = randDecimal(rng, p2, s2)
			if rng.Intn(4) == 0 && a[r] != nil { // equal values at another scale
				if s2 >= s1 && p2-s2 >= p1-s1 {
					b[r] = new(big.Int).Mul(a[r], bigPow10(s2-s1))
				}
			}
			iv[r] = rng.Int63n(2001) - 1000
			if a[r] != nil && rng.Intn(3) == 0 {
				iv[r] = new(big.Int).Quo(a[r], bigPow10(s1)).Int64()
			}
			ib.Append(iv[r])
		}
		aa, ba, ia := decArray(mem, p1, s1, a), decArray(mem, p2, s2, b), ib.NewArray()
		ib.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: aa.DataType(), Nullable: true},
			{Name: "b", Type: ba.DataType()}, {Name: "i", Type: ia.DataType()}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{aa, ba, ia}, rows)
		aa.Release()
		ba.Release()
		ia.Release()
		ops := map[string]func(c int) bool{
			"eq": func(c int) bool { return c == 0 }, "ne": func(c int) bool { return c != 0 },
			"lt": func(c int) bool { return c < 0 }, "le": func(c int) bool { return c <= 0 },
			"gt": func(c int) bool { return c > 0 }, "ge": func(c int) bool { return c >= 0 },
		}
		for name, want := range ops {
			for _, other := range []string{"b", "i"} {
				prog, err := Compile(Call(name, Col("a"), Col(other)), schema)
				if err != nil {
					t.Fatal(err)
				}
				arr, err := prog.Eval(mem, rec, nil)
				if err != nil {
					t.Fatal(err)
				}
				res := arr.(*array.Boolean)
				for r := range rows {
					if a[r] == nil {
						if res.IsValid(r) {
							t.Fatalf("NULL %s x is not NULL", name)
						}
						continue
					}
					y := ratOf(b[r], s2)
					if other == "i" {
						y = new(big.Rat).SetInt64(iv[r])
					}
					if w := want(ratOf(a[r], s1).Cmp(y)); res.Value(r) != w {
						t.Fatalf("%s %s %s = %v, want %v", fmtUnscaled(a[r], s1), name, y.RatString(), res.Value(r), w)
					}
				}
				arr.Release()
			}
		}
		rec.Release()
	}
}

func TestParseDecimalTypes(t *testing.T) {
	for _, c := range []struct {
		text string
		p, s int32
		str  string
	}{
		{"0.908", 4, 3, "0.908"}, {"1.5", 2, 1, "1.5"}, {".5", 1, 1, "0.5"}, {"-12.50", 4, 2, "-12.50"},
		{"007", 3, 0, "7"}, {"1.", 1, 0, "1"},
	} {
		d, p, err := ParseDecimal(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if p != c.p || d.Scale != c.s || d.String() != c.str {
			t.Errorf("ParseDecimal(%q) = %s with precision %d scale %d, want %s, %d, %d", c.text, d, p, d.Scale, c.str, c.p, c.s)
		}
	}
	for _, bad := range []string{"", ".", "1e5", "1.2.3", "123456789012345678901234567890123456789"} {
		if _, _, err := ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) did not fail", bad)
		}
	}
}

// The type-agnostic kernels move DECIMAL values as they are: CASE,
// COALESCE, NULLIF, IF, IN over constants and over columns, IS NULL.
func TestDecimalThroughGenericKernels(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	a := decArray(mem, 5, 2, []*big.Int{big.NewInt(150), nil, big.NewInt(-25), big.NewInt(0)}) // 1.50, NULL, -0.25, 0.00
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, 3, 4}, nil)
	ia := ib.NewArray()
	ib.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: a.DataType(), Nullable: true}, {Name: "i", Type: ia.DataType()}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{a, ia}, 4)
	a.Release()
	ia.Release()
	defer rec.Release()
	dec := func(s string) Expr {
		d, p, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return &LiteralExpr{Value: d, Type: &arrow.Decimal128Type{Precision: p, Scale: d.Scale}}
	}
	cases := []struct {
		e    Expr
		want string
	}{
		{Case(Greater(Col("i"), Lit(int64(2))), Col("a")).Otherwise(Col("i")), "1.00 2.00 -0.25 0.00"},
		{Coalesce(Col("a"), dec("9.999")), "1.500 9.999 -0.250 0.000"},
		{Call("nullif", Col("a"), dec("-0.25")), "1.50 NULL NULL 0.00"},
		{Call("if", Less(Col("a"), Lit(int64(1))), Neg(Col("a")), Col("a")), "1.50 NULL 0.25 0.00"},
		{In(Col("a"), dec("1.5"), Lit(int64(0))), "true NULL false true"},
		{In(Col("a"), Col("i"), Div(Col("i"), Lit(int64(4)))), "false NULL false false"},
		{In(Mul(Col("a"), dec("2")), Col("i"), Lit(int64(3))), "true NULL false false"}, // 3.00 IN (1, 3)
		{IsNull(Col("a")), "false true false false"},
		{Between(Col("a"), dec("-0.25"), Lit(int64(1))), "false NULL true true"},
		{Eq(Col("a"), Lit(1.5)), "true NULL false false"}, // with a DOUBLE: as DOUBLE
		{Add(Col("a"), Lit(0.25)), "1.75 NULL 0 0.25"},    // DECIMAL + DOUBLE is DOUBLE
		{TryCast(Lit("1.2.3"), &arrow.Decimal128Type{Precision: 5, Scale: 2}), "NULL NULL NULL NULL"},
		{Cast(Col("a"), arrow.BinaryTypes.String), "1.50 NULL -0.25 0.00"},
	}
	for _, c := range cases {
		prog, err := Compile(c.e, schema)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		arr, err := prog.Eval(mem, rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		var got []string
		for k := 0; k < arr.Len(); k++ {
			switch {
			case arr.IsNull(k):
				got = append(got, "NULL")
			case arr.DataType().ID() == arrow.DECIMAL128:
				d := arr.(*array.Decimal128)
				got = append(got, Decimal{Unscaled: d.Value(k), Scale: d.DataType().(*arrow.Decimal128Type).Scale}.String())
			default:
				got = append(got, arr.ValueStr(k))
			}
		}
		arr.Release()
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s = %s, want %s", c.e, g, c.want)
		}
	}
	for _, bad := range []struct {
		e   Expr
		msg string
	}{
		{Cast(Lit("1.2.3"), &arrow.Decimal128Type{Precision: 5, Scale: 2}), `cannot cast "1.2.3"`},
		{Cast(Lit(math.NaN()), &arrow.Decimal128Type{Precision: 5, Scale: 2}), "NaN cannot be converted"},
		{Cast(Mul(Col("a"), dec("1000000000000000000")), arrow.PrimitiveTypes.Int32), "out of range for int32"},
		{Call("abs", Col("a")), ""},
		{Call("concat", Col("a"), Lit("x")), ""},
	} {
		prog, err := Compile(bad.e, schema)
		if err == nil {
			_, err = prog.Eval(mem, rec, nil)
		}
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v, want one with %q", bad.e, err, bad.msg)
		}
	}
}
