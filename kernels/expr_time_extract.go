package kernels

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// extract (semantics in expr_time.go).

type extractNode struct {
	nodeBase
	arg node
	fn  func(x int64) int64
	s   scratch
}

func compileExtract(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 2); err != nil {
		return nil, err
	}
	if isNullLit(args[1]) {
		return nullResult(call, arrow.PrimitiveTypes.Int64, args), nil
	}
	src, err := tmSourceArg(call, args, 1)
	if err != nil {
		return nil, err
	}
	unit, err := tmUnitArg(call, args, 0, func(u tmUnit) bool {
		if src.days {
			return u >= tmDay && u != tmMicrosecond
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return &extractNode{nodeBase: nodeBase{src: call, dt: arrow.PrimitiveTypes.Int64}, arg: args[1], fn: tmExtractFunc(src, unit)}, nil
}

// tmExtractFunc returns the kernel of extract(unit, x) for values of src.
func tmExtractFunc(src tmSource, unit tmUnit) func(int64) int64 {
	perSec := src.perSec
	utc := !src.days && src.zone.kind == tmUTC
	switch unit {
	case tmEpoch:
		if src.days {
			return func(x int64) int64 { return x * secondsPerDay }
		}
		return func(x int64) int64 { q, _ := src.sec.divMod(x); return q }
	case tmHour, tmMinute, tmSecond:
		div := map[tmUnit]int64{tmHour: 3600, tmMinute: 60, tmSecond: 1}[unit]
		mod := map[tmUnit]int64{tmHour: 24, tmMinute: 60, tmSecond: 60}[unit]
		if utc {
			// the unit's number within the day
			d := newTmDivider(div * perSec)
			if unit == tmHour {
				return func(x int64) int64 {
					_, r := src.day.divMod(x)
					q, _ := d.divMod(r)
					return q
				}
			}
			return func(x int64) int64 {
				_, r := src.day.divMod(x)
				q, _ := d.divMod(r)
				return q % 60
			}
		}
		return func(x int64) int64 {
			ls, _ := src.local(x)
			return tmFloorMod(tmFloorDiv(ls, div), mod)
		}
	case tmMillisecond, tmMicrosecond:
		// Offsets are whole seconds: the fraction does not depend on the zone.
		scale := newTmDivider(max(perSec/1000, 1))
		if unit == tmMicrosecond {
			scale = newTmDivider(max(perSec/1000000, 1))
		}
		mul := max(1000/perSec, 1)
		if unit == tmMicrosecond {
			mul = max(1000000/perSec, 1)
		}
		return func(x int64) int64 {
			_, sub := src.sec.divMod(x)
			q, _ := scale.divMod(sub)
			return q * mul
		}
	case tmDay:
		return func(x int64) int64 { _, _, d := tmCivil(src.localDays(x)); return int64(d) }
	case tmMonth:
		return func(x int64) int64 { _, m, _ := tmCivil(src.localDays(x)); return int64(m) }
	case tmQuarter:
		return func(x int64) int64 { _, m, _ := tmCivil(src.localDays(x)); return int64(m+2) / 3 }
	case tmYear:
		return func(x int64) int64 { y, _, _ := tmCivil(src.localDays(x)); return y }
	case tmWeek:
		return func(x int64) int64 { return int64(tmISOWeek(src.localDays(x))) }
	case tmDOW:
		return func(x int64) int64 { return tmFloorMod(src.localDays(x)+4, 7) + 1 }
	case tmDOY:
		return func(x int64) int64 {
			days := src.localDays(x)
			y, _, _ := tmCivil(days)
			return days - tmDays(y, 1, 1) + 1
		}
	}
	panic("BUG: extract unit " + strconv.Itoa(int(unit)))
}

func (n *extractNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindInt64
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	out.i64 = grow(out.i64, ctx.n)
	res := out.i64
	cnt := rowCount(sel, ctx.n)
	fn := n.fn
	if in.kind == kindInt32 {
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			res[r] = fn(int64(in.i32[r]))
		}
		return out, nil
	}
	vals := in.i64
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		res[r] = fn(vals[r])
	}
	return out, nil
}
