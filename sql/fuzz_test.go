package sql

import (
	"errors"
	"testing"
)

// fuzzSeeds returns the inputs of the other tests, as seeds for FuzzParse.
func fuzzSeeds(t testing.TB) []string {
	var seeds []string
	for _, s := range nexmarkScripts(t) {
		seeds = append(seeds, s)
	}
	for _, c := range canonicalCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range statementCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range queryCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range exprCases {
		seeds = append(seeds, "SELECT "+c.src+" FROM t")
	}
	for _, c := range errorCases {
		seeds = append(seeds, c.src)
	}
	return seeds
}

// FuzzParse checks that Parse never panics, that its errors carry a
// position, and that a script that parses prints to canonical SQL which
// parses to the same tree and prints the same again.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			if !e.Pos.IsValid() || e.Msg == "" {
				t.Fatalf("error without a position or message: %#v", e)
			}
			_ = e.Error()
			return
		}
		out := Format(s)
		s2, err := Parse(out)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\ninput:  %q\noutput: %q", err, src, out)
		}
		if out2 := Format(s2); out2 != out {
			t.Fatalf("canonical form not stable:\ninput: %q\n1: %q\n2: %q", src, out, out2)
		}
		if d := diffIgnoringPos(s, s2); d != "" {
			t.Fatalf("tree changed by a round trip at %s\ninput:  %q\noutput: %q", d, src, out)
		}
	})
}
