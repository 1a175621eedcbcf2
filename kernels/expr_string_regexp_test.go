package kernels

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// reFastPatterns are patterns for the regexp_extract fast paths: the
// ones marked lit have the literal matcher's shape, the others only get
// the required-literal prefilter (or nothing).
var reFastPatterns = []struct {
	re  string
	lit bool
}{
	{`(&|^)channel_id=([^&]*)`, true},
	{`(^|&)channel_id=([^&]*)`, true},
	{`channel_id=([^&]*)`, true},
	{`(?:&|^)(channel_id)=([^&]*)`, true},
	{`(&|^)(channel_id=)([^&]*)`, true},
	{`(&&|&|^)a=([^&]*)`, false}, // factored to &(?:&|)|^
	{`(xy|&|^)a=([^&]*)`, true},
	{`(&|^)&a([^=]*)`, true},
	{`(^|&)&&`, true},
	{`^a=([^&\n]*)`, true},
	{`(é|^)中([^a]*)`, true},
	{`(=a|a)a=([^&]*)`, true},
	{`(a=|a)a=([^&]*)`, false}, // factored to a(?:=|)
	{`(a|)a=`, true},
	{`(&|^)channel_id=([^&é]*)`, false},    // class misses a non-ASCII rune
	{`(&|^)channel_id=([^&]*?)`, false},    // non-greedy tail
	{`(&|^)channel_id=([^&]+)`, false},     // plus, not star
	{`(&|^)channel_id=(.*)`, false},        // not a character class
	{`(?i)(&|^)channel_id=([^&]*)`, false}, // case folding
	{`(?m)(&|^)a=([^&]*)`, false},          // ^ is begin of line
	{`(&|^)((channel)_id)=([^&]*)`, false}, // nested captures
	{`(&|(=))a([^&]*)`, false},             // capture inside an alternative
	{`\x{FFFD}a=([^&]*)`, false},           // U+FFFD also matches invalid bytes
	{`x(\d+)y`, false},
	{`a+(=)(中+)`, false},
	{`\bchannel\w*`, false},
	{`(a)(b)?`, false},
	{`(?:ab){2,}c`, false},
	{`a=|channel`, false},
	{`x*`, false},
}

// reFastTokens build the test strings: the literals of the patterns,
// whole and in pieces, separators, multibyte and invalid UTF-8.
var reFastTokens = []string{
	"channel_id=", "channel_id=", "channel_id", "channel", "_id=", "&", "&", "&&", "=", "a=", "a",
	"1", "42", "ab", "c", "x", "y", "é", "中", "\n", "?", "\xff", "\xc3", "\xe4\xb8", "\uFFFD",
	"https://www.nexmark.com/a_b/item.htm?query=1",
}

func reFastString(rng *rand.Rand) string {
	var sb strings.Builder
	for k := rng.IntN(7); k > 0; k-- {
		sb.WriteString(reFastTokens[rng.IntN(len(reFastTokens))])
	}
	return sb.String()
}

// TestRegexpExtractLitMatcherOffsets checks the literal matcher's
// submatch offsets, every group, against the regexp engine's.
func TestRegexpExtractLitMatcherOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	for _, p := range reFastPatterns {
		re := regexp.MustCompile(p.re)
		tree, err := syntax.Parse(p.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		m := newReLitMatcher(tree.Simplify(), re.NumSubexp())
		if (m != nil) != p.lit {
			t.Fatalf("%q: literal matcher %v, want %v", p.re, m != nil, p.lit)
		}
		if m == nil {
			continue
		}
		caps := make([]int, 2*(re.NumSubexp()+1))
		for i := 0; i < 20000; i++ {
			s := []byte(reFastString(rng))
			want := re.FindSubmatchIndex(s)
			for k := range caps {
				caps[k] = -7
			}
			ok := m.find(s, caps)
			if ok != (want != nil) || (ok && fmt.Sprint(caps) != fmt.Sprint(want)) {
				t.Fatalf("%q on %q: got %v %v, want %v", p.re, s, ok, caps, want)
			}
		}
	}
}

// TestRegexpExtractRequiredLiteral checks that the prefilter's literal is
// in every match.
func TestRegexpExtractRequiredLiteral(t *testing.T) {
	for _, c := range []struct{ re, want string }{
		{`(&|^)channel_id=([^&]*)`, "channel_id="},
		{`(?:&|^)(channel_id)=([^&]*)`, "channel_id="},
		{`x(\d+)y`, "x"},
		{`a+(=)(中+)`, "中"},
		{`(?i)channel`, ""},
		{`\x{FFFD}a=`, "a="},
		{`(?:ab){2,}c`, "ab"},
		{`a=|channel`, ""},
		{`x*`, ""},
	} {
		tree, err := syntax.Parse(c.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(reRequiredLiteral(tree.Simplify())); got != c.want {
			t.Errorf("%q: required literal %q, want %q", c.re, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, p := range reFastPatterns {
		re := regexp.MustCompile(p.re)
		tree, _ := syntax.Parse(p.re, syntax.Perl)
		need := reRequiredLiteral(tree.Simplify())
		for i := 0; i < 5000; i++ {
			s := reFastString(rng)
			if loc := re.FindStringIndex(s); loc != nil && !strings.Contains(s[loc[0]:loc[1]], string(need)) {
				t.Fatalf("%q: match %q of %q lacks the required %q", p.re, s[loc[0]:loc[1]], s, need)
			}
		}
	}
}

// TestRegexpExtractFastMatchesReference runs the optimized kernel and
// the plain one (regexpExtractPlain) against the row-at-a-time reference
// over strings built to hit the fast paths' edge cases, NULLs included,
// for every group of every pattern.
func TestRegexpExtractFastMatchesReference(t *testing.T) {
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, func(rng *rand.Rand) any { return reFastString(rng) }},
		{"ls", arrow.BinaryTypes.LargeString, func(rng *rand.Rand) any { return reFastString(rng) }},
	}
	ref := refStringTimeFuncs["regexp_extract"]
	var cases []strCase
	for _, p := range reFastPatterns {
		ng := regexp.MustCompile(p.re).NumSubexp()
		cases = append(cases, strCase{Call("regexp_extract", Col("s"), Lit(p.re)), strRefCall(ref, strColRef(0), p.re)})
		for g := int64(0); g <= int64(ng); g++ {
			cases = append(cases, strCase{Call("regexp_extract", Col("s"), Lit(p.re), Lit(g)), strRefCall(ref, strColRef(0), p.re, g)})
		}
		cases = append(cases, strCase{Call("regexp_extract", Col("ls"), Lit(p.re), Lit(int64(ng))), strRefCall(ref, strColRef(1), p.re, int64(ng))})
	}
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			defer func(old bool) { regexpExtractPlain = old }(regexpExtractPlain)
			regexpExtractPlain = plain
			strCheck(t, 21, cols, cases)
		})
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, g := range []int64{-1, 3} {
		if _, err := Compile(Call("regexp_extract", Col("s"), Lit(`(&|^)channel_id=([^&]*)`), Lit(g)), sch); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("group %d: want an out of range error, got %v", g, err)
		}
	}
}

// BenchmarkRegexpExtract measures Nexmark q21's
// REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) over nexmark-like urls
// (a third without channel_id, 1% NULLs), and patterns the regexp engine
// runs: one with a literal prefix (which the engine skips to by itself),
// one the required-literal prefilter applies to, one matching every row;
// each optimized and plain (regexpExtractPlain) in the same run.
func BenchmarkRegexpExtract(b *testing.B) {
	const n = 1 << 14
	rng := rand.New(rand.NewPCG(42, 42))
	word := func(rng *rand.Rand) string {
		const letters = "abcdefghijklmnopqrstuvwxyz_"
		var sb strings.Builder
		for k := 5; k > 0; k-- {
			sb.WriteByte(letters[rng.IntN(len(letters))])
		}
		return sb.String()
	}
	url := func(rng *rand.Rand) any {
		u := "https://www.nexmark.com/" + word(rng) + "/" + word(rng) + "/" + word(rng) + "/item.htm?query=1"
		if rng.IntN(3) != 0 {
			u += fmt.Sprintf("&channel_id=%d", rng.Int32())
		}
		return u
	}
	cols := []strCol{{"url", arrow.BinaryTypes.String, url}}
	rec, _ := strBuildBatch(b, memory.NewGoAllocator(), rng, cols, n, 0.01)
	defer rec.Release()
	for _, bc := range []struct {
		name string
		e    Expr
	}{
		{"q21", Call("regexp_extract", Col("url"), Lit(`(&|^)channel_id=([^&]*)`), Lit(2))},
		{"prefix", Call("regexp_extract", Col("url"), Lit(`channel_id=(\d+)`), Lit(1))},
		{"prefilter", Call("regexp_extract", Col("url"), Lit(`[&?]channel_id=(\d+)`), Lit(1))},
		{"none", Call("regexp_extract", Col("url"), Lit(`/([a-z_]+)/item`), Lit(1))},
	} {
		for _, plain := range []bool{true, false} {
			name := bc.name + "/fast"
			if plain {
				name = bc.name + "/plain"
			}
			b.Run(name, func(b *testing.B) {
				regexpExtractPlain = plain
				prog, err := Compile(bc.e, rec.Schema())
				regexpExtractPlain = false
				if err != nil {
					b.Fatal(err)
				}
				if _, err := prog.run(rec, nil); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := prog.run(rec, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
