package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCompareSmall runs the whole comparison on small data: every file
// must read back as the generated rows with both libraries, and Arrow
// memory must be released.
func TestCompareSmall(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := config{rows: 30_000, batch: 1000, rowGroup: 4096, reps: 1, seed: 3, dir: t.TempDir(), mem: mem}
	var out bytes.Buffer
	results, err := run(cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(results) != len(variants) {
		t.Fatalf("%d results, want %d", len(results), len(variants))
	}
	for _, r := range results {
		if r.write <= 0 || r.read <= 0 || r.fileBytes <= 0 {
			t.Errorf("%s: %+v", r.name, r)
		}
	}
	if !strings.Contains(out.String(), "cross-check ok") {
		t.Errorf("report lacks the cross-check line:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// TestFingerprintDetectsChange checks that the cross-check can fail: a
// file of other rows has another fingerprint.
func TestFingerprintDetectsChange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	a := generate(mem, 1, 5000, 1000)
	defer a.release()
	b := generate(mem, 2, 5000, 1000)
	defer b.release()
	path := t.TempDir() + "/b.parquet"
	if err := writePqarrow(b, path, 4096, false, mem); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(string, memory.Allocator) (fingerprint, error){"pqarrow": readPqarrow, "parquet-go": readPqgoColumns} {
		got, err := read(path, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got != b.want {
			t.Errorf("%s: read %+v, want %+v", name, got, b.want)
		}
		if got == a.want {
			t.Errorf("%s: rows of seed 2 have the fingerprint of seed 1", name)
		}
	}
}
