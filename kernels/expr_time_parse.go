package kernels

import "fmt"

// Parsing date-time text with a Java pattern, for to_timestamp (Flink
// parses with java.time's DateTimeFormatter) and unix_timestamp (Flink
// parses with java.text's SimpleDateFormat, which is lenient). A pattern
// compiles once into a list of fields; parsing a row allocates nothing.

type tpKind uint8

const (
	tpLiteral  tpKind = iota
	tpYear            // y
	tpMonth           // M: width 1-2 a number, 3 Jan, 4 January
	tpDay             // d
	tpHour24          // H
	tpHour12          // h, 1-12 (needs a)
	tpMinute          // m
	tpSecond          // s
	tpFraction        // S
	tpAmPm            // a
	tpWeekday         // E: width 1-3 Mon, 4 Monday
	tpOffset          // X, XX, XXX (Z allowed) or Z (+HHMM)
)

type tpField struct {
	kind  tpKind
	width int
	lit   []byte
	z     bool // tpOffset: the letter was Z
	// numeric fields: the digits to read, and how many digits the fixed-
	// width numeric fields right after this one need (java.time's
	// adjacent value parsing).
	minDigits, maxDigits, reserved int
}

// tmParser is a compiled parse pattern. lenient selects SimpleDateFormat's
// rules (see parse).
type tmParser struct {
	fields  []tpField
	lenient bool
	hour12  bool // the hour is h with a
}

// tpLetters maps the pattern letters parsing supports to their field and
// the largest repetition allowed.
var tpLetters = map[byte]tmLetter[tpKind]{
	'y': {tpYear, 19}, 'M': {tpMonth, 4}, 'd': {tpDay, 2}, 'H': {tpHour24, 2}, 'h': {tpHour12, 2},
	'm': {tpMinute, 2}, 's': {tpSecond, 2}, 'S': {tpFraction, 9}, 'a': {tpAmPm, 1}, 'E': {tpWeekday, 4},
	'X': {tpOffset, 3}, 'Z': {tpOffset, 3},
}

func (f *tpField) numeric() bool {
	switch f.kind {
	case tpLiteral, tpAmPm, tpWeekday, tpOffset:
		return false
	case tpMonth:
		return f.width <= 2
	}
	return true
}

// compileTmParser compiles a pattern in the syntax of date_format (the
// same quoting; letters y M d H h m s S a E, and X or Z for a zone offset).
func compileTmParser(p string, lenient bool) (*tmParser, error) {
	t := &tmParser{lenient: lenient}
	seen := map[tpKind]bool{}
	for tok, err := range tmPatternTokens(p) {
		if err != nil {
			return nil, err
		}
		if tok.letter == 0 {
			t.fields = append(t.fields, tpField{kind: tpLiteral, lit: tok.lit})
			continue
		}
		kind, err := tmLetterKind(tpLetters, &tok, p, "supported for parsing: y M d H h m s S a E X Z")
		if err != nil {
			return nil, err
		}
		if seen[kind] {
			return nil, fmt.Errorf("pattern %q sets the field of %q twice", p, tok.run())
		}
		seen[kind] = true
		t.fields = append(t.fields, tpField{kind: kind, width: tok.count, z: tok.letter == 'Z'})
	}
	if seen[tpHour12] != seen[tpAmPm] {
		return nil, fmt.Errorf("pattern %q: h (hour 1-12) and a (AM/PM) go together", p)
	}
	if seen[tpHour12] && seen[tpHour24] {
		return nil, fmt.Errorf("pattern %q sets the hour with both H and h", p)
	}
	t.hour12 = seen[tpHour12]
	t.setWidths()
	return t, nil
}

// setWidths fixes how many digits each numeric field reads.
//
// java.time (ofPattern): a letter repeated twice reads exactly two digits
// (yy a two-digit year of 2000-2099), once 1 to 19 digits, yyy and more
// that many to 19 digits, S..S exactly as many digits as letters. A
// variable-width field followed directly by fixed-width numeric fields
// leaves them their digits (yyyyMMdd reads 20240102 as 2024, 01, 02).
//
// SimpleDateFormat: a numeric field followed directly by another field
// reads exactly as many digits as letters; otherwise as many digits as
// there are.
func (t *tmParser) setWidths() {
	for i := range t.fields {
		f := &t.fields[i]
		if !f.numeric() {
			continue
		}
		nextField := i+1 < len(t.fields) && t.fields[i+1].kind != tpLiteral
		switch {
		case t.lenient && nextField:
			f.minDigits, f.maxDigits = f.width, f.width
		case t.lenient:
			f.minDigits, f.maxDigits = 1, 19
		case f.kind == tpFraction || f.width == 2:
			f.minDigits, f.maxDigits = f.width, f.width
		case f.kind == tpYear && f.width >= 3:
			f.minDigits, f.maxDigits = f.width, 19
		default:
			f.minDigits, f.maxDigits = 1, 19
		}
	}
	if t.lenient {
		return
	}
	for i := range t.fields {
		f := &t.fields[i]
		if !f.numeric() || f.minDigits == f.maxDigits {
			continue
		}
		for j := i + 1; j < len(t.fields); j++ {
			g := &t.fields[j]
			if !g.numeric() || g.minDigits != g.maxDigits {
				break
			}
			f.reserved += g.minDigits
		}
	}
}

// tmParsed are the fields read from one text. has* report which were
// present; absent ones default to 1970-01-01 00:00:00.
type tmParsed struct {
	year                 int64
	month, day           int64
	hour, minute, second int64
	nanos                int64
	pm                   bool
	weekday              int // 1 = Monday .. 7, 0 when absent
	offset               int64
	hasYear, hasOffset   bool
	hasMonth, hasDay     bool
}

// parse reads b by the pattern. The result is the local wall clock
// seconds since 1970-01-01 00:00 and the nanoseconds within the second.
//
// java.time rules (lenient unset), as Flink's TO_TIMESTAMP: the whole
// text must match; text fields (Jan, Mon, AM) match case-sensitively;
// values are range-checked (month 1-12, day 1-31, hour 0-23, minute and
// second 0-59, h 1-12), a day beyond the month's end becomes its last day
// when the year is given (java.time's SMART resolution: 2023-02-30 is
// 2023-02-28) and is an error otherwise; a weekday must agree with the
// date. An offset (X, Z) is read and ignored: the result is the wall
// clock written, as Flink's TO_TIMESTAMP returns.
//
// SimpleDateFormat rules (lenient set), as Flink's UNIX_TIMESTAMP: text
// after the pattern is ignored; text fields match case-insensitively and
// MMM and MMMM (E and EEEE) both accept short and full names; S counts
// milliseconds (S, SS or SSS all read a number of milliseconds); values
// out of range carry over (month 13 is January of the next year, hour 24
// the next day's 00); the weekday is not checked; an offset is applied
// (the result is then UTC).
func (t *tmParser) parse(b []byte) (ls, nanos int64, ok bool) {
	var p tmParsed
	i := 0
	for k := range t.fields {
		f := &t.fields[k]
		switch f.kind {
		case tpLiteral:
			if len(b)-i < len(f.lit) || string(b[i:i+len(f.lit)]) != string(f.lit) {
				return 0, 0, false
			}
			i += len(f.lit)
			continue
		case tpAmPm:
			j, v := tpMatchName(b[i:], tpAmPmNames[:], t.lenient, 0)
			if j == 0 {
				return 0, 0, false
			}
			p.pm = v == 1
			i += j
			continue
		case tpMonth:
			if f.width >= 3 {
				j, v := tpMatchName(b[i:], tmMonthNames[:], t.lenient, f.width)
				if j == 0 {
					return 0, 0, false
				}
				p.month, p.hasMonth = int64(v+1), true
				i += j
				continue
			}
		case tpWeekday:
			j, v := tpMatchName(b[i:], tmDayNames[:], t.lenient, f.width)
			if j == 0 {
				return 0, 0, false
			}
			p.weekday = v + 1
			i += j
			continue
		case tpOffset:
			j, off := tpParseOffset(b[i:], f)
			if j == 0 {
				return 0, 0, false
			}
			p.offset, p.hasOffset = off, true
			i += j
			continue
		}
		// a number
		avail := 0
		for i+avail < len(b) && avail < f.maxDigits+f.reserved && b[i+avail] >= '0' && b[i+avail] <= '9' {
			avail++
		}
		take := min(avail, f.maxDigits)
		if f.reserved > 0 {
			take = max(f.minDigits, avail-f.reserved)
		}
		if take < f.minDigits || take > avail {
			return 0, 0, false
		}
		var v int64
		for _, c := range b[i : i+take] {
			v = v*10 + int64(c-'0')
			if v > tpMaxNumber {
				return 0, 0, false
			}
		}
		i += take
		switch f.kind {
		case tpYear:
			if f.width == 2 && take == 2 {
				v += 2000
			}
			p.year, p.hasYear = v, true
		case tpMonth:
			p.month, p.hasMonth = v, true
		case tpDay:
			p.day, p.hasDay = v, true
		case tpHour24, tpHour12:
			p.hour = v
		case tpMinute:
			p.minute = v
		case tpSecond:
			p.second = v
		case tpFraction:
			if t.lenient {
				p.nanos = v * 1e6 // milliseconds, possibly more than a second
			} else {
				p.nanos = v * tmPow10(9-take)
			}
		}
	}
	if i != len(b) && !t.lenient {
		return 0, 0, false
	}
	if t.lenient {
		return t.resolveLenient(&p)
	}
	return t.resolveStrict(&p)
}

var tpAmPmNames = [...]string{"AM", "PM"}

// tpMatchName matches one of names at the start of b and returns the
// length matched (0: none) and the index of the name. width 4 (and 0, for
// AM/PM) wants the full name, 1 to 3 the short one (its first three
// letters); lenient matches either, case-insensitively, the full name
// first.
func tpMatchName(b []byte, names []string, lenient bool, width int) (int, int) {
	wantFull := lenient || width == 4 || width == 0
	wantShort := lenient || !(width == 4 || width == 0)
	for k, name := range names {
		if wantFull && tpHasPrefix(b, name, lenient) {
			return len(name), k
		}
		if wantShort && len(name) >= 3 && tpHasPrefix(b, name[:3], lenient) {
			return 3, k
		}
	}
	return 0, 0
}

// tpHasPrefix reports whether b starts with s (ASCII case folded when
// foldCase is set).
func tpHasPrefix(b []byte, s string, foldCase bool) bool {
	if len(b) < len(s) {
		return false
	}
	for i := range len(s) {
		x, y := b[i], s[i]
		if foldCase {
			x, y = asciiLower[x], asciiLower[y]
		}
		if x != y {
			return false
		}
	}
	return true
}

// tpParseOffset reads a zone offset: Z (for X), or a sign with hours and
// minutes (+HH, +HHMM or +HH:MM as the field allows). It returns the bytes
// read (0 when none match) and the offset in seconds east of UTC.
func tpParseOffset(b []byte, f *tpField) (int, int64) {
	if !f.z && len(b) > 0 && b[0] == 'Z' {
		return 1, 0
	}
	if len(b) < 3 || (b[0] != '+' && b[0] != '-') {
		return 0, 0
	}
	two := func(s []byte) (int64, bool) {
		if len(s) < 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
			return 0, false
		}
		return int64(s[0]-'0')*10 + int64(s[1]-'0'), true
	}
	h, ok := two(b[1:])
	if !ok || h > 23 {
		return 0, 0
	}
	n, m := 3, int64(0)
	switch {
	case f.z || f.width == 2: // +HHMM
		if m, ok = two(b[3:]); !ok {
			return 0, 0
		}
		n = 5
	case f.width == 3: // +HH:MM
		if len(b) < 6 || b[3] != ':' {
			return 0, 0
		}
		if m, ok = two(b[4:]); !ok {
			return 0, 0
		}
		n = 6
	default: // X: +HH or +HHMM
		if mm, ok2 := two(b[3:]); ok2 {
			m, n = mm, 5
		}
	}
	if m > 59 {
		return 0, 0
	}
	off := h*3600 + m*60
	if b[0] == '-' {
		off = -off
	}
	return n, off
}

// tpDefaults fills the fields that were absent.
func tpDefaults(p *tmParsed) {
	if !p.hasYear {
		p.year = 1970
	}
	if !p.hasMonth {
		p.month = 1
	}
	if !p.hasDay {
		p.day = 1
	}
}

// tpMaxNumber is the largest number a field may hold (java.time's
// largest year of era; Java's calendars hold int fields). It keeps the
// arithmetic below far from overflow.
const tpMaxNumber = 999_999_999

func (t *tmParser) resolveStrict(p *tmParsed) (ls, nanos int64, ok bool) {
	tpDefaults(p)
	if p.hasYear && p.year < 1 { // the year of era
		return 0, 0, false
	}
	if p.month < 1 || p.month > 12 || p.day < 1 || p.day > 31 ||
		p.minute > 59 || p.second > 59 {
		return 0, 0, false
	}
	hour := p.hour
	if t.hour12 {
		if hour < 1 || hour > 12 {
			return 0, 0, false
		}
		hour %= 12
		if p.pm {
			hour += 12
		}
	} else if hour > 23 {
		return 0, 0, false
	}
	first := tmDays(p.year, int(p.month), 1)
	monthLen := tmDays(p.year, int(p.month)+1, 1) - first
	day := p.day
	if day > monthLen {
		if !p.hasYear {
			return 0, 0, false
		}
		day = monthLen // SMART resolution
	}
	days := first + day - 1
	if p.weekday != 0 && p.hasYear && p.hasMonth && p.hasDay && tmISOWeekday(days) != p.weekday {
		return 0, 0, false
	}
	return days*secondsPerDay + hour*3600 + p.minute*60 + p.second, p.nanos, true
}

func (t *tmParser) resolveLenient(p *tmParsed) (ls, nanos int64, ok bool) {
	tpDefaults(p)
	hour := p.hour
	if t.hour12 {
		hour %= 12 // SimpleDateFormat reads h 12 as 0 as well
		if p.pm {
			hour += 12
		}
	}
	days := tmDays(p.year, int(p.month), 1) + p.day - 1 // tmDays carries months over
	ls = days*secondsPerDay + hour*3600 + p.minute*60 + p.second + p.nanos/1e9
	if p.hasOffset {
		ls -= p.offset
	}
	return ls, p.nanos % 1e9, true
}
