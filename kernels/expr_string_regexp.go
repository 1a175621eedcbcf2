package kernels

import (
	"math"
	"regexp"

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
}

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
	return &regexpExtractNode{nodeBase: nodeBase{src: call, dt: strT}, arg: args[0], re: re, group: int(group)}, nil
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
		// Match allocates nothing; the submatch indices are only asked
		// for (and allocated) on rows that match.
		if !n.re.Match(b) {
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
