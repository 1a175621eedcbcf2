package kernels

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// concat and concat_ws (semantics in expr_string.go).

// concatNode is concat(args...) or, with ws set, concat_ws(args[0],
// args[1:]...).
type concatNode struct {
	nodeBase
	args []node
	ws   bool
	ins  []*vec
	s    scratch
}

func compileConcat(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, -1); err != nil {
		return nil, err
	}
	var typ arrow.DataType
	for i, a := range args {
		if !isBytesArg(a) {
			return nil, strArgErr(call, i, "a string or binary", a.dtype())
		}
		if a.dtype().ID() == arrow.NULL {
			continue
		}
		if typ == nil {
			typ = a.dtype()
		} else if typ.ID() != a.dtype().ID() {
			return nil, compileErr(call, "concat of %s and %s: arguments must be all strings or all binaries (argument %d)", typ, a.dtype(), i+1)
		}
	}
	if typ == nil {
		typ = arrow.BinaryTypes.String
	}
	if anyNullLit(args) {
		return nullResult(call, typ, args), nil
	}
	return &concatNode{nodeBase: nodeBase{src: call, dt: typ}, args: args, ins: make([]*vec, len(args))}, nil
}

func compileConcatWs(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, -1); err != nil {
		return nil, err
	}
	for i, a := range args {
		if !isStrArg(a) {
			return nil, strArgErr(call, i, "a string", a.dtype())
		}
	}
	if isNullLit(args[0]) {
		return nullResult(call, arrow.BinaryTypes.String, args), nil
	}
	// NULL arguments are skipped: drop the NULL literals now; other
	// untyped NULL expressions are still evaluated (for their errors) as
	// string NULLs.
	kept := []node{args[0]}
	for _, a := range args[1:] {
		if _, lit := a.(*litNode); lit && isNullLit(a) {
			continue
		}
		if isNullLit(a) {
			var err error
			if a, err = coerce(call, a, arrow.BinaryTypes.String); err != nil {
				return nil, err
			}
		}
		kept = append(kept, a)
	}
	return &concatNode{nodeBase: nodeBase{src: call, dt: arrow.BinaryTypes.String}, args: kept, ws: true, ins: make([]*vec, len(kept))}, nil
}

func (n *concatNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	for i, a := range n.args {
		v, err := a.eval(ctx, sel)
		if err != nil {
			return nil, err
		}
		n.ins[i] = v
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	var nulls []bool
	if n.ws {
		// Only the separator's NULLs make the result NULL.
		nulls = strNulls(&n.s, out, sel, ctx.n, n.ins[0])
	} else {
		nulls = strNulls(&n.s, out, sel, ctx.n, n.ins...)
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
			if n.ws {
				sep := n.ins[0].data[n.ins[0].so[r]:n.ins[0].eo[r]]
				first := true
				for _, in := range n.ins[1:] {
					if in.nulls != nil && in.nulls[r] {
						continue
					}
					if !first {
						data = append(data, sep...)
					}
					first = false
					data = append(data, in.data[in.so[r]:in.eo[r]]...)
				}
			} else {
				for _, in := range n.ins {
					data = append(data, in.data[in.so[r]:in.eo[r]]...)
				}
			}
			if len(data) > math.MaxInt32 {
				return nil, errBytesOverflow(n.src, r)
			}
		}
		so[r], eo[r] = int32(start), int32(len(data))
	}
	out.data = data
	return out, nil
}
