package kernels

// More string functions, as Flink's. The rules of the string functions
// above hold: characters are Unicode code points of the UTF-8 text (a byte
// that is not valid UTF-8 counts as one character), NULL in gives NULL
// out. Java counts UTF-16 units instead, so lengths and positions differ
// from Flink's only around characters outside the Basic Multilingual
// Plane (emoji), which Java counts twice. Arguments may be expressions
// unless noted.
//
//	count_char(s, c) -> int64
//	    The number of occurrences of the character c (a constant string of
//	    exactly one character) in s: the Nexmark benchmark's CountChar
//	    UDF (query 14). The UDF returns 0 for a NULL s and compares bytes
//	    with c's first UTF-8 byte; count_char returns NULL and counts the
//	    character, which is the same for an ASCII c.
//	replace(s, from, to) -> string
//	    Flink REPLACE (Java's String.replace): every non-overlapping
//	    occurrence of from, left to right, replaced by to. An empty from
//	    inserts to before every character and at the end.
//	trim(s[, chars]), ltrim(s[, chars]), rtrim(s[, chars]) -> string
//	    Flink TRIM(BOTH | LEADING | TRAILING chars FROM s), LTRIM, RTRIM:
//	    the characters that occur in chars removed from both ends, the
//	    start or the end of s. Without chars, spaces (U+0020 only, not
//	    tabs or line breaks, as in Flink). chars is a set of characters,
//	    not a substring: trim('xyxaxy', 'xy') is 'a'. Flink treats any
//	    chars starting with a space as a single space; weir uses the whole
//	    set.
//	position(sub, s) -> int32
//	    Flink POSITION(sub IN s): the 1-based character position of the
//	    first occurrence of sub in s, 0 when there is none; 1 for an empty
//	    sub.
//	locate(sub, s[, from]) -> int32
//	    Flink LOCATE: as position, searching from character position from
//	    (from <= 1 searches from the start; the result is still counted
//	    from the start of s). An empty sub gives 1 whatever from is, as in
//	    Flink.
//	initcap(s) -> string
//	    Flink INITCAP (Calcite's): words are runs of ASCII letters and
//	    digits; the first letter of each word is upper-cased and the other
//	    letters lower-cased. Every other character (also a non-ASCII
//	    letter) separates words and is copied unchanged.
//	repeat(s, n) -> string
//	    s repeated n times; '' when n <= 0.
//	reverse(s) -> string
//	    The characters of s in reverse order.
//	lpad(s, n, pad), rpad(s, n, pad) -> string
//	    Flink LPAD/RPAD: s padded on the left (right) to n characters
//	    with pad repeated (the last copy cut short), or s cut to its first
//	    n characters when it is longer. NULL when n < 0 or pad is empty
//	    (also when no padding is needed), as in Flink.
//	left(s, n), right(s, n) -> string
//	    The first (last) n characters of s, all of s when it is shorter;
//	    '' when n <= 0.
//	md5(s), sha1(s), sha256(s) -> string
//	    The hash of the UTF-8 bytes of s (or of a binary), in lower-case
//	    hex, as Flink's MD5, SHA1, SHA256.
//
// Results larger than 2 GiB in one batch (repeat, lpad and rpad with a
// huge n) fail the evaluation naming the row.

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

func init() {
	registerFunc("count_char", compileCountChar)
	registerFunc("replace", compileReplace)
	for _, name := range []string{"trim", "ltrim", "rtrim"} {
		registerFunc(name, compileTrim)
	}
	registerFunc("position", compilePosition)
	registerFunc("locate", compilePosition)
	registerFunc("initcap", compileInitcap)
	registerFunc("repeat", compileRepeat)
	registerFunc("reverse", compileReverse)
	registerFunc("lpad", compilePad)
	registerFunc("rpad", compilePad)
	registerFunc("left", compileLeftRight)
	registerFunc("right", compileLeftRight)
	for _, name := range []string{"md5", "sha1", "sha256"} {
		registerFunc(name, compileHash)
	}
}

// ---- a node for string-valued functions computed row by row ----

// strRes is the outcome of a strRowFunc for one row.
type strRes uint8

const (
	strOK     strRes = iota
	strNull          // the result is NULL
	strTooBig        // the result would exceed what a batch can hold
)

// strRowFunc appends the result for row r (no argument NULL there) to dst.
// a holds the evaluated arguments.
type strRowFunc func(dst []byte, a []*vec, r int32) ([]byte, strRes)

// strFuncNode evaluates a string function through its row function.
// Constant arguments are folded into row when it is compiled.
type strFuncNode struct {
	nodeBase
	args    []node
	vals    []*vec
	row     strRowFunc
	canNull bool // row may return strNull
	s       scratch
}

// newStrFunc builds the node of a type-checked call.
func newStrFunc(call *CallExpr, args []node, canNull bool, row strRowFunc) node {
	return &strFuncNode{nodeBase: nodeBase{src: call, dt: arrow.BinaryTypes.String}, args: args,
		vals: make([]*vec, len(args)), row: row, canNull: canNull}
}

func (n *strFuncNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	for i, a := range n.args {
		v, err := a.eval(ctx, sel)
		if err != nil {
			return nil, err
		}
		n.vals[i] = v
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	var nulls []bool
	if n.canNull {
		nulls = ownNulls(&n.s, out, sel, ctx.n, n.vals...)
	} else {
		nulls = strNulls(&n.s, out, sel, ctx.n, n.vals...)
	}
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		pos := len(data)
		so[r], eo[r] = int32(pos), int32(pos)
		if nulls != nil && nulls[r] {
			continue
		}
		res, st := n.row(data, n.vals, r)
		switch st {
		case strNull:
			nulls[r] = true
			data = res[:pos]
			continue
		case strTooBig:
			return nil, errBytesOverflow(n.src, r)
		}
		data = res
		if len(data) > math.MaxInt32 {
			return nil, errBytesOverflow(n.src, r)
		}
		eo[r] = int32(len(data))
	}
	out.data = data
	return out, nil
}

// strIntNode evaluates an integer-valued string function row by row.
type strIntNode struct {
	nodeBase
	args []node
	vals []*vec
	row  func(a []*vec, r int32) int64
	s    scratch
}

func (n *strIntNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	for i, a := range n.args {
		v, err := a.eval(ctx, sel)
		if err != nil {
			return nil, err
		}
		n.vals[i] = v
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, mustKind(n.dt)
	nulls := strNulls(&n.s, out, sel, ctx.n, n.vals...)
	out.growValues(ctx.n)
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		if x := n.row(n.vals, r); out.kind == kindInt32 {
			out.i32[r] = int32(x)
		} else {
			out.i64[r] = x
		}
	}
	return out, nil
}

// strArgs checks the argument count and types of call: kinds[i] is 's'
// for a string, 'i' for an integer, 'b' for a string or binary (untyped
// NULLs pass; callers make the call NULL).
func strArgs(call *CallExpr, args []node, lo, hi int, kinds string) error {
	if err := strArity(call, args, lo, hi); err != nil {
		return err
	}
	for i, a := range args {
		switch kinds[i] {
		case 's':
			if !isStrArg(a) {
				return strArgErr(call, i, "a string", a.dtype())
			}
		case 'b':
			if !isBytesArg(a) {
				return strArgErr(call, i, "a string or binary", a.dtype())
			}
		case 'i':
			if !isIntArg(a) {
				return strArgErr(call, i, "an integer", a.dtype())
			}
		}
	}
	return nil
}

// ---- count_char ----

// countCharNode is count_char(s, c): bytes.Count of c's UTF-8 bytes in
// each row (UTF-8 is self-synchronizing, so this counts characters; for
// an ASCII c it is the vectorized single-byte count).
type countCharNode struct {
	nodeBase
	str node
	c   []byte
	s   scratch
}

func compileCountChar(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 2, 2, "ss"); err != nil {
		return nil, err
	}
	ch, ok, isNull := constString(args[1])
	if !ok {
		return nil, compileErr(call, "the character (argument 2) of count_char must be a constant")
	}
	if anyNullLit(args) || isNull {
		return nullResult(call, arrow.PrimitiveTypes.Int64, args), nil
	}
	if utf8.RuneCountInString(ch) != 1 {
		return nil, compileErr(call, "the character (argument 2) of count_char must be exactly one character, got %q", ch)
	}
	return &countCharNode{nodeBase: nodeBase{src: call, dt: arrow.PrimitiveTypes.Int64}, str: args[0], c: []byte(ch)}, nil
}

func (n *countCharNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.str.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindInt64
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	out.i64 = grow(out.i64, ctx.n)
	res := out.i64
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		res[r] = int64(bytes.Count(in.data[in.so[r]:in.eo[r]], n.c))
	}
	return out, nil
}

// ---- replace ----

func compileReplace(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 3, 3, "sss"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		return appendReplace(dst, a[0].bytesAt(r), a[1].bytesAt(r), a[2].bytesAt(r)), strOK
	}), nil
}

// appendReplace appends s with every occurrence of old replaced by repl.
func appendReplace(dst, s, old, repl []byte) []byte {
	if len(old) == 0 {
		// Java's String.replace("", repl): repl before every character
		// and at the end.
		for i := 0; i < len(s); {
			_, size := utf8.DecodeRune(s[i:])
			dst = append(dst, repl...)
			dst = append(dst, s[i:i+size]...)
			i += size
		}
		return append(dst, repl...)
	}
	for {
		j := bytes.Index(s, old)
		if j < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:j]...)
		dst = append(dst, repl...)
		s = s[j+len(old):]
	}
}

// ---- trim, ltrim, rtrim ----

// trimSet is the set of characters a trim removes.
type trimSet struct {
	ascii [utf8.RuneSelf]bool
	chars []byte // the set as given (non-ASCII characters are looked up in it)
}

func newTrimSet(chars []byte) *trimSet {
	t := &trimSet{chars: chars}
	for _, c := range chars {
		if c < utf8.RuneSelf {
			t.ascii[c] = true
		}
	}
	return t
}

// has reports whether the character ch (its UTF-8 bytes) is in the set:
// as in Flink, whether those bytes occur in chars.
func (t *trimSet) has(ch []byte) bool {
	if len(ch) == 1 && ch[0] < utf8.RuneSelf {
		return t.ascii[ch[0]]
	}
	return bytes.Contains(t.chars, ch)
}

func trimChars(s []byte, t *trimSet, left, right bool) []byte {
	if left {
		for len(s) > 0 {
			size := 1
			if s[0] >= utf8.RuneSelf {
				_, size = utf8.DecodeRune(s)
			}
			if !t.has(s[:size]) {
				break
			}
			s = s[size:]
		}
	}
	if right {
		for len(s) > 0 {
			size := 1
			if s[len(s)-1] >= utf8.RuneSelf {
				_, size = utf8.DecodeLastRune(s)
			}
			if !t.has(s[len(s)-size:]) {
				break
			}
			s = s[:len(s)-size]
		}
	}
	return s
}

func compileTrim(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 1, 2, "ss"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	left, right := call.Func != "rtrim", call.Func != "ltrim"
	if len(args) == 1 {
		return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			s := a[0].bytesAt(r)
			if left {
				for len(s) > 0 && s[0] == ' ' {
					s = s[1:]
				}
			}
			if right {
				for len(s) > 0 && s[len(s)-1] == ' ' {
					s = s[:len(s)-1]
				}
			}
			return append(dst, s...), strOK
		}), nil
	}
	if chars, ok, isNull := constString(args[1]); ok {
		if isNull {
			return nullResult(call, arrow.BinaryTypes.String, args), nil
		}
		set := newTrimSet([]byte(chars))
		return newStrFunc(call, args[:1], false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			return append(dst, trimChars(a[0].bytesAt(r), set, left, right)...), strOK
		}), nil
	}
	set := &trimSet{}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		*set = trimSet{}
		for _, c := range a[1].bytesAt(r) {
			if c < utf8.RuneSelf {
				set.ascii[c] = true
			}
		}
		set.chars = a[1].bytesAt(r)
		return append(dst, trimChars(a[0].bytesAt(r), set, left, right)...), strOK
	}), nil
}

// ---- position, locate ----

func compilePosition(c *compiler, call *CallExpr, args []node) (node, error) {
	lo, hi := 2, 2
	if call.Func == "locate" {
		hi = 3
	}
	if err := strArgs(call, args, lo, hi, "ssi"); err != nil {
		return nil, err
	}
	i32 := arrow.PrimitiveTypes.Int32
	if anyNullLit(args) {
		return nullResult(call, i32, args), nil
	}
	n := &strIntNode{nodeBase: nodeBase{src: call, dt: i32}, args: args, vals: make([]*vec, len(args))}
	n.row = func(a []*vec, r int32) int64 {
		from := int64(1)
		if len(a) == 3 {
			from = readInt(a[2], r)
		}
		return locateChars(a[1].bytesAt(r), a[0].bytesAt(r), from)
	}
	return n, nil
}

// locateChars is Flink's s.indexOf(sub, from-1)+1: the 1-based character
// position of the first occurrence of sub in s at or after character
// position from, 0 if none; 1 for an empty sub.
func locateChars(s, sub []byte, from int64) int64 {
	if len(sub) == 0 {
		return 1
	}
	start, skipped := 0, int64(0)
	if from > 1 {
		start = skipRunes(s, 0, from-1)
		skipped = from - 1
		if start == len(s) {
			skipped = int64(utf8.RuneCount(s))
		}
	}
	j := bytes.Index(s[start:], sub)
	if j < 0 {
		return 0
	}
	return skipped + int64(utf8.RuneCount(s[start:start+j])) + 1
}

// ---- initcap ----

func compileInitcap(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 1, 1, "s"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		return appendInitcap(dst, a[0].bytesAt(r)), strOK
	}), nil
}

// appendInitcap is Calcite's SqlFunctions.initcap over UTF-8: ASCII
// letters and digits make words; any other byte (every byte of a non-ASCII
// character too) separates them.
func appendInitcap(dst, s []byte) []byte {
	start := true
	for _, c := range s {
		isDigit := c >= '0' && c <= '9'
		isUpper := c >= 'A' && c <= 'Z'
		isLower := c >= 'a' && c <= 'z'
		switch {
		case !isDigit && !isUpper && !isLower:
			start = true
		case start:
			if isLower {
				c -= 'a' - 'A'
			}
			start = false
		case isUpper:
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// ---- repeat, reverse ----

func compileRepeat(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 2, 2, "si"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		s, times := a[0].bytesAt(r), readInt(a[1], r)
		if times <= 0 || len(s) == 0 {
			return dst, strOK
		}
		if times > int64(math.MaxInt32-len(dst))/int64(len(s)) {
			return dst, strTooBig
		}
		for ; times > 0; times-- {
			dst = append(dst, s...)
		}
		return dst, strOK
	}), nil
}

func compileReverse(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 1, 1, "s"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		s := a[0].bytesAt(r)
		for len(s) > 0 {
			size := 1
			if s[len(s)-1] >= utf8.RuneSelf {
				_, size = utf8.DecodeLastRune(s)
			}
			dst = append(dst, s[len(s)-size:]...)
			s = s[:len(s)-size]
		}
		return dst, strOK
	}), nil
}

// ---- lpad, rpad, left, right ----

func compilePad(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 3, 3, "sis"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	leftPad := call.Func == "lpad"
	return newStrFunc(call, args, true, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		s, width, pad := a[0].bytesAt(r), readInt(a[1], r), a[2].bytesAt(r)
		if width < 0 || len(pad) == 0 {
			return dst, strNull
		}
		chars := int64(utf8.RuneCount(s))
		keep := min(chars, width) // characters of s kept
		head := s[:skipRunes(s, 0, keep)]
		padChars := int64(utf8.RuneCount(pad))
		fill := width - keep // characters of padding
		full, part := fill/padChars, skipRunes(pad, 0, fill%padChars)
		room := int64(math.MaxInt32 - len(dst) - len(head) - part)
		if full > room/int64(len(pad)) {
			return dst, strTooBig
		}
		if !leftPad {
			dst = append(dst, head...)
		}
		for ; full > 0; full-- {
			dst = append(dst, pad...)
		}
		dst = append(dst, pad[:part]...)
		if leftPad {
			dst = append(dst, head...)
		}
		return dst, strOK
	}), nil
}

func compileLeftRight(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 2, 2, "si"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	if call.Func == "left" {
		return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			s, k := a[0].bytesAt(r), readInt(a[1], r)
			if k <= 0 {
				return dst, strOK
			}
			return append(dst, s[:skipRunes(s, 0, k)]...), strOK
		}), nil
	}
	return newStrFunc(call, args, false, func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
		s, k := a[0].bytesAt(r), readInt(a[1], r)
		if k <= 0 {
			return dst, strOK
		}
		chars := int64(utf8.RuneCount(s))
		if k >= chars {
			return append(dst, s...), strOK
		}
		return append(dst, s[skipRunes(s, 0, chars-k):]...), strOK
	}), nil
}

// ---- md5, sha1, sha256 ----

func compileHash(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 1, 1, "b"); err != nil {
		return nil, err
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	var row strRowFunc
	switch call.Func {
	case "md5":
		row = func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			sum := md5.Sum(a[0].bytesAt(r))
			return hex.AppendEncode(dst, sum[:]), strOK
		}
	case "sha1":
		row = func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			sum := sha1.Sum(a[0].bytesAt(r))
			return hex.AppendEncode(dst, sum[:]), strOK
		}
	default:
		row = func(dst []byte, a []*vec, r int32) ([]byte, strRes) {
			sum := sha256.Sum256(a[0].bytesAt(r))
			return hex.AppendEncode(dst, sum[:]), strOK
		}
	}
	return newStrFunc(call, args, false, row), nil
}
