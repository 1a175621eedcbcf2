package kernels

import (
	"bytes"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// substring and split_index (semantics in expr_string.go).

// substringNode is substring(s, start[, length]). A constant start or
// length is read once at compile time.
type substringNode struct {
	nodeBase
	str, start, length node // length nil when omitted

	startConst, lengthConst bool
	startVal, lengthVal     int64
	s                       scratch
}

func compileSubstring(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 3); err != nil {
		return nil, err
	}
	if !isStrArg(args[0]) {
		return nil, strArgErr(call, 0, "a string", args[0].dtype())
	}
	for i := 1; i < len(args); i++ {
		if !isIntArg(args[i]) {
			return nil, strArgErr(call, i, "an integer", args[i].dtype())
		}
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	n := &substringNode{nodeBase: nodeBase{src: call, dt: arrow.BinaryTypes.String}, str: args[0], start: args[1]}
	if x, ok, isNull := constInt(args[1]); ok && !isNull {
		n.startConst, n.startVal = true, x
	}
	if len(args) == 3 {
		n.length = args[2]
		if x, ok, isNull := constInt(args[2]); ok && !isNull {
			if x < 0 {
				return nil, compileErr(call, "negative substring length %d", x)
			}
			n.lengthConst, n.lengthVal = true, x
		}
	}
	return n, nil
}

func (n *substringNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	str, err := n.str.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	start, err := n.start.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	length := start // a stand-in without NULLs' effect when there is no length
	if n.length != nil {
		if length, err = n.length.eval(ctx, sel); err != nil {
			return nil, err
		}
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	nulls := strNulls(&n.s, out, sel, ctx.n, str, start, length)
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		pos := len(data)
		if nulls == nil || !nulls[r] {
			from := n.startVal
			if !n.startConst {
				from = readInt(start, r)
			}
			// end is the 1-based position after the last character taken,
			// saturated: start + length may overflow.
			end := int64(math.MaxInt64)
			if n.length != nil {
				l := n.lengthVal
				if !n.lengthConst {
					l = readInt(length, r)
					if l < 0 {
						return nil, rowErr(n.src, r, "negative substring length %d", l)
					}
				}
				if from <= 0 || l <= math.MaxInt64-from {
					end = from + l
				}
			}
			first := max(from, 1)
			if end > first {
				b := str.data[str.so[r]:str.eo[r]]
				lo := skipRunes(b, 0, first-1)
				hi := len(b)
				if end != math.MaxInt64 {
					hi = skipRunes(b, lo, end-first)
				}
				data = append(data, b[lo:hi]...)
				if len(data) > math.MaxInt32 {
					return nil, errBytesOverflow(n.src, r)
				}
			}
		}
		so[r], eo[r] = int32(pos), int32(len(data))
	}
	out.data = data
	return out, nil
}

// skipRunes returns the byte position k characters after position i of b
// (len(b) when b ends first). A byte that is not valid UTF-8 counts as a
// character, as in utf8.RuneCount.
func skipRunes(b []byte, i int, k int64) int {
	for k > 0 && i < len(b) {
		if b[i] < utf8.RuneSelf {
			// ASCII run: skip as many bytes as characters remain.
			j := i
			lim := len(b)
			if int64(lim-i) > k {
				lim = i + int(k)
			}
			for j < lim && b[j] < utf8.RuneSelf {
				j++
			}
			k -= int64(j - i)
			i = j
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
		k--
	}
	return i
}

// ---- split_index ----

// splitIndexNode is split_index(s, sep, index).
type splitIndexNode struct {
	nodeBase
	str, sep, index node

	sepConst   bool
	sepVal     []byte
	indexConst bool
	indexVal   int64
	s          scratch
}

func compileSplitIndex(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 3, 3); err != nil {
		return nil, err
	}
	for i := 0; i < 2; i++ {
		if !isStrArg(args[i]) {
			return nil, strArgErr(call, i, "a string", args[i].dtype())
		}
	}
	if !isIntArg(args[2]) {
		return nil, strArgErr(call, 2, "an integer", args[2].dtype())
	}
	if anyNullLit(args) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	n := &splitIndexNode{nodeBase: nodeBase{src: call, dt: arrow.BinaryTypes.String}, str: args[0], sep: args[1], index: args[2]}
	if s, ok, isNull := constString(args[1]); ok && !isNull {
		n.sepConst, n.sepVal = true, []byte(s)
		if len(s) == 0 {
			n.sepVal = []byte{' '}
		}
	}
	if x, ok, isNull := constInt(args[2]); ok && !isNull {
		n.indexConst, n.indexVal = true, x
	}
	return n, nil
}

func (n *splitIndexNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	str, err := n.str.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	sep, err := n.sep.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	index, err := n.index.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	nulls := ownNulls(&n.s, out, sel, ctx.n, str, sep, index)
	data, so, eo := out.data, out.so, out.eo
	space := []byte{' '}
	cnt := rowCount(sel, ctx.n)
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
		k := n.indexVal
		if !n.indexConst {
			k = readInt(index, r)
		}
		d := n.sepVal
		if !n.sepConst {
			d = sep.data[sep.so[r]:sep.eo[r]]
			if len(d) == 0 {
				d = space
			}
		}
		piece, ok := splitPiece(str.data[str.so[r]:str.eo[r]], d, k)
		if !ok {
			nulls[r] = true
			continue
		}
		data = append(data, piece...)
		if len(data) > math.MaxInt32 {
			return nil, errBytesOverflow(n.src, r)
		}
		eo[r] = int32(len(data))
	}
	out.data = data
	return out, nil
}

// splitPiece returns the k-th (0-based) piece of s split at sep (not
// empty), or false when there is none. An empty s has no pieces.
func splitPiece(s, sep []byte, k int64) ([]byte, bool) {
	if k < 0 || len(s) == 0 {
		return nil, false
	}
	for ; k > 0; k-- {
		var j int
		if len(sep) == 1 {
			j = bytes.IndexByte(s, sep[0])
		} else {
			j = bytes.Index(s, sep)
		}
		if j < 0 {
			return nil, false
		}
		s = s[j+len(sep):]
	}
	var j int
	if len(sep) == 1 {
		j = bytes.IndexByte(s, sep[0])
	} else {
		j = bytes.Index(s, sep)
	}
	if j >= 0 {
		s = s[:j]
	}
	return s, true
}
