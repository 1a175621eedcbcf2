package print_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	printsink "github.com/weirflow/weir/sinks/print"
	"github.com/weirflow/weir/sources/datagen"
)

var ctx = context.Background()

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

const timeLayout = "2006-01-02 15:04:05.000"

// sample is one row of the hand-built record; nil pointers are nulls.
type sample struct {
	i    int64
	f    float64
	s    string
	b    bool
	n    *int64
	tsMS int64
}

func ptr(v int64) *int64 { return &v }

var samples = []sample{
	{i: 1, f: 0.5, s: "alpha", b: true, n: nil, tsMS: 0},
	{i: -42, f: 1e21, s: "", b: false, n: ptr(7), tsMS: 1767225600123}, // 2026-01-01 00:00:00.123
	{i: math.MaxInt64, f: -0.1, s: "with, comma", b: true, n: nil, tsMS: -1},
	{i: 0, f: math.Inf(-1), s: "ünïcode", b: false, n: ptr(-3), tsMS: 951782400999}, // 2000-02-29 00:00:00.999
	{i: 5, f: 1e20, s: "big", b: true, n: ptr(0), tsMS: 1},
	{i: 6, f: 2.5e-7, s: "tiny", b: false, n: nil, tsMS: 2},
}

var sampleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}},
}, nil)

func sampleRecord(mem memory.Allocator) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, sampleSchema)
	defer bld.Release()
	for _, r := range samples {
		bld.Field(0).(*array.Int64Builder).Append(r.i)
		bld.Field(1).(*array.Float64Builder).Append(r.f)
		bld.Field(2).(*array.StringBuilder).Append(r.s)
		bld.Field(3).(*array.BooleanBuilder).Append(r.b)
		if r.n == nil {
			bld.Field(4).AppendNull()
		} else {
			bld.Field(4).(*array.Int64Builder).Append(*r.n)
		}
		bld.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.tsMS))
	}
	return bld.NewRecordBatch()
}

// formatFloat is AppendValue's documented float form: the shortest exact
// decimal between 1e-6 and 1e21 (and for zero), exponent notation beyond.
func formatFloat(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// line is the oracle: the line the sink must print for r, formatted from
// the Go values directly.
func (r sample) line(prefix string) string {
	n := "null"
	if r.n != nil {
		n = strconv.FormatInt(*r.n, 10)
	}
	return prefix + "+I[" + strings.Join([]string{
		strconv.FormatInt(r.i, 10),
		formatFloat(r.f),
		r.s,
		strconv.FormatBool(r.b),
		n,
		time.UnixMilli(r.tsMS).UTC().Format(timeLayout),
	}, ", ") + "]\n"
}

func TestLineFormat(t *testing.T) {
	cases := []struct {
		prefix                string
		parallelism, subtask  int
		wantPrefix            string
		selection, wantedRows []int32
	}{
		{prefix: "", parallelism: 1, subtask: 0, wantPrefix: ""},
		{prefix: "out", parallelism: 1, subtask: 0, wantPrefix: "out "},
		{prefix: "", parallelism: 3, subtask: 2, wantPrefix: "3> "},
		{prefix: "out", parallelism: 2, subtask: 0, wantPrefix: "out 1> "},
		{prefix: "out", parallelism: 2, subtask: 1, wantPrefix: "out 2> ", selection: []int32{1, 3}},
		{prefix: "", parallelism: 1, subtask: 0, wantPrefix: "", selection: []int32{2}},
		{prefix: "x", parallelism: 4, subtask: 3, wantPrefix: "x 4> ", selection: []int32{}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q/%d-of-%d/sel=%v", c.prefix, c.subtask+1, c.parallelism, c.selection), func(t *testing.T) {
			mem := newMem(t)
			var buf bytes.Buffer
			s := printsink.New(printsink.Options{Writer: &buf, Prefix: c.prefix})
			w, err := s.Open(&arrowflow.TaskInfo{Subtask: c.subtask, Parallelism: c.parallelism})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Write(ctx, arrowflow.Batch{Record: sampleRecord(mem), Sel: c.selection}); err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for i, r := range samples {
				if c.selection == nil || slices.Contains(c.selection, int32(i)) {
					want.WriteString(r.line(c.wantPrefix))
				}
			}
			if got := buf.String(); got != want.String() {
				t.Fatalf("printed\n%s\nwant\n%s", got, want.String())
			}
			// Printing is not transactional: the protocol calls succeed
			// and leave the output as it is.
			p, err := w.PreCommit(ctx, 1)
			if err != nil || p != nil {
				t.Fatalf("pre-commit: payload %x, error %v", p, err)
			}
			if err := s.Commit(ctx, 1, [][]byte{p}); err != nil {
				t.Fatal(err)
			}
			if err := s.Abort(ctx, 2, [][]byte{nil}); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != want.String() {
				t.Fatalf("output changed after commit and abort:\n%s", got)
			}
		})
	}
}

// Writing a batch again appends the same lines: the writer's reused buffer
// holds nothing of the previous batch.
func TestConsecutiveBatchesDoNotShareLines(t *testing.T) {
	mem := newMem(t)
	var buf bytes.Buffer
	s := printsink.New(printsink.Options{Writer: &buf})
	w, err := s.Open(&arrowflow.TaskInfo{Subtask: 0, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var want strings.Builder
	for _, sel := range [][]int32{nil, {0}, {1, 2, 3}, {}, {3}} {
		if err := w.Write(ctx, arrowflow.Batch{Record: sampleRecord(mem), Sel: sel}); err != nil {
			t.Fatal(err)
		}
		for i, r := range samples {
			if sel == nil || slices.Contains(sel, int32(i)) {
				want.WriteString(r.line(""))
			}
		}
	}
	if buf.String() != want.String() {
		t.Fatalf("printed\n%s\nwant\n%s", buf.String(), want.String())
	}
}

func TestAppendValue(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	cases := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{int64(-9223372036854775808), "-9223372036854775808"},
		{uint64(18446744073709551615), "18446744073709551615"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{-1e21, "-1e+21"},
		{1e20, "100000000000000000000"},
		{123456789.25, "123456789.25"},
		{1e-6, "0.000001"},
		{-2.5e-6, "-0.0000025"},
		{1e-7, "1e-07"},
		{5e-324, "5e-324"},
		{1.0, "1"},
		{math.Copysign(0, -1), "-0"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "+Inf"},
		{true, "true"},
		{"as is, even \"quoted\"", "as is, even \"quoted\""},
		{[]byte{0x00, 0xab, 0xff}, "00abff"},
		{[]byte{}, ""},
		{time.Date(2026, 3, 4, 5, 6, 7, 891_999_999, time.UTC), "2026-03-04 05:06:07.891"},
		{time.Date(2026, 3, 4, 6, 6, 7, 0, paris), "2026-03-04 05:06:07.000"},
		{time.Unix(0, -1).UTC(), "1969-12-31 23:59:59.999"},
		// Anything else: fmt's form, trimmed.
		{struct{ A, B int }{1, 2}, "{1 2}"},
		{"  spaces kept  ", "  spaces kept  "},
	}
	for _, c := range cases {
		if got := string(printsink.AppendValue(nil, c.v)); got != c.want {
			t.Errorf("AppendValue(%#v) = %q, want %q", c.v, got, c.want)
		}
		// It appends: what dst held stays in front.
		if got := string(printsink.AppendValue([]byte("x="), c.v)); got != "x="+c.want {
			t.Errorf("AppendValue(\"x=\", %#v) = %q", c.v, got)
		}
	}
}

// concurrencyCheckingWriter appends to a bytes.Buffer without a lock of
// its own, relying on the sink to serialise writes, and counts the writes
// that overlapped another one (yielding inside Write to give overlaps a
// chance to happen if the sink let them).
type concurrencyCheckingWriter struct {
	inFlight atomic.Int32
	overlaps atomic.Int32
	buf      bytes.Buffer
	writes   []string // one per Write call
}

func (w *concurrencyCheckingWriter) Write(p []byte) (int, error) {
	if w.inFlight.Add(1) > 1 {
		w.overlaps.Add(1)
	}
	defer w.inFlight.Add(-1)
	runtime.Gosched()
	w.buf.Write(p)
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// Three subtasks print into one writer. Every line must be whole and
// well-formed, each Write must hold the lines of a single subtask (one
// batch), and the multiset of lines must be the oracle's: datagen's rows
// formatted directly, with the subtask that reads each row's split.
func TestConcurrentSubtasksPrintWholeLines(t *testing.T) {
	mem := newMem(t)
	const rows, parallelism = 6000, 3
	src, err := datagen.New(datagen.Config{Seed: 3, Rows: rows, BatchSize: 37, Splits: 7})
	if err != nil {
		t.Fatal(err)
	}
	out := &concurrencyCheckingWriter{}
	g := arrowflow.NewGraph("print-concurrent")
	gen := g.Source("gen", src, parallelism)
	g.Sink("print", printsink.New(printsink.Options{Writer: out, Prefix: "p"}), parallelism, arrowflow.Forward(gen))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := out.overlaps.Load(); n != 0 {
		t.Fatalf("%d writes overlapped another one", n)
	}

	// Oracle. Default fields: id, key, category, price (nullable), ts[ms].
	// Row r is in split r mod Splits, which subtask (split mod
	// parallelism) reads.
	splits := int64(src.Config().Splits)
	want := make([]string, 0, rows)
	for r := int64(0); r < rows; r++ {
		v := src.Row(r)
		price := "null"
		if v[3] != nil {
			price = formatFloat(v[3].(float64))
		}
		want = append(want, fmt.Sprintf("p %d> +I[%d, %d, %s, %s, %s]",
			r%splits%parallelism+1, v[0].(int64), v[1].(int64), v[2].(string), price,
			time.UnixMilli(int64(v[4].(arrow.Timestamp))).UTC().Format(timeLayout)))
	}

	lineRE := regexp.MustCompile(`^p ([1-3])> \+I\[-?\d+, -?\d+, [a-z]+, (null|[0-9.e+]+), \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\]$`)
	for i, w := range out.writes {
		if w == "" {
			continue
		}
		if !strings.HasSuffix(w, "\n") {
			t.Fatalf("write %d does not end a line: %q", i, w)
		}
		var subtask string
		for _, l := range strings.Split(strings.TrimSuffix(w, "\n"), "\n") {
			m := lineRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("write %d: malformed line %q", i, l)
			}
			if subtask == "" {
				subtask = m[1]
			} else if m[1] != subtask {
				t.Fatalf("write %d mixes lines of subtasks %s and %s", i, subtask, m[1])
			}
		}
	}
	got := strings.Split(strings.TrimSuffix(out.buf.String(), "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != len(want) {
		t.Fatalf("%d lines printed, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line multisets differ: got %q where the oracle has %q", got[i], want[i])
		}
	}
}

// A changelog batch prints each row with its kind, as Flink's print
// connector does; the kinds are indexed by physical row, not by selection.
func TestChangelogRowKinds(t *testing.T) {
	mem := newMem(t)
	var buf bytes.Buffer
	s := printsink.New(printsink.Options{Writer: &buf})
	w, err := s.Open(&arrowflow.TaskInfo{Subtask: 0, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	kinds := []arrowflow.RowKind{arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete, arrowflow.Insert, arrowflow.Delete}
	sel := []int32{1, 2, 3, 5}
	if err := w.Write(ctx, arrowflow.Batch{Record: sampleRecord(mem), Sel: sel, Kinds: kinds}); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, i := range sel {
		want.WriteString(kinds[i].String() + strings.TrimPrefix(samples[i].line(""), "+I"))
	}
	if got := buf.String(); got != want.String() {
		t.Fatalf("printed\n%s\nwant\n%s", got, want.String())
	}
}
