package kernels

// More time functions, as Flink's. Flink computes some of them in the
// session time zone (table.local-time-zone); kernels have no session, so
// they use UTC, Flink's default: a SQL front end with another session zone
// must shift the values itself.
//
//	to_timestamp_ltz(n[, precision]) -> timestamp[ms, UTC]
//	    Flink TO_TIMESTAMP_LTZ: n (an integer or float) counts seconds
//	    since 1970-01-01 00:00:00 UTC when precision is 0, milliseconds
//	    when it is 3 (the default). precision must be the constant 0 or 3.
//	    A float is truncated toward zero to whole milliseconds. NULL when
//	    the instant lies outside years 0000 to 9999 (as Flink), and for NaN
//	    (Flink: 1970-01-01 with precision 3).
//	to_timestamp(s[, format]) -> timestamp[ms]
//	    Flink TO_TIMESTAMP: s parsed with the constant pattern format
//	    (default 'yyyy-MM-dd HH:mm:ss'), as java.time's DateTimeFormatter
//	    does, into a timestamp without a time zone; fields absent from the
//	    pattern default to 1970-01-01 00:00:00, fractions of a millisecond
//	    are dropped. Without a format, or when s does not match it, s is
//	    read as CAST(s AS TIMESTAMP) reads it (Flink falls back to
//	    java.sql.Timestamp.valueOf, which is close). NULL when nothing
//	    parses. Pattern letters: y (yy: 2000-2099), M (MMM Jan, MMMM
//	    January), d, H, h with a (AM, PM), m, s, S..S (exactly as many
//	    fraction digits), E (Mon, Monday; checked against the date), X,
//	    XX, XXX, Z (a zone offset, read and ignored, as Flink does); 'text'
//	    and other characters match themselves. Numbers take exactly two
//	    digits for a doubled letter (MM), one or more for a single one,
//	    and a variable-width field leaves the digits of the fixed-width
//	    fields right after it (yyyyMMddHHmmss works). Text matches case-
//	    sensitively, the whole of s must match, and values are range-
//	    checked, except that a day beyond the end of its month becomes the
//	    month's last day when the pattern has a year (java.time's SMART
//	    resolution: '2023-02-30' is 2023-02-28). Hour 24 is refused
//	    (java.time accepts 24:00:00 as the next midnight), and so is a
//	    number above 999999999 (also a year: java.time's limit).
//	unix_timestamp(s[, format]) -> int64
//	    Flink UNIX_TIMESTAMP(s, format): s parsed with the constant pattern
//	    (default 'yyyy-MM-dd HH:mm:ss') as java.text's SimpleDateFormat
//	    does, in UTC, to seconds since the epoch (milliseconds truncated
//	    toward zero, as Java's division). SimpleDateFormat's rules: text
//	    after the pattern is ignored; a number followed directly by another
//	    field takes exactly as many digits as letters, otherwise all the
//	    digits there are; S counts milliseconds; text matches case-
//	    insensitively, short or full names; values out of range carry over
//	    (month 13 is January of the next year); an offset (X, Z) in s
//	    applies; a number above 999999999 does not parse. The pattern
//	    letters are to_timestamp's. When s does not parse the result is
//	    -9223372036854775808 (Long.MIN_VALUE), as in Flink, not NULL. yy
//	    reads a two-digit year as 2000-2099 (SimpleDateFormat: within 80
//	    years before and 20 after today). Dates before 1582-10-15 are
//	    proleptic Gregorian (SimpleDateFormat: Julian).
//	from_unixtime(n[, format]) -> string
//	    Flink FROM_UNIXTIME: the instant n seconds after the epoch (an
//	    integer) formatted in UTC with the constant pattern of date_format
//	    (default 'yyyy-MM-dd HH:mm:ss').
//	timestampadd(unit, n, ts) -> type of ts
//	    Flink TIMESTAMPADD: ts plus n (an integer) units. unit is a
//	    constant (case-insensitive): SECOND, MINUTE, HOUR, DAY, WEEK
//	    (fixed lengths, added to the instant), MONTH, QUARTER, YEAR (added
//	    to the calendar date of the wall clock in ts's time zone, the day
//	    cut to the end of a shorter month: 2024-01-31 plus 1 MONTH is
//	    2024-02-29; the time of day kept), and
//	    MILLISECOND for timestamps in milliseconds or finer. ts is a
//	    timestamp or a date32 (DAY and coarser units). A result out of
//	    the type's range fails the evaluation naming the row.
//	timestampdiff(unit, a, b) -> int32
//	    Flink TIMESTAMPDIFF: the number of whole units from a to b
//	    (negative when b is earlier). a and b are timestamps or dates
//	    (a date with a timestamp is that day's midnight; two timestamps
//	    meet at the finer unit, in a's time zone). SECOND, MINUTE, HOUR,
//	    DAY, WEEK: the exact difference divided by the unit, truncated
//	    toward zero. MONTH, QUARTER, YEAR: whole months between the wall
//	    clock dates, with Flink's (Calcite's) rule: the largest m such that
//	    a's day plus m months (as timestampadd) is not after b's day, less
//	    one when it is b's day and a's time of day is later; then divided
//	    by 3 or 12, truncated. For b before a that rule rounds
//	    toward the past when a plus m months lands on b's day, as Flink
//	    does: timestampdiff(MONTH, '2024-02-01 12:00', '2024-01-01 10:00')
//	    is -2. A difference beyond the int32 range fails the evaluation
//	    (Flink's INT result would wrap around).

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

func init() {
	registerFunc("to_timestamp_ltz", compileToTimestampLtz)
	registerFunc("to_timestamp", compileToTimestamp)
	registerFunc("unix_timestamp", compileUnixTimestamp)
	registerFunc("from_unixtime", compileFromUnixtime)
	registerFunc("timestampadd", compileTimestampAdd)
	registerFunc("timestampdiff", compileTimestampDiff)
}

// tmDefaultPattern is the default format of to_timestamp, unix_timestamp
// and from_unixtime.
const tmDefaultPattern = "yyyy-MM-dd HH:mm:ss"

var (
	tsMillisUTC = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	tsMillis    = &arrow.TimestampType{Unit: arrow.Millisecond}
)

// The instants TO_TIMESTAMP_LTZ accepts: 0000-01-01 00:00:00 to
// 9999-12-31 23:59:59.999 UTC (Flink's DateTimeUtils).
const (
	tmMinEpochMillis = -62167219200000
	tmMaxEpochMillis = 253402300799999
)

// tmPatternArg reads the constant pattern argument i of call (the default
// when absent); isNull reports a NULL constant.
func tmPatternArg(call *CallExpr, args []node, i int) (p string, isNull bool, err error) {
	if len(args) <= i {
		return tmDefaultPattern, false, nil
	}
	if !isStrArg(args[i]) {
		return "", false, strArgErr(call, i, "a string", args[i].dtype())
	}
	p, ok, isNull := constString(args[i])
	if !ok {
		return "", false, compileErr(call, "the %s format (argument %d) must be a constant", call.Func, i+1)
	}
	return p, isNull, nil
}

// ---- to_timestamp_ltz ----

type toTimestampLtzNode struct {
	nodeBase
	arg     node
	seconds bool // precision 0
	s       scratch
}

func compileToTimestampLtz(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 2); err != nil {
		return nil, err
	}
	if err := mathNumArg(call, args, 0); err != nil {
		return nil, err
	}
	seconds := false
	if len(args) == 2 {
		p, ok, isNull := constInt(args[1])
		if !ok || !isIntArg(args[1]) {
			return nil, compileErr(call, "the precision (argument 2) of to_timestamp_ltz must be the constant 0 or 3, got %s", args[1].source())
		}
		if !isNull && p != 0 && p != 3 {
			return nil, compileErr(call, "unsupported precision %d: to_timestamp_ltz takes 0 (seconds) or 3 (milliseconds)", p)
		}
		seconds = p == 0
		if isNull {
			return nullResult(call, tsMillisUTC, args), nil
		}
	}
	if isNullLit(args[0]) {
		return nullResult(call, tsMillisUTC, args), nil
	}
	return &toTimestampLtzNode{nodeBase: nodeBase{src: call, dt: tsMillisUTC}, arg: args[0], seconds: seconds}, nil
}

func (n *toTimestampLtzNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindInt64
	nulls := ownNulls(&n.s, out, sel, ctx.n, in)
	out.i64 = grow(out.i64, ctx.n)
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls[r] {
			continue
		}
		var ms int64
		ok := true
		if in.kind == kindFloat64 {
			// As Flink: seconds are range-checked before they are scaled,
			// then truncated toward zero. NaN fails every comparison.
			v := in.f64[r]
			if n.seconds {
				ok = v >= tmMinEpochMillis/1000 && v <= tmMaxEpochMillis/1000
				v *= 1000
			}
			ok = ok && v > tmMinEpochMillis-1 && v < tmMaxEpochMillis+1
			if ok {
				ms = int64(v)
			}
		} else {
			ms = readInt(in, r)
			if n.seconds {
				ok = ms >= tmMinEpochMillis/1000 && ms <= tmMaxEpochMillis/1000
				ms *= 1000
			}
		}
		if !ok || ms < tmMinEpochMillis || ms > tmMaxEpochMillis {
			nulls[r] = true
			continue
		}
		out.i64[r] = ms
	}
	return out, nil
}

// ---- to_timestamp, unix_timestamp ----

// parseTimeNode is to_timestamp(s[, format]) (timestamp[ms] result) or
// unix_timestamp(s[, format]) (int64 seconds).
type parseTimeNode struct {
	nodeBase
	arg  node
	p    *tmParser // nil: to_timestamp without a format
	unix bool
	s    scratch
}

func compileToTimestamp(c *compiler, call *CallExpr, args []node) (node, error) {
	return compileParseTime(call, args, false)
}

func compileUnixTimestamp(c *compiler, call *CallExpr, args []node) (node, error) {
	return compileParseTime(call, args, true)
}

func compileParseTime(call *CallExpr, args []node, unix bool) (node, error) {
	if err := strArgs(call, args, 1, 2, "ss"); err != nil {
		return nil, err
	}
	dt := arrow.DataType(tsMillis)
	if unix {
		dt = arrow.PrimitiveTypes.Int64
	}
	p, isNull, err := tmPatternArg(call, args, 1)
	if err != nil {
		return nil, err
	}
	if isNull || isNullLit(args[0]) {
		return nullResult(call, dt, args), nil
	}
	n := &parseTimeNode{nodeBase: nodeBase{src: call, dt: dt}, arg: args[0], unix: unix}
	if unix || len(args) == 2 {
		if n.p, err = compileTmParser(p, unix); err != nil {
			return nil, compileErr(call, "%v", err)
		}
	}
	return n, nil
}

func (n *parseTimeNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindInt64
	var nulls []bool
	if n.unix {
		nulls = strNulls(&n.s, out, sel, ctx.n, in)
	} else {
		nulls = ownNulls(&n.s, out, sel, ctx.n, in)
	}
	out.i64 = grow(out.i64, ctx.n)
	cnt := rowCount(sel, ctx.n)
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		if nulls != nil && nulls[r] {
			continue
		}
		b := in.data[in.so[r]:in.eo[r]]
		if n.unix {
			ls, nanos, ok := n.p.parse(b)
			if !ok || ls > math.MaxInt64/1000-1 || ls < math.MinInt64/1000+1 {
				out.i64[r] = math.MinInt64
				continue
			}
			out.i64[r] = (ls*1000 + nanos/1e6) / 1000 // Java's division truncates
			continue
		}
		ms, ok := n.toTimestamp(b)
		if !ok {
			nulls[r] = true
			continue
		}
		out.i64[r] = ms
	}
	return out, nil
}

// toTimestamp parses b by the pattern, falling back to the CAST syntax.
func (n *parseTimeNode) toTimestamp(b []byte) (int64, bool) {
	if n.p != nil {
		if ls, nanos, ok := n.p.parse(b); ok {
			if ls > math.MaxInt64/1000-1 || ls < math.MinInt64/1000+1 {
				return 0, false
			}
			return ls*1000 + nanos/1e6, true
		}
	}
	days, sod, nanos, _, ok := tmParseDateTime(castTrim(b))
	if !ok {
		return 0, false
	}
	return (days*secondsPerDay+sod)*1000 + nanos/1e6, true
}

// ---- from_unixtime ----

func compileFromUnixtime(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArgs(call, args, 1, 2, "is"); err != nil {
		return nil, err
	}
	strT := arrow.BinaryTypes.String
	p, isNull, err := tmPatternArg(call, args, 1)
	if err != nil {
		return nil, err
	}
	if isNull || isNullLit(args[0]) {
		return nullResult(call, strT, args), nil
	}
	f, err := compileTmFormat(p)
	if err != nil {
		return nil, compileErr(call, "%v", err)
	}
	// Seconds since the epoch format as a timestamp in seconds would.
	return &dateFormatNode{nodeBase: nodeBase{src: call, dt: strT}, arg: args[0],
		ts: newTmSource(arrow.FixedWidthTypes.Timestamp_s, 1, tmZone{}), f: f}, nil
}
