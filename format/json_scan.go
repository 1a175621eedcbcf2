package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads JSON tokens from one value. It is strict (RFC 8259):
// no comments, no trailing commas, no leading zeros, no control characters
// in strings, valid escapes only, UTF-8 throughout (every string is
// checked, keys and skipped values too). On error, pos is the offset of
// the byte at fault.
type jsonScanner struct {
	buf     []byte
	pos     int
	scratch []byte // unescaped strings that cannot be used in place
}

const jsonMaxDepth = 1000

var (
	errJSONEOF        = errors.New("unexpected end of JSON")
	errJSONControl    = errors.New("control character in string")
	errJSONEscape     = errors.New("invalid escape in string")
	errJSONSurrogate  = errors.New("invalid surrogate in \\u escape")
	errJSONNumber     = errors.New("invalid number")
	errJSONLiteral    = errors.New("invalid literal")
	errJSONDepth      = errors.New("JSON nested too deep")
	errJSONUnexpected = errors.New("unexpected character")
)

// jsonPlain marks the bytes that need no attention inside a string: not a
// quote, a backslash, a control character or the start of a multi-byte
// UTF-8 sequence.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *jsonScanner) ws() {
	for s.pos < len(s.buf) {
		c := s.buf[s.pos]
		if c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
			return
		}
		s.pos++
	}
}

// peek returns the byte at pos, or 0 at the end.
func (s *jsonScanner) peek() byte {
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// describe names the JSON value starting with c, for type errors.
func describe(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case c == 0:
		return "the end of the value"
	}
	return fmt.Sprintf("%q", c)
}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// skipPlain returns the index of the first byte at or after i that may
// end a string's plain run (a quote, a backslash, a control character or
// a byte >= 0x80), looking at 8 bytes at a time; it may stop short of the
// end with fewer than 8 bytes left.
func skipPlain(buf []byte, i int) int {
	for i+8 <= len(buf) {
		x := binary.LittleEndian.Uint64(buf[i:])
		q := x ^ (swarLo * '"')
		b := x ^ (swarLo * '\\')
		// A zero byte of q or b, or a byte of x below 0x20, sets the high
		// bit of its byte (and maybe of later ones: the first is exact).
		m := (q-swarLo)&^q | (b-swarLo)&^b | (x-swarLo*0x20)&^x | x
		if m &= swarHi; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// appendString appends the contents of the string at pos to dst,
// unescaped and checked to be UTF-8, and moves past it.
func (s *jsonScanner) appendString(dst []byte) ([]byte, error) {
	buf := s.buf
	i := s.pos + 1
	start := i
	for {
		i = skipPlain(buf, i)
		for i < len(buf) && jsonPlain[buf[i]] {
			i++
		}
		if i >= len(buf) {
			s.pos = len(buf)
			return dst, errJSONEOF
		}
		switch c := buf[i]; {
		case c == '"':
			dst = append(dst, buf[start:i]...)
			s.pos = i + 1
			return dst, nil
		case c == '\\':
			dst = append(dst, buf[start:i]...)
			var err error
			if dst, i, err = s.unescape(dst, i); err != nil {
				return dst, err
			}
			start = i
		case c < 0x20:
			s.pos = i
			return dst, errJSONControl
		default:
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				s.pos = i
				return dst, ErrInvalidUTF8
			}
			i += size
		}
	}
}

// unescape appends the character of the escape at i and returns the index
// after it.
func (s *jsonScanner) unescape(dst []byte, i int) ([]byte, int, error) {
	buf := s.buf
	if i+1 >= len(buf) {
		s.pos = len(buf)
		return dst, 0, errJSONEOF
	}
	switch buf[i+1] {
	case '"', '\\', '/':
		return append(dst, buf[i+1]), i + 2, nil
	case 'b':
		return append(dst, '\b'), i + 2, nil
	case 'f':
		return append(dst, '\f'), i + 2, nil
	case 'n':
		return append(dst, '\n'), i + 2, nil
	case 'r':
		return append(dst, '\r'), i + 2, nil
	case 't':
		return append(dst, '\t'), i + 2, nil
	case 'u':
		r, ok := hex4(buf, i+2)
		if !ok {
			s.pos = i
			return dst, 0, errJSONEscape
		}
		next := i + 6
		if utf16.IsSurrogate(r) {
			r2, ok := rune(0), false
			if next+1 < len(buf) && buf[next] == '\\' && buf[next+1] == 'u' {
				r2, ok = hex4(buf, next+2)
			}
			if !ok || r >= 0xdc00 {
				s.pos = i
				return dst, 0, errJSONSurrogate
			}
			if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
				s.pos = i
				return dst, 0, errJSONSurrogate
			}
			next += 6
		}
		return utf8.AppendRune(dst, r), next, nil
	}
	s.pos = i
	return dst, 0, errJSONEscape
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// rawString returns the contents of the string at pos, unescaped and
// checked to be UTF-8 like every string of a JSON text (keys, skipped
// values, the strings inside a value taken as text): a sub-slice of the
// value when it has no escapes, else the scanner's scratch (valid until
// the next call).
func (s *jsonScanner) rawString() ([]byte, error) {
	buf := s.buf
	i := s.pos + 1
	for {
		i = skipPlain(buf, i)
		for i < len(buf) && jsonPlain[buf[i]] {
			i++
		}
		if i >= len(buf) || buf[i] < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size == 1 {
			s.pos = i
			return nil, ErrInvalidUTF8
		}
		i += size
	}
	if i < len(buf) && buf[i] == '"' {
		str := buf[s.pos+1 : i]
		s.pos = i + 1
		return str, nil
	}
	// An escape, a control character or the end: the slow path says which.
	var err error
	s.scratch, err = s.appendString(s.scratch[:0])
	return s.scratch, err
}

// number validates the number at pos, moves past it and returns its text
// and whether it is an integer literal (no fraction, no exponent).
func (s *jsonScanner) number() (tok []byte, isInt bool, err error) {
	buf := s.buf
	start, i := s.pos, s.pos
	if i < len(buf) && buf[i] == '-' {
		i++
	}
	switch {
	case i < len(buf) && buf[i] == '0':
		i++
	case i < len(buf) && buf[i] >= '1' && buf[i] <= '9':
		for i++; i < len(buf) && buf[i] >= '0' && buf[i] <= '9'; i++ {
		}
	default:
		s.pos = i
		return nil, false, errJSONNumber
	}
	isInt = true
	if i < len(buf) && buf[i] == '.' {
		isInt = false
		i++
		if i >= len(buf) || buf[i] < '0' || buf[i] > '9' {
			s.pos = i
			return nil, false, errJSONNumber
		}
		for ; i < len(buf) && buf[i] >= '0' && buf[i] <= '9'; i++ {
		}
	}
	if i < len(buf) && (buf[i] == 'e' || buf[i] == 'E') {
		isInt = false
		i++
		if i < len(buf) && (buf[i] == '+' || buf[i] == '-') {
			i++
		}
		if i >= len(buf) || buf[i] < '0' || buf[i] > '9' {
			s.pos = i
			return nil, false, errJSONNumber
		}
		for ; i < len(buf) && buf[i] >= '0' && buf[i] <= '9'; i++ {
		}
	}
	s.pos = i
	return buf[start:i], isInt, nil
}

// literal moves past the literal lit (true, false or null) at pos.
func (s *jsonScanner) literal(lit string) error {
	if len(s.buf)-s.pos < len(lit) || string(s.buf[s.pos:s.pos+len(lit)]) != lit {
		return errJSONLiteral
	}
	s.pos += len(lit)
	return nil
}

// isNull reports whether the value at pos is null, and moves past it.
func (s *jsonScanner) isNull() bool {
	if s.pos+4 <= len(s.buf) && string(s.buf[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// skip validates the value at pos and moves past it.
func (s *jsonScanner) skip(depth int) error {
	if depth > jsonMaxDepth {
		return errJSONDepth
	}
	switch s.peek() {
	case '"':
		_, err := s.rawString()
		return err
	case '{':
		s.pos++
		s.ws()
		if s.peek() == '}' {
			s.pos++
			return nil
		}
		for {
			if s.peek() != '"' {
				return errJSONExpected("a string key", s.peek())
			}
			if _, err := s.rawString(); err != nil {
				return err
			}
			s.ws()
			if s.peek() != ':' {
				return errJSONExpected("':'", s.peek())
			}
			s.pos++
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.pos++
				s.ws()
			case '}':
				s.pos++
				return nil
			default:
				return errJSONExpected("',' or '}'", s.peek())
			}
		}
	case '[':
		s.pos++
		s.ws()
		if s.peek() == ']' {
			s.pos++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.pos++
				s.ws()
			case ']':
				s.pos++
				return nil
			default:
				return errJSONExpected("',' or ']'", s.peek())
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, _, err := s.number()
		return err
	}
	return errJSONExpected("a value", s.peek())
}

func errJSONExpected(what string, got byte) error {
	if got == 0 { // the end, or a NUL byte: both end the JSON
		return fmt.Errorf("expected %s, found the end of the value", what)
	}
	return fmt.Errorf("expected %s, found %s", what, describe(got))
}
