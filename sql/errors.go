package sql

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirflow/weir/internal/redact"
)

// Error is a syntax error in a SQL script, at a position of the source.
//
// Its Error method formats it in three or four lines:
//
//	line 3:14: expected ")", found ","
//	    price BIGINT,, name STRING
//	                 ^
//	hint: remove the extra comma
type Error struct {
	Pos  Pos    // where the error is
	Msg  string // what is wrong
	Hint string // what to do about it; may be empty
	// Src is the source line holding Pos, without its line break, as
	// the script has it: secrets included. Error masks them
	// (internal/redact); print Error, not Src.
	Src string
}

// maxShownLine is how many runes of a long source line an error shows
// around the error's column.
const maxShownLine = 120

// Error returns "line L:C: msg", then (when Src is set) the source line
// with a caret under the column, then "hint: ..." when there is a hint.
// Secrets (passwords, JAAS configurations, private keys: see package
// internal/redact) are masked in all three; the caret stays under the
// error's column.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	b.WriteString(redact.String(e.Msg))
	if e.Src != "" {
		src, col := redactLine(e.Src, e.Pos.Col)
		line, col := clipLine(src, col)
		b.WriteString("\n")
		b.WriteString(line)
		b.WriteString("\n")
		// The caret line copies tabs from the source line so that the
		// caret lines up whatever the tab width.
		i := 1
		for _, r := range line {
			if i >= col {
				break
			}
			if r == '\t' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
			i++
		}
		for ; i < col; i++ {
			b.WriteByte(' ')
		}
		b.WriteString("^")
	}
	if e.Hint != "" {
		b.WriteString("\nhint: ")
		b.WriteString(redact.String(e.Hint))
	}
	return b.String()
}

// redactLine masks the secrets of a source line and returns it with the
// column (1-based, in runes) that col of the original becomes: after the
// masked prefix before col, or, when a secret spans col, after the
// longest prefix whose masked form starts the masked line.
func redactLine(line string, col int) (string, int) {
	masked := redact.String(line)
	if masked == line {
		return line, col
	}
	runes := []rune(line)
	k := min(max(col-1, 0), len(runes))
	for tries := 0; k >= 0 && tries < 256; k, tries = k-1, tries+1 {
		if p := redact.String(string(runes[:k])); strings.HasPrefix(masked, p) {
			return masked, utf8.RuneCountInString(p) + 1
		}
	}
	return masked, min(col, utf8.RuneCountInString(masked)+1)
}

// clipLine shortens a long line to a window around column col and returns
// the shown text and col's column in it.
func clipLine(line string, col int) (string, int) {
	n := utf8.RuneCountInString(line)
	if n <= maxShownLine {
		return line, col
	}
	runes := []rune(line)
	from := max(0, col-1-maxShownLine/2)
	to := min(n, from+maxShownLine)
	prefix, suffix := "", ""
	if from > 0 {
		prefix = "..."
	}
	if to < n {
		suffix = "..."
	}
	return prefix + string(runes[from:to]) + suffix, col - from + len(prefix)
}

// newError returns an Error at pos whose Src is pos's line of src.
func newError(src string, pos Pos, msg, hint string) *Error {
	return &Error{Pos: pos, Msg: msg, Hint: hint, Src: lineAt(src, pos.Line)}
}

// lineAt returns line n (1-based) of src without its line break.
func lineAt(src string, n int) string {
	for i := 1; i < n; i++ {
		j := strings.IndexByte(src, '\n')
		if j < 0 {
			return ""
		}
		src = src[j+1:]
	}
	if j := strings.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	return strings.TrimSuffix(src, "\r")
}

// describe returns how an error message names a token: its text in
// double quotes, or "end of input".
func describe(t *token) string {
	if t.kind == tokEOF {
		if t.text != "" { // the "*/" ending a hint
			return strconv.Quote(t.text)
		}
		return "end of input"
	}
	s := t.text
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:37]) + "..."
	}
	return strconv.Quote(s)
}

// editDistance returns the Levenshtein distance between a and b, which are
// compared case-insensitively.
func editDistance(a, b string) int {
	ra, rb := []rune(strings.ToUpper(a)), []rune(strings.ToUpper(b))
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// suggest returns the candidate closest to word when it is close enough to
// be a likely typo, or "".
func suggest(word string, candidates []string) string {
	best, bestD := "", 3
	limit := 2
	if utf8.RuneCountInString(word) <= 4 {
		limit = 1
	}
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD && d <= limit {
			best, bestD = c, d
		}
	}
	return best
}
