package kernels

// String functions. Arguments are strings (Arrow string or large string)
// unless noted; a NULL argument makes the result NULL unless noted. Lengths
// and positions count characters (Unicode code points of the UTF-8 text),
// never bytes, except on binary values where noted.
//
//	s LIKE pattern [ESCAPE e]  like(s, pattern[, escape]) -> bool
//	    SQL LIKE: % matches any sequence of characters (also empty), _
//	    exactly one character; every other character matches itself, case
//	    sensitively. pattern and escape must be constants. The escape is
//	    one character; inside the pattern it must be followed by %, _ or
//	    itself, which then match literally (anything else is a compile
//	    error, as in Flink). Without ESCAPE no character escapes (Flink and
//	    Calcite have no default escape). s may also be binary (then pattern
//	    may be binary too, and _ matches one byte). NULL when s, pattern or
//	    escape is NULL. _ and % match any character, line breaks included
//	    (Flink's regular-expression-based LIKE does not let _ match one).
//	concat(a, b, ...) / a || b -> string
//	    The arguments joined; all strings or all binaries (the result is
//	    then binary). NULL if any argument is NULL (Flink CONCAT).
//	concat_ws(sep, a, b, ...) -> string
//	    The non-NULL arguments after sep joined with sep between them;
//	    NULL arguments are skipped, empty strings are not. NULL only when
//	    sep is NULL (Flink CONCAT_WS).
//	lower(s), upper(s) -> string
//	    Unicode simple case mapping, one character to one character
//	    (Go's unicode.ToLower/ToUpper). Unlike Java's String.toLowerCase
//	    and toUpperCase, which Flink uses, there is no special casing: 'ß'
//	    stays 'ß' in upper (Java: "SS"), a final 'Σ' lowers to 'σ' (Java:
//	    'ς'), and the result never depends on a locale. Bytes that are not
//	    valid UTF-8 are copied unchanged.
//	substring(s, start[, length]) -> string
//	    SQL standard SUBSTRING(s FROM start FOR length), 1-based: the
//	    characters at positions start .. start+length-1 that exist in s; no
//	    length means to the end. start < 1 shortens the result: substring(
//	    'hello', 0, 3) is 'he', substring('hello', -5, 3) is ''. A negative
//	    length fails the evaluation naming the row (a constant negative
//	    length fails compilation). start and length are integer
//	    expressions (any integer type); constants are read once. Flink
//	    differs: it counts a negative start from the end of the string
//	    and returns NULL for a negative length.
//	char_length(s), character_length(s) -> int32
//	    The number of characters (a byte that is not valid UTF-8 counts as
//	    one character).
//	split_index(s, sep, index) -> string
//	    Flink SPLIT_INDEX: s split at every occurrence of the string sep
//	    (keeping empty pieces), the piece at 0-based position index. NULL
//	    when index is negative or not below the number of pieces, and when
//	    any argument is NULL. An empty s has no pieces at all (so the
//	    result is NULL), and an empty sep splits at single spaces, as
//	    Flink does. sep and index may be expressions; constants are
//	    faster.
//	regexp_extract(s, regex[, group]) -> string
//	    Flink REGEXP_EXTRACT: the text of capture group `group` of the
//	    first (leftmost) match of regex in s; group 0 is the whole match
//	    and is the default when group is omitted, as in Flink (Spark and
//	    Hive default to 1). NULL when regex does not match or the group
//	    does not take part in the match. regex and group must be constants;
//	    a group beyond the number of groups in regex is a compile error.
//	    regex uses Go's RE2 syntax (package regexp), not Java's:
//	    backreferences (\1), lookaround ((?=...), (?<=...)), possessive
//	    quantifiers and atomic groups are refused at compile time with the
//	    regexp package's error. Silent differences: in Java '.' also stops
//	    at \r and Unicode line separators (RE2: only \n), '$' also matches
//	    before a final line break (RE2: only at the end of the text), and
//	    character class intersections [a-z&&[^b]] do not exist in RE2.
//	    Matching takes time linear in the input, whatever the pattern.

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

func init() {
	registerFunc("like", compileLike)
	registerFunc("concat", compileConcat)
	registerFunc("concat_ws", compileConcatWs)
	registerFunc("lower", func(c *compiler, call *CallExpr, args []node) (node, error) {
		return compileCaseMap(call, args, false)
	})
	registerFunc("upper", func(c *compiler, call *CallExpr, args []node) (node, error) {
		return compileCaseMap(call, args, true)
	})
	registerFunc("substring", compileSubstring)
	registerFunc("char_length", compileCharLength)
	registerFunc("character_length", compileCharLength)
	registerFunc("split_index", compileSplitIndex)
	registerFunc("regexp_extract", compileRegexpExtract)
}

// ---- shared helpers of the string and time kernels ----

// strArity checks the number of arguments of call.
func strArity(call *CallExpr, args []node, lo, hi int) error {
	if len(args) < lo || (hi >= 0 && len(args) > hi) {
		want := fmt.Sprintf("%d", lo)
		switch {
		case hi < 0:
			want = fmt.Sprintf("at least %d", lo)
		case hi != lo:
			want = fmt.Sprintf("%d to %d", lo, hi)
		}
		return compileErr(call, "%s takes %s arguments, got %d", call.Func, want, len(args))
	}
	return nil
}

// strArgErr is the compile error for argument i (0-based) of call having
// the wrong type.
func strArgErr(call *CallExpr, i int, want string, got arrow.DataType) error {
	return compileErr(call, "argument %d of %s must be %s, got %s", i+1, call.Func, want, got)
}

// isStrArg reports whether n is a string-typed argument (an untyped NULL
// literal is accepted too; callers turn it into a NULL result).
func isStrArg(n node) bool {
	id := n.dtype().ID()
	return id == arrow.STRING || id == arrow.NULL
}

func isBytesArg(n node) bool {
	id := n.dtype().ID()
	return id == arrow.STRING || id == arrow.BINARY || id == arrow.NULL
}

func isIntArg(n node) bool {
	return isIntegerType(n.dtype()) || n.dtype().ID() == arrow.NULL
}

// constString returns the value of a constant string (or binary) argument;
// isNull reports a NULL constant.
func constString(n node) (s string, isConst, isNull bool) {
	v, ok := constValue(n)
	if !ok {
		return "", false, false
	}
	switch x := v.(type) {
	case nil:
		return "", true, true
	case string:
		return x, true, false
	case []byte:
		return string(x), true, false
	}
	return "", false, false
}

// constInt returns the value of a constant integer argument.
func constInt(n node) (x int64, isConst, isNull bool) {
	v, ok := constValue(n)
	if !ok {
		return 0, false, false
	}
	switch i := v.(type) {
	case nil:
		return 0, true, true
	case int32:
		return int64(i), true, false
	case int64:
		return i, true, false
	}
	return 0, false, false
}

// anyNullLit reports whether one of args is the untyped NULL literal.
func anyNullLit(args []node) bool {
	for _, a := range args {
		if isNullLit(a) {
			return true
		}
	}
	return false
}

// rowCount is the number of selected rows.
func rowCount(sel []int32, n int) int {
	if sel != nil {
		return len(sel)
	}
	return n
}

// strNulls sets out.nulls to the union of the null flags of args at the
// selected rows, in s's reusable buffer, and returns it; nil (and
// out.nulls nil) when no argument has null flags.
func strNulls(s *scratch, out *vec, sel []int32, n int, args ...*vec) []bool {
	out.nulls = nil
	var first *vec
	for _, a := range args {
		if a.nulls != nil {
			first = a
			break
		}
	}
	if first == nil {
		return nil
	}
	nulls := out.setNulls(&s.nulls, n)
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		nulls[r] = first.nulls[r]
	}
	for _, a := range args {
		if a == first || a.nulls == nil {
			continue
		}
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			nulls[r] = nulls[r] || a.nulls[r]
		}
	}
	return nulls
}

// ownNulls makes out.nulls a writable copy of the union of args' null
// flags (all false when there are none), for kernels that also produce
// NULLs of their own.
func ownNulls(s *scratch, out *vec, sel []int32, n int, args ...*vec) []bool {
	if nulls := strNulls(s, out, sel, n, args...); nulls != nil {
		return nulls
	}
	nulls := out.setNulls(&s.nulls, n)
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		nulls[r] = false
	}
	return nulls
}

// beginBytes prepares s.out as a bytes vector of type typ for a batch of
// n rows: its data buffer emptied (capacity kept) and its offsets sized.
// Kernels append each selected row's value to out.data and record its
// span in so/eo, also at null rows (an empty span) so that every selected
// row refers to valid bytes.
func beginBytes(s *scratch, typ arrow.DataType, n int) *vec {
	v := &s.out
	v.typ, v.kind = typ, kindBytes
	v.nulls = nil
	v.data = v.data[:0]
	v.so = grow(v.so, n)
	v.eo = grow(v.eo, n)
	return v
}

// errBytesOverflow is returned when a batch's string results exceed the
// 2 GiB that 32-bit offsets address.
func errBytesOverflow(src Expr, row int32) error {
	return rowErr(src, row, "string results of one batch exceed 2 GiB")
}

// ---- lower / upper ----

// caseMapNode is lower(s) or upper(s).
type caseMapNode struct {
	nodeBase
	arg   node
	upper bool
	s     scratch
}

func compileCaseMap(call *CallExpr, args []node, upper bool) (node, error) {
	if err := strArity(call, args, 1, 1); err != nil {
		return nil, err
	}
	if !isStrArg(args[0]) {
		return nil, strArgErr(call, 0, "a string", args[0].dtype())
	}
	if isNullLit(args[0]) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	return &caseMapNode{nodeBase: nodeBase{src: call, dt: arrow.BinaryTypes.String}, arg: args[0], upper: upper}, nil
}

// asciiLower and asciiUpper map ASCII letters and leave every other byte.
var asciiLower, asciiUpper [256]byte

func init() {
	for i := range 256 {
		asciiLower[i], asciiUpper[i] = byte(i), byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		asciiLower[c] = byte(c + 'a' - 'A')
		asciiUpper[c+'a'-'A'] = byte(c)
	}
}

func (n *caseMapNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	table := &asciiLower
	if n.upper {
		table = &asciiUpper
	}
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		start := len(data)
		if nulls == nil || !nulls[r] {
			data = appendCaseMapped(data, in.data[in.so[r]:in.eo[r]], table, n.upper)
			if len(data) > math.MaxInt32 {
				return nil, errBytesOverflow(n.src, r)
			}
		}
		so[r], eo[r] = int32(start), int32(len(data))
	}
	out.data = data
	return out, nil
}

// appendCaseMapped appends src to dst with its letters mapped: ASCII
// through table, the rest by Unicode simple case mapping.
func appendCaseMapped(dst, src []byte, table *[256]byte, upper bool) []byte {
	start := len(dst)
	dst = slices.Grow(dst, len(src))[:start+len(src)]
	w := dst[start:]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		if x&0x8080808080808080 != 0 {
			break
		}
		binary.LittleEndian.PutUint64(w[i:], swarCaseMap(x, upper))
	}
	if i < len(src) && i == len(src)&^7 && i >= 8 {
		// The last 8 bytes, overlapping bytes already mapped (mapping
		// them again from src gives the same result).
		if x := binary.LittleEndian.Uint64(src[len(src)-8:]); x&0x8080808080808080 == 0 {
			binary.LittleEndian.PutUint64(w[len(src)-8:], swarCaseMap(x, upper))
			return dst
		}
	}
	for ; i < len(src); i++ {
		c := src[i]
		if c >= utf8.RuneSelf {
			return appendCaseMappedSlow(dst[:start+i], src[i:], table, upper)
		}
		w[i] = table[c]
	}
	return dst
}

// swarCaseMap maps the letters among 8 ASCII bytes (high bits clear) to
// lower (or upper) case at once. For a byte b < 0x80, b + (0x80 - lo)
// has its high bit set iff b >= lo, and b + (0x7f - hi) iff b > hi; no
// sum carries into the next byte. The letters' 0x20 bit is flipped.
func swarCaseMap(x uint64, upper bool) uint64 {
	const ones = 0x0101010101010101
	lo, hi := uint64('A'), uint64('Z')
	if upper {
		lo, hi = 'a', 'z'
	}
	ge := x + (0x80-lo)*ones
	gt := x + (0x7f-hi)*ones
	letters := (ge &^ gt) & 0x8080808080808080
	return x ^ letters>>2
}

func appendCaseMappedSlow(dst, src []byte, table *[256]byte, upper bool) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			dst = append(dst, table[c])
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
			i++
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
		} else {
			r = unicode.ToLower(r)
		}
		dst = utf8.AppendRune(dst, r)
		i += size
	}
	return dst
}

// ---- char_length ----

type charLengthNode struct {
	nodeBase
	arg node
	s   scratch
}

func compileCharLength(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 1); err != nil {
		return nil, err
	}
	if !isStrArg(args[0]) {
		return nil, strArgErr(call, 0, "a string", args[0].dtype())
	}
	if isNullLit(args[0]) {
		return nullResult(call, arrow.PrimitiveTypes.Int32, args), nil
	}
	return &charLengthNode{nodeBase: nodeBase{src: call, dt: arrow.PrimitiveTypes.Int32}, arg: args[0]}, nil
}

func (n *charLengthNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindInt32
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	out.i32 = grow(out.i32, ctx.n)
	res := out.i32
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		res[r] = int32(utf8.RuneCount(in.data[in.so[r]:in.eo[r]]))
	}
	return out, nil
}
