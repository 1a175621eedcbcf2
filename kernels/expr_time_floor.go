package kernels

import "math"

// floor_time and ceil_time (semantics in expr_time.go): plain arithmetic
// on ticks for the fixed-length units, the calendar for the others.

// floorTimeNode is floor_time or ceil_time; fn maps one value and reports
// overflow of the result type.
type floorTimeNode struct {
	nodeBase
	arg node
	fn  func(x int64) (int64, bool)
	s   scratch
}

func compileFloorTime(call *CallExpr, args []node, ceil bool) (node, error) {
	if err := strArity(call, args, 2, 2); err != nil {
		return nil, err
	}
	if isNullLit(args[0]) {
		return nil, compileErr(call, "argument 1 of %s must be a timestamp or date, got an untyped NULL", call.Func)
	}
	src, err := tmSourceArg(call, args, 0)
	if err != nil {
		return nil, err
	}
	unit, err := tmUnitArg(call, args, 1, func(u tmUnit) bool {
		return u <= tmYear && (!src.isDate() || u >= tmDay)
	})
	if err != nil {
		return nil, err
	}
	return &floorTimeNode{nodeBase: nodeBase{src: call, dt: args[0].dtype()}, arg: args[0], fn: tmFloorFunc(src, unit, ceil)}, nil
}

// tmFloorFunc returns the kernel of floor_time (or ceil_time) for unit on
// values of src.
func tmFloorFunc(src tmSource, unit tmUnit, ceil bool) func(int64) (int64, bool) {
	if src.days {
		return tmFloorDaysFunc(unit, ceil)
	}
	tick := 1e9 / src.perSec // nanoseconds per tick
	if unit <= tmWeek && (unit < tmDay || src.zone.kind != tmLoc) {
		// Fixed-length unit in a zone of constant offset (or shorter than
		// a day, where the offset at the value is the one that counts):
		// plain arithmetic on ticks.
		if tmFixedNanos[unit] <= tick {
			return func(x int64) (int64, bool) { return x, true }
		}
		u := tmFixedNanos[unit] / tick
		// shift moves ticks to local time and, for weeks, from the
		// epoch's Thursday to a Monday; both only matter modulo u.
		var shift int64
		if unit == tmWeek {
			shift = 3 * secondsPerDay * src.perSec
		}
		perSec := src.perSec
		zone := src.zone
		div := newTmDivider(u)
		if zone.kind == tmLoc {
			return func(x int64) (int64, bool) {
				secs, _ := src.sec.divMod(x)
				off := zone.offsetAt(secs) * perSec
				return tmFloorTicks(x, div, tmFloorMod(off+shift, u), ceil)
			}
		}
		shift = tmFloorMod(tmFloorMod(zone.off*perSec, u)+shift, u)
		return func(x int64) (int64, bool) { return tmFloorTicks(x, div, shift, ceil) }
	}
	// Calendar units (and days and weeks in zones with transitions):
	// floor the local date, then convert its midnight back.
	return func(x int64) (int64, bool) {
		ls, nanos := src.local(x)
		days := tmFloorDiv(ls, secondsPerDay)
		f := tmFloorDay(days, unit)
		if ceil && (f != days || ls != days*secondsPerDay || nanos != 0) {
			f = tmNextDay(f, unit)
		}
		return src.fromLocal(f * secondsPerDay)
	}
}

// tmFloorTicks floors x to a multiple of u.d after adding shift (0 <=
// shift < u.d), or ceils it; false on overflow.
func tmFloorTicks(x int64, u tmDivider, shift int64, ceil bool) (int64, bool) {
	_, m := u.divMod(x)
	if m += shift; m >= u.d {
		m -= u.d
	}
	if ceil {
		if m == 0 {
			return x, true
		}
		d := u.d - m
		if x > math.MaxInt64-d {
			return 0, false
		}
		return x + d, true
	}
	if x < math.MinInt64+m {
		return 0, false
	}
	return x - m, true
}

// tmFloorDay floors a day to the start of its week, month, quarter or year.
func tmFloorDay(days int64, unit tmUnit) int64 {
	switch unit {
	case tmDay:
		return days
	case tmWeek:
		return days - int64(tmISOWeekday(days)) + 1
	}
	y, m, _ := tmCivil(days)
	switch unit {
	case tmMonth:
		return tmDays(y, m, 1)
	case tmQuarter:
		return tmDays(y, (m-1)/3*3+1, 1)
	}
	return tmDays(y, 1, 1)
}

// tmNextDay is the start of the unit after the one starting on day f.
func tmNextDay(f int64, unit tmUnit) int64 {
	switch unit {
	case tmDay:
		return f + 1
	case tmWeek:
		return f + 7
	}
	y, m, _ := tmCivil(f)
	switch unit {
	case tmMonth:
		return tmDays(y, m+1, 1)
	case tmQuarter:
		return tmDays(y, m+3, 1)
	}
	return tmDays(y+1, 1, 1)
}

// tmFloorDaysFunc is floor_time/ceil_time on date32 values.
func tmFloorDaysFunc(unit tmUnit, ceil bool) func(int64) (int64, bool) {
	return func(x int64) (int64, bool) {
		f := tmFloorDay(x, unit)
		if ceil && f != x {
			f = tmNextDay(f, unit)
		}
		return f, f >= math.MinInt32 && f <= math.MaxInt32
	}
}

func (n *floorTimeNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, in.kind
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	cnt := rowCount(sel, ctx.n)
	fn := n.fn
	if in.kind == kindInt32 {
		out.i32 = grow(out.i32, ctx.n)
		res := out.i32
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			y, ok := fn(int64(in.i32[r]))
			if !ok {
				return nil, rowErr(n.src, r, "result out of range for %s", n.dt)
			}
			res[r] = int32(y)
		}
		return out, nil
	}
	out.i64 = grow(out.i64, ctx.n)
	res, vals := out.i64, in.i64
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		y, ok := fn(vals[r])
		if !ok {
			return nil, rowErr(n.src, r, "result out of range for %s", n.dt)
		}
		res[r] = y
	}
	return out, nil
}
