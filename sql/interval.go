package sql

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Duration returns a day-time interval as a time.Duration: INTERVAL '10'
// SECOND is 10s, INTERVAL '1 02:03:04.5' DAY TO SECOND is 26h3m4.5s. It
// returns an error for a year-month interval (YEAR, QUARTER, MONTH, YEAR TO
// MONTH), whose length depends on the calendar, for a malformed value, and
// when the duration does not fit a time.Duration (about 292 years).
// Fractions of a second below a nanosecond are truncated.
func (l *IntervalLit) Duration() (time.Duration, error) {
	if l.Qualifier.YearMonth() {
		return 0, fmt.Errorf("INTERVAL '%s' %s is a year-month interval: it has no fixed duration", l.Value, l.Qualifier)
	}
	ns, err := intervalValue(l.Value, l.Qualifier)
	if err != nil {
		return 0, err
	}
	if l.Negative {
		ns.Neg(ns)
	}
	if !ns.IsInt64() {
		return 0, fmt.Errorf("INTERVAL '%s' %s is too long for a duration", l.Value, l.Qualifier)
	}
	return time.Duration(ns.Int64()), nil
}

// Months returns a year-month interval as a number of months: INTERVAL '1-6'
// YEAR TO MONTH is 18. It returns an error for a day-time interval.
func (l *IntervalLit) Months() (int64, error) {
	if !l.Qualifier.YearMonth() {
		return 0, fmt.Errorf("INTERVAL '%s' %s is a day-time interval, not a number of months", l.Value, l.Qualifier)
	}
	m, err := intervalValue(l.Value, l.Qualifier)
	if err != nil {
		return 0, err
	}
	if l.Negative {
		m.Neg(m)
	}
	if !m.IsInt64() {
		return 0, fmt.Errorf("INTERVAL '%s' %s is too long", l.Value, l.Qualifier)
	}
	return m.Int64(), nil
}

// String returns the qualifier as SQL: SECOND, SECOND(3), DAY(2) TO
// SECOND(3).
func (q IntervalQualifier) String() string {
	var b strings.Builder
	b.WriteString(q.Start.String())
	writePrecision(&b, q.StartPrecision)
	if q.End != UnitNone {
		b.WriteString(" TO ")
		b.WriteString(q.End.String())
		writePrecision(&b, q.EndPrecision)
	}
	return b.String()
}

func writePrecision(b *strings.Builder, p []int) {
	if len(p) == 0 {
		return
	}
	b.WriteByte('(')
	for i, v := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(b, v)
	}
	b.WriteByte(')')
}

// Nanoseconds per unit of the day-time fields.
var unitNanos = map[TimeUnit]int64{
	UnitWeek:        7 * 24 * int64(time.Hour),
	UnitDay:         24 * int64(time.Hour),
	UnitHour:        int64(time.Hour),
	UnitMinute:      int64(time.Minute),
	UnitSecond:      int64(time.Second),
	UnitMillisecond: int64(time.Millisecond),
}

// Months per unit of the year-month fields.
var unitMonths = map[TimeUnit]int64{UnitYear: 12, UnitQuarter: 3, UnitMonth: 1}

// intervalFields lists, for each valid qualifier, the fields of its value
// and the separator before each field after the first.
var intervalFields = map[[2]TimeUnit]struct {
	units []TimeUnit
	seps  string
}{
	{UnitYear, UnitNone}:        {[]TimeUnit{UnitYear}, ""},
	{UnitQuarter, UnitNone}:     {[]TimeUnit{UnitQuarter}, ""},
	{UnitMonth, UnitNone}:       {[]TimeUnit{UnitMonth}, ""},
	{UnitWeek, UnitNone}:        {[]TimeUnit{UnitWeek}, ""},
	{UnitDay, UnitNone}:         {[]TimeUnit{UnitDay}, ""},
	{UnitHour, UnitNone}:        {[]TimeUnit{UnitHour}, ""},
	{UnitMinute, UnitNone}:      {[]TimeUnit{UnitMinute}, ""},
	{UnitSecond, UnitNone}:      {[]TimeUnit{UnitSecond}, ""},
	{UnitMillisecond, UnitNone}: {[]TimeUnit{UnitMillisecond}, ""},
	{UnitYear, UnitMonth}:       {[]TimeUnit{UnitYear, UnitMonth}, "-"},
	{UnitDay, UnitHour}:         {[]TimeUnit{UnitDay, UnitHour}, " "},
	{UnitDay, UnitMinute}:       {[]TimeUnit{UnitDay, UnitHour, UnitMinute}, " :"},
	{UnitDay, UnitSecond}:       {[]TimeUnit{UnitDay, UnitHour, UnitMinute, UnitSecond}, " ::"},
	{UnitHour, UnitMinute}:      {[]TimeUnit{UnitHour, UnitMinute}, ":"},
	{UnitHour, UnitSecond}:      {[]TimeUnit{UnitHour, UnitMinute, UnitSecond}, "::"},
	{UnitMinute, UnitSecond}:    {[]TimeUnit{UnitMinute, UnitSecond}, ":"},
}

// validQualifier reports whether start [TO end] is an interval qualifier.
func validQualifier(start, end TimeUnit) bool {
	_, ok := intervalFields[[2]TimeUnit{start, end}]
	return ok
}

// intervalFormat describes the value format of a qualifier, for hints.
func intervalFormat(q IntervalQualifier) string {
	f, ok := intervalFields[[2]TimeUnit{q.Start, q.End}]
	if !ok {
		return ""
	}
	var b strings.Builder
	names := map[TimeUnit]string{UnitYear: "years", UnitQuarter: "quarters", UnitMonth: "months", UnitWeek: "weeks",
		UnitDay: "days", UnitHour: "hours", UnitMinute: "minutes", UnitSecond: "seconds[.fraction]",
		UnitMillisecond: "milliseconds"}
	for i, u := range f.units {
		if i > 0 {
			b.WriteByte(f.seps[i-1])
		}
		b.WriteString(names[u])
	}
	return b.String()
}

var errIntervalSyntax = errors.New("malformed interval value")

// intervalValue parses an interval's value string for qualifier q and
// returns it in nanoseconds (day-time) or months (year-month). The value
// may start with a sign; fields after the first must be within their unit
// (hours < 24, minutes and seconds < 60).
func intervalValue(s string, q IntervalQualifier) (*big.Int, error) {
	f, ok := intervalFields[[2]TimeUnit{q.Start, q.End}]
	if !ok {
		return nil, fmt.Errorf("%s is not a valid interval qualifier", q)
	}
	bad := func() error {
		return fmt.Errorf("%w '%s' for %s: expected '%s'", errIntervalSyntax, s, q, intervalFormat(q))
	}
	v := strings.TrimSpace(s)
	neg := false
	if v != "" && (v[0] == '-' || v[0] == '+') {
		neg = v[0] == '-'
		v = strings.TrimSpace(v[1:])
	}
	total := new(big.Int)
	for i, u := range f.units {
		var field string
		if i < len(f.units)-1 {
			sep := f.seps[i]
			j := strings.IndexByte(v, sep)
			if j < 0 {
				return nil, bad()
			}
			field, v = v[:j], v[j+1:]
		} else {
			field = v
		}
		frac := ""
		if u == UnitSecond {
			if j := strings.IndexByte(field, '.'); j >= 0 {
				field, frac = field[:j], field[j+1:]
				if len(frac) > 9 || !allDigits(frac) {
					return nil, bad()
				}
				if field == "" && frac == "" {
					return nil, bad()
				}
			}
			if field == "" && frac != "" {
				field = "0"
			}
		}
		if field == "" || !allDigits(field) || len(field) > 30 {
			return nil, bad()
		}
		n, _ := new(big.Int).SetString(field, 10)
		if i > 0 {
			limit := int64(60)
			if u == UnitHour {
				limit = 24
			} else if u == UnitMonth {
				limit = 12
			}
			if n.Cmp(big.NewInt(limit)) >= 0 {
				return nil, fmt.Errorf("%w '%s' for %s: %s must be below %d", errIntervalSyntax, s, q, strings.ToLower(u.String())+"s", limit)
			}
		}
		if m, ok := unitMonths[u]; ok {
			total.Add(total, n.Mul(n, big.NewInt(m)))
			continue
		}
		total.Add(total, n.Mul(n, big.NewInt(unitNanos[u])))
		if frac != "" {
			fn, _ := new(big.Int).SetString(frac+strings.Repeat("0", 9-len(frac)), 10)
			total.Add(total, fn)
		}
	}
	if neg {
		total.Neg(total)
	}
	return total, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
