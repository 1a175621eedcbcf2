package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// The math references work row at a time on Go values: exact integer and
// decimal arithmetic with math/big, and the float functions as Java's
// Math specifies them (where Go's math package agrees, they call it).

func mathRef1(f func(x any) (any, error)) func([]any) (any, error) {
	return func(args []any) (any, error) {
		if args[0] == nil {
			return nil, nil
		}
		return f(args[0])
	}
}

func mathRefAbs(x any) (any, error) {
	switch v := x.(type) {
	case float64:
		return math.Abs(v), nil
	case int64:
		if v == math.MinInt64 {
			return nil, errors.New("overflow")
		}
		return max(v, -v), nil
	}
	panic("abs")
}

// mathRefAbs32 is abs of an int32 column (its values arrive as int64).
func mathRefAbs32(x any) (any, error) {
	if x.(int64) == math.MinInt32 {
		return nil, errors.New("overflow")
	}
	return mathRefAbs(x)
}

func mathRefSign(x any) (any, error) {
	switch v := x.(type) {
	case float64:
		if v > 0 {
			return 1.0, nil
		} else if v < 0 {
			return -1.0, nil
		}
		return v, nil // ±0 or NaN
	case int64:
		switch {
		case v > 0:
			return int64(1), nil
		case v < 0:
			return int64(-1), nil
		}
		return int64(0), nil
	}
	panic("sign")
}

// mathRefRound rounds x to d decimal places, halves away from zero: an
// integer exactly, a float on its shortest decimal form (the digits Java's
// Double.toString prints, which strconv's shortest form equals except for
// a few one-digit subnormals), with big.Rat. bits is the integer width.
func mathRefRound(x any, d int64, bits int) (any, error) {
	half := big.NewRat(1, 2)
	roundRat := func(r *big.Rat) *big.Int {
		neg := r.Sign() < 0
		a := new(big.Rat).Abs(r)
		a.Add(a, half)
		q := new(big.Int).Quo(a.Num(), a.Denom()) // floor of a positive rational
		if neg {
			q.Neg(q)
		}
		return q
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(max(d, -d)), nil))
	switch v := x.(type) {
	case int64:
		if d >= 0 {
			return v, nil
		}
		q := roundRat(new(big.Rat).Quo(new(big.Rat).SetInt64(v), scale))
		q.Mul(q, scale.Num())
		lim := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		if q.Cmp(lim) >= 0 || q.Cmp(new(big.Int).Neg(lim)) < 0 {
			return nil, errors.New("overflow")
		}
		return q.Int64(), nil
	case float64:
		if v == 0 {
			return 0.0, nil
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return v, nil
		}
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if !ok {
			panic("rat")
		}
		if d >= 0 {
			r.Mul(r, scale)
		} else {
			r.Quo(r, scale)
		}
		q := new(big.Rat).SetInt(roundRat(r))
		if d >= 0 {
			q.Quo(q, scale)
		} else {
			q.Mul(q, scale)
		}
		f, _ := q.Float64()
		if f == 0 {
			f = 0 // never -0
		}
		return f, nil
	}
	panic("round")
}

// mathRefPow is Java's Math.pow, from its specification's special cases;
// the general case is Go's math.Pow.
func mathRefPow(x, y float64) float64 {
	switch {
	case y == 0:
		return 1
	case math.IsNaN(y):
		return math.NaN()
	case math.IsInf(y, 0) && math.Abs(x) == 1:
		return math.NaN()
	}
	return math.Pow(x, y)
}

func mathRefLog10(x float64) float64 {
	for k := 0; k <= 22; k++ {
		if p, _ := strconv.ParseFloat("1e"+strconv.Itoa(k), 64); p == x {
			return float64(k)
		}
	}
	return math.Log10(x)
}

// mathRandFloat mixes ordinary values, halves at several decimal places
// (2.675, -0.5, 1234.5), integers, special values and extremes.
func mathRandFloat(rng *rand.Rand) any {
	switch rng.IntN(12) {
	case 0:
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64,
			-math.SmallestNonzeroFloat64, 1e22, 1e23, 0.1, 1e-7, 4503599627370496.5, 9007199254740993}[rng.IntN(13)]
	case 1, 2, 3:
		// k/10^p + 5/10^(p+1): a decimal half at place p+1
		p := rng.IntN(6)
		v, _ := strconv.ParseFloat(strconv.FormatInt(rng.Int64N(200000)-100000, 10)+"5e-"+strconv.Itoa(p+1), 64)
		return v
	case 4:
		return float64(rng.Int64N(2001) - 1000)
	case 5:
		return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
	case 6:
		return math.Float64frombits(rng.Uint64())
	}
	return (rng.Float64() - 0.5) * 2000
}

func mathRandInt(bits int) func(*rand.Rand) any {
	return func(rng *rand.Rand) any {
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if bits == 64 {
			lo, hi = math.MinInt64, math.MaxInt64
		}
		switch rng.IntN(8) {
		case 0:
			return []int64{lo, hi, 0, -1, 1, lo + 1, hi - 5, 5, -5, 15, -15, 25}[rng.IntN(12)]
		case 1:
			return int64(rng.Uint64()>>uint(64-bits+1)) * (1 - 2*rng.Int64N(2))
		}
		return rng.Int64N(20001) - 10000
	}
}

func mathCols() []strCol {
	return []strCol{
		{"f", arrow.PrimitiveTypes.Float64, mathRandFloat},
		{"i32", arrow.PrimitiveTypes.Int32, mathRandInt(32)},
		{"i64", arrow.PrimitiveTypes.Int64, mathRandInt(64)},
		{"f32", arrow.PrimitiveTypes.Float32, func(rng *rand.Rand) any { return float64(float32(mathRandFloat(rng).(float64))) }},
		{"i8", arrow.PrimitiveTypes.Int8, strIntGen(-128, 127)},
		{"d", arrow.PrimitiveTypes.Int32, strIntGen(-25, 25)},
		{"y", arrow.PrimitiveTypes.Float64, func(rng *rand.Rand) any {
			if rng.IntN(4) == 0 {
				return mathRandFloat(rng)
			}
			return float64(rng.IntN(9) - 4)
		}},
	}
}

func TestMathSameTypeMatchesReference(t *testing.T) {
	var cases []strCase
	identity := func(x any) (any, error) { return x, nil }
	floorF := func(x any) (any, error) { return math.Floor(x.(float64)), nil }
	ceilF := func(x any) (any, error) { return math.Ceil(x.(float64)), nil }
	for col, name := range []string{"f", "i32", "i64", "f32", "i8"} {
		isFloat := name == "f" || name == "f32"
		abs := mathRefAbs
		if name == "i32" {
			abs = mathRefAbs32
		}
		fl, ce := identity, identity
		if isFloat {
			fl, ce = floorF, ceilF
		}
		cases = append(cases,
			strCase{Call("abs", Col(name)), strRefCall(mathRef1(abs), strColRef(col))},
			strCase{Call("sign", Col(name)), strRefCall(mathRef1(mathRefSign), strColRef(col))},
			strCase{Call("floor", Col(name)), strRefCall(mathRef1(fl), strColRef(col))},
			strCase{Call("ceil", Col(name)), strRefCall(mathRef1(ce), strColRef(col))},
		)
	}
	cases = append(cases,
		strCase{Call("abs", Lit(nil)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("floor", Null(arrow.PrimitiveTypes.Int64)), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 21, mathCols(), cases)
}

func TestMathRoundMatchesReference(t *testing.T) {
	round := func(bits int) func([]any) (any, error) {
		return func(args []any) (any, error) {
			if args[0] == nil || args[1] == nil {
				return nil, nil
			}
			return mathRefRound(args[0], args[1].(int64), bits)
		}
	}
	var cases []strCase
	for col, name := range []string{"f", "i32", "i64", "f32", "i8"} {
		bits := map[string]int{"i32": 32, "i64": 64, "i8": 32}[name]
		cases = append(cases,
			strCase{Call("round", Col(name)), strRefCall(round(bits), strColRef(col), int64(0))},
			strCase{Call("round", Col(name), Col("d")), strRefCall(round(bits), strColRef(col), strColRef(5))},
		)
		for _, d := range []int64{-19, -18, -3, -1, 1, 2, 3, 16, 330, -330} {
			if (d > 3 || d < -3) && col%2 == 1 {
				continue
			}
			cases = append(cases, strCase{Call("round", Col(name), Lit(d)), strRefCall(round(bits), strColRef(col), d)})
		}
	}
	cases = append(cases,
		strCase{Call("round", Col("f"), Lit(int32(2))), strRefCall(round(0), strColRef(0), int64(2))},
		strCase{Call("round", Col("f"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 22, mathCols(), cases)
}

func TestMathDoubleMatchesReference(t *testing.T) {
	f1 := func(f func(float64) float64) func([]any) (any, error) {
		return func(args []any) (any, error) {
			if args[0] == nil {
				return nil, nil
			}
			x, ok := args[0].(float64)
			if !ok {
				x = float64(args[0].(int64))
			}
			return f(x), nil
		}
	}
	pow := func(args []any) (any, error) {
		if args[0] == nil || args[1] == nil {
			return nil, nil
		}
		x, ok := args[0].(float64)
		if !ok {
			x = float64(args[0].(int64))
		}
		return mathRefPow(x, args[1].(float64)), nil
	}
	var cases []strCase
	for col, name := range []string{"f", "i32", "i64", "f32", "i8"} {
		cases = append(cases,
			strCase{Call("sqrt", Col(name)), strRefCall(f1(math.Sqrt), strColRef(col))},
			strCase{Call("ln", Col(name)), strRefCall(f1(math.Log), strColRef(col))},
			strCase{Call("log10", Col(name)), strRefCall(f1(mathRefLog10), strColRef(col))},
			strCase{Call("exp", Col(name)), strRefCall(f1(math.Exp), strColRef(col))},
			strCase{Call("power", Col(name), Col("y")), strRefCall(pow, strColRef(col), strColRef(6))},
		)
	}
	log2 := func(x float64) float64 { return math.Log(x) / math.Log(2) }
	logb := func(args []any) (any, error) {
		if args[0] == nil || args[1] == nil {
			return nil, nil
		}
		return math.Log(args[1].(float64)) / math.Log(args[0].(float64)), nil
	}
	cases = append(cases,
		strCase{Call("log2", Col("f")), strRefCall(f1(log2), strColRef(0))},
		strCase{Call("log", Col("i64")), strRefCall(f1(math.Log), strColRef(2))},
		strCase{Call("log", Col("y"), Col("f")), strRefCall(logb, strColRef(6), strColRef(0))},
		strCase{Call("ceiling", Col("f")), strRefCall(f1(math.Ceil), strColRef(0))},
	)
	cases = append(cases,
		strCase{Call("power", Lit(2), Lit(10)), func([]any) (any, error) { return 1024.0, nil }},
		strCase{Call("power", Col("f"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 23, mathCols(), cases)
}

// TestMathKnownValues pins Flink's (Java's) answers that a shared
// misunderstanding could make both the kernels and the references get
// wrong.
func TestMathKnownValues(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		d    int64
		want float64
	}{
		{2.675, 2, 2.68}, // the double is 2.67499999999999982236431605997495353221893310546875
		{1.005, 2, 1.01},
		{2.5, 0, 3},
		{-2.5, 0, -3},
		{0.5, 0, 1},
		{-0.4, 0, 0},
		{0.30000000000000004, 1, 0.3},
		{1234.5678, -2, 1200},
		{1250, -2, 1300},
		{-1250, -2, -1300},
		{1.7976931348623157e308, -308, math.Inf(1)},
		{9.5, -1, 10},
		{0.049999999999999996, 1, 0},
	} {
		var buf []byte
		if got := roundFloat(tc.x, tc.d, &buf); got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("round(%v, %d) = %v, want %v", tc.x, tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct{ x, d, want int64 }{
		{15, -1, 20}, {-15, -1, -20}, {14, -1, 10}, {-14, -1, -10}, {149, -2, 100}, {150, -2, 200}, {7, 3, 7},
		{4999999999999999999, -19, 0}, {-5000000000000000000 + 1, -19, 0}, {math.MaxInt64, -20, 0},
	} {
		if got, ok := roundInt(tc.x, tc.d); !ok || got != tc.want {
			t.Errorf("round(%d, %d) = %d, %v; want %d", tc.x, tc.d, got, ok, tc.want)
		}
	}
	for _, tc := range []struct{ x, d int64 }{{math.MaxInt64, -1}, {math.MinInt64, -1}, {5e18, -19}, {-5e18, -19}} {
		if got, ok := roundInt(tc.x, tc.d); ok {
			t.Errorf("round(%d, %d) = %d, want an overflow", tc.x, tc.d, got)
		}
	}
	for k := 0; k <= 22; k++ {
		if got := javaLog10(math.Pow(10, float64(k))); got != float64(k) {
			t.Errorf("log10(1e%d) = %v", k, got)
		}
	}
	if got := javaPow(1, math.NaN()); !math.IsNaN(got) {
		t.Errorf("power(1, NaN) = %v, want NaN (Java)", got)
	}
	if got := javaPow(-1, math.Inf(1)); !math.IsNaN(got) {
		t.Errorf("power(-1, Inf) = %v, want NaN (Java)", got)
	}
}

// TestMathRoundFastPathAgrees checks the float fast path against the
// decimal rounding on values built to sit near halves.
func TestMathRoundFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 24))
	var buf []byte
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		x := mathRandFloat(rng).(float64)
		if i%2 == 0 {
			x = math.Nextafter(x, math.Inf(int(rng.Int64N(2)*2-1)))
		}
		d := int(rng.Int64N(45)) - 22
		fast, ok := roundFloatFast(x, d)
		if !ok || x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if slow := roundFloatDecimal(x, int64(d), &buf); fast != slow || math.Signbit(fast) != math.Signbit(slow) {
			t.Fatalf("round(%v, %d): fast path %v, decimal %v", x, d, fast, slow)
		}
	}
}

func TestMathCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, nil)
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{Call("abs", Col("s")), "argument 1 of abs must be a number, got utf8"},
		{Call("floor", Col("t")), "argument 1 of floor must be a number, got timestamp[ms]"},
		{Call("ceil"), "ceil takes 1 arguments, got 0"},
		{Call("round", Col("f"), Col("f")), "argument 2 of round must be an integer, got float64"},
		{Call("round", Col("s")), "argument 1 of round must be a number"},
		{Call("round", Col("f"), Lit(1), Lit(2)), "round takes 1 to 2 arguments, got 3"},
		{Call("power", Col("f")), "power takes 2 arguments, got 1"},
		{Call("power", Col("f"), Col("s")), "argument 2 of power must be a number, got utf8"},
		{Call("sqrt", Col("s")), "argument 1 of sqrt must be a number"},
		{Call("log10", Col("i"), Col("i")), "log10 takes 1 arguments"},
	} {
		_, err := Compile(tc.e, schema)
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != -1 {
			t.Errorf("%s: want a compile error, got %v", tc.e, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.e.String()) {
			t.Errorf("%s: error %q does not name the expression or say %q", tc.e, err, tc.want)
		}
	}
}

func TestMathKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(25, 25))
	cols := mathCols()
	cols[2].gen = strIntGen(-1e6, 1e6) // no overflow
	cols[1].gen = strIntGen(-1e6, 1e6)
	rec, _ := strBuildBatch(t, mem, rng, cols, 4096, 0.1)
	defer rec.Release()
	for _, sel := range [][]int32{nil, strRandSel(rng, 4096)} {
		for _, e := range []Expr{
			Call("abs", Col("i64")),
			Call("abs", Col("f")),
			Call("sign", Col("i32")),
			Call("floor", Col("f")),
			Call("ceil", Col("i64")),
			Call("round", Col("f"), Lit(2)),
			Call("round", Col("f"), Col("d")), // reaches the decimal path
			Call("round", Col("i64"), Lit(-2)),
			Call("power", Col("f"), Col("y")),
			Call("sqrt", Col("i32")),
			Call("log10", Col("f")),
		} {
			strAllocRun(t, rec, sel, e)
		}
	}
}

// moreCheck is strCheck for the functions of expr_math, expr_string_more
// and expr_time_more, over smaller batches (1, 7 and 2048 rows): they
// compute row by row, so larger batches add time, not coverage, and their
// references (math/big, regexp) are slow.
func moreCheck(t *testing.T, seed uint64, cols []strCol, cases []strCase) {
	t.Helper()
	mem := testutil.CheckedAllocator(t)
	for _, n := range []int{1, 7, 2048} {
		for _, nulls := range []bool{false, true} {
			for _, useSel := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(seed, uint64(n)*4+uint64(b2i(nulls)*2+b2i(useSel))))
				nullRate := 0.0
				if nulls {
					nullRate = 0.2
				}
				rec, vals := strBuildBatch(t, mem, rng, cols, n, nullRate)
				t.Cleanup(rec.Release)
				var sel []int32
				if useSel {
					sel = strRandSel(rng, n)
				}
				combo := b2i(nulls)*2 + b2i(useSel)
				for i, c := range cases {
					// At the largest size each case runs in one of the four
					// NULL/selection combinations.
					if n >= 2048 && len(cases) > 4 && int64(i%4) != combo {
						continue
					}
					strCheckOne(t, mem, c, rec, vals, sel, fmt.Sprintf("rows=%d/nulls=%v/sel=%v", n, nulls, useSel))
				}
			}
		}
	}
}
