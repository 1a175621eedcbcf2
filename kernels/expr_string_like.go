package kernels

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// LIKE compiles its constant pattern once into the cheapest matcher that
// decides it: equality, prefix, suffix or substring tests for the common
// shapes ('abc', 'abc%', '%abc', '%abc%'), and otherwise a segment matcher.
// The general matcher splits the pattern at its %s into segments of
// literals and _ runs; the first segment is anchored at the start, the
// last at the end, and the ones between are found left to right, each at
// its leftmost position. Taking the leftmost match is always right because
// a segment consumes a fixed number of characters: an earlier match never
// ends later, so it leaves the most room for the rest. Matching costs at
// most O(len(s) * len(pattern)), with no backtracking blowup.

type likeKind uint8

const (
	likeAll      likeKind = iota // '%': every non-NULL value matches
	likeEqual                    // no wildcard
	likePrefix                   // 'lit%'
	likeSuffix                   // '%lit'
	likeContains                 // '%lit%'
	likeGeneral                  // anything else
)

// likePiece is a literal, or (lit nil) a run of `any` _ wildcards.
type likePiece struct {
	lit []byte
	any int
}

// likeMatcher is a compiled LIKE pattern.
type likeMatcher struct {
	kind likeKind
	lit  []byte // likeEqual, likePrefix, likeSuffix, likeContains

	// likeGeneral: the segments between %s (none empty), and whether the
	// pattern starts and ends without a %.
	segs                       [][]likePiece
	anchoredStart, anchoredEnd bool

	// bytewise: _ matches one byte (binary values), not one character.
	bytewise bool
}

// compileLikePattern parses pattern with the escape character esc (-1 for
// none). In bytewise mode the pattern is read byte by byte.
func compileLikePattern(pattern []byte, esc rune, bytewise bool) (*likeMatcher, error) {
	type token struct {
		wild byte // '%', '_' or 0 for a literal
		lit  []byte
	}
	var toks []token
	for i := 0; i < len(pattern); {
		c, size := rune(pattern[i]), 1
		if !bytewise && c >= utf8.RuneSelf {
			c, size = utf8.DecodeRune(pattern[i:])
		}
		switch {
		case c == esc:
			if i+size >= len(pattern) {
				return nil, fmt.Errorf("pattern %q ends with the escape character", pattern)
			}
			nc, nsize := rune(pattern[i+size]), 1
			if !bytewise && nc >= utf8.RuneSelf {
				nc, nsize = utf8.DecodeRune(pattern[i+size:])
			}
			if nc != '%' && nc != '_' && nc != esc {
				return nil, fmt.Errorf("invalid escape sequence at byte %d of pattern %q: the escape character must be followed by %%, _ or itself", i, pattern)
			}
			toks = append(toks, token{lit: pattern[i+size : i+size+nsize]})
			size += nsize
		case c == '%' || c == '_':
			toks = append(toks, token{wild: byte(c)})
		default:
			toks = append(toks, token{lit: pattern[i : i+size]})
		}
		i += size
	}

	m := &likeMatcher{bytewise: bytewise}
	m.anchoredStart = len(toks) == 0 || toks[0].wild != '%'
	m.anchoredEnd = len(toks) == 0 || toks[len(toks)-1].wild != '%'
	var segs [][]likePiece
	var cur []likePiece
	hasPercent, hasUnderscore := false, false
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, cur)
			cur = nil
		}
	}
	for _, t := range toks {
		switch t.wild {
		case '%':
			hasPercent = true
			flush()
		case '_':
			hasUnderscore = true
			if k := len(cur); k > 0 && cur[k-1].lit == nil {
				cur[k-1].any++
			} else {
				cur = append(cur, likePiece{any: 1})
			}
		default:
			if k := len(cur); k > 0 && cur[k-1].lit != nil {
				cur[k-1].lit = append(cur[k-1].lit, t.lit...)
			} else {
				cur = append(cur, likePiece{lit: append([]byte(nil), t.lit...)})
			}
		}
	}
	flush()

	switch {
	case !hasPercent && !hasUnderscore:
		m.kind = likeEqual
		if len(segs) == 1 {
			m.lit = segs[0][0].lit
		}
	case hasPercent && len(segs) == 0:
		m.kind = likeAll
	case hasPercent && !hasUnderscore && len(segs) == 1:
		m.lit = segs[0][0].lit
		switch {
		case m.anchoredStart:
			m.kind = likePrefix
		case m.anchoredEnd:
			m.kind = likeSuffix
		default:
			m.kind = likeContains
		}
	default:
		m.kind = likeGeneral
		m.segs = segs
	}
	return m, nil
}

// match reports whether s matches the pattern.
func (m *likeMatcher) match(s []byte) bool {
	switch m.kind {
	case likeAll:
		return true
	case likeEqual:
		return bytes.Equal(s, m.lit)
	case likePrefix:
		return bytes.HasPrefix(s, m.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, m.lit)
	case likeContains:
		return bytes.Contains(s, m.lit)
	}
	return m.matchGeneral(s)
}

func (m *likeMatcher) matchGeneral(s []byte) bool {
	segs := m.segs
	pos, end := 0, len(s)
	if m.anchoredStart {
		e := m.matchAt(segs[0], s, 0)
		if e < 0 {
			return false
		}
		if len(segs) == 1 && m.anchoredEnd {
			return e == len(s)
		}
		pos, segs = e, segs[1:]
	}
	if m.anchoredEnd {
		b := m.matchBefore(segs[len(segs)-1], s, len(s))
		if b < pos {
			return false
		}
		end, segs = b, segs[:len(segs)-1]
	}
	s = s[:end]
	for _, seg := range segs {
		e := m.find(seg, s, pos)
		if e < 0 {
			return false
		}
		pos = e
	}
	return true
}

// matchAt matches seg at position i of s and returns the position after
// it, or -1.
func (m *likeMatcher) matchAt(seg []likePiece, s []byte, i int) int {
	for _, p := range seg {
		if p.lit != nil {
			if !bytes.HasPrefix(s[i:], p.lit) {
				return -1
			}
			i += len(p.lit)
			continue
		}
		if m.bytewise {
			if i += p.any; i > len(s) {
				return -1
			}
			continue
		}
		for k := 0; k < p.any; k++ {
			if i >= len(s) {
				return -1
			}
			if s[i] < utf8.RuneSelf {
				i++
			} else {
				_, size := utf8.DecodeRune(s[i:])
				i += size
			}
		}
	}
	return i
}

// matchBefore matches seg so that it ends at position j of s and returns
// its start, or -1.
func (m *likeMatcher) matchBefore(seg []likePiece, s []byte, j int) int {
	for k := len(seg) - 1; k >= 0; k-- {
		p := seg[k]
		if p.lit != nil {
			if !bytes.HasSuffix(s[:j], p.lit) {
				return -1
			}
			j -= len(p.lit)
			continue
		}
		if m.bytewise {
			if j -= p.any; j < 0 {
				return -1
			}
			continue
		}
		for a := 0; a < p.any; a++ {
			if j <= 0 {
				return -1
			}
			_, size := utf8.DecodeLastRune(s[:j])
			j -= size
		}
	}
	return j
}

// find matches seg at the leftmost position at or after from and returns
// the position after the match, or -1.
func (m *likeMatcher) find(seg []likePiece, s []byte, from int) int {
	if lit := seg[0].lit; lit != nil {
		for from <= len(s) {
			j := bytes.Index(s[from:], lit)
			if j < 0 {
				return -1
			}
			if e := m.matchAt(seg, s, from+j); e >= 0 {
				return e
			}
			from += j + 1
		}
		return -1
	}
	// The segment starts with _: try every character position.
	for st := from; ; {
		if e := m.matchAt(seg, s, st); e >= 0 {
			return e
		}
		if st >= len(s) {
			return -1
		}
		if m.bytewise || s[st] < utf8.RuneSelf {
			st++
		} else {
			_, size := utf8.DecodeRune(s[st:])
			st += size
		}
	}
}

// likeNode evaluates s LIKE pattern with a compiled pattern.
type likeNode struct {
	nodeBase
	arg node
	m   *likeMatcher
	s   scratch
}

func compileLike(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 3); err != nil {
		return nil, err
	}
	if !isBytesArg(args[0]) {
		return nil, strArgErr(call, 0, "a string or binary", args[0].dtype())
	}
	bytewise := args[0].dtype().ID() == arrow.BINARY
	for i := 1; i < len(args); i++ {
		if !isBytesArg(args[i]) {
			return nil, strArgErr(call, i, "a string", args[i].dtype())
		}
		if _, ok := constValue(args[i]); !ok {
			what := "pattern"
			if i == 2 {
				what = "escape"
			}
			return nil, compileErr(call, "the LIKE %s (argument %d) must be a constant", what, i+1)
		}
	}
	boolT := arrow.FixedWidthTypes.Boolean
	if anyNullLit(args) {
		return nullResult(call, boolT, args), nil
	}
	pattern, _, pNull := constString(args[1])
	esc := rune(-1)
	escNull := false
	if len(args) == 3 {
		var e string
		e, _, escNull = constString(args[2])
		if !escNull {
			r, size := utf8.DecodeRuneInString(e)
			if bytewise && len(e) > 0 {
				r, size = rune(e[0]), 1
			}
			if len(e) == 0 || size != len(e) {
				return nil, compileErr(call, "the LIKE escape must be one character, got %q", e)
			}
			esc = r
		}
	}
	if pNull || escNull {
		return nullResult(call, boolT, args), nil
	}
	m, err := compileLikePattern([]byte(pattern), esc, bytewise)
	if err != nil {
		return nil, compileErr(call, "%v", err)
	}
	return &likeNode{nodeBase: nodeBase{src: call, dt: boolT}, arg: args[0], m: m}, nil
}

func (n *likeNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindBool
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	out.b = grow(out.b, ctx.n)
	res := out.b
	data, so, eo := in.data, in.so, in.eo
	lit := n.m.lit
	cnt := rowCount(sel, ctx.n)
	// One loop per matcher kind, so that the common shapes run without
	// a call per row.
	switch n.m.kind {
	case likePrefix:
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = bytes.HasPrefix(data[so[r]:eo[r]], lit)
		}
	case likeSuffix:
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = bytes.HasSuffix(data[so[r]:eo[r]], lit)
		}
	case likeContains:
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = bytes.Contains(data[so[r]:eo[r]], lit)
		}
	case likeEqual:
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = bytes.Equal(data[so[r]:eo[r]], lit)
		}
	default:
		m := n.m
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = m.match(data[so[r]:eo[r]])
		}
	}
	return out, nil
}
