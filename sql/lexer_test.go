package sql

import (
	"fmt"
	"strings"
	"testing"
)

// lexString renders the tokens of src as "kind:text@line:col" items.
func lexString(t *testing.T, src string) string {
	t.Helper()
	toks, err := lex(src)
	if err != nil {
		t.Fatalf("lex(%q): %v", src, err)
	}
	names := map[tokenKind]string{tokIdent: "id", tokQIdent: "qid", tokString: "str", tokBinary: "bin",
		tokInteger: "int", tokDecimal: "dec", tokApprox: "approx", tokEOF: "eof"}
	var parts []string
	for _, tk := range toks {
		k, ok := names[tk.kind]
		if !ok {
			k = "op"
		}
		v := tk.text
		if tk.kind == tokQIdent || tk.kind == tokString || tk.kind == tokBinary {
			v = tk.val
		}
		s := fmt.Sprintf("%s:%s@%v", k, v, tk.pos)
		for _, h := range tk.hints {
			s = fmt.Sprintf("hint(%d toks)@%v ", len(h.toks), h.pos) + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestLexer(t *testing.T) {
	tests := []struct{ src, want string }{
		{"SELECT a1_$x, `we``ird` FROM t",
			"id:SELECT@1:1 id:a1_$x@1:8 op:,@1:13 qid:we`ird@1:15 id:FROM@1:25 id:t@1:30 eof:@1:31"},
		{"'it''s' X'0aF' n'x' ''", "str:it's@1:1 bin:0aF@1:9 str:x@1:16 str:@1:21 eof:@1:23"},
		{"1 1.5 .5 1. 1e3 2.5E-2 3e+1", "int:1@1:1 dec:1.5@1:3 dec:.5@1:7 dec:1.@1:10 approx:1e3@1:13 approx:2.5E-2@1:17 approx:3e+1@1:24 eof:@1:28"},
		{"t.5 (x).5 a .5", "id:t@1:1 op:.@1:2 int:5@1:3 op:(@1:5 id:x@1:6 op:)@1:7 op:.@1:8 int:5@1:9 id:a@1:11 dec:.5@1:13 eof:@1:15"},
		{"a<>b!=c<=d>=e=>f==g||h", "id:a@1:1 op:<>@1:2 id:b@1:4 op:!=@1:5 id:c@1:7 op:<=@1:8 id:d@1:10 op:>=@1:11 id:e@1:13 op:=>@1:14 id:f@1:16 op:==@1:17 id:g@1:19 op:||@1:20 id:h@1:22 eof:@1:23"},
		{"a -- comment\n/* block\n comment */ b", "id:a@1:1 id:b@3:13 eof:@3:14"},
		{"x /*+ OPTIONS('a'='b') */ y", "id:x@1:1 hint(7 toks)@1:3 id:y@1:27 eof:@1:28"},
		{"'multi\nline' z", "str:multi\nline@1:1 id:z@2:7 eof:@2:8"},
		{"ä\tö `ü` 'ß' x", "id:ä@1:1 id:ö@1:3 qid:ü@1:5 str:ß@1:9 id:x@1:13 eof:@1:14"},
		{"a\r\nb", "id:a@1:1 id:b@2:1 eof:@2:2"},
		{"\uFEFFSELECT", "id:SELECT@1:1 eof:@1:7"},
		{"a\u00a0b", "id:a@1:1 id:b@1:3 eof:@1:4"}, // a no-break space is white space
		{"-1 - -2 --3", "op:-@1:1 int:1@1:2 op:-@1:4 op:-@1:6 int:2@1:7 eof:@1:12"},
		{"ROW<a INT>>", "id:ROW@1:1 op:<@1:4 id:a@1:5 id:INT@1:7 op:>@1:10 op:>@1:11 eof:@1:12"},
	}
	for _, tt := range tests {
		if got := lexString(t, tt.src); got != tt.want {
			t.Errorf("lex(%q)\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestLexerErrors(t *testing.T) {
	tests := []struct {
		src string
		pos Pos
		msg string
	}{
		{`"x"`, Pos{1, 1}, "double quotes"},
		{"a\n  'x", Pos{2, 3}, "unterminated string"},
		{"`x", Pos{1, 1}, "unterminated quoted identifier"},
		{"``", Pos{1, 1}, "empty quoted identifier"},
		{"/* x", Pos{1, 1}, "unterminated comment"},
		{"a /*+ x", Pos{1, 3}, "unterminated hint"},
		{"/*+ /*+ */ */", Pos{1, 5}, "inside a hint"},
		{"X'0g'", Pos{1, 1}, "invalid binary string"},
		{"1e", Pos{1, 1}, "malformed number"},
		{"12abc", Pos{1, 1}, "malformed number"},
		{"a # b", Pos{1, 3}, "unexpected character '#'"},
		{"a | b", Pos{1, 3}, "unexpected character '|'"},
		{"a && b", Pos{1, 3}, "'&&'"},
		{"a ! b", Pos{1, 3}, "'!'"},
		{"a \x01", Pos{1, 3}, "U+0001"},
		{"a \xff", Pos{1, 3}, "invalid UTF-8"},
	}
	for _, tt := range tests {
		_, err := lex(tt.src)
		if err == nil {
			t.Errorf("lex(%q): no error", tt.src)
			continue
		}
		if err.Pos != tt.pos || !strings.Contains(err.Msg, tt.msg) {
			t.Errorf("lex(%q): %v at %v, want %q at %v", tt.src, err.Msg, err.Pos, tt.msg, tt.pos)
		}
	}
}

// TestKeywordsCaseInsensitive checks that keywords match in any case while
// names keep theirs.
func TestKeywordsCaseInsensitive(t *testing.T) {
	a := mustParseScript(t, "select Price from Bids where Price > 1 group by Price")
	b := mustParseScript(t, "SELECT Price FROM Bids WHERE Price > 1 GROUP BY Price")
	if d := diffIgnoringPos(a, b); d != "" {
		t.Errorf("differ at %s", d)
	}
	sel := a.Statements[0].(*Query).Body.(*Select)
	if sel.Items[0].Expr.(*Ref).Parts[0].Name != "Price" {
		t.Errorf("spelling lost: %s", Format(sel))
	}
}
