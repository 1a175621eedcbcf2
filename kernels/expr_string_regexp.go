package kernels

import (
	"bytes"
	"math"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// regexpExtractDefaultGroup is the group regexp_extract returns when the
// call names none. Flink's REGEXP_EXTRACT(str, regex) returns the whole
// match (SqlFunctionUtils.regexpExtract(str, regex) passes 0); Spark and
// Hive return group 1.
const regexpExtractDefaultGroup = 0

// regexpExtractNode is regexp_extract(s, regex[, group]) with the regex
// compiled once.
type regexpExtractNode struct {
	nodeBase
	arg   node
	re    *regexp.Regexp
	group int
	s     scratch

	// need, when not empty, is a byte string every match contains: a row
	// without it does not match, and the regexp is not run.
	need []byte
	// lit, when not nil, finds the matches of a regex of the shape
	// `(A|B|^)literal[^X]*` directly, without the regexp engine.
	lit *reLitMatcher
	// caps is lit's scratch of submatch offsets.
	caps []int
	// plain is regexpExtractPlain at compile time.
	plain bool
}

// regexpExtractPlain turns off the prefilter and the literal matcher:
// every row goes through the regexp engine, as before they existed. Read
// at compile time; for tests and benchmarks.
var regexpExtractPlain = false

func compileRegexpExtract(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 3); err != nil {
		return nil, err
	}
	for i := 0; i < 2; i++ {
		if !isStrArg(args[i]) {
			return nil, strArgErr(call, i, "a string", args[i].dtype())
		}
	}
	if _, ok := constValue(args[1]); !ok {
		return nil, compileErr(call, "the regular expression (argument 2) must be a constant")
	}
	group := int64(regexpExtractDefaultGroup)
	groupNull := false
	if len(args) == 3 {
		if !isIntArg(args[2]) {
			return nil, strArgErr(call, 2, "an integer", args[2].dtype())
		}
		var ok bool
		if group, ok, groupNull = constInt(args[2]); !ok {
			return nil, compileErr(call, "the group index (argument 3) must be a constant")
		}
	}
	strT := arrow.BinaryTypes.String
	pattern, _, patNull := constString(args[1])
	if isNullLit(args[0]) || patNull || groupNull {
		return nullResult(call, strT, args), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, compileErr(call, "invalid regular expression (Go RE2 syntax; backreferences and lookaround are not supported): %v", err)
	}
	if group < 0 || group > int64(re.NumSubexp()) {
		return nil, compileErr(call, "group %d out of range: the regular expression %q has %d groups", group, pattern, re.NumSubexp())
	}
	n := &regexpExtractNode{nodeBase: nodeBase{src: call, dt: strT}, arg: args[0], re: re, group: int(group)}
	n.plain = regexpExtractPlain
	if !n.plain {
		// regexp.Compile parsed pattern with these flags and compiled
		// the simplified tree; the analysis reads the same tree.
		if t, err := syntax.Parse(pattern, syntax.Perl); err == nil {
			t = t.Simplify()
			n.need = reRequiredLiteral(t)
			// The engine itself skips to its literal prefix with
			// bytes.Index; a prefilter on no more than it is a
			// second scan for nothing.
			if prefix, _ := re.LiteralPrefix(); len(prefix) >= len(n.need) {
				n.need = nil
			}
			if m := newReLitMatcher(t, re.NumSubexp()); m != nil {
				n.lit = m
				n.caps = make([]int, 2*(re.NumSubexp()+1))
			}
		}
	}
	return n, nil
}

func (n *regexpExtractNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	nulls := ownNulls(&n.s, out, sel, ctx.n, in)
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, ctx.n)
	g := n.group
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		pos := len(data)
		so[r], eo[r] = int32(pos), int32(pos)
		if nulls[r] {
			continue
		}
		b := in.data[in.so[r]:in.eo[r]]
		if n.lit != nil {
			if !n.lit.find(b, n.caps) {
				nulls[r] = true
				continue
			}
			data = append(data, b[n.caps[2*g]:n.caps[2*g+1]]...)
			if len(data) > math.MaxInt32 {
				return nil, errBytesOverflow(n.src, r)
			}
			eo[r] = int32(len(data))
			continue
		}
		if len(n.need) > 0 && !bytes.Contains(b, n.need) {
			nulls[r] = true
			continue
		}
		// Match allocates nothing; the submatch indices are only asked
		// for (and allocated) on rows that match. (The Find methods
		// allocate only on a match too, so the optimized path skips it.)
		if n.plain && !n.re.Match(b) {
			nulls[r] = true
			continue
		}
		var loc []int
		if g == 0 {
			loc = n.re.FindIndex(b)
		} else {
			loc = n.re.FindSubmatchIndex(b)
		}
		if loc == nil || loc[2*g] < 0 {
			nulls[r] = true
			continue
		}
		data = append(data, b[loc[2*g]:loc[2*g+1]]...)
		if len(data) > math.MaxInt32 {
			return nil, errBytesOverflow(n.src, r)
		}
		eo[r] = int32(len(data))
	}
	out.data = data
	return out, nil
}

// reExact returns the bytes that r matches, when r matches exactly one
// byte string whatever the input: a case-sensitive literal, the empty
// string, or a capture of one. Literals with U+FFFD (which also matches
// a byte that is not valid UTF-8) or invalid runes are refused.
func reExact(r *syntax.Regexp) ([]byte, bool) {
	switch r.Op {
	case syntax.OpEmptyMatch:
		return []byte{}, true
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		var b []byte
		for _, c := range r.Rune {
			if c == utf8.RuneError || !utf8.ValidRune(c) {
				return nil, false
			}
			b = utf8.AppendRune(b, c)
		}
		return b, true
	case syntax.OpCapture:
		return reExact(r.Sub[0])
	}
	return nil, false
}

// reRequiredLiteral returns the longest byte string it finds that every
// match of r contains (nil when it finds none). It only looks through
// concatenations, captures and repetitions of at least one, so the
// answer is conservative: a string it returns is always required.
func reRequiredLiteral(r *syntax.Regexp) []byte {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase != 0 {
			return nil
		}
		// The longest piece without U+FFFD and invalid runes.
		var best, run []byte
		for _, c := range r.Rune {
			if c == utf8.RuneError || !utf8.ValidRune(c) {
				run = nil
				continue
			}
			run = utf8.AppendRune(run, c)
			if len(run) > len(best) {
				best = run
			}
		}
		return best
	case syntax.OpCapture:
		if b, ok := reExact(r); ok {
			return b
		}
		return reRequiredLiteral(r.Sub[0])
	case syntax.OpPlus:
		return reRequiredLiteral(r.Sub[0])
	case syntax.OpRepeat:
		if r.Min >= 1 {
			return reRequiredLiteral(r.Sub[0])
		}
	case syntax.OpConcat:
		var best, run []byte
		for _, sub := range r.Sub {
			if b, ok := reExact(sub); ok {
				run = append(run, b...)
				continue
			}
			if len(run) > len(best) {
				best = run
			}
			run = nil
			if b := reRequiredLiteral(sub); len(b) > len(best) {
				best = b
			}
		}
		if len(run) > len(best) {
			best = run
		}
		return best
	}
	return nil
}

// reLitMatcher matches regexes of the shape
//
//	head literal tail
//
// where head (optional, possibly captured) is ^, or an alternation of
// case-sensitive literals and ^; literal is a non-empty concatenation of
// case-sensitive literals, each possibly captured; and tail (optional,
// possibly captured) is a greedy star of a character class that contains
// every non-ASCII character, like [^&]*. q21's '(&|^)channel_id=([^&]*)'
// has this shape. It reproduces the regexp engine's leftmost-first
// result: the match starts at the leftmost position where one exists,
// the first alternative of head that matches there wins, and tail takes
// the longest run it can.
//
// Why byte-wise work gives the engine's result: the engine decodes UTF-8
// (a byte that is not valid UTF-8 is U+FFFD, one byte wide), so matches
// start and end only at rune boundaries. Every ASCII byte and every first
// byte of a valid encoding is such a boundary, and the literals are
// valid UTF-8 without U+FFFD, so a literal matches at a position exactly
// when its bytes are there. The tail class holds every non-ASCII
// character (U+FFFD too), so its run ends at the first ASCII byte outside
// it, or at the end of the text.
type reLitMatcher struct {
	alts    []reLitAlt // head alternatives in priority order; nil: no head
	maxAlt  int        // the longest literal in alts
	empty   bool       // alts has an empty literal
	headCap int        // head's capture group, or 0
	lit     []byte
	litCaps []reLitCap // captures inside literal, offsets into it
	tail    bool
	tailIn  [128]bool // the ASCII characters of the tail class
	tailCap int       // tail's capture group, or 0
}

type reLitAlt struct {
	lit []byte
	bol bool // ^ (begin of text)
}

type reLitCap struct{ cap, off, end int }

// newReLitMatcher returns a matcher for the simplified tree t, or nil when
// t does not have the shape reLitMatcher handles.
func newReLitMatcher(t *syntax.Regexp, ncap int) *reLitMatcher {
	if t.Op != syntax.OpConcat {
		return nil
	}
	m := &reLitMatcher{}
	subs := t.Sub
	seen := 0 // capture groups accounted for
	// head
	if len(subs) > 0 {
		h, hcap := subs[0], 0
		if h.Op == syntax.OpCapture {
			h, hcap = h.Sub[0], h.Cap
		}
		var alts []*syntax.Regexp
		switch h.Op {
		case syntax.OpBeginText:
			alts = []*syntax.Regexp{h}
		case syntax.OpAlternate:
			alts = h.Sub
		}
		if alts != nil {
			for _, a := range alts {
				if a.Op == syntax.OpBeginText {
					m.alts = append(m.alts, reLitAlt{bol: true})
					continue
				}
				if a.Op != syntax.OpLiteral && a.Op != syntax.OpEmptyMatch {
					return nil
				}
				b, ok := reExact(a)
				if !ok {
					return nil
				}
				m.alts = append(m.alts, reLitAlt{lit: b})
				m.maxAlt = max(m.maxAlt, len(b))
				m.empty = m.empty || len(b) == 0
			}
			m.headCap = hcap
			if hcap > 0 {
				seen++
			}
			subs = subs[1:]
		}
	}
	// literal
	for len(subs) > 0 {
		s := subs[0]
		if s.Op == syntax.OpCapture && s.Sub[0].Op == syntax.OpCapture {
			return nil // nested captures: not handled
		}
		b, ok := reExact(s)
		if !ok {
			break
		}
		if s.Op == syntax.OpCapture {
			m.litCaps = append(m.litCaps, reLitCap{cap: s.Cap, off: len(m.lit), end: len(m.lit) + len(b)})
			seen++
		}
		m.lit = append(m.lit, b...)
		subs = subs[1:]
	}
	if len(m.lit) == 0 {
		return nil
	}
	// tail
	if len(subs) > 0 {
		s, tcap := subs[0], 0
		if s.Op == syntax.OpCapture {
			s, tcap = s.Sub[0], s.Cap
		}
		if s.Op != syntax.OpStar || s.Flags&syntax.NonGreedy != 0 || s.Sub[0].Op != syntax.OpCharClass {
			return nil
		}
		cls := s.Sub[0].Rune
		// The class must contain [0x80, MaxRune]: its ranges are sorted
		// and disjoint, so one range covers it.
		covered := false
		for i := 0; i+1 < len(cls); i += 2 {
			lo, hi := cls[i], cls[i+1]
			if lo <= 0x80 && hi >= utf8.MaxRune {
				covered = true
			}
			for c := max(lo, 0); c <= hi && c < 128; c++ {
				m.tailIn[c] = true
			}
		}
		if !covered {
			return nil
		}
		m.tail, m.tailCap = true, tcap
		if tcap > 0 {
			seen++
		}
		subs = subs[1:]
	}
	if len(subs) > 0 || seen != ncap {
		return nil
	}
	return m
}

// find reports whether s matches and sets caps (2 per group, group 0
// first) to the offsets of the leftmost-first match.
func (m *reLitMatcher) find(s []byte, caps []int) bool {
	lit := m.lit
	best := -1 // the leftmost match start found so far
	for from := 0; from <= len(s)-len(lit); {
		i := bytes.Index(s[from:], lit)
		if i < 0 {
			break
		}
		idx := from + i
		if m.alts == nil {
			best = idx
			break
		}
		if best >= 0 && idx-m.maxAlt >= best {
			break // later occurrences cannot start a match further left
		}
		for _, a := range m.alts {
			p := idx - len(a.lit)
			switch {
			case a.bol:
				if idx != 0 {
					continue
				}
				p = 0
			case p < 0 || !bytes.Equal(s[p:idx], a.lit):
				continue
			}
			if best < 0 || p < best {
				best = p
			}
		}
		if m.maxAlt == 0 && best < 0 && !m.empty {
			break // only ^: the first occurrence is the only candidate
		}
		from = idx + 1
	}
	if best < 0 {
		return false
	}
	// At the start, the first alternative that matches wins.
	p, litAt := best, best
	if m.alts != nil {
		litAt = -1
		for _, a := range m.alts {
			if a.bol {
				if p == 0 && bytes.HasPrefix(s, lit) {
					litAt = 0
					break
				}
				continue
			}
			if bytes.HasPrefix(s[p:], a.lit) && bytes.HasPrefix(s[p+len(a.lit):], lit) {
				litAt = p + len(a.lit)
				break
			}
		}
		if litAt < 0 {
			return false // unreachable: best came from an alternative
		}
	}
	end := litAt + len(lit)
	tailAt := end
	if m.tail {
		for end < len(s) && (s[end] >= 0x80 || m.tailIn[s[end]]) {
			end++
		}
	}
	caps[0], caps[1] = p, end
	if m.headCap > 0 {
		caps[2*m.headCap], caps[2*m.headCap+1] = p, litAt
	}
	for _, c := range m.litCaps {
		caps[2*c.cap], caps[2*c.cap+1] = litAt+c.off, litAt+c.end
	}
	if m.tailCap > 0 {
		caps[2*m.tailCap], caps[2*m.tailCap+1] = tailAt, end
	}
	return true
}
