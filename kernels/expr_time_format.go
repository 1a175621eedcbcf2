package kernels

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// date_format compiles its pattern once into a list of operations, and
// formats each row by appending to the output buffer: no allocation per
// row. The same field decomposition formats timestamps for CAST(... AS
// STRING).

// tmFields are the wall-clock fields of one temporal value.
type tmFields struct {
	days                 int64 // local calendar day since 1970-01-01
	year                 int64
	month, day           int
	hour, minute, second int
	nanos                int64 // within the second
}

// fields decomposes x; the date fields are filled only when needDate is
// set. The date of the previous call is kept in f and reused when x falls
// on the same day, as consecutive rows of a stream mostly do.
func (s *tmSource) fields(f *tmFields, x int64, needDate bool) {
	ls, nanos := s.local(x)
	days := tmFloorDiv(ls, secondsPerDay)
	sod := ls - days*secondsPerDay
	f.hour, f.minute, f.second = int(sod/3600), int(sod/60%60), int(sod%60)
	f.nanos = nanos
	if needDate && (days != f.days || f.month == 0) {
		f.year, f.month, f.day = tmCivil(days)
	}
	f.days = days
}

type tmOpKind uint8

const (
	tmOpLiteral   tmOpKind = iota
	tmOpYear               // width 2: last two digits; else padded to width
	tmOpMonth              // width 1-2: number; 3: Jan; 4: January
	tmOpDay                // day of month
	tmOpDayOfYear          // 1-366
	tmOpHour24             // 0-23
	tmOpHour12             // 1-12
	tmOpMinute             // 0-59
	tmOpSecond             // 0-59
	tmOpFraction           // first `width` digits of the fraction of second
	tmOpAmPm               // AM or PM
	tmOpWeekday            // width 1-3: Mon; 4: Monday
)

type tmOp struct {
	kind  tmOpKind
	width int
	lit   []byte
	limit int64 // tmOpYear: 10^width, the first year that overflows the width
	div   int64 // tmOpFraction: 10^(9-width)
}

// tmFormat is a compiled date_format pattern.
type tmFormat struct {
	ops      []tmOp
	needDate bool // some op needs the calendar date
}

// tmFormatLetters maps the pattern letters date_format supports to their
// operation and the largest repetition allowed.
var tmFormatLetters = map[byte]tmLetter[tmOpKind]{
	'y': {tmOpYear, 19}, 'M': {tmOpMonth, 4}, 'd': {tmOpDay, 2}, 'D': {tmOpDayOfYear, 3},
	'H': {tmOpHour24, 2}, 'h': {tmOpHour12, 2}, 'm': {tmOpMinute, 2}, 's': {tmOpSecond, 2},
	'S': {tmOpFraction, 9}, 'a': {tmOpAmPm, 1}, 'E': {tmOpWeekday, 4},
}

// compileTmFormat parses a Java DateTimeFormatter style pattern.
func compileTmFormat(p string) (*tmFormat, error) {
	f := &tmFormat{}
	for tok, err := range tmPatternTokens(p) {
		if err != nil {
			return nil, err
		}
		if tok.letter == 0 {
			f.ops = append(f.ops, tmOp{kind: tmOpLiteral, lit: tok.lit})
			continue
		}
		kind, err := tmLetterKind(tmFormatLetters, &tok, p, "supported: y M d D H h m s S a E")
		if err != nil {
			return nil, err
		}
		w := tok.count
		f.ops = append(f.ops, tmOp{kind: kind, width: w, limit: tmPow10(w), div: tmPow10(max(9-w, 0))})
		switch kind {
		case tmOpYear, tmOpMonth, tmOpDay, tmOpDayOfYear, tmOpWeekday:
			f.needDate = true
		}
	}
	return f, nil
}

var (
	tmMonthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	tmDayNames = [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// appendTo formats t by the pattern.
func (f *tmFormat) appendTo(dst []byte, t *tmFields) []byte {
	for i := range f.ops {
		op := &f.ops[i]
		switch op.kind {
		case tmOpLiteral:
			if len(op.lit) == 1 {
				dst = append(dst, op.lit[0])
			} else {
				dst = append(dst, op.lit...)
			}
		case tmOpYear:
			// Java prints the year of era: 1 BC is year 1, 2 BC year 2.
			y := t.year
			if y <= 0 {
				y = 1 - y
			}
			switch {
			case op.width == 2:
				dst = tmAppendPadded(dst, y%100, 2)
			case op.width >= 4 && y >= op.limit:
				dst = append(dst, '+')
				dst = strconv.AppendInt(dst, y, 10)
			default:
				dst = tmAppendPadded(dst, y, op.width)
			}
		case tmOpMonth:
			switch op.width {
			case 3:
				dst = append(dst, tmMonthNames[t.month-1][:3]...)
			case 4:
				dst = append(dst, tmMonthNames[t.month-1]...)
			default:
				dst = tmAppendPadded(dst, int64(t.month), op.width)
			}
		case tmOpDay:
			dst = tmAppendPadded(dst, int64(t.day), op.width)
		case tmOpDayOfYear:
			dst = tmAppendPadded(dst, t.days-tmDays(t.year, 1, 1)+1, op.width)
		case tmOpHour24:
			dst = tmAppendPadded(dst, int64(t.hour), op.width)
		case tmOpHour12:
			h := t.hour % 12
			if h == 0 {
				h = 12
			}
			dst = tmAppendPadded(dst, int64(h), op.width)
		case tmOpMinute:
			dst = tmAppendPadded(dst, int64(t.minute), op.width)
		case tmOpSecond:
			dst = tmAppendPadded(dst, int64(t.second), op.width)
		case tmOpFraction:
			dst = tmAppendPadded(dst, t.nanos/op.div, op.width)
		case tmOpAmPm:
			if t.hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case tmOpWeekday:
			name := tmDayNames[tmISOWeekday(t.days)-1]
			if op.width < 4 {
				name = name[:3]
			}
			dst = append(dst, name...)
		}
	}
	return dst
}

func tmPow10(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		if p > math.MaxInt64/10 {
			return math.MaxInt64
		}
		p *= 10
	}
	return p
}

// tmAppendPadded appends v (>= 0) in decimal, zero-padded to width digits.
func tmAppendPadded(dst []byte, v int64, width int) []byte {
	// Fast paths for the common fields: two-digit and four-digit numbers.
	switch {
	case v >= 0 && v < 100 && width <= 2:
		if v >= 10 || width == 2 {
			return append(dst, byte('0'+v/10), byte('0'+v%10))
		}
		return append(dst, byte('0'+v))
	case v >= 0 && v < 10000 && width == 4:
		return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	digits := 1
	for x := v; x >= 10; x /= 10 {
		digits++
	}
	for ; digits < width; digits++ {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, v, 10)
}

// tmAppendDate appends a date as yyyy-MM-dd (a proleptic year below 0
// gets a '-', one above 9999 more digits).
func tmAppendDate(dst []byte, year int64, month, day int) []byte {
	if year < 0 {
		dst = append(dst, '-')
		year = -year
	}
	dst = tmAppendPadded(dst, year, 4)
	dst = append(dst, '-')
	dst = tmAppendPadded(dst, int64(month), 2)
	dst = append(dst, '-')
	return tmAppendPadded(dst, int64(day), 2)
}

// tmAppendTimestamp appends yyyy-MM-dd HH:mm:ss and, when frac > 0, a
// fraction of frac digits (Flink's CAST(timestamp AS STRING)).
func tmAppendTimestamp(dst []byte, t *tmFields, frac int) []byte {
	dst = tmAppendDate(dst, t.year, t.month, t.day)
	dst = append(dst, ' ')
	dst = tmAppendPadded(dst, int64(t.hour), 2)
	dst = append(dst, ':')
	dst = tmAppendPadded(dst, int64(t.minute), 2)
	dst = append(dst, ':')
	dst = tmAppendPadded(dst, int64(t.second), 2)
	if frac > 0 {
		dst = append(dst, '.')
		dst = tmAppendPadded(dst, t.nanos/tmPow10(9-frac), frac)
	}
	return dst
}

// ---- date_format ----

type dateFormatNode struct {
	nodeBase
	arg node
	ts  tmSource
	f   *tmFormat
	s   scratch
}

func compileDateFormat(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 2); err != nil {
		return nil, err
	}
	strT := arrow.BinaryTypes.String
	if !isStrArg(args[1]) {
		return nil, strArgErr(call, 1, "a string", args[1].dtype())
	}
	p, ok, isNull := constString(args[1])
	if !ok {
		return nil, compileErr(call, "the date_format pattern (argument 2) must be a constant")
	}
	if isNullLit(args[0]) || isNull {
		return nullResult(call, strT, args), nil
	}
	src, err := tmSourceArg(call, args, 0)
	if err != nil {
		return nil, err
	}
	f, err := compileTmFormat(p)
	if err != nil {
		return nil, compileErr(call, "%v", err)
	}
	return &dateFormatNode{nodeBase: nodeBase{src: call, dt: strT}, arg: args[0], ts: src, f: f}, nil
}

func (n *dateFormatNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := beginBytes(&n.s, n.dt, ctx.n)
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, ctx.n)
	var t tmFields
	for i := 0; i < cnt; i++ {
		r := int32(i)
		if sel != nil {
			r = sel[i]
		}
		pos := len(data)
		if nulls == nil || !nulls[r] {
			n.ts.fields(&t, readInt(in, r), n.f.needDate)
			data = n.f.appendTo(data, &t)
			if len(data) > math.MaxInt32 {
				return nil, errBytesOverflow(n.src, r)
			}
		}
		so[r], eo[r] = int32(pos), int32(len(data))
	}
	out.data = data
	return out, nil
}
