package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
)

// refStringTimeFuncs are row-at-a-time reference implementations of the
// string and time functions, written from their documented semantics over
// Go's strings, unicode, regexp and time packages (sharing no code with
// the kernels), for this package's random expression tests.
//
// Arguments and results are nil (NULL), bool, int64 (every integer),
// float64 or string. Timestamps are int64 microseconds since the epoch in
// UTC (an Arrow timestamp[us] with no zone or zone "UTC"); dates are not
// covered. An error means the evaluation must fail.
var refStringTimeFuncs = map[string]func(args []any) (any, error){
	"like":             strRefLikeFunc,
	"concat":           strRefConcat,
	"concat_ws":        strRefConcatWs,
	"lower":            strRef1(strings.ToLower),
	"upper":            strRef1(strings.ToUpper),
	"substring":        strRefSubstring,
	"char_length":      strRefCharLength,
	"character_length": strRefCharLength,
	"split_index":      strRefSplitIndex,
	"regexp_extract":   strRefRegexpExtract,
	"floor_time": func(args []any) (any, error) {
		return timeRefFloorCeil(args[0], args[1], arrow.Microsecond, time.UTC, false)
	},
	"ceil_time": func(args []any) (any, error) {
		return timeRefFloorCeil(args[0], args[1], arrow.Microsecond, time.UTC, true)
	},
	"extract": func(args []any) (any, error) {
		return timeRefExtract(args[0], args[1], arrow.Microsecond, time.UTC)
	},
	"date_format": func(args []any) (any, error) {
		return timeRefDateFormat(args[0], args[1], arrow.Microsecond, time.UTC)
	},
}

func strRefAnyNull(args []any) bool {
	for _, a := range args {
		if a == nil {
			return true
		}
	}
	return false
}

func strRef1(f func(string) string) func([]any) (any, error) {
	return func(args []any) (any, error) {
		if args[0] == nil {
			return nil, nil
		}
		return f(args[0].(string)), nil
	}
}

func strRefConcat(args []any) (any, error) {
	if strRefAnyNull(args) {
		return nil, nil
	}
	var sb strings.Builder
	for _, a := range args {
		sb.WriteString(a.(string))
	}
	return sb.String(), nil
}

func strRefConcatWs(args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	var parts []string
	for _, a := range args[1:] {
		if a != nil {
			parts = append(parts, a.(string))
		}
	}
	return strings.Join(parts, args[0].(string)), nil
}

func strRefCharLength(args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	return int64(utf8.RuneCountInString(args[0].(string))), nil
}

// strRefSubstring follows the SQL standard's definition literally: the
// characters at 1-based positions p with start <= p < start+length.
func strRefSubstring(args []any) (any, error) {
	if strRefAnyNull(args) {
		return nil, nil
	}
	runes := []rune(args[0].(string))
	start := args[1].(int64)
	var out []rune
	for i, r := range runes {
		p := int64(i) + 1
		if p < start {
			continue
		}
		if len(args) == 3 {
			length := args[2].(int64)
			if length < 0 {
				return nil, errors.New("negative length")
			}
			// p < start + length, in exact arithmetic
			if start > -1<<40 && start < 1<<40 && length < 1<<40 {
				if p >= start+length {
					continue
				}
			} else if end := new(big.Int).Add(big.NewInt(start), big.NewInt(length)); big.NewInt(p).Cmp(end) >= 0 {
				continue
			}
		}
		out = append(out, r)
	}
	if len(args) == 3 && args[2].(int64) < 0 {
		return nil, errors.New("negative length")
	}
	return string(out), nil
}

func strRefSplitIndex(args []any) (any, error) {
	if strRefAnyNull(args) {
		return nil, nil
	}
	s, sep, idx := args[0].(string), args[1].(string), args[2].(int64)
	if sep == "" {
		sep = " "
	}
	if s == "" || idx < 0 {
		return nil, nil
	}
	parts := strings.Split(s, sep)
	if idx >= int64(len(parts)) {
		return nil, nil
	}
	return parts[idx], nil
}

func strRefRegexpExtract(args []any) (any, error) {
	if strRefAnyNull(args) {
		return nil, nil
	}
	re, err := strRefRegexp(args[1].(string))
	if err != nil {
		return nil, err
	}
	g := 0
	if len(args) == 3 {
		g = int(args[2].(int64))
	}
	if g < 0 || g > re.NumSubexp() {
		return nil, errors.New("group out of range")
	}
	loc := re.FindStringSubmatchIndex(args[0].(string))
	if loc == nil || loc[2*g] < 0 {
		return nil, nil
	}
	return args[0].(string)[loc[2*g]:loc[2*g+1]], nil
}

// strRefRegexps caches the reference's compiled regular expressions.
var strRefRegexps sync.Map

func strRefRegexp(p string) (*regexp.Regexp, error) {
	if re, ok := strRefRegexps.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	strRefRegexps.Store(p, re)
	return re, nil
}

func strRefLikeFunc(args []any) (any, error) {
	if strRefAnyNull(args) {
		return nil, nil
	}
	esc := rune(-1)
	if len(args) == 3 {
		e := []rune(args[2].(string))
		if len(e) != 1 {
			return nil, errors.New("bad escape")
		}
		esc = e[0]
	}
	return strRefLike([]rune(args[0].(string)), []rune(args[1].(string)), esc)
}

// strRefLike is a memoized recursive LIKE matcher over characters.
func strRefLike(s, p []rune, esc rune) (bool, error) {
	type tok struct {
		kind byte // 'l' literal, '_' one, '%' any
		r    rune
	}
	var toks []tok
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == esc:
			if i+1 == len(p) || (p[i+1] != '%' && p[i+1] != '_' && p[i+1] != esc) {
				return false, errors.New("bad escape sequence")
			}
			i++
			toks = append(toks, tok{'l', p[i]})
		case p[i] == '%' || p[i] == '_':
			toks = append(toks, tok{kind: byte(p[i])})
		default:
			toks = append(toks, tok{'l', p[i]})
		}
	}
	memo := make([]int8, (len(s)+1)*(len(toks)+1))
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		m := &memo[i*(len(toks)+1)+j]
		if *m != 0 {
			return *m > 0
		}
		var ok bool
		switch {
		case j == len(toks):
			ok = i == len(s)
		case toks[j].kind == '%':
			ok = rec(i, j+1) || (i < len(s) && rec(i+1, j))
		case toks[j].kind == '_':
			ok = i < len(s) && rec(i+1, j+1)
		default:
			ok = i < len(s) && s[i] == toks[j].r && rec(i+1, j+1)
		}
		*m = -1
		if ok {
			*m = 1
		}
		return ok
	}
	return rec(0, 0), nil
}

// ---- test driver ----

// strCol is a column of the random test batches: a name, a type and a
// generator of non-NULL values (string, int64, bool, float64; timestamps
// and dates as int64 ticks).
type strCol struct {
	name string
	typ  arrow.DataType
	gen  func(rng *rand.Rand) any
}

// strCase is an expression and its reference, called with the values of
// the row's columns (nil for NULL).
type strCase struct {
	e   Expr
	ref func(row []any) (any, error)
}

// strRefCall is a reference that applies fn to the values produced by the
// argument getters (a column index or a constant).
func strRefCall(fn func([]any) (any, error), args ...any) func(row []any) (any, error) {
	return func(row []any) (any, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			if c, ok := a.(strColRef); ok {
				vals[i] = row[c]
			} else {
				vals[i] = a
			}
		}
		return fn(vals)
	}
}

// strColRef marks a strRefCall argument as the value of column i.
type strColRef int

// strSizes are the batch sizes every function is checked at.
func strSizes() []int {
	if testing.Short() {
		return []int{1, 7, 1024}
	}
	return []int{1, 7, 1024, 65536}
}

// strRandSel returns a random increasing subset of [0, n).
func strRandSel(rng *rand.Rand, n int) []int32 {
	sel := make([]int32, 0, n)
	keep := 0.2 + 0.6*rng.Float64()
	for r := 0; r < n; r++ {
		if rng.Float64() < keep {
			sel = append(sel, int32(r))
		}
	}
	return sel
}

// strBuildBatch builds a record of n rows from cols with about nullRate
// NULLs per column, and returns the Go values too.
func strBuildBatch(t testing.TB, mem memory.Allocator, rng *rand.Rand, cols []strCol, n int, nullRate float64) (arrow.RecordBatch, [][]any) {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	vals := make([][]any, len(cols))
	for c, col := range cols {
		fields[c] = arrow.Field{Name: col.name, Type: col.typ, Nullable: true}
		b := array.NewBuilder(mem, col.typ)
		vals[c] = make([]any, n)
		for r := 0; r < n; r++ {
			if rng.Float64() < nullRate {
				b.AppendNull()
				continue
			}
			v := col.gen(rng)
			vals[c][r] = v
			switch bb := b.(type) {
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.LargeStringBuilder:
				bb.Append(v.(string))
			case *array.BinaryBuilder:
				bb.Append([]byte(v.(string)))
			case *array.Int32Builder:
				bb.Append(int32(v.(int64)))
			case *array.Int64Builder:
				bb.Append(v.(int64))
			case *array.Int8Builder:
				bb.Append(int8(v.(int64)))
			case *array.Uint64Builder:
				bb.Append(uint64(v.(int64)))
			case *array.Float64Builder:
				bb.Append(v.(float64))
			case *array.Float32Builder:
				bb.Append(float32(v.(float64)))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			case *array.TimestampBuilder:
				bb.Append(arrow.Timestamp(v.(int64)))
			case *array.Date32Builder:
				bb.Append(arrow.Date32(v.(int64)))
			case *array.Date64Builder:
				bb.Append(arrow.Date64(v.(int64)))
			default:
				t.Fatalf("no builder for %s", col.typ)
			}
		}
		arrs[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec, vals
}

// strValue reads row i of an evaluation result as a reference value.
func strValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.String:
		return c.Value(i)
	case *array.Binary:
		return string(c.Value(i))
	case *array.Boolean:
		return c.Value(i)
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Float64:
		return c.Value(i)
	case *array.Timestamp:
		return int64(c.Value(i))
	case *array.Date32:
		return int64(c.Value(i))
	case *array.Date64:
		return int64(c.Value(i))
	}
	panic("strValue: " + a.DataType().String())
}

func strSame(a, b any) bool {
	fa, oka := a.(float64)
	fb, okb := b.(float64)
	if oka && okb {
		return (fa == fb && math.Signbit(fa) == math.Signbit(fb)) || (fa != fa && fb != fb)
	}
	return a == b
}

// strCheck compiles every case against batches of cols at each batch
// size, with and without NULLs and a selection, and compares every
// selected row with the reference: equal values, or an error naming the
// first row the reference fails on. At 64Ki rows each case runs once, in
// one of the four NULL/selection combinations.
func strCheck(t *testing.T, seed uint64, cols []strCol, cases []strCase) {
	t.Helper()
	mem := testutil.CheckedAllocator(t)
	for _, n := range strSizes() {
		for _, nulls := range []bool{false, true} {
			for _, useSel := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(seed, uint64(n)*4+uint64(b2i(nulls)*2+b2i(useSel))))
				nullRate := 0.0
				if nulls {
					nullRate = 0.2
				}
				rec, vals := strBuildBatch(t, mem, rng, cols, n, nullRate)
				t.Cleanup(rec.Release) // also when a check fails
				var sel []int32
				if useSel {
					sel = strRandSel(rng, n)
				}
				combo := b2i(nulls)*2 + b2i(useSel)
				for i, c := range cases {
					// At the largest size each case runs in one of the four
					// NULL/selection combinations, to keep the test quick.
					if n >= 65536 && len(cases) > 4 && int64(i%4) != combo {
						continue
					}
					strCheckOne(t, mem, c, rec, vals, sel, fmt.Sprintf("rows=%d/nulls=%v/sel=%v", n, nulls, useSel))
				}
			}
		}
	}
}

func strCheckOne(t *testing.T, mem memory.Allocator, c strCase, rec arrow.RecordBatch, vals [][]any, sel []int32, where string) {
	t.Helper()
	prog, err := Compile(c.e, rec.Schema())
	if err != nil {
		t.Fatalf("%s: compile %s: %v", where, c.e, err)
	}
	n := int(rec.NumRows())
	rows := rowCount(sel, n)
	want := make([]any, rows)
	errRow := -1
	row := make([]any, len(vals))
	for k := 0; k < rows; k++ {
		r := k
		if sel != nil {
			r = int(sel[k])
		}
		for c := range vals {
			row[c] = vals[c][r]
		}
		v, err := c.ref(row)
		if err != nil {
			errRow = r
			break
		}
		want[k] = v
	}
	got, err := prog.Eval(mem, rec, sel)
	if errRow >= 0 {
		if err == nil {
			got.Release()
			t.Fatalf("%s: %s: the reference fails at row %d, the evaluation succeeded", where, c.e, errRow)
		}
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != errRow {
			t.Fatalf("%s: %s: want an error naming row %d, got %v", where, c.e, errRow, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %s: %v", where, c.e, err)
	}
	defer got.Release()
	if got.Len() != rows {
		t.Fatalf("%s: %s: %d values for %d rows", where, c.e, got.Len(), rows)
	}
	for k := 0; k < rows; k++ {
		if g := strValue(got, k); !strSame(g, want[k]) {
			r := k
			if sel != nil {
				r = int(sel[k])
			}
			in := make([]any, len(vals))
			for c := range vals {
				in[c] = vals[c][r]
			}
			t.Fatalf("%s: %s: row %d (inputs %q): got %#v, want %#v", where, c.e, r, in, g, want[k])
		}
	}
}

// ---- random strings ----

// strRandRunes mixes ASCII letters of both cases, digits, separators and
// LIKE/escape characters with multi-byte characters whose case mappings
// change length or have no single-character upper case.
var strRandRunes = []rune("aAbBcCxyZ019 ,,--%%__\\|.é É ß ẞ Σσς İı ǅ ﬀ 中文 😀 Ωω K ſ ʼn")

func strRandString(rng *rand.Rand, maxLen int) string {
	n := rng.IntN(maxLen + 1)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteRune(strRandRunes[rng.IntN(len(strRandRunes))])
	}
	return sb.String()
}

func strGen(maxLen int) func(*rand.Rand) any {
	return func(rng *rand.Rand) any { return strRandString(rng, maxLen) }
}

func strIntGen(lo, hi int64) func(*rand.Rand) any {
	return func(rng *rand.Rand) any { return lo + rng.Int64N(hi-lo+1) }
}

// ---- tests ----

func TestStringCaseMapLengthMatchesReference(t *testing.T) {
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, strGen(12)},
		{"ls", arrow.BinaryTypes.LargeString, strGen(12)},
		{"a", arrow.BinaryTypes.String, func(rng *rand.Rand) any { return strings.Repeat("Ab", rng.IntN(40)) }},
	}
	var cases []strCase
	for _, fn := range []string{"lower", "upper", "char_length", "character_length"} {
		for i, col := range []string{"s", "ls", "a"} {
			cases = append(cases, strCase{Call(fn, Col(col)), strRefCall(refStringTimeFuncs[fn], strColRef(i))})
		}
	}
	cases = append(cases,
		strCase{Call("upper", Call("lower", Col("s"))), func(row []any) (any, error) {
			if row[0] == nil {
				return nil, nil
			}
			return strings.ToUpper(strings.ToLower(row[0].(string))), nil
		}},
		strCase{Call("lower", Lit("ÀB")), func([]any) (any, error) { return "àb", nil }},
		strCase{Call("lower", Null(arrow.BinaryTypes.String)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("char_length", Lit(nil)), func([]any) (any, error) { return nil, nil }},
	)
	strCheck(t, 1, cols, cases)
}

func TestStringConcatMatchesReference(t *testing.T) {
	cols := []strCol{
		{"a", arrow.BinaryTypes.String, strGen(6)},
		{"b", arrow.BinaryTypes.LargeString, strGen(6)},
		{"c", arrow.BinaryTypes.String, strGen(3)},
		{"x", arrow.BinaryTypes.Binary, strGen(4)},
		{"y", arrow.BinaryTypes.Binary, strGen(4)},
	}
	concat, ws := refStringTimeFuncs["concat"], refStringTimeFuncs["concat_ws"]
	cases := []strCase{
		{Call("concat", Col("a")), strRefCall(concat, strColRef(0))},
		{Call("concat", Col("a"), Col("b")), strRefCall(concat, strColRef(0), strColRef(1))},
		{Call("concat", Col("a"), Lit("-"), Col("b"), Col("c")), strRefCall(concat, strColRef(0), "-", strColRef(1), strColRef(2))},
		{Call("concat", Col("x"), Col("y")), strRefCall(concat, strColRef(3), strColRef(4))},
		{Call("concat", Col("a"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
		{Call("concat_ws", Lit(","), Col("a"), Col("b"), Col("c")), strRefCall(ws, ",", strColRef(0), strColRef(1), strColRef(2))},
		{Call("concat_ws", Col("c"), Col("a"), Lit(nil), Col("b")), strRefCall(ws, strColRef(2), strColRef(0), nil, strColRef(1))},
		{Call("concat_ws", Lit("|")), strRefCall(ws, "|")},
		{Call("concat_ws", Lit(nil), Col("a")), func([]any) (any, error) { return nil, nil }},
	}
	strCheck(t, 2, cols, cases)
}

func TestStringSubstringMatchesReference(t *testing.T) {
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, strGen(10)},
		{"p", arrow.PrimitiveTypes.Int32, strIntGen(-4, 14)},
		{"l", arrow.PrimitiveTypes.Int64, strIntGen(0, 12)},
		{"nl", arrow.PrimitiveTypes.Int64, strIntGen(-1, 400)}, // negative only rarely
	}
	sub := refStringTimeFuncs["substring"]
	cases := []strCase{
		{Call("substring", Col("s"), Col("p")), strRefCall(sub, strColRef(0), strColRef(1))},
		{Call("substring", Col("s"), Col("p"), Col("l")), strRefCall(sub, strColRef(0), strColRef(1), strColRef(2))},
		{Call("substring", Col("s"), Col("l"), Col("p")), func(row []any) (any, error) {
			// a column length that can be negative: an error naming the row
			return sub([]any{row[0], row[2], row[1]})
		}},
		{Call("substring", Col("s"), Col("p"), Col("nl")), strRefCall(sub, strColRef(0), strColRef(1), strColRef(3))},
	}
	for _, start := range []int64{math.MinInt64, -3, 0, 1, 2, 5, 11, math.MaxInt64} {
		cases = append(cases, strCase{Call("substring", Col("s"), Lit(start)), strRefCall(sub, strColRef(0), start)})
		for _, length := range []int64{0, 1, 3, math.MaxInt64} {
			cases = append(cases, strCase{Call("substring", Col("s"), Lit(start), Lit(length)), strRefCall(sub, strColRef(0), start, length)})
		}
	}
	cases = append(cases,
		strCase{Call("substring", Col("s"), Lit(int32(2)), Lit(int32(3))), strRefCall(sub, strColRef(0), int64(2), int64(3))},
		strCase{Call("substring", Col("s"), Lit(nil), Lit(3)), func([]any) (any, error) { return nil, nil }},
	)
	strCheck(t, 3, cols, cases)
}

func TestStringSplitIndexMatchesReference(t *testing.T) {
	sepGen := func(rng *rand.Rand) any { return []string{",", "--", "", "ß", " ,", "中文"}[rng.IntN(6)] }
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, strGen(14)},
		{"sep", arrow.BinaryTypes.String, sepGen},
		{"i", arrow.PrimitiveTypes.Int64, strIntGen(-1, 6)},
	}
	split := refStringTimeFuncs["split_index"]
	cases := []strCase{
		{Call("split_index", Col("s"), Col("sep"), Col("i")), strRefCall(split, strColRef(0), strColRef(1), strColRef(2))},
		{Call("split_index", Col("s"), Lit(nil), Col("i")), func([]any) (any, error) { return nil, nil }},
	}
	for _, sep := range []string{",", "-", "--", "", " ", "é", "%_"} {
		for _, i := range []int64{-1, 0, 1, 3} {
			cases = append(cases, strCase{Call("split_index", Col("s"), Lit(sep), Lit(i)), strRefCall(split, strColRef(0), sep, i)})
		}
		cases = append(cases, strCase{Call("split_index", Col("s"), Lit(sep), Col("i")), strRefCall(split, strColRef(0), sep, strColRef(2))})
	}
	strCheck(t, 4, cols, cases)
}

func TestStringRegexpExtractMatchesReference(t *testing.T) {
	cols := []strCol{{"s", arrow.BinaryTypes.String, strGen(14)}}
	re := refStringTimeFuncs["regexp_extract"]
	var cases []strCase
	for _, p := range []struct {
		re     string
		groups []int64
	}{
		{`(\d+)`, []int64{0, 1}},
		{`([a-z]+)(\d)?`, []int64{0, 1, 2}},
		{`(?i)(é+)|(ß)`, []int64{0, 1, 2}},
		{`^(.)(.*)(.)$`, []int64{1, 2, 3}},
		{`x*`, []int64{0}},
		{`[^,]+,([^,]*)`, []int64{1}},
		{`\p{Han}+`, []int64{0}},
	} {
		cases = append(cases, strCase{Call("regexp_extract", Col("s"), Lit(p.re)), strRefCall(re, strColRef(0), p.re)})
		for _, g := range p.groups {
			cases = append(cases, strCase{Call("regexp_extract", Col("s"), Lit(p.re), Lit(g)), strRefCall(re, strColRef(0), p.re, g)})
		}
	}
	strCheck(t, 5, cols, cases)
}

// strRandPattern builds a LIKE pattern from the test alphabet, wildcards
// and escaped wildcards, sometimes from a value so that it matches.
func strRandPattern(rng *rand.Rand) string {
	var sb strings.Builder
	src := []rune(strRandString(rng, 8))
	for _, r := range src {
		switch rng.IntN(8) {
		case 0:
			sb.WriteByte('%')
		case 1:
			sb.WriteByte('_')
		case 2:
			sb.WriteString("%" + string(r))
		default:
			if r == '%' || r == '_' || r == '!' {
				sb.WriteByte('!')
			}
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func TestStringLikeMatchesReference(t *testing.T) {
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, strGen(10)},
		{"b", arrow.BinaryTypes.Binary, func(rng *rand.Rand) any {
			return strings.Map(func(r rune) rune { return r & 0x7f }, strRandString(rng, 10))
		}},
	}
	like := refStringTimeFuncs["like"]
	patterns := []string{
		"", "%", "%%", "_", "__", "%_", "_%", "%_%", "a", "ab", "a%", "%a", "%a%", "%ab%", "a%b", "a%b%c",
		"%a%b%", "a_", "_a", "a_b", "%a_b%", "_%a", "é%", "%ß", "%中文%", "%😀_", "__%__", "%a%a%a%",
		"ß%ß", "%,%,%", "a%%b", "%é_%", "Σ%", "%σ", "%ς%",
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 25; i++ {
		patterns = append(patterns, strRandPattern(rng))
	}
	var cases []strCase
	for i, p := range patterns {
		esc := "!"
		if strings.Contains(p, "!") {
			cases = append(cases, strCase{Call("like", Col("s"), Lit(p), Lit(esc)), strRefCall(like, strColRef(0), p, esc)})
		} else {
			cases = append(cases, strCase{Call("like", Col("s"), Lit(p)), strRefCall(like, strColRef(0), p)})
		}
		if i < 20 && !strings.Contains(p, "!") {
			// binary: _ is one byte; the values and these patterns are ASCII
			cases = append(cases, strCase{Call("like", Col("b"), Lit([]byte(p))), strRefCall(like, strColRef(1), p)})
		}
	}
	cases = append(cases,
		strCase{Call("like", Col("s"), Lit(`a\%%`), Lit(`\`)), strRefCall(like, strColRef(0), `a\%%`, `\`)},
		strCase{Call("like", Col("s"), Lit(`%\_%`), Lit(`\`)), strRefCall(like, strColRef(0), `%\_%`, `\`)},
		strCase{Call("like", Col("s"), Lit(`%ßß%`), Lit(`ß`)), strRefCall(like, strColRef(0), `%ßß%`, `ß`)},
		strCase{Call("like", Col("s"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("like", Col("s"), Lit("a%"), Null(arrow.BinaryTypes.String)), func([]any) (any, error) { return nil, nil }},
	)
	strCheck(t, 7, cols, cases)
}

// TestStringLikeNoBlowup: a pattern that makes a backtracking matcher
// exponential matches a long value quickly.
func TestStringLikeNoBlowup(t *testing.T) {
	m, err := compileLikePattern([]byte(strings.Repeat("%a", 30)+"%b"), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	s := []byte(strings.Repeat("a", 5000))
	start := time.Now()
	if m.match(s) {
		t.Fatal("matched without a b")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestStringCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.BinaryTypes.Binary},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	for _, tc := range []struct {
		e    Expr
		want string // in the error message
	}{
		{Call("lower", Col("i")), "argument 1 of lower must be a string, got int64"},
		{Call("upper"), "upper takes 1 arguments, got 0"},
		{Call("char_length", Col("s"), Col("s")), "takes 1 arguments"},
		{Call("concat", Col("s"), Col("b")), "all strings or all binaries"},
		{Call("concat", Col("s"), Col("i")), "argument 2 of concat must be a string or binary, got int64"},
		{Call("concat"), "at least 1"},
		{Call("concat_ws", Col("s"), Col("b")), "argument 2 of concat_ws must be a string"},
		{Call("substring", Col("s"), Col("f")), "argument 2 of substring must be an integer, got float64"},
		{Call("substring", Col("s"), Lit(1), Lit(-1)), "negative substring length -1"},
		{Call("substring", Col("i"), Lit(1)), "argument 1 of substring must be a string"},
		{Call("split_index", Col("s"), Col("s"), Col("s")), "argument 3 of split_index must be an integer"},
		{Call("like", Col("s"), Col("s")), "pattern (argument 2) must be a constant"},
		{Call("like", Col("s"), Lit("a"), Col("s")), "escape (argument 3) must be a constant"},
		{Call("like", Col("i"), Lit("a")), "argument 1 of like must be a string or binary, got int64"},
		{Call("like", Col("s"), Lit(`a\`), Lit(`\`)), "ends with the escape character"},
		{Call("like", Col("s"), Lit(`a\b`), Lit(`\`)), "invalid escape sequence"},
		{Call("like", Col("s"), Lit(`%ß%`), Lit(`%`)), "invalid escape sequence"},
		{Call("like", Col("s"), Lit(`a`), Lit(`ab`)), "escape must be one character"},
		{Call("like", Col("s"), Lit(`a`), Lit(``)), "escape must be one character"},
		{Call("regexp_extract", Col("s"), Col("s")), "must be a constant"},
		{Call("regexp_extract", Col("s"), Lit(`(a)\1`)), "invalid regular expression"},
		{Call("regexp_extract", Col("s"), Lit(`a(?=b)`)), "invalid regular expression"},
		{Call("regexp_extract", Col("s"), Lit(`(a)(b)`), Lit(3)), "group 3 out of range"},
		{Call("regexp_extract", Col("s"), Lit(`(a)`), Lit(-1)), "group -1 out of range"},
		{Call("regexp_extract", Col("s"), Lit(`(a)`), Col("i")), "group index (argument 3) must be a constant"},
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

// strAllocRun checks that evaluating e over a second batch of the same
// size allocates nothing.
func strAllocRun(t *testing.T, rec arrow.RecordBatch, sel []int32, e Expr) {
	t.Helper()
	prog, err := Compile(e, rec.Schema())
	if err != nil {
		t.Fatalf("compile %s: %v", e, err)
	}
	if _, err := prog.run(rec, sel); err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := prog.run(rec, sel); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%s: %v allocations per batch in steady state", e, allocs)
	}
}

func TestStringKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(8, 8))
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, strGen(16)},
		{"t", arrow.BinaryTypes.String, strGen(4)},
		{"i", arrow.PrimitiveTypes.Int64, strIntGen(-2, 9)},
	}
	rec, _ := strBuildBatch(t, mem, rng, cols, 4096, 0.1)
	defer rec.Release()
	for _, sel := range [][]int32{nil, strRandSel(rng, 4096)} {
		for _, e := range []Expr{
			Call("lower", Col("s")),
			Call("upper", Col("s")),
			Call("substring", Col("s"), Lit(2), Lit(5)),
			Call("substring", Col("s"), Col("i")),
			Call("concat", Col("s"), Lit("-"), Col("t")),
			Call("concat_ws", Lit(","), Col("s"), Col("t")),
			Call("char_length", Col("s")),
			Call("like", Col("s"), Lit("a%")),
			Call("like", Col("s"), Lit("%a%")),
			Call("like", Col("s"), Lit("%a_b%c")),
			Call("split_index", Col("s"), Lit(","), Lit(1)),
		} {
			strAllocRun(t, rec, sel, e)
		}
	}
}

// TestStringCaseMapASCIIWords checks the 8-bytes-at-a-time ASCII path
// with every ASCII byte at every position of words of 1 to 17 bytes.
func TestStringCaseMapASCIIWords(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < utf8.RuneSelf; c++ {
				b := []byte(strings.Repeat("Mx", n)[:n])
				b[pos] = byte(c)
				for _, upper := range []bool{false, true} {
					table, want := &asciiLower, strings.ToLower(string(b))
					if upper {
						table, want = &asciiUpper, strings.ToUpper(string(b))
					}
					if got := string(appendCaseMapped([]byte("<"), b, table, upper)); got != "<"+want {
						t.Fatalf("%q upper=%v: got %q, want %q", b, upper, got, "<"+want)
					}
				}
			}
		}
	}
}
