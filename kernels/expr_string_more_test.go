package kernels

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// References of the functions of expr_string_more.go, over Go strings and
// rune slices, written from the documented (Flink's) semantics.

func strMoreRef(f func(args []any) any) func([]any) (any, error) {
	return func(args []any) (any, error) {
		if strRefAnyNull(args) {
			return nil, nil
		}
		return f(args), nil
	}
}

var strMoreRefs = map[string]func([]any) (any, error){
	"count_char": strMoreRef(func(a []any) any { return int64(strings.Count(a[0].(string), a[1].(string))) }),
	"replace":    strMoreRef(func(a []any) any { return strings.ReplaceAll(a[0].(string), a[1].(string), a[2].(string)) }),
	"trim":       strMoreRef(func(a []any) any { return strRefTrim(a, true, true) }),
	"ltrim":      strMoreRef(func(a []any) any { return strRefTrim(a, true, false) }),
	"rtrim":      strMoreRef(func(a []any) any { return strRefTrim(a, false, true) }),
	"position":   strMoreRef(func(a []any) any { return strRefLocate(a[1].(string), a[0].(string), 1) }),
	"locate": strMoreRef(func(a []any) any {
		from := int64(1)
		if len(a) == 3 {
			from = a[2].(int64)
		}
		return strRefLocate(a[1].(string), a[0].(string), from)
	}),
	"initcap": strMoreRef(func(a []any) any { return strRefInitcap(a[0].(string)) }),
	"repeat": func(a []any) (any, error) {
		if strRefAnyNull(a) {
			return nil, nil
		}
		s, n := a[0].(string), a[1].(int64)
		if n <= 0 {
			return "", nil
		}
		if int64(len(s))*n > 1<<30 {
			return nil, errors.New("too large")
		}
		return strings.Repeat(s, int(n)), nil
	},
	"reverse": strMoreRef(func(a []any) any {
		r := []rune(a[0].(string))
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}),
	"lpad": strMoreRef(func(a []any) any { return strRefPad(a, true) }),
	"rpad": strMoreRef(func(a []any) any { return strRefPad(a, false) }),
	"left": strMoreRef(func(a []any) any {
		r, n := []rune(a[0].(string)), a[1].(int64)
		return string(r[:max(0, min(n, int64(len(r))))])
	}),
	"right": strMoreRef(func(a []any) any {
		r, n := []rune(a[0].(string)), a[1].(int64)
		return string(r[int64(len(r))-max(0, min(n, int64(len(r)))):])
	}),
	"md5":    strMoreRef(func(a []any) any { return fmt.Sprintf("%x", md5.Sum([]byte(a[0].(string)))) }),
	"sha1":   strMoreRef(func(a []any) any { return fmt.Sprintf("%x", sha1.Sum([]byte(a[0].(string)))) }),
	"sha256": strMoreRef(func(a []any) any { return fmt.Sprintf("%x", sha256.Sum256([]byte(a[0].(string)))) }),
}

// strRefTrim removes the characters of the set (spaces by default) from
// the chosen ends.
func strRefTrim(a []any, left, right bool) any {
	s, set := a[0].(string), " "
	if len(a) == 2 {
		set = a[1].(string)
	}
	in := func(r rune) bool { return strings.ContainsRune(set, r) }
	if left {
		s = strings.TrimLeftFunc(s, in)
	}
	if right {
		s = strings.TrimRightFunc(s, in)
	}
	return s
}

// strRefLocate searches sub in s from character position from, comparing
// rune slices.
func strRefLocate(s, sub string, from int64) any {
	rs, rsub := []rune(s), []rune(sub)
	if len(rsub) == 0 {
		return int64(1)
	}
	for i := max(from-1, 0); i+int64(len(rsub)) <= int64(len(rs)); i++ {
		if string(rs[i:i+int64(len(rsub))]) == sub {
			return i + 1
		}
	}
	return int64(0)
}

// strRefInitcap follows Calcite's definition: [A-Za-z0-9] runs are words.
func strRefInitcap(s string) any {
	var sb strings.Builder
	start := true
	for _, r := range s {
		alnum := r < 128 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		switch {
		case !alnum:
			start = true
			sb.WriteRune(r)
		case start:
			sb.WriteString(strings.ToUpper(string(r)))
			start = false
		default:
			sb.WriteString(strings.ToLower(string(r)))
		}
	}
	return sb.String()
}

// strRefPad is Flink's SqlFunctionUtils.lpad/rpad over runes.
func strRefPad(a []any, left bool) any {
	s, n, pad := []rune(a[0].(string)), a[1].(int64), []rune(a[2].(string))
	if n < 0 || len(pad) == 0 {
		return nil
	}
	out := make([]rune, 0, n)
	padding := func(k int64) {
		for i := int64(0); i < k; i++ {
			out = append(out, pad[i%int64(len(pad))])
		}
	}
	keep := min(int64(len(s)), n)
	if left {
		padding(n - keep)
		out = append(out, s[:keep]...)
	} else {
		out = append(out, s[:keep]...)
		padding(n - keep)
	}
	return string(out)
}

func strMoreCols() []strCol {
	return []strCol{
		{"s", arrow.BinaryTypes.String, strGen(12)},
		{"t", arrow.BinaryTypes.String, strGen(2)},
		{"u", arrow.BinaryTypes.String, strGen(3)},
		{"n", arrow.PrimitiveTypes.Int64, strIntGen(-3, 16)},
		{"n32", arrow.PrimitiveTypes.Int32, strIntGen(-3, 16)},
		{"ls", arrow.BinaryTypes.LargeString, func(rng *rand.Rand) any {
			// spaces and set characters at the ends
			edge := []string{"", " ", "  ", "xy", "é ", " x", "ß"}
			return edge[rng.IntN(len(edge))] + strRandString(rng, 6) + edge[rng.IntN(len(edge))]
		}},
	}
}

func TestStringMoreMatchesReference(t *testing.T) {
	ref := strMoreRefs
	col := func(i int) strColRef { return strColRef(i) }
	s, tt, u, n, n32, ls := col(0), col(1), col(2), col(3), col(4), col(5)
	var cases []strCase
	add := func(e Expr, fn string, args ...any) {
		cases = append(cases, strCase{e, strRefCall(ref[fn], args...)})
	}
	for _, c := range []string{"a", ",", "é", "😀", "%", " "} {
		add(Call("count_char", Col("s"), Lit(c)), "count_char", s, c)
	}
	add(Call("count_char", Col("ls"), Lit("x")), "count_char", ls, "x")
	add(Call("replace", Col("s"), Col("t"), Col("u")), "replace", s, tt, u)
	add(Call("replace", Col("s"), Lit(""), Lit("-")), "replace", s, "", "-")
	add(Call("replace", Col("s"), Lit("a"), Lit("")), "replace", s, "a", "")
	add(Call("replace", Col("ls"), Lit("x"), Col("t")), "replace", ls, "x", tt)
	for _, fn := range []string{"trim", "ltrim", "rtrim"} {
		add(Call(fn, Col("ls")), fn, ls)
		add(Call(fn, Col("s")), fn, s)
		add(Call(fn, Col("ls"), Lit("xy é")), fn, ls, "xy é")
		add(Call(fn, Col("ls"), Lit("")), fn, ls, "")
		add(Call(fn, Col("s"), Col("t")), fn, s, tt)
	}
	add(Call("position", Col("t"), Col("s")), "position", tt, s)
	add(Call("position", Lit("a"), Col("s")), "position", "a", s)
	add(Call("position", Lit(""), Col("s")), "position", "", s)
	add(Call("locate", Col("t"), Col("s")), "locate", tt, s)
	add(Call("locate", Col("t"), Col("s"), Col("n")), "locate", tt, s, n)
	add(Call("locate", Col("t"), Col("s"), Col("n32")), "locate", tt, s, n32)
	add(Call("locate", Lit(""), Col("s"), Lit(40)), "locate", "", s, int64(40))
	add(Call("initcap", Col("s")), "initcap", s)
	add(Call("initcap", Col("ls")), "initcap", ls)
	add(Call("repeat", Col("t"), Col("n")), "repeat", tt, n)
	add(Call("repeat", Col("s"), Lit(int32(3))), "repeat", s, int64(3))
	add(Call("reverse", Col("s")), "reverse", s)
	for _, fn := range []string{"lpad", "rpad"} {
		add(Call(fn, Col("s"), Col("n"), Col("t")), fn, s, n, tt)
		add(Call(fn, Col("t"), Col("n32"), Lit("ab😀")), fn, tt, n32, "ab😀")
		add(Call(fn, Col("s"), Lit(0), Lit("x")), fn, s, int64(0), "x")
		add(Call(fn, Col("s"), Lit(5), Lit("")), fn, s, int64(5), "")
	}
	for _, fn := range []string{"left", "right"} {
		add(Call(fn, Col("s"), Col("n")), fn, s, n)
		add(Call(fn, Col("s"), Col("n32")), fn, s, n32)
		add(Call(fn, Col("s"), Lit(math.MaxInt64)), fn, s, int64(math.MaxInt64))
	}
	for _, fn := range []string{"md5", "sha1", "sha256"} {
		add(Call(fn, Col("s")), fn, s)
	}
	cases = append(cases,
		strCase{Call("md5", Lit([]byte("abc"))), func([]any) (any, error) { return "900150983cd24fb0d6963f7d28e17f72", nil }},
		strCase{Call("replace", Col("s"), Lit(nil), Col("t")), func([]any) (any, error) { return nil, nil }},
		strCase{Call("lpad", Col("s"), Lit(nil), Col("t")), func([]any) (any, error) { return nil, nil }},
		strCase{Call("count_char", Col("s"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("trim", Col("s"), Null(arrow.BinaryTypes.String)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("count_char", Col("s"), Null(arrow.BinaryTypes.String)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("round", Lit(2.5), Null(arrow.PrimitiveTypes.Int32)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("locate", Col("s"), Col("t"), Null(arrow.PrimitiveTypes.Int64)), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 31, strMoreCols(), cases)
}

// TestStringMoreKnownValues pins Flink's documented examples.
func TestStringMoreKnownValues(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cols := []strCol{{"s", arrow.BinaryTypes.String, nil}}
	for _, tc := range []struct {
		e    Expr
		in   string
		want any
	}{
		{Call("replace", Col("s"), Lit("world"), Lit("flink")), "hello world", "hello flink"},
		{Call("replace", Col("s"), Lit("abab"), Lit("z")), "ababab", "zab"},
		{Call("lpad", Col("s"), Lit(4), Lit("??")), "hi", "??hi"},
		{Call("lpad", Col("s"), Lit(1), Lit("??")), "hi", "h"},
		{Call("rpad", Col("s"), Lit(4), Lit("??")), "hi", "hi??"},
		{Call("rpad", Col("s"), Lit(5), Lit("xy")), "hi", "hixyx"},
		{Call("initcap", Col("s")), "hello wORLD-foo_bar 9lives élan", "Hello World-Foo_Bar 9lives éLan"},
		{Call("trim", Col("s"), Lit("xy")), "xyxaxy", "a"},
		{Call("trim", Col("s")), " \t a \t ", "\t a \t"},
		{Call("position", Lit("b"), Col("s")), "aébc", int64(3)},
		{Call("locate", Lit("a"), Col("s"), Lit(2)), "abca", int64(4)},
		{Call("locate", Lit("a"), Col("s"), Lit(-7)), "abca", int64(1)},
		{Call("repeat", Col("s"), Lit(-1)), "ab", ""},
		{Call("reverse", Col("s")), "añ😀b", "b😀ña"},
		{Call("left", Col("s"), Lit(2)), "añ😀b", "añ"},
		{Call("right", Col("s"), Lit(2)), "añ😀b", "😀b"},
		{Call("count_char", Col("s"), Lit("x")), "xaxx", int64(3)},
		{Call("sha256", Col("s")), "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	} {
		cols[0].gen = func(*rand.Rand) any { return tc.in }
		rec, _ := strBuildBatch(t, mem, rand.New(rand.NewPCG(1, 1)), cols, 1, 0)
		prog, err := Compile(tc.e, rec.Schema())
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		got, err := prog.Eval(mem, rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		if g := strValue(got, 0); g != tc.want {
			t.Errorf("%s of %q: got %#v, want %#v", tc.e, tc.in, g, tc.want)
		}
		got.Release()
		rec.Release()
	}
}

// TestStringMoreTooLarge: a result beyond 2 GiB fails naming the row
// instead of allocating it.
func TestStringMoreTooLarge(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cols := []strCol{{"s", arrow.BinaryTypes.String, func(*rand.Rand) any { return "ab" }}}
	rec, _ := strBuildBatch(t, mem, rand.New(rand.NewPCG(1, 1)), cols, 3, 0)
	defer rec.Release()
	for _, e := range []Expr{
		Call("repeat", Col("s"), Lit(int64(1)<<40)),
		Call("lpad", Col("s"), Lit(int64(1)<<31), Lit("x")),
		Call("lpad", Col("s"), Lit(int64(1)<<30), Lit("😀")),
		Call("rpad", Col("s"), Lit(int64(1)<<50), Lit("xyz")),
	} {
		prog, err := Compile(e, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		_, err = prog.Eval(mem, rec, nil)
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != 0 || !strings.Contains(err.Error(), "2 GiB") {
			t.Errorf("%s: want an error naming row 0, got %v", e, err)
		}
	}
}

func TestStringMoreCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.BinaryTypes.Binary},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{Call("count_char", Col("s"), Col("s")), "the character (argument 2) of count_char must be a constant"},
		{Call("count_char", Col("s"), Lit("ab")), `exactly one character, got "ab"`},
		{Call("count_char", Col("s"), Lit("")), "exactly one character"},
		{Call("count_char", Col("i"), Lit("a")), "argument 1 of count_char must be a string, got int64"},
		{Call("replace", Col("s"), Col("s")), "replace takes 3 arguments, got 2"},
		{Call("replace", Col("s"), Col("i"), Col("s")), "argument 2 of replace must be a string, got int64"},
		{Call("trim", Col("b")), "argument 1 of trim must be a string, got binary"},
		{Call("ltrim", Col("s"), Col("s"), Col("s")), "ltrim takes 1 to 2 arguments"},
		{Call("position", Col("s"), Col("s"), Lit(1)), "position takes 2 arguments, got 3"},
		{Call("locate", Col("s"), Col("s"), Col("f")), "argument 3 of locate must be an integer, got float64"},
		{Call("repeat", Col("s"), Col("s")), "argument 2 of repeat must be an integer, got utf8"},
		{Call("lpad", Col("s"), Lit(3)), "lpad takes 3 arguments"},
		{Call("rpad", Col("s"), Col("f"), Lit("x")), "argument 2 of rpad must be an integer"},
		{Call("left", Col("i"), Lit(1)), "argument 1 of left must be a string"},
		{Call("md5", Col("i")), "argument 1 of md5 must be a string or binary, got int64"},
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

func TestStringMoreKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(32, 32))
	rec, _ := strBuildBatch(t, mem, rng, strMoreCols(), 4096, 0.1)
	defer rec.Release()
	for _, sel := range [][]int32{nil, strRandSel(rng, 4096)} {
		for _, e := range []Expr{
			Call("count_char", Col("s"), Lit("a")),
			Call("count_char", Col("s"), Lit("é")),
			Call("replace", Col("s"), Col("t"), Col("u")),
			Call("trim", Col("ls")),
			Call("rtrim", Col("ls"), Lit("xyé")),
			Call("ltrim", Col("s"), Col("t")),
			Call("position", Col("t"), Col("s")),
			Call("locate", Col("t"), Col("s"), Col("n")),
			Call("initcap", Col("s")),
			Call("repeat", Col("t"), Col("n")),
			Call("reverse", Col("s")),
			Call("lpad", Col("s"), Col("n"), Col("t")),
			Call("rpad", Col("s"), Lit(8), Lit("-")),
			Call("left", Col("s"), Col("n")),
			Call("right", Col("s"), Lit(3)),
			Call("md5", Col("s")),
		} {
			strAllocRun(t, rec, sel, e)
		}
	}
}
