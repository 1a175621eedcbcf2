package sql

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	kafkasrc "github.com/weirflow/weir/sources/kafka"
)

// tableOptions is a table's WITH clause. Reading an option marks it used;
// options nobody read are reported as unknown (Flink fails on them too),
// naming the option's position.
type tableOptions struct {
	table string
	pos   Pos // the table's CREATE TABLE
	m     map[string]string
	at    map[string]Pos
	used  map[string]bool
}

func newTableOptions(table string, pos Pos, opts []*Option) (*tableOptions, error) {
	o := &tableOptions{table: table, pos: pos, m: map[string]string{}, at: map[string]Pos{}, used: map[string]bool{}}
	for _, op := range opts {
		if _, dup := o.m[op.Key]; dup {
			return nil, semErrorf(op.Pos, "table %s: option '%s' is given twice", table, op.Key)
		}
		o.m[op.Key], o.at[op.Key] = op.Value, op.Pos
	}
	if err := o.mapLegacyKeys(); err != nil {
		return nil, err
	}
	return o, nil
}

// posOf is where option key is written, or the table's position.
func (o *tableOptions) posOf(key string) Pos {
	if p, ok := o.at[key]; ok {
		return p
	}
	return o.pos
}

// errorf is an error about option key.
func (o *tableOptions) errorf(key, format string, args ...any) *Error {
	return semErrorf(o.posOf(key), "table %s: option '%s': %s", o.table, key, fmt.Sprintf(format, args...))
}

func (o *tableOptions) get(key string) (string, bool) {
	o.used[key] = true
	v, ok := o.m[key]
	return v, ok
}

func (o *tableOptions) str(key, def string) string {
	if v, ok := o.get(key); ok {
		return v
	}
	return def
}

// required returns a required option or an error naming it.
func (o *tableOptions) required(key string) (string, error) {
	v, ok := o.get(key)
	if !ok || strings.TrimSpace(v) == "" {
		return "", semErrorf(o.pos, "table %s: option '%s' is required", o.table, key)
	}
	return v, nil
}

func (o *tableOptions) boolean(key string, def bool) (bool, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, o.errorf(key, "%q is not true or false", v)
}

func (o *tableOptions) integer(key string, def int64) (int64, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, o.errorf(key, "%q is not an integer", v)
	}
	return n, nil
}

func (o *tableOptions) float(key string, def float64) (float64, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, o.errorf(key, "%q is not a number", v)
	}
	return f, nil
}

func (o *tableOptions) duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	d, err := parseFlinkDuration(v)
	if err != nil {
		return 0, o.errorf(key, "%v", err)
	}
	return d, nil
}

func (o *tableOptions) size(key string, def int64) (int64, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	n, err := parseMemorySize(v)
	if err != nil {
		return 0, o.errorf(key, "%v", err)
	}
	return n, nil
}

// oneOf returns the option's value, which must be one of values.
func (o *tableOptions) oneOf(key, def string, values ...string) (string, error) {
	v := o.str(key, def)
	if !slices.Contains(values, v) {
		return "", o.errorf(key, "%q is not one of %s", v, strings.Join(values, ", "))
	}
	return v, nil
}

// withPrefix returns the options under prefix (keys with the prefix
// removed when strip is set), marking them used.
func (o *tableOptions) withPrefix(prefix string, strip bool) map[string]string {
	out := map[string]string{}
	for k, v := range o.m {
		if strings.HasPrefix(k, prefix) {
			o.used[k] = true
			if strip {
				k = strings.TrimPrefix(k, prefix)
			}
			out[k] = v
		}
	}
	return out
}

// kafkaSecurity reads a Kafka table's security options, Kafka's client
// properties under 'properties.' (security.protocol, sasl.mechanism,
// sasl.jaas.config, ssl.*; see kafkasrc.SecurityProperties). Errors name
// the option and never quote its value.
func (o *tableOptions) kafkaSecurity() (kafkasrc.Security, error) {
	props := map[string]string{}
	for _, k := range kafkasrc.SecurityProperties {
		if v, ok := o.get("properties." + k); ok {
			props[k] = v
		}
	}
	sec, err := kafkasrc.ParseSecurity(props)
	if pe := (*kafkasrc.PropertyError)(nil); errors.As(err, &pe) {
		return sec, o.errorf("properties."+pe.Property, "%s", pe.Reason)
	}
	if err != nil {
		return sec, semErrorf(o.pos, "table %s: %v", o.table, err)
	}
	return sec, nil
}

// checkUnknown fails on the first option (in source order) no one read.
func (o *tableOptions) checkUnknown(connector string) error {
	var unknown []string
	for k := range o.m {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.SortFunc(unknown, func(a, b string) int {
		pa, pb := o.at[a], o.at[b]
		if pa.Line != pb.Line {
			return pa.Line - pb.Line
		}
		return pa.Col - pb.Col
	})
	var known []string
	for k := range o.used {
		known = append(known, k)
	}
	slices.Sort(known)
	return hinted(o.errorf(unknown[0], "the %s connector has no such option", connector),
		"it reads "+strings.Join(known, ", ")+" (see docs/sql.md)")
}

// parseFlinkDuration reads a duration as Flink's configuration writes
// them: a number and a unit (ms, s, sec, min, h, d, also spelt out, with
// or without a space), or a bare number of milliseconds.
func parseFlinkDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a duration (write e.g. '10 s', '500 ms', '1 min')", s)
	}
	var per time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		per = time.Millisecond
	case "us", "µs", "micro", "micros", "microsecond", "microseconds":
		per = time.Microsecond
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		per = time.Nanosecond
	case "s", "sec", "secs", "second", "seconds":
		per = time.Second
	case "m", "min", "mins", "minute", "minutes":
		per = time.Minute
	case "h", "hour", "hours":
		per = time.Hour
	case "d", "day", "days":
		per = 24 * time.Hour
	default:
		return 0, fmt.Errorf("%q: unknown time unit %q", s, unit)
	}
	return time.Duration(f * float64(per)), nil
}

// parseMemorySize reads a size as Flink writes them: a number and an
// optional unit (b, kb, mb, gb, tb, also k, m, g, t, kib, mib, ...),
// powers of 1024.
func parseMemorySize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (write e.g. '128 mb')", s)
	}
	shift := map[string]uint{"": 0, "b": 0, "bytes": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
		"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown size unit %q", s, unit)
	}
	return n << sh, nil
}
