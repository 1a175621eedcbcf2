package kernels

import (
	"fmt"
	"iter"
	"strings"
)

// A date pattern, in the syntax Java's DateTimeFormatter and
// SimpleDateFormat share, is read the same way for formatting
// (date_format, from_unixtime) and parsing (to_timestamp, unix_timestamp):
// a run of one ASCII letter is a field, its count selecting the width or
// form (yyyy, MMM); text between single quotes is literal, '' being a
// quote inside quotes or out; any other character is literal. Only what
// the letters mean differs, so each compiler has its own letter table.

// tmPatternToken is one token of a date pattern: a letter run, or literal
// text.
type tmPatternToken struct {
	letter byte   // the repeated letter; 0 for literal text
	count  int    // how many times letter stands in the run
	lit    []byte // letter 0: the text, quotes resolved; never empty
}

// run is the letter run as written in the pattern.
func (t *tmPatternToken) run() string {
	return strings.Repeat(string(t.letter), t.count)
}

// tmPatternTokens yields the tokens of p from left to right. Adjacent
// literal text, quoted or not, comes as one token, so no two literal
// tokens follow each other. An unterminated quote ends the sequence with
// an error, after the tokens before it: a compiler that rejects one of
// those reports that first, as it would reading the pattern by hand.
func tmPatternTokens(p string) iter.Seq2[tmPatternToken, error] {
	return func(yield func(tmPatternToken, error) bool) {
		var lit []byte
		for i := 0; i < len(p); {
			c := p[i]
			switch {
			case c == '\'':
				if i+1 < len(p) && p[i+1] == '\'' {
					lit = append(lit, '\'')
					i += 2
					continue
				}
				// Quoted text up to the closing quote; '' inside is a quote.
				j := i + 1
				for {
					if j >= len(p) {
						yield(tmPatternToken{}, fmt.Errorf("unterminated quote in pattern %q", p))
						return
					}
					if p[j] == '\'' {
						if j+1 < len(p) && p[j+1] == '\'' {
							lit = append(lit, '\'')
							j += 2
							continue
						}
						break
					}
					lit = append(lit, p[j])
					j++
				}
				i = j + 1
			case ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
				if lit != nil {
					if !yield(tmPatternToken{lit: lit}, nil) {
						return
					}
					lit = nil
				}
				j := i
				for j < len(p) && p[j] == c {
					j++
				}
				if !yield(tmPatternToken{letter: c, count: j - i}, nil) {
					return
				}
				i = j
			default:
				lit = append(lit, c)
				i++
			}
		}
		if lit != nil {
			yield(tmPatternToken{lit: lit}, nil)
		}
	}
}

// tmLetter is what one pattern letter means to a compiler: the kind of
// field, and the longest run of the letter allowed.
type tmLetter[K ~uint8] struct {
	kind     K
	maxCount int
}

// tmLetterKind looks the letter run tok up in letters. supported lists the
// letters for the error message ("supported: y M d").
func tmLetterKind[K ~uint8](letters map[byte]tmLetter[K], tok *tmPatternToken, p, supported string) (K, error) {
	l, ok := letters[tok.letter]
	if !ok {
		return 0, fmt.Errorf("unsupported pattern letter %q in %q (%s, 'text')", tok.letter, p, supported)
	}
	if tok.count > l.maxCount {
		return 0, fmt.Errorf("too many pattern letters %q in %q (at most %d)", tok.run(), p, l.maxCount)
	}
	return l.kind, nil
}
