package sql

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind says what a token is. Keywords are not a kind of their own: a
// word is a tokIdent and the parser compares its upper-cased spelling, since
// most Flink keywords are only keywords in some places.
type tokenKind int

const (
	tokEOF       tokenKind = iota
	tokIdent               // unquoted word: a keyword or a name
	tokQIdent              // `quoted identifier`
	tokString              // 'string literal'
	tokBinary              // X'0F' binary string literal
	tokInteger             // 123
	tokDecimal             // 1.5, .5, 1.
	tokApprox              // 1e3, 1.5E-2
	tokLParen              // (
	tokRParen              // )
	tokLBracket            // [
	tokRBracket            // ]
	tokComma               // ,
	tokSemicolon           // ;
	tokDot                 // .
	tokStar                // *
	tokPlus                // +
	tokMinus               // -
	tokSlash               // /
	tokPercent             // %
	tokConcat              // ||
	tokEq                  // =
	tokEqEq                // == (not SQL; kept to give a hint)
	tokArrow               // =>
	tokNe                  // <> or !=
	tokLt                  // <
	tokLe                  // <=
	tokGt                  // >
	tokGe                  // >=
	tokQuestion            // ? (a dynamic parameter; not supported)

	// Used inside the lexer only, never in the token stream.
	tokHintStart // /*+
	tokHintEnd   // */ closing a hint
)

// token is one lexical token. Hints (/*+ ... */) are not tokens of the
// stream: they are attached to the token that follows them.
type token struct {
	kind tokenKind
	// text is the token's source text; val is its value: an identifier's
	// name (without backticks), a string's contents (quotes undoubled), a
	// binary literal's hex digits. upper is the upper-cased text of an
	// unquoted word, for keyword comparisons.
	text, val, upper string
	pos              Pos
	off, end         int // byte offsets of the token in the source
	// hints holds the hint comments written right before this token, each
	// as its own token list (ending in tokEOF).
	hints []hintBlock
}

// hintBlock is the content of one /*+ ... */ comment.
type hintBlock struct {
	pos  Pos // of the "/*+"
	toks []token
}

// lexer turns source text into tokens, tracking line and column.
type lexer struct {
	src       string
	off       int
	line, col int
	prev      tokenKind // kind of the previous token, to lex "t.5" as t . 5
	prevEnd   int
	inHint    bool
	hintStart Pos
}

// lex returns the tokens of src, ending with a tokEOF token, or the first
// lexical error.
func lex(src string) ([]token, *Error) {
	lx := &lexer{src: src, line: 1, col: 1, prev: tokEOF, prevEnd: -1}
	if strings.HasPrefix(src, "\uFEFF") { // byte order mark
		lx.off = len("\uFEFF")
	}
	toks := make([]token, 0, len(src)/5+8)
	var pending []hintBlock
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokHintStart {
			// A hint: lex its content up to "*/".
			hb, err := lx.hint(t.pos)
			if err != nil {
				return nil, err
			}
			pending = append(pending, hb)
			continue
		}
		t.hints = pending
		pending = nil
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}

// hint lexes the tokens of a hint comment whose "/*+" was at pos, up to and
// including its "*/".
func (lx *lexer) hint(pos Pos) (hintBlock, *Error) {
	lx.inHint, lx.hintStart = true, pos
	defer func() { lx.inHint = false }()
	hb := hintBlock{pos: pos}
	for {
		t, err := lx.next()
		if err != nil {
			return hb, err
		}
		switch t.kind {
		case tokHintEnd:
			hb.toks = append(hb.toks, token{kind: tokEOF, text: "*/", pos: t.pos, off: t.off, end: t.end})
			return hb, nil
		case tokHintStart:
			return hb, lx.errAt(t.pos, "a hint comment inside a hint comment", "close the first hint with */ first")
		case tokEOF:
			return hb, lx.errAt(pos, "unterminated hint comment", "hint comments end with */")
		}
		hb.toks = append(hb.toks, t)
	}
}

func (lx *lexer) errAt(pos Pos, msg, hint string) *Error {
	return newError(lx.src, pos, msg, hint)
}

func (lx *lexer) pos() Pos { return Pos{Line: lx.line, Col: lx.col} }

// peekRune returns the rune at byte offset off (and its width), or -1.
func (lx *lexer) peekRune(off int) (rune, int) {
	if off >= len(lx.src) {
		return -1, 0
	}
	c := lx.src[off]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(lx.src[off:])
}

// advance moves past one rune, keeping line and column.
func (lx *lexer) advance() {
	r, w := lx.peekRune(lx.off)
	if w == 0 {
		return
	}
	lx.off += w
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
}

func (lx *lexer) byteAt(off int) byte {
	if off < len(lx.src) {
		return lx.src[off]
	}
	return 0
}

// skipSpace skips white space and comments. A "/*+" is not skipped: it
// starts a hint.
func (lx *lexer) skipSpace() *Error {
	for lx.off < len(lx.src) {
		r, _ := lx.peekRune(lx.off)
		switch {
		case r == '-' && lx.byteAt(lx.off+1) == '-':
			for lx.off < len(lx.src) && lx.src[lx.off] != '\n' {
				lx.advance()
			}
		case r == '/' && lx.byteAt(lx.off+1) == '*':
			if lx.byteAt(lx.off+2) == '+' {
				return nil
			}
			start := lx.pos()
			lx.advance()
			lx.advance()
			for {
				if lx.off >= len(lx.src) {
					return lx.errAt(start, "unterminated comment", "block comments end with */")
				}
				if lx.src[lx.off] == '*' && lx.byteAt(lx.off+1) == '/' {
					lx.advance()
					lx.advance()
					break
				}
				lx.advance()
			}
		case unicode.IsSpace(r):
			lx.advance()
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next returns the next token, tokEOF at the end of input. It returns a
// hint start "/*+" as tokHintStart and, inside a hint, its end "*/" as
// tokHintEnd.
func (lx *lexer) next() (token, *Error) {
	if err := lx.skipSpace(); err != nil {
		return token{}, err
	}
	start := lx.off
	pos := lx.pos()
	mk := func(k tokenKind) token {
		t := token{kind: k, text: lx.src[start:lx.off], pos: pos, off: start, end: lx.off}
		lx.prev, lx.prevEnd = k, lx.off
		return t
	}
	if lx.off >= len(lx.src) {
		return token{kind: tokEOF, pos: pos, off: start, end: start}, nil
	}
	r, _ := lx.peekRune(lx.off)
	c := lx.src[lx.off]
	c1 := lx.byteAt(lx.off + 1)

	switch {
	case c == '/' && c1 == '*': // only "/*+" gets here
		lx.advance()
		lx.advance()
		lx.advance()
		return token{kind: tokHintStart, text: "/*+", pos: pos, off: start, end: lx.off}, nil
	case lx.inHint && c == '*' && c1 == '/':
		lx.advance()
		lx.advance()
		return token{kind: tokHintEnd, text: "*/", pos: pos, off: start, end: lx.off}, nil
	case (c == 'x' || c == 'X') && c1 == '\'':
		lx.advance()
		s, err := lx.quoted('\'', pos, "binary string")
		if err != nil {
			return token{}, err
		}
		for i := 0; i < len(s); i++ {
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s[i])) {
				return token{}, lx.errAt(pos, "invalid binary string X'"+s+"'", "a binary string holds hexadecimal digits: X'0FA3'")
			}
		}
		t := mk(tokBinary)
		t.val = s
		return t, nil
	case (c == 'n' || c == 'N') && c1 == '\'':
		lx.advance()
		s, err := lx.quoted('\'', pos, "string")
		if err != nil {
			return token{}, err
		}
		t := mk(tokString)
		t.val = s
		return t, nil
	case (c == 'u' || c == 'U') && c1 == '&' && (lx.byteAt(lx.off+2) == '\'' || lx.byteAt(lx.off+2) == '"'):
		return token{}, lx.errAt(pos, "Unicode escape strings (U&'...') are not supported", "write the characters themselves: SQL scripts are UTF-8")
	case isIdentStart(r):
		for {
			r, _ := lx.peekRune(lx.off)
			if r < 0 || !isIdentPart(r) {
				break
			}
			lx.advance()
		}
		t := mk(tokIdent)
		t.val = t.text
		t.upper = strings.ToUpper(t.text)
		return t, nil
	case isDigit(c) || (c == '.' && isDigit(c1) && !lx.dotIsMember(start)):
		return lx.number(pos)
	case c == '\'':
		s, err := lx.quoted('\'', pos, "string")
		if err != nil {
			return token{}, err
		}
		t := mk(tokString)
		t.val = s
		return t, nil
	case c == '`':
		s, err := lx.quoted('`', pos, "quoted identifier")
		if err != nil {
			return token{}, err
		}
		if s == "" {
			return token{}, lx.errAt(pos, "empty quoted identifier ``", "")
		}
		t := mk(tokQIdent)
		t.val = s
		return t, nil
	case c == '"':
		end := strings.IndexByte(lx.src[lx.off+1:], '"')
		shown := `"`
		if end >= 0 && end < 40 && !strings.ContainsRune(lx.src[lx.off+1:lx.off+1+end], '\n') {
			shown = lx.src[lx.off : lx.off+end+2]
		}
		return token{}, lx.errAt(pos, "double quotes are not used in Flink SQL: found "+shown,
			"use single quotes for strings ('text') and backticks for identifiers (`name`)")
	}

	// Operators and punctuation.
	two := func(k tokenKind) (token, *Error) {
		lx.advance()
		lx.advance()
		return mk(k), nil
	}
	one := func(k tokenKind) (token, *Error) {
		lx.advance()
		return mk(k), nil
	}
	switch c {
	case '(':
		return one(tokLParen)
	case ')':
		return one(tokRParen)
	case '[':
		return one(tokLBracket)
	case ']':
		return one(tokRBracket)
	case ',':
		return one(tokComma)
	case ';':
		return one(tokSemicolon)
	case '.':
		return one(tokDot)
	case '*':
		return one(tokStar)
	case '+':
		return one(tokPlus)
	case '-':
		return one(tokMinus)
	case '/':
		return one(tokSlash)
	case '%':
		return one(tokPercent)
	case '?':
		return one(tokQuestion)
	case '|':
		if c1 == '|' {
			return two(tokConcat)
		}
		return token{}, lx.errAt(pos, "unexpected character '|'", "|| concatenates strings; OR is the logical or")
	case '=':
		switch c1 {
		case '=':
			return two(tokEqEq)
		case '>':
			return two(tokArrow)
		}
		return one(tokEq)
	case '<':
		switch c1 {
		case '=':
			return two(tokLe)
		case '>':
			return two(tokNe)
		}
		return one(tokLt)
	case '>':
		if c1 == '=' {
			return two(tokGe)
		}
		return one(tokGt)
	case '!':
		if c1 == '=' {
			return two(tokNe)
		}
		return token{}, lx.errAt(pos, "unexpected character '!'", "use NOT for negation and <> or != for inequality")
	case '&':
		if c1 == '&' {
			return token{}, lx.errAt(pos, "unexpected characters '&&'", "use AND")
		}
	}
	if r == utf8.RuneError {
		return token{}, lx.errAt(pos, "invalid UTF-8 in the source", "")
	}
	return token{}, lx.errAt(pos, "unexpected character "+quoteRune(r), "")
}

// dotIsMember reports whether a '.' at off, followed by a digit, is a member
// access ("t.5" after a name, ")" or "]" with no space between) rather than
// the start of a number (".5").
func (lx *lexer) dotIsMember(off int) bool {
	if lx.prevEnd != off {
		return false
	}
	switch lx.prev {
	case tokIdent, tokQIdent, tokRParen, tokRBracket:
		return true
	}
	return false
}

func quoteRune(r rune) string {
	if r == '\'' {
		return `"'"`
	}
	if unicode.IsPrint(r) {
		return "'" + string(r) + "'"
	}
	return fmt.Sprintf("U+%04X", r)
}

// quoted lexes a literal enclosed in q (the lexer is at the opening q) in
// which a doubled q stands for one q, and returns its contents.
func (lx *lexer) quoted(q byte, pos Pos, what string) (string, *Error) {
	lx.advance() // opening quote
	var b strings.Builder
	from := lx.off
	for {
		if lx.off >= len(lx.src) {
			hint := "a " + what + " ends with " + string(q) + "; write " + string(q) + string(q) + " for a " + string(q) + " inside it"
			return "", lx.errAt(pos, "unterminated "+what, hint)
		}
		if lx.src[lx.off] == q {
			b.WriteString(lx.src[from:lx.off])
			lx.advance()
			if lx.off < len(lx.src) && lx.src[lx.off] == q {
				b.WriteByte(q)
				lx.advance()
				from = lx.off
				continue
			}
			return b.String(), nil
		}
		lx.advance()
	}
}

// number lexes a numeric literal: digits [. digits] [e [+-] digits], or
// . digits [e ...].
func (lx *lexer) number(pos Pos) (token, *Error) {
	start := lx.off
	kind := tokInteger
	for isDigit(lx.byteAt(lx.off)) {
		lx.advance()
	}
	if lx.byteAt(lx.off) == '.' {
		kind = tokDecimal
		lx.advance()
		for isDigit(lx.byteAt(lx.off)) {
			lx.advance()
		}
	}
	if c := lx.byteAt(lx.off); c == 'e' || c == 'E' {
		n := lx.off + 1
		if s := lx.byteAt(n); s == '+' || s == '-' {
			n++
		}
		if !isDigit(lx.byteAt(n)) {
			return token{}, lx.errAt(pos, "malformed number "+lx.src[start:n], "an exponent needs digits: 1e3, 2.5E-2")
		}
		kind = tokApprox
		for lx.off < n {
			lx.advance()
		}
		for isDigit(lx.byteAt(lx.off)) {
			lx.advance()
		}
	}
	if r, _ := lx.peekRune(lx.off); r >= 0 && isIdentPart(r) {
		end := lx.off
		for {
			r, w := lx.peekRune(end)
			if r < 0 || !isIdentPart(r) {
				break
			}
			end += w
		}
		return token{}, lx.errAt(pos, "malformed number "+lx.src[start:end],
			"names cannot start with a digit; quote such a name with backticks: `"+lx.src[start:end]+"`")
	}
	t := token{kind: kind, text: lx.src[start:lx.off], pos: pos, off: start, end: lx.off}
	t.val = t.text
	lx.prev, lx.prevEnd = kind, lx.off
	return t, nil
}
