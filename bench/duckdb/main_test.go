package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCompareSmall runs the whole comparison on small data and checks that
// the cross-check passes and the report is printed.
func TestCompareSmall(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := config{rows: 100_000, keys: []int64{10, 1000}, layouts: []string{"dense", "sparse"}, batch: 8192, reps: 1, seed: 7, mem: mem}
	var out bytes.Buffer
	results, err := run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(results) != 4 {
		t.Fatalf("got %d results, want 2 key counts x 2 layouts", len(results))
	}
	for i, r := range results {
		if r.Keys != cfg.keys[i/2] || r.Layout != cfg.layouts[i%2] || r.Rows != cfg.rows || r.CountTotal != cfg.rows {
			t.Errorf("result %d: %+v", i, r)
		}
		// 100k uniform rows hit every one of 10 or 1000 keys.
		if r.Groups != r.Keys {
			t.Errorf("keys=%d: %d groups, want %d", r.Keys, r.Groups, r.Keys)
		}
		if r.DuckDBRowsSec <= 0 || r.WeirRowsSec <= 0 || r.Ratio <= 0 {
			t.Errorf("keys=%d: rates not positive: %+v", r.Keys, r)
		}
	}
	if !strings.Contains(out.String(), "cross-check ok") {
		t.Errorf("report lacks the cross-check line:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// TestCompareJSON checks that -json prints one object per key cardinality.
func TestCompareJSON(t *testing.T) {
	cfg := config{rows: 20_000, keys: []int64{5, 50}, layouts: []string{"dense"}, batch: 3000, reps: 2, seed: 1, json: true}
	var out bytes.Buffer
	if _, err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"keys":5,`) || !strings.HasPrefix(lines[1], `{"keys":50,`) {
		t.Errorf("want two JSON lines, got:\n%s", out.String())
	}
}

// TestCrossCheckRejects checks that a disagreement between the engines, or
// with the generator, is reported.
func TestCrossCheckRejects(t *testing.T) {
	want := totals{sum: 100, count: 10}
	good := totals{groups: 3, sum: 100, count: 10}
	if err := crossCheck(good, good, want, 5); err != nil {
		t.Fatalf("agreeing totals rejected: %v", err)
	}
	for _, c := range []struct {
		name       string
		duck, weir totals
	}{
		{"groups differ", good, totals{groups: 4, sum: 100, count: 10}},
		{"sums differ", good, totals{groups: 3, sum: 99, count: 10}},
		{"counts differ", good, totals{groups: 3, sum: 100, count: 11}},
		{"both wrong sum", totals{groups: 3, sum: 1, count: 10}, totals{groups: 3, sum: 1, count: 10}},
		{"too many groups", totals{groups: 6, sum: 100, count: 10}, totals{groups: 6, sum: 100, count: 10}},
	} {
		if err := crossCheck(c.duck, c.weir, want, 5); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// TestGenerateDeterministic checks that the same seed gives the same data
// whatever the batch size, and that keys stay in range.
func TestGenerateDeterministic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	a := generate(mem, 3, 100, 10_000, 777, false)
	defer a.release()
	b := generate(mem, 3, 100, 10_000, 4096, true)
	defer b.release()
	if a.sum != b.sum || a.rows != b.rows || len(a.batches) != 13 || len(b.batches) != 3 {
		t.Fatalf("datasets differ: sum %d/%d rows %d/%d batches %d/%d", a.sum, b.sum, a.rows, b.rows, len(a.batches), len(b.batches))
	}
	for _, rec := range a.batches {
		if rec.NumRows() > 777 {
			t.Fatalf("batch of %d rows, want at most 777", rec.NumRows())
		}
		for _, k := range rec.Column(0).(*array.Int64).Int64Values() {
			if k < 0 || k >= 100 {
				t.Fatalf("key %d out of [0,100)", k)
			}
		}
	}
}
