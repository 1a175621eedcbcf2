package format

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// options reads a Config's Options, remembering which were read so that
// the rest can be reported as unknown.
type options struct {
	format string
	m      map[string]string
	used   map[string]bool
}

func newOptions(format string, m map[string]string) *options {
	return &options{format: format, m: m, used: make(map[string]bool)}
}

// get returns the option's value and whether it is set.
func (o *options) get(name string) (string, bool) {
	o.used[name] = true
	v, ok := o.m[name]
	return v, ok
}

func (o *options) str(name, def string) string {
	if v, ok := o.get(name); ok {
		return v
	}
	return def
}

func (o *options) boolean(name string, def bool) (bool, error) {
	v, ok := o.get(name)
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%s: option %s: %q is not true or false", o.format, name, v)
	}
	return b, nil
}

// char reads a one-character option; Java-style escapes \t and \\ and a
// Unicode escape \uXXXX are accepted as Flink's DDL writes them.
func (o *options) char(name string, def byte) (byte, bool, error) {
	v, ok := o.get(name)
	if !ok {
		return def, false, nil
	}
	switch {
	case v == `\t`:
		v = "\t"
	case v == `\\`:
		v = `\`
	case len(v) == 6 && strings.HasPrefix(v, `\u`):
		if r, err := strconv.ParseUint(v[2:], 16, 16); err == nil {
			v = string(rune(r))
		}
	}
	if len(v) != 1 || v[0] >= utf8.RuneSelf {
		return 0, false, fmt.Errorf("%s: option %s: %q must be one ASCII character", o.format, name, v)
	}
	return v[0], true, nil
}

// reject fails for an option the format knows but weir deliberately does
// not take, saying why.
func (o *options) reject(name, why string) error {
	if _, ok := o.get(name); ok {
		return fmt.Errorf("%s: option %s is not supported: %s", o.format, name, why)
	}
	return nil
}

// unknown fails naming the options that were never read.
func (o *options) unknown() error {
	var names []string
	for k := range o.m {
		if !o.used[k] {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return fmt.Errorf("%s: unknown option %s", o.format, strings.Join(names, ", "))
}
