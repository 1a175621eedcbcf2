package sql

import (
	"strings"
	"testing"
	"time"
)

func parseInterval(t *testing.T, src string) *IntervalLit {
	t.Helper()
	e, err := ParseExpr(src)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", src, err)
	}
	iv, ok := e.(*IntervalLit)
	if !ok {
		t.Fatalf("%q is a %T", src, e)
	}
	return iv
}

func TestIntervalDuration(t *testing.T) {
	tests := []struct {
		src  string
		want time.Duration
	}{
		{"INTERVAL '10' SECOND", 10 * time.Second},
		{"INTERVAL '10' SECONDS", 10 * time.Second},
		{"INTERVAL 10 SECOND", 10 * time.Second},
		{"INTERVAL '1.5' SECOND", 1500 * time.Millisecond},
		{"INTERVAL '.25' SECOND", 250 * time.Millisecond},
		{"INTERVAL '0.000000001' SECOND(1, 9)", time.Nanosecond},
		{"INTERVAL '2' SECOND(3)", 2 * time.Second},
		{"INTERVAL '250' MILLISECOND", 250 * time.Millisecond},
		{"INTERVAL '10' MINUTES", 10 * time.Minute},
		{"INTERVAL '3' HOUR", 3 * time.Hour},
		{"INTERVAL '2' DAYS", 48 * time.Hour},
		{"INTERVAL '1' WEEK", 7 * 24 * time.Hour},
		{"INTERVAL '1:30' MINUTE TO SECOND", 90 * time.Second},
		{"INTERVAL '1:30.5' MINUTE TO SECOND", 90500 * time.Millisecond},
		{"INTERVAL '2:15' HOUR TO MINUTE", 2*time.Hour + 15*time.Minute},
		{"INTERVAL '2:15:01' HOUR TO SECOND", 2*time.Hour + 15*time.Minute + time.Second},
		{"INTERVAL '1 2' DAY TO HOUR", 26 * time.Hour},
		{"INTERVAL '1 02:03' DAY TO MINUTE", 26*time.Hour + 3*time.Minute},
		{"INTERVAL '1 02:03:04.5' DAY(2) TO SECOND(3)", 26*time.Hour + 3*time.Minute + 4500*time.Millisecond},
		{"INTERVAL '-5' SECOND", -5 * time.Second},
		{"INTERVAL -'5' SECOND", -5 * time.Second},
		{"INTERVAL -'-5' SECOND", 5 * time.Second},
		{"INTERVAL ' +1:00 ' HOUR TO MINUTE", time.Hour},
		{"INTERVAL '100' HOUR", 100 * time.Hour},
	}
	for _, tt := range tests {
		iv := parseInterval(t, tt.src)
		got, err := iv.Duration()
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.src, got, err, tt.want)
		}
	}
}

func TestIntervalMonths(t *testing.T) {
	tests := []struct {
		src  string
		want int64
	}{
		{"INTERVAL '1' YEAR", 12},
		{"INTERVAL '2' YEARS", 24},
		{"INTERVAL '1-6' YEAR TO MONTH", 18},
		{"INTERVAL '7' MONTH", 7},
		{"INTERVAL '2' QUARTER", 6},
		{"INTERVAL -'1-1' YEAR TO MONTH", -13},
	}
	for _, tt := range tests {
		iv := parseInterval(t, tt.src)
		got, err := iv.Months()
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.src, got, err, tt.want)
		}
		if _, err := iv.Duration(); err == nil || !strings.Contains(err.Error(), "year-month") {
			t.Errorf("%s: Duration did not fail: %v", tt.src, err)
		}
	}
	if _, err := parseInterval(t, "INTERVAL '1' DAY").Months(); err == nil {
		t.Error("Months of a day-time interval did not fail")
	}
}

func TestIntervalErrors(t *testing.T) {
	// Malformed values are rejected when parsing, at the value.
	for _, src := range []string{
		"INTERVAL 'x' SECOND", "INTERVAL '' SECOND", "INTERVAL '1.5' MINUTE", "INTERVAL '1:60' MINUTE TO SECOND",
		"INTERVAL '1 24' DAY TO HOUR", "INTERVAL '1-12' YEAR TO MONTH", "INTERVAL '1:2' HOUR", "INTERVAL '1' DAY TO HOUR",
		"INTERVAL '1.1234567891' SECOND", "INTERVAL '-' SECOND", "INTERVAL '.' SECOND",
	} {
		_, err := ParseExpr(src)
		if err == nil {
			t.Errorf("%s: no error", src)
			continue
		}
		if e := err.(*Error); e.Pos != (Pos{1, 10}) {
			t.Errorf("%s: error at %v: %v", src, e.Pos, err)
		}
	}
	// Bad qualifiers are rejected at the unit.
	for _, src := range []string{"INTERVAL '1' SECOND TO MINUTE", "INTERVAL '1' MONTH TO DAY"} {
		if _, err := ParseExpr(src); err == nil || err.(*Error).Pos != (Pos{1, 14}) {
			t.Errorf("%s: %v", src, err)
		}
	}
	if _, err := ParseExpr("INTERVAL '1' DAY(2, 3)"); err == nil {
		t.Error("DAY(2, 3) took a fractional precision")
	}
	// Too long for a time.Duration.
	iv := parseInterval(t, "INTERVAL '300' YEAR")
	if _, err := iv.Months(); err != nil {
		t.Errorf("300 years in months: %v", err)
	}
	iv = parseInterval(t, "INTERVAL '200000' DAY")
	if _, err := iv.Duration(); err == nil {
		t.Error("200000 days fit a time.Duration")
	}
}

func TestIntervalQualifierString(t *testing.T) {
	q := IntervalQualifier{Start: UnitDay, StartPrecision: []int{2}, End: UnitSecond, EndPrecision: []int{3}}
	if got := q.String(); got != "DAY(2) TO SECOND(3)" {
		t.Errorf("got %s", got)
	}
	if !(IntervalQualifier{Start: UnitYear, End: UnitMonth}).YearMonth() || (IntervalQualifier{Start: UnitWeek}).YearMonth() {
		t.Error("YearMonth")
	}
}
