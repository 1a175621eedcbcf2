package kernels

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// References of the functions of expr_time_more.go. Parsing is a regular
// expression built from the pattern (its greedy, backtracking groups
// split runs of digits as java.time's adjacent value parsing does for the
// patterns tested) and time.Date; arithmetic uses math/big and time.Time.

// ---- parsing ----

var (
	timeRefMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
	timeRefDays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// timeRefParsePat is a parse pattern as a regular expression; fields[i]
// is the letter (and count) of group i+1.
type timeRefParsePat struct {
	re      *regexp.Regexp
	fields  []string
	lenient bool
}

func timeRefNames(names []string, short, full, fold bool) string {
	var alts []string
	if full {
		alts = append(alts, names...)
	}
	if short {
		for _, n := range names {
			alts = append(alts, n[:3])
		}
	}
	re := "(" + strings.Join(alts, "|") + ")"
	if fold {
		re = "(?i:" + re + ")"
	}
	return re
}

func timeRefCompileParse(p string, lenient bool) *timeRefParsePat {
	type tok struct {
		letter byte
		n      int
		lit    string
	}
	var toks []tok
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(p[i+1:], '\'')
			toks = append(toks, tok{lit: p[i+1 : i+1+j]})
			if j == 0 {
				toks[len(toks)-1].lit = "'"
			}
			i += j + 2
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			toks = append(toks, tok{letter: c, n: j - i})
			i = j
		default:
			toks = append(toks, tok{lit: string(c)})
			i++
		}
	}
	pat := &timeRefParsePat{lenient: lenient}
	var sb strings.Builder
	sb.WriteString("^")
	for k, t := range toks {
		if t.letter == 0 {
			sb.WriteString(regexp.QuoteMeta(t.lit))
			continue
		}
		pat.fields = append(pat.fields, strings.Repeat(string(t.letter), t.n))
		nextField := k+1 < len(toks) && toks[k+1].letter != 0
		num := func() string {
			switch {
			case lenient && nextField:
				return `(\d{` + strconv.Itoa(t.n) + `})`
			case lenient:
				return `(\d{1,19})`
			case t.letter == 'S' || t.n == 2:
				return `(\d{` + strconv.Itoa(t.n) + `})`
			case t.letter == 'y' && t.n >= 3:
				return `(\d{` + strconv.Itoa(t.n) + `,19})`
			}
			return `(\d{1,19})`
		}
		switch {
		case t.letter == 'M' && t.n >= 3:
			sb.WriteString(timeRefNames(timeRefMonths, lenient || t.n == 3, lenient || t.n == 4, lenient))
		case t.letter == 'E':
			sb.WriteString(timeRefNames(timeRefDays, lenient || t.n < 4, lenient || t.n == 4, lenient))
		case t.letter == 'a':
			sb.WriteString(timeRefNames([]string{"AM", "PM"}, false, true, lenient))
		case t.letter == 'X' && t.n == 1:
			sb.WriteString(`(Z|[+-]\d{2}(?:\d{2})?)`)
		case t.letter == 'X' && t.n == 2:
			sb.WriteString(`(Z|[+-]\d{4})`)
		case t.letter == 'X':
			sb.WriteString(`(Z|[+-]\d{2}:\d{2})`)
		case t.letter == 'Z':
			sb.WriteString(`([+-]\d{4})`)
		default:
			sb.WriteString(num())
		}
	}
	if !lenient {
		sb.WriteString("$")
	}
	pat.re = regexp.MustCompile(sb.String())
	return pat
}

// parse returns the local wall clock of s as seconds and nanoseconds
// (UTC after an offset in lenient mode).
func (pat *timeRefParsePat) parse(s string) (sec, nanos int64, ok bool) {
	m := pat.re.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	year, month, day, hour, minute, second := int64(1970), int64(1), int64(1), int64(0), int64(0), int64(0)
	var hasYear, hasMonth, hasDay, pm, h12 bool
	var offset int64
	weekday := -1
	for i, f := range pat.fields {
		g := m[i+1]
		v, err := strconv.ParseInt(g, 10, 64)
		if err == nil && v > 999999999 {
			return 0, 0, false
		}
		switch {
		case f[0] == 'y':
			year, hasYear = v, true
			if len(f) == 2 && len(g) == 2 {
				year += 2000
			}
		case f[0] == 'M' && len(f) >= 3:
			for k, name := range timeRefMonths {
				if strings.EqualFold(g, name) || strings.EqualFold(g, name[:3]) {
					month = int64(k + 1)
				}
			}
			hasMonth = true
		case f[0] == 'M':
			month, hasMonth = v, true
		case f[0] == 'd':
			day, hasDay = v, true
		case f[0] == 'H':
			hour = v
		case f[0] == 'h':
			hour, h12 = v, true
		case f[0] == 'm':
			minute = v
		case f[0] == 's':
			second = v
		case f[0] == 'S':
			if pat.lenient {
				nanos = v * 1e6
			} else {
				nanos = v * int64(math.Pow10(9-len(g)))
			}
		case f[0] == 'a':
			pm = strings.EqualFold(g, "PM")
		case f[0] == 'E':
			for k, name := range timeRefDays {
				if strings.EqualFold(g, name) || strings.EqualFold(g, name[:3]) {
					weekday = (k + 1) % 7 // time.Weekday
				}
			}
		case f[0] == 'X' || f[0] == 'Z':
			if g != "Z" {
				hh, _ := strconv.Atoi(g[1:3])
				mm := 0
				if rest := strings.TrimPrefix(g[3:], ":"); rest != "" {
					mm, _ = strconv.Atoi(rest)
				}
				if hh > 23 || mm > 59 {
					return 0, 0, false
				}
				offset = int64(hh*3600 + mm*60)
				if g[0] == '-' {
					offset = -offset
				}
			}
		}
	}
	if h12 {
		if !pat.lenient && (hour < 1 || hour > 12) {
			return 0, 0, false
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if pat.lenient {
		// time.Date carries values out of range over, as a lenient
		// calendar does.
		t := time.Date(int(year), time.Month(month), int(day), int(hour), int(minute), int(second), 0, time.UTC)
		return t.Unix() - offset + nanos/1e9, nanos % 1e9, true
	}
	if hasYear && year < 1 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59 {
		return 0, 0, false
	}
	if dim := int64(time.Date(int(year), time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()); day > dim {
		if !hasYear {
			return 0, 0, false
		}
		day = dim
	}
	t := time.Date(int(year), time.Month(month), int(day), int(hour), int(minute), int(second), 0, time.UTC)
	if weekday >= 0 && hasYear && hasMonth && hasDay && int(t.Weekday()) != weekday {
		return 0, 0, false
	}
	return t.Unix(), nanos, true
}

// timeRefCastSyntax parses CAST(s AS TIMESTAMP)'s syntax.
var timeRefCastSyntax = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?Z?$`)

func timeRefParseCast(s string) (sec, nanos int64, ok bool) {
	m := timeRefCastSyntax.FindStringSubmatch(strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }))
	if m == nil {
		return 0, 0, false
	}
	n := make([]int, 7)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], 0, time.UTC)
	if n[1] < 1 || n[1] > 12 || n[2] < 1 || t.Day() != n[2] || n[3] > 23 || n[4] > 59 || n[5] > 59 {
		return 0, 0, false
	}
	if m[7] != "" {
		f, _ := strconv.ParseInt(m[7], 10, 64)
		nanos = f * int64(math.Pow10(9-len(m[7])))
	}
	return t.Unix(), nanos, true
}

// timeRefMillis is sec*1000 + nanos/1e6 when it fits in int64.
func timeRefMillis(sec, nanos int64) (int64, bool) {
	ms := new(big.Int).Mul(big.NewInt(sec), big.NewInt(1000))
	ms.Add(ms, big.NewInt(nanos/1e6))
	return ms.Int64(), ms.IsInt64()
}

func timeRefToTimestamp(pat *timeRefParsePat) func([]any) (any, error) {
	return func(a []any) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		s := a[0].(string)
		sec, nanos, ok := int64(0), int64(0), false
		if pat != nil {
			sec, nanos, ok = pat.parse(s)
		}
		if !ok {
			if sec, nanos, ok = timeRefParseCast(s); !ok {
				return nil, nil
			}
		}
		if ms, fits := timeRefMillis(sec, nanos); fits {
			return ms, nil
		}
		return nil, nil
	}
}

func timeRefUnixTimestamp(pat *timeRefParsePat) func([]any) (any, error) {
	return func(a []any) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		sec, nanos, ok := pat.parse(a[0].(string))
		ms, fits := timeRefMillis(sec, nanos)
		if !ok || !fits {
			return int64(math.MinInt64), nil
		}
		return ms / 1000, nil
	}
}

// timeRefMutate damages a formatted date now and then, so that parsing
// also meets text that does not match.
func timeRefMutate(rng *rand.Rand, s string) string {
	if rng.IntN(3) != 0 || s == "" {
		return s
	}
	b := []byte(s)
	i := rng.IntN(len(b))
	const chars = "0123456789 -:.TZ+aApPjJmM/"
	switch rng.IntN(4) {
	case 0:
		b[i] = chars[rng.IntN(len(chars))]
	case 1:
		b = append(b[:i], b[i+1:]...)
	case 2:
		b = append(b[:i], append([]byte{chars[rng.IntN(len(chars))]}, b[i:]...)...)
	default:
		b = append(b, " x"[rng.IntN(2)])
	}
	return string(b)
}

// timeRandEdge is a timestamp of unit on a day that tests month ends and
// day-of-month ties (the 1st, the 28th to 31st), at one of a few times of
// day, between 1960 and 2040.
func timeRandEdge(unit arrow.TimeUnit) func(*rand.Rand) any {
	per := int64(time.Second / timeRefUnitTicks[unit])
	return func(rng *rand.Rand) any {
		y, m := 1960+rng.IntN(80), time.Month(1+rng.IntN(12))
		d := []int{1, 28, 29, 30, 31, 1 + rng.IntN(31)}[rng.IntN(6)]
		if dim := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > dim {
			d = dim
		}
		sod := []int{0, 10 * 3600, 12 * 3600, rng.IntN(86400)}[rng.IntN(4)]
		sec := time.Date(y, m, d, 0, 0, sod, 0, time.UTC).Unix()
		return sec*per + rng.Int64N(per)*int64(rng.IntN(2))
	}
}

type timeParseCase struct {
	pattern string
	goFmt   func(tm time.Time) string // formats a value the pattern parses (nil: timeRefFormat)
}

var timeParsePatterns = []timeParseCase{
	{"yyyy-MM-dd HH:mm:ss", nil},
	{"yyyy-MM-dd", nil},
	{"yyyyMMddHHmmss", nil},
	{"yyyy-MM-dd'T'HH:mm:ss.SSS", nil},
	{"d/M/yyyy H:m", nil},
	{"dd MMM yyyy hh:mm:ss a", nil},
	{"EEEE, MMMM d, yyyy", nil},
	{"EEE HH:mm", nil},
	{"yy-MM-dd HH:mm:ss.SSSSSS", nil},
	{"yyyy-MM-dd HH:mm:ss XXX", func(tm time.Time) string { return tm.Format("2006-01-02 15:04:05 -07:00") }},
	{"yyyy-MM-dd HH:mm:ssX", func(tm time.Time) string { return tm.Format("2006-01-02 15:04:05Z0700") }},
	{"yyyy-MM-dd HH:mm:ss Z", func(tm time.Time) string { return tm.Format("2006-01-02 15:04:05 -0700") }},
}

// timeParseCol generates text for a pattern: a random instant formatted by
// it (in a random fixed zone for patterns with an offset), sometimes in
// the CAST syntax, sometimes damaged.
func timeParseCol(name string, pc timeParseCase) strCol {
	return strCol{name, arrow.BinaryTypes.String, func(rng *rand.Rand) any {
		sec := timeRandLo + rng.Int64N(timeRandHi-timeRandLo)
		tm := time.Unix(sec, rng.Int64N(1e9)).In(time.FixedZone("", (rng.IntN(57)-28)*1800))
		var s string
		switch {
		case rng.IntN(8) == 0:
			s = tm.Format("2006-1-2 15:04:05.000")
		case pc.goFmt != nil:
			s = pc.goFmt(tm)
		default:
			s, _ = timeRefFormat(tm, pc.pattern)
		}
		return timeRefMutate(rng, s)
	}}
}

func TestTimeParseMatchesReference(t *testing.T) {
	for k, pc := range timeParsePatterns {
		cols := []strCol{timeParseCol("s", pc)}
		strict, lenient := timeRefCompileParse(pc.pattern, false), timeRefCompileParse(pc.pattern, true)
		cases := []strCase{
			{Call("to_timestamp", Col("s"), Lit(pc.pattern)), strRefCall(timeRefToTimestamp(strict), strColRef(0))},
			{Call("unix_timestamp", Col("s"), Lit(pc.pattern)), strRefCall(timeRefUnixTimestamp(lenient), strColRef(0))},
		}
		if k == 0 {
			cases = append(cases,
				strCase{Call("to_timestamp", Col("s")), strRefCall(timeRefToTimestamp(nil), strColRef(0))},
				strCase{Call("unix_timestamp", Col("s")), strRefCall(timeRefUnixTimestamp(lenient), strColRef(0))},
				strCase{Call("to_timestamp", Col("s"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
			)
		}
		moreCheck(t, 41+uint64(k), cols, cases)
	}
}

func TestTimeFromUnixtimeAndLtzMatchReference(t *testing.T) {
	cols := []strCol{
		{"n", arrow.PrimitiveTypes.Int64, func(rng *rand.Rand) any {
			switch rng.IntN(6) {
			case 0:
				return []int64{0, -1, 1, 253402300799, 253402300800, -62167219200, -62167219201,
					253402300799999, 253402300800000, -62167219200000, -62167219200001, math.MaxInt64, math.MinInt64}[rng.IntN(13)]
			case 1:
				return rng.Int64N(2e15) - 1e15
			}
			return timeRandLo + rng.Int64N(timeRandHi-timeRandLo)
		}},
		{"f", arrow.PrimitiveTypes.Float64, func(rng *rand.Rand) any {
			switch rng.IntN(5) {
			case 0:
				return []float64{math.NaN(), math.Inf(1), -0.5, 253402300799.0005, 253402300799999.9, -62167219200000.5, 1e300}[rng.IntN(7)]
			case 1:
				return (rng.Float64() - 0.5) * 1e13
			}
			return (rng.Float64() - 0.5) * 1e10
		}},
		{"i", arrow.PrimitiveTypes.Int32, strIntGen(math.MinInt32, math.MaxInt32)},
	}
	ltz := func(p int64) func([]any) (any, error) {
		return func(a []any) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			lo, hi := big.NewInt(-62167219200000), big.NewInt(253402300799999)
			var ms *big.Int
			switch v := a[0].(type) {
			case int64:
				ms = big.NewInt(v)
				if p == 0 {
					ms.Mul(ms, big.NewInt(1000))
				}
			case float64:
				if p == 0 {
					if !(v >= -62167219200 && v <= 253402300799) {
						return nil, nil
					}
					v *= 1000
				}
				if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e18 {
					return nil, nil
				}
				ms = big.NewInt(int64(math.Trunc(v)))
			}
			if ms.Cmp(lo) < 0 || ms.Cmp(hi) > 0 {
				return nil, nil
			}
			return ms.Int64(), nil
		}
	}
	unixtime := func(p string) func([]any) (any, error) {
		return func(a []any) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			return timeRefFormat(time.Unix(a[0].(int64), 0).UTC(), p)
		}
	}
	var cases []strCase
	for col := 0; col < 3; col++ {
		name := []string{"n", "f", "i"}[col]
		cases = append(cases,
			strCase{Call("to_timestamp_ltz", Col(name)), strRefCall(ltz(3), strColRef(col))},
			strCase{Call("to_timestamp_ltz", Col(name), Lit(0)), strRefCall(ltz(0), strColRef(col))},
			strCase{Call("to_timestamp_ltz", Col(name), Lit(int32(3))), strRefCall(ltz(3), strColRef(col))},
		)
	}
	cases = append(cases,
		strCase{Call("from_unixtime", Col("i")), strRefCall(unixtime(tmDefaultPattern), strColRef(2))},
		strCase{Call("from_unixtime", Col("i"), Lit("EEE, d MMM yyyy hh:mm a")), strRefCall(unixtime("EEE, d MMM yyyy hh:mm a"), strColRef(2))},
		strCase{Call("to_timestamp_ltz", Lit(nil), Lit(0)), func([]any) (any, error) { return nil, nil }},
		strCase{Call("from_unixtime", Col("n"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 51, cols, cases)
	// from_unixtime over the whole int64 range of seconds (years far
	// beyond 9999) on its own: time.Unix covers it.
	big := []strCol{{"n", arrow.PrimitiveTypes.Int64, func(rng *rand.Rand) any { return rng.Int64N(2e15) - 1e15 }}}
	moreCheck(t, 52, big, []strCase{{Call("from_unixtime", Col("n"), Lit("yyyy-MM-dd HH:mm:ss")), strRefCall(unixtime("yyyy-MM-dd HH:mm:ss"), strColRef(0))}})
}

// ---- timestampadd, timestampdiff ----

var timeArithUnits = map[string]struct {
	fixed  time.Duration
	months int
}{
	"MILLISECOND": {time.Millisecond, 0}, "SECOND": {time.Second, 0}, "MINUTE": {time.Minute, 0}, "HOUR": {time.Hour, 0},
	"DAY": {24 * time.Hour, 0}, "WEEK": {7 * 24 * time.Hour, 0}, "MONTH": {0, 1}, "QUARTER": {0, 3}, "YEAR": {0, 12},
}

// timeRefAddMonths is Flink's addMonths on a date: the same day of month
// k months later, cut to the end of a shorter month.
func timeRefAddMonths(y int, m time.Month, d int, k int) (int, time.Month, int) {
	t := time.Date(y, m+time.Month(k), 1, 0, 0, 0, 0, time.UTC)
	if dim := time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > dim {
		d = dim
	}
	return t.Year(), t.Month(), d
}

// timeRefTicksBig is the ticks of unit of t, exactly.
func timeRefTicksBig(t time.Time, unit arrow.TimeUnit) *big.Int {
	per := int64(time.Second / timeRefUnitTicks[unit])
	v := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(per))
	return v.Add(v, big.NewInt(int64(t.Nanosecond())/int64(timeRefUnitTicks[unit])))
}

// timeRefAdd is timestampadd(unit, k, v) for a timestamp of unit in loc,
// or a date32 when date is set.
func timeRefAdd(u string, k, v int64, unit arrow.TimeUnit, loc *time.Location, date bool) (any, error) {
	spec := timeArithUnits[u]
	lim := big.NewInt(math.MaxInt64)
	if date {
		lim = big.NewInt(math.MaxInt32)
	}
	var res *big.Int
	switch {
	case spec.months > 0:
		total := new(big.Int).Mul(big.NewInt(k), big.NewInt(int64(spec.months)))
		if total.CmpAbs(big.NewInt(12e9)) > 0 {
			return nil, errors.New("out of range")
		}
		t := timeRefTime(v, unit, loc)
		if date {
			t = timeRefDay(v)
		}
		y, m, d := timeRefAddMonths(t.Year(), t.Month(), t.Day(), int(total.Int64()))
		r := time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
		if date {
			res = big.NewInt(tmFloorDiv(r.Unix(), 86400))
		} else {
			res = timeRefTicksBig(r, unit)
		}
	case date:
		res = new(big.Int).Mul(big.NewInt(k), big.NewInt(int64(spec.fixed/(24*time.Hour))))
		res.Add(res, big.NewInt(v))
	default:
		res = new(big.Int).Mul(big.NewInt(k), big.NewInt(int64(spec.fixed/timeRefUnitTicks[unit])))
		res.Add(res, big.NewInt(v))
	}
	if res.CmpAbs(lim) > 0 && !(res.Sign() < 0 && new(big.Int).Neg(res).Cmp(new(big.Int).Add(lim, big.NewInt(1))) == 0) {
		return nil, errors.New("out of range")
	}
	return res.Int64(), nil
}

// timeRefSubtractMonths is Flink's DateTimeUtils.subtractMonths of two
// days, as written there: a search from an estimate.
func timeRefSubtractMonths(date0, date1 int64) int64 {
	if date0 < date1 {
		return -timeRefSubtractMonths(date1, date0)
	}
	addMonths := func(date, m int64) int64 {
		t := timeRefDay(date)
		y, mo, d := timeRefAddMonths(t.Year(), t.Month(), t.Day(), int(m))
		return tmFloorDiv(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
	}
	m := (date0 - date1) / 31
	for {
		if addMonths(date1, m) >= date0 {
			return m
		}
		if addMonths(date1, m+1) > date0 {
			return m
		}
		m++
	}
}

// timeRefDiff is timestampdiff(unit, a, b) of two timestamps of unit in
// loc (dates are given as timestamps in seconds).
func timeRefDiff(u string, a, b int64, unit arrow.TimeUnit, loc *time.Location) (any, error) {
	spec := timeArithUnits[u]
	var res *big.Int
	if spec.months > 0 {
		// Flink: subtractMonths(t0 = b, t1 = a) on days and times of day.
		ta, tb := timeRefTime(a, unit, loc), timeRefTime(b, unit, loc)
		day := func(t time.Time) int64 {
			return tmFloorDiv(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix(), 86400)
		}
		tod := func(t time.Time) time.Duration {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
				time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
		}
		d0, d1 := day(tb), day(ta)
		x := timeRefSubtractMonths(d0, d1)
		t1 := timeRefDay(d1)
		y, m, d := timeRefAddMonths(t1.Year(), t1.Month(), t1.Day(), int(x))
		if time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() == d0*86400 && tod(tb) < tod(ta) {
			x--
		}
		res = big.NewInt(x / int64(spec.months))
	} else {
		diff := new(big.Int).Sub(big.NewInt(b), big.NewInt(a))
		res = diff.Quo(diff, big.NewInt(int64(spec.fixed/timeRefUnitTicks[unit]))) // truncates
	}
	if !res.IsInt64() || res.Int64() > math.MaxInt32 || res.Int64() < math.MinInt32 {
		return nil, errors.New("out of range")
	}
	return res.Int64(), nil
}

func timeArithCols() []strCol {
	return []strCol{
		{"a", &arrow.TimestampType{Unit: arrow.Millisecond}, timeRandEdge(arrow.Millisecond)},
		{"b", &arrow.TimestampType{Unit: arrow.Millisecond}, timeRandEdge(arrow.Millisecond)},
		{"c", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, timeRandEdge(arrow.Microsecond)},
		{"z1", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}, timeRandEdge(arrow.Second)},
		{"z2", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}, timeRandEdge(arrow.Second)},
		{"d1", arrow.FixedWidthTypes.Date32, func(rng *rand.Rand) any { return tmFloorDiv(timeRandEdge(arrow.Second)(rng).(int64), 86400) }},
		{"d2", arrow.FixedWidthTypes.Date32, func(rng *rand.Rand) any { return tmFloorDiv(timeRandEdge(arrow.Second)(rng).(int64), 86400) }},
		{"k", arrow.PrimitiveTypes.Int64, func(rng *rand.Rand) any {
			if rng.IntN(20) == 0 {
				return []int64{math.MaxInt64, math.MinInt64, 1e9, -4e9, 3e16}[rng.IntN(5)]
			}
			return rng.Int64N(2001) - 1000
		}},
		{"k32", arrow.PrimitiveTypes.Int32, strIntGen(-50, 50)},
		{"ns", &arrow.TimestampType{Unit: arrow.Nanosecond}, func(rng *rand.Rand) any {
			if rng.IntN(10) == 0 {
				return []int64{math.MaxInt64 - 5, math.MinInt64 + 5}[rng.IntN(2)]
			}
			return timeRandEdge(arrow.Nanosecond)(rng)
		}},
	}
}

func TestTimeArithMatchesReference(t *testing.T) {
	ny := timeLoc(t, "America/New_York")
	const (
		a, b, c, z1, z2, d1, d2, k, k32, ns = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
	)
	addRef := func(u string, kc, vc int, unit arrow.TimeUnit, loc *time.Location, date bool) func([]any) (any, error) {
		return func(row []any) (any, error) {
			if row[kc] == nil || row[vc] == nil {
				return nil, nil
			}
			return timeRefAdd(u, row[kc].(int64), row[vc].(int64), unit, loc, date)
		}
	}
	diffRef := func(u string, ac, bc int, unit arrow.TimeUnit, loc *time.Location, scale int64) func([]any) (any, error) {
		return func(row []any) (any, error) {
			if row[ac] == nil || row[bc] == nil {
				return nil, nil
			}
			// scale turns dates (days) into seconds, and milliseconds into
			// microseconds for the mixed case.
			x, y := row[ac].(int64), row[bc].(int64)
			if scale < 0 {
				x *= -scale
			} else {
				x, y = x*scale, y*scale
			}
			return timeRefDiff(u, x, y, unit, loc)
		}
	}
	var cases []strCase
	for i, u := range []string{"MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"} {
		kc := k
		if i%2 == 1 {
			kc = k32
		}
		cases = append(cases,
			strCase{Call("timestampadd", Lit(u), Col([]string{"k", "k32"}[i%2]), Col("a")), addRef(u, kc, a, arrow.Millisecond, time.UTC, false)},
			strCase{Call("timestampadd", Lit(strings.ToLower(u)), Col("k"), Col("ns")), addRef(u, k, ns, arrow.Nanosecond, time.UTC, false)},
			strCase{Call("timestampdiff", Lit(u), Col("a"), Col("b")), diffRef(u, a, b, arrow.Millisecond, time.UTC, 1)},
			strCase{Call("timestampdiff", Lit(u), Col("ns"), Col("a")), func(row []any) (any, error) {
				if row[ns] == nil || row[a] == nil {
					return nil, nil
				}
				bb := new(big.Int).Mul(big.NewInt(row[a].(int64)), big.NewInt(1e6))
				if !bb.IsInt64() {
					return nil, errors.New("the cast overflows")
				}
				return timeRefDiff(u, row[ns].(int64), bb.Int64(), arrow.Nanosecond, time.UTC)
			}},
		)
		if u == "MILLISECOND" {
			continue // not for seconds and dates
		}
		cases = append(cases,
			strCase{Call("timestampadd", Lit(u), Col("k32"), Col("z1")), addRef(u, k32, z1, arrow.Second, ny, false)},
			strCase{Call("timestampdiff", Lit(u), Col("z1"), Col("z2")), diffRef(u, z1, z2, arrow.Second, ny, 1)},
			strCase{Call("timestampdiff", Lit(u), Col("d1"), Col("d2")), diffRef(u, d1, d2, arrow.Second, time.UTC, 86400)},
		)
		if timeArithUnits[u].fixed == 0 || u == "DAY" || u == "WEEK" {
			cases = append(cases, strCase{Call("timestampadd", Lit(u), Col("k"), Col("d1")), addRef(u, k, d1, arrow.Second, time.UTC, true)})
		}
	}
	// a timestamp in ms (UTC) against one in us: compared in us
	cases = append(cases,
		strCase{Call("timestampdiff", Lit("MONTH"), Col("a"), Col("c")), diffRef("MONTH", a, c, arrow.Microsecond, time.UTC, -1000)},
		strCase{Call("timestampdiff", Lit("HOUR"), Col("a"), Col("c")), diffRef("HOUR", a, c, arrow.Microsecond, time.UTC, -1000)},
		strCase{Call("timestampadd", Lit("DAY"), Lit(nil), Col("a")), func([]any) (any, error) { return nil, nil }},
		strCase{Call("timestampdiff", Lit("DAY"), Lit(nil), Col("a")), func([]any) (any, error) { return nil, nil }},
	)
	moreCheck(t, 61, timeArithCols(), cases)
}

// TestTimeMoreKnownValues pins Flink's documented answers and the
// quirks kept on purpose.
func TestTimeMoreKnownValues(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	ms := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05.999", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	cols := []strCol{{"t", &arrow.TimestampType{Unit: arrow.Millisecond}, nil}, {"s", arrow.BinaryTypes.String, nil}}
	for _, tc := range []struct {
		e    Expr
		t    string // column t
		s    string // column s
		want any
	}{
		{Call("timestampadd", Lit("MONTH"), Lit(1), Col("t")), "2024-01-31 10:00:00", "", ms("2024-02-29 10:00:00")},
		{Call("timestampadd", Lit("YEAR"), Lit(-1), Col("t")), "2024-02-29 00:00:00", "", ms("2023-02-28 00:00:00")},
		{Call("timestampdiff", Lit("MONTH"), Col("t"), Lit(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC))), "2024-01-31 00:00:00", "", int64(1)},
		{Call("timestampdiff", Lit("MONTH"), Lit(time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC)), Col("t")), "2024-01-01 10:00:00", "", int64(-2)},
		{Call("timestampdiff", Lit("MONTH"), Col("t"), Lit(time.Date(2024, 2, 1, 10, 0, 0, 0, time.UTC))), "2024-01-01 12:00:00", "", int64(0)},
		{Call("timestampdiff", Lit("DAY"), Col("t"), Lit(time.Date(2024, 1, 2, 9, 0, 0, 0, time.UTC))), "2024-01-03 10:00:00", "", int64(-1)},
		{Call("to_timestamp", Col("s")), "", "1999-9-10 05:20:10", ms("1999-09-10 05:20:10")},
		{Call("to_timestamp", Col("s"), Lit("yyyy-MM-dd")), "", "2023-02-30", ms("2023-02-28 00:00:00")},
		{Call("to_timestamp", Col("s"), Lit("MM-dd")), "", "02-30", nil},
		{Call("to_timestamp", Col("s"), Lit("yyyyMMddHHmmssSSS")), "", "20240102030405678", ms("2024-01-02 03:04:05.678")},
		{Call("to_timestamp", Col("s"), Lit("dd/MM/yyyy")), "", "garbage", nil},
		{Call("unix_timestamp", Col("s"), Lit("yyyy-MM-dd HH:mm:ss")), "", "1970-01-01 00:00:01.001", int64(1)},
		{Call("unix_timestamp", Col("s"), Lit("yyyy-MM-dd HH:mm:ss.SSS X")), "", "1970-01-01 08:00:01.001 +0800", int64(1)},
		{Call("unix_timestamp", Col("s"), Lit("yyyy-MM-dd")), "", "2024-13-01", ms("2025-01-01 00:00:00") / 1000},
		{Call("unix_timestamp", Col("s")), "", "not a date", int64(math.MinInt64)},
		{Call("unix_timestamp", Col("s"), Lit("yyyy-MM-dd HH:mm:ss.SSS")), "", "1969-12-31 23:59:59.500", int64(0)},
		{Call("from_unixtime", Lit(44)), "", "", "1970-01-01 00:00:44"},
		{Call("to_timestamp_ltz", Lit(int64(1593718838150)), Lit(3)), "", "", ms("2020-07-02 19:40:38.150")},
	} {
		cols[0].gen = func(*rand.Rand) any {
			if tc.t == "" {
				return int64(0)
			}
			return ms(tc.t)
		}
		cols[1].gen = func(*rand.Rand) any { return tc.s }
		rec, _ := strBuildBatch(t, mem, rand.New(rand.NewPCG(1, 1)), cols, 1, 0)
		prog, err := Compile(tc.e, rec.Schema())
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		got, err := prog.Eval(mem, rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		if g := strValue(got, 0); g != tc.want {
			t.Errorf("%s (t=%s, s=%q): got %#v, want %#v", tc.e, tc.t, tc.s, g, tc.want)
		}
		got.Release()
		rec.Release()
	}
}

func TestTimeMoreCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{Call("to_timestamp_ltz", Col("s")), "argument 1 of to_timestamp_ltz must be a number, got utf8"},
		{Call("to_timestamp_ltz", Col("i"), Lit(6)), "unsupported precision 6"},
		{Call("to_timestamp_ltz", Col("i"), Col("i")), "must be the constant 0 or 3"},
		{Call("to_timestamp", Col("i")), "argument 1 of to_timestamp must be a string, got int64"},
		{Call("to_timestamp", Col("s"), Col("s")), "the to_timestamp format (argument 2) must be a constant"},
		{Call("to_timestamp", Col("s"), Lit("yyyy-QQ")), "unsupported pattern letter 'Q'"},
		{Call("to_timestamp", Col("s"), Lit("hh:mm")), "h (hour 1-12) and a (AM/PM) go together"},
		{Call("unix_timestamp", Col("s"), Lit("yyyy yyyy")), "sets the field"},
		{Call("unix_timestamp", Col("s"), Lit("'open")), "unterminated quote"},
		{Call("unix_timestamp"), "unix_timestamp takes 1 to 2 arguments, got 0"},
		{Call("from_unixtime", Col("f")), "argument 1 of from_unixtime must be an integer, got float64"},
		{Call("from_unixtime", Col("i"), Lit("ddd")), "too many pattern letters"},
		{Call("timestampadd", Col("s"), Lit(1), Col("t")), "must be a constant unit name"},
		{Call("timestampadd", Lit("FORTNIGHT"), Lit(1), Col("t")), `does not support the unit "FORTNIGHT"`},
		{Call("timestampadd", Lit("HOUR"), Lit(1), Col("d")), `does not support the unit "HOUR"`},
		{Call("timestampadd", Lit("MILLISECOND"), Lit(1), Col("t")), `does not support the unit "MILLISECOND"`},
		{Call("timestampadd", Lit("DAY"), Col("f"), Col("t")), "argument 2 of timestampadd must be an integer, got float64"},
		{Call("timestampadd", Lit("DAY"), Lit(1), Col("s")), "argument 3 of timestampadd must be a timestamp or date, got utf8"},
		{Call("timestampadd", Lit("DAY"), Lit(1), Col("d64")), "must be a timestamp or date32"},
		{Call("timestampdiff", Lit("DAY"), Col("t"), Col("i")), "argument 3 of timestampdiff must be a timestamp or date, got int64"},
		{Call("timestampdiff", Lit("DOW"), Col("t"), Col("t")), `does not support the unit "DOW"`},
		{Call("timestampdiff", Lit("DAY"), Col("t")), "timestampdiff takes 3 arguments, got 2"},
	} {
		_, err := Compile(tc.e, schema)
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != -1 {
			t.Errorf("%s: want a compile error, got %v", tc.e, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.e.String()) {
			t.Errorf("%s: error %q does not name the expression or say %q", tc.e, err, tc.want)
		}
	}
}

func TestTimeMoreKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(62, 62))
	cols := append(timeArithCols()[:7], strCol{"k32", arrow.PrimitiveTypes.Int32, strIntGen(-50, 50)},
		timeParseCol("s", timeParsePatterns[0]), timeParseCol("x", timeParsePatterns[9]))
	rec, _ := strBuildBatch(t, mem, rng, cols, 4096, 0.1)
	defer rec.Release()
	for _, sel := range [][]int32{nil, strRandSel(rng, 4096)} {
		for _, e := range []Expr{
			Call("to_timestamp_ltz", Col("k32"), Lit(0)),
			Call("to_timestamp", Col("s")),
			Call("to_timestamp", Col("s"), Lit("yyyy-MM-dd HH:mm:ss")),
			Call("unix_timestamp", Col("x"), Lit("yyyy-MM-dd HH:mm:ss XXX")),
			Call("unix_timestamp", Col("s"), Lit("dd MMM yyyy hh:mm a")),
			Call("from_unixtime", Col("k32"), Lit("yyyy-MM-dd HH:mm:ss")),
			Call("timestampadd", Lit("HOUR"), Col("k32"), Col("a")),
			Call("timestampadd", Lit("MONTH"), Col("k32"), Col("z1")),
			Call("timestampadd", Lit("YEAR"), Col("k32"), Col("d1")),
			Call("timestampdiff", Lit("MINUTE"), Col("a"), Col("b")),
			Call("timestampdiff", Lit("MONTH"), Col("z1"), Col("z2")),
			Call("timestampdiff", Lit("QUARTER"), Col("d1"), Col("a")),
		} {
			strAllocRun(t, rec, sel, e)
		}
	}
}
