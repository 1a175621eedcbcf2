package kernels

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// timestampadd and timestampdiff (semantics in expr_time_more.go): tick
// arithmetic for the fixed-length units, the calendar of the wall clock
// for months, quarters and years.

// tmPairNode computes fn over two integer-valued arguments (ticks, days or
// counts) row by row; fn reports a result out of range.
type tmPairNode struct {
	nodeBase
	a, b node
	fn   func(x, y int64) (int64, bool)
	what string // what overflowed, for the error
	s    scratch
}

func (n *tmPairNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	b, err := n.b.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, mustKind(n.dt)
	nulls := strNulls(&n.s, out, sel, ctx.n, a, b)
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
		v, ok := n.fn(readInt(a, r), readInt(b, r))
		if out.kind == kindInt32 {
			ok = ok && v >= math.MinInt32 && v <= math.MaxInt32
			out.i32[r] = int32(v)
		} else {
			out.i64[r] = v
		}
		if !ok {
			return nil, rowErr(n.src, r, "%s", n.what)
		}
	}
	return out, nil
}

// tmMonthsOf is the number of months in a calendar unit (0: a fixed unit).
func tmMonthsOf(u tmUnit) int64 {
	switch u {
	case tmMonth:
		return 1
	case tmQuarter:
		return 3
	case tmYear:
		return 12
	}
	return 0
}

// tmArithUnit reads the unit argument of timestampadd or timestampdiff
// for values of src, returning the unit and, for a fixed unit, its length
// in src's ticks (days for a date32).
func tmArithUnit(call *CallExpr, args []node, src tmSource) (tmUnit, int64, error) {
	perTick := int64(0) // nanoseconds per tick
	if !src.days {
		perTick = 1e9 / src.perSec
	}
	u, err := tmUnitArg(call, args, 0, func(u tmUnit) bool {
		switch {
		case u > tmYear:
			return false
		case src.days:
			return u >= tmDay
		}
		return tmMonthsOf(u) > 0 || tmFixedNanos[u] >= perTick
	})
	if err != nil {
		return 0, 0, err
	}
	if tmMonthsOf(u) > 0 {
		return u, 0, nil
	}
	if src.days {
		return u, tmFixedNanos[u] / tmFixedNanos[tmDay], nil
	}
	return u, tmFixedNanos[u] / perTick, nil
}

// tmAddMonths adds months to a day (days since 1970-01-01), cutting the
// day of month to the end of a shorter month (Flink's addMonths).
func tmAddMonths(days, months int64) int64 {
	y, m, d := tmCivil(days)
	total := y*12 + int64(m-1) + months
	ny, nm := tmFloorDiv(total, 12), int(tmFloorMod(total, 12))+1
	first := tmDays(ny, nm, 1)
	last := tmDays(ny, nm+1, 1) - first
	return first + min(int64(d), last) - 1
}

// tmSubtractMonths is Flink's (Calcite's) subtractMonths(d0, d1) of two
// days: for d0 >= d1 the largest m with tmAddMonths(d1, m) <= d0 (Flink
// searches for it from an estimate; it lies in d0's month or the one
// before), and -subtractMonths(d1, d0) otherwise.
func tmSubtractMonths(d0, d1 int64) int64 {
	if d0 < d1 {
		return -tmSubtractMonths(d1, d0)
	}
	y0, m0, dd0 := tmCivil(d0)
	y1, m1, dd1 := tmCivil(d1)
	m := (y0-y1)*12 + int64(m0-m1)
	monthLen := tmDays(y0, m0+1, 1) - tmDays(y0, m0, 1)
	if min(int64(dd1), monthLen) > int64(dd0) {
		m--
	}
	return m
}

// tmMonthLimit bounds the months added or counted: beyond a billion years
// every result overflows the timestamp types anyway, and the calendar
// arithmetic stays far from int64 overflow.
const tmMonthLimit = 12e9

// tmLocalDay splits a value of src into its wall clock day and the ticks
// since that day's midnight (local seconds and nanoseconds for the
// calendar; ticks below the second are kept apart in sub).
func tmLocalDay(src *tmSource, x int64) (days, sod, sub int64) {
	if src.days {
		return x, 0, 0
	}
	secs, sub := src.sec.divMod(x)
	ls := secs + src.zone.offsetAt(secs)
	days = tmFloorDiv(ls, secondsPerDay)
	return days, ls - days*secondsPerDay, sub
}

// ---- timestampadd ----

func compileTimestampAdd(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 3, 3); err != nil {
		return nil, err
	}
	if !isIntArg(args[1]) {
		return nil, strArgErr(call, 1, "an integer", args[1].dtype())
	}
	if isNullLit(args[2]) {
		return nil, compileErr(call, "argument 3 of timestampadd must be a timestamp or date, got an untyped NULL")
	}
	src, err := tmSourceArg(call, args, 2)
	if err != nil {
		return nil, err
	}
	if src.isDate() && !src.days {
		return nil, strArgErr(call, 2, "a timestamp or date32", args[2].dtype())
	}
	u, ticks, err := tmArithUnit(call, args, src)
	if err != nil {
		return nil, err
	}
	dt := args[2].dtype()
	if isNullLit(args[1]) {
		return nullResult(call, dt, args), nil
	}
	n := &tmPairNode{nodeBase: nodeBase{src: call, dt: dt}, a: args[2], b: args[1],
		what: "the result is out of the range of " + dt.String()}
	if months := tmMonthsOf(u); months > 0 {
		n.fn = func(x, k int64) (int64, bool) {
			if k > tmMonthLimit/months || k < -tmMonthLimit/months {
				return 0, false
			}
			days, sod, sub := tmLocalDay(&src, x)
			days = tmAddMonths(days, k*months)
			if src.days {
				return days, true // range-checked by tmPairNode
			}
			secs := src.zone.instantOf(days*secondsPerDay + sod)
			if secs > math.MaxInt64/src.perSec || secs < math.MinInt64/src.perSec {
				return 0, false
			}
			return addInt64(secs*src.perSec, sub)
		}
		return n, nil
	}
	n.fn = func(x, k int64) (int64, bool) {
		d, ok := mulInt64(k, ticks)
		if !ok {
			return 0, false
		}
		return addInt64(x, d)
	}
	return n, nil
}

func mulInt64(x, y int64) (int64, bool) {
	if mulOverflows(x, y) {
		return 0, false
	}
	return x * y, true
}

func addInt64(x, y int64) (int64, bool) {
	s := x + y
	return s, (s > x) == (y > 0)
}

// ---- timestampdiff ----

func compileTimestampDiff(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 3, 3); err != nil {
		return nil, err
	}
	i32 := arrow.PrimitiveTypes.Int32
	for i := 1; i < 3; i++ {
		if isNullLit(args[i]) {
			continue
		}
		if _, ok, _ := tmSourceOf(args[i].dtype()); !ok {
			return nil, strArgErr(call, i, "a timestamp or date", args[i].dtype())
		}
	}
	if anyNullLit(args[1:]) {
		return nullResult(call, i32, args), nil
	}
	common, ok := comparableCommon(args[1].dtype(), args[2].dtype())
	if !ok || !isPointInTime(common) {
		return nil, compileErr(call, "timestampdiff of %s and %s: both must be timestamps or dates", args[1].dtype(), args[2].dtype())
	}
	if common.ID() != arrow.TIMESTAMP {
		// Dates count as midnights in seconds.
		common = arrow.FixedWidthTypes.Timestamp_s
	}
	src, _, err := tmSourceOf(common)
	if err != nil {
		return nil, compileErr(call, "time zone of %s: %v", common, err)
	}
	u, ticks, err := tmArithUnit(call, args, src)
	if err != nil {
		return nil, err
	}
	a, err := coerce(call, args[1], common)
	if err != nil {
		return nil, err
	}
	b, err := coerce(call, args[2], common)
	if err != nil {
		return nil, err
	}
	n := &tmPairNode{nodeBase: nodeBase{src: call, dt: i32}, a: a, b: b,
		what: "the difference does not fit in int32"}
	if months := tmMonthsOf(u); months > 0 {
		n.fn = func(x, y int64) (int64, bool) {
			d1, tod1, sub1 := tmLocalDay(&src, x)
			d0, tod0, sub0 := tmLocalDay(&src, y)
			m := tmSubtractMonths(d0, d1)
			if tmAddMonths(d1, m) == d0 && (tod0 < tod1 || (tod0 == tod1 && sub0 < sub1)) {
				m--
			}
			return m / months, true
		}
		return n, nil
	}
	n.fn = func(x, y int64) (int64, bool) { return tmDiffTicks(y, x, ticks) }
	return n, nil
}

// tmDiffTicks is (y - x) / k truncated toward zero, exactly, also when
// y - x overflows int64 (k > 1).
func tmDiffTicks(y, x, k int64) (int64, bool) {
	if k == 1 {
		d := y - x
		return d, (d < y) == (x > 0)
	}
	// y - x = (qy - qx) * k + (ry - rx), each quotient within MaxInt64 / 2.
	q, r := y/k-x/k, y%k-x%k
	switch {
	case r >= k:
		q, r = q+1, r-k
	case r <= -k:
		q, r = q-1, r+k
	}
	switch {
	case q > 0 && r < 0:
		q--
	case q < 0 && r > 0:
		q++
	}
	return q, true
}
