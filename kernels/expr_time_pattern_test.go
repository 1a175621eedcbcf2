package kernels

import (
	"fmt"
	"strings"
	"testing"
)

// TestTmPatternTokens checks the tokenizer against the pattern syntax:
// letter runs with their count, quoted and unquoted literal text merged,
// a doubled quote a quote inside quotes or out.
func TestTmPatternTokens(t *testing.T) {
	// Tokens print as a letter run or as <literal>; an error as !message.
	show := func(p string) string {
		var sb strings.Builder
		for tok, err := range tmPatternTokens(p) {
			switch {
			case err != nil:
				fmt.Fprintf(&sb, "!%v", err)
			case tok.letter == 0:
				fmt.Fprintf(&sb, "<%s>", tok.lit)
			default:
				if tok.count != len(tok.run()) || strings.Trim(tok.run(), string(tok.letter)) != "" {
					t.Errorf("%q: run %q does not match letter %q count %d", p, tok.run(), tok.letter, tok.count)
				}
				sb.WriteString(tok.run())
			}
		}
		return sb.String()
	}
	for _, tc := range []struct{ p, want string }{
		{"", ""},
		{"yyyy-MM-dd HH:mm:ss.SSS", "yyyy<->MM<->dd< >HH<:>mm<:>ss<.>SSS"},
		{"yyyyMMdd", "yyyyMMdd"},
		{"yyyy'T'HH", "yyyy<T>HH"},
		{"d 'of' MMMM", "d< of >MMMM"},
		{"''", "<'>"},
		{"h''mm", "h<'>mm"},
		{"'it''s' a", "<it's >a"},
		{"'' ''''", "<' ''>"}, // outside quotes, '''' is two quotes
		{"'y''' - 'M'", "<y' - M>"},
		{"é", "<é>"},
		{"yy 'open", `yy!unterminated quote in pattern "yy 'open"`},
		{"'", `!unterminated quote in pattern "'"`},
		{"'''", `!unterminated quote in pattern "'''"`},
	} {
		if got := show(tc.p); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.p, got, tc.want)
		}
	}
	// A consumer may stop early.
	n := 0
	for range tmPatternTokens("yyyy-MM-dd") {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break: %d tokens", n)
	}
}
