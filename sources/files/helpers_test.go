package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/collect"
)

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

const testTimeout = 20 * time.Second

var ctx = context.Background()

// The events data set: every test's oracle. event(i) is the i-th row as
// arrowflow.ValueAt returns it (ints as int64, timestamps as UTC
// time.Time, nulls as nil); the files are written from these values by
// code that does not share the source's.

var eventStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// eventNames holds names that need quoting in CSV and escaping in JSON.
var eventNames = []string{"plain", `comma, inside`, `quote "q"`, "ünïcode", "tab\there", "x"}

func event(i int) []any {
	var name, price any
	if i%7 != 3 {
		name = eventNames[i%len(eventNames)]
	}
	if i%11 != 5 {
		price = float64(i%400) / 4
	}
	ts := eventStart.Add(time.Duration(i)*time.Second - time.Duration(i%5)*300*time.Millisecond)
	return []any{int64(i), name, price, ts, int64(i%50 - 25)}
}

func events(from, to int) [][]any {
	var out [][]any
	for i := from; i < to; i++ {
		out = append(out, event(i))
	}
	return out
}

// eventSchema declares the events' columns.
var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// eventRecord builds a record of the given schema from event rows; the
// schema's fields are events' columns by name, with types that hold
// them.
func eventRecord(t testing.TB, mem memory.Allocator, sc *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, r := range rows {
		for c, f := range sc.Fields() {
			v := r[slices.IndexFunc(eventSchema.Fields(), func(e arrow.Field) bool { return e.Name == f.Name })]
			appendValue(t, b.Field(c), v)
		}
	}
	return b.NewRecordBatch()
}

func appendValue(t testing.TB, b array.Builder, v any) {
	t.Helper()
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int16Builder:
		b.Append(int16(v.(int64)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.TimestampBuilder:
		ts, err := arrow.TimestampFromTime(v.(time.Time), b.Type().(*arrow.TimestampType).Unit)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(ts)
	default:
		t.Fatalf("appendValue: %T", b)
	}
}

// writeParquet writes rows with arrow-go's pqarrow writer directly, in
// row groups of rowGroup rows, storing the Arrow schema when store is set.
func writeParquet(t testing.TB, path string, sc *arrow.Schema, rows [][]any, rowGroup int64, store bool) {
	t.Helper()
	rec := eventRecord(t, memory.DefaultAllocator, sc, rows)
	defer rec.Release()
	writeRecord(t, path, rec, rowGroup, store)
}

func writeRecord(t testing.TB, path string, rec arrow.RecordBatch, rowGroup int64, store bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var aprops []pqarrow.WriterOption
	if store {
		aprops = append(aprops, pqarrow.WithStoreSchema())
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup)),
		pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes text to path, creating folders.
func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsonLine writes an event as JSON by hand: timestamps in RFC 3339 with
// milliseconds, a null name left out, a null price written as null.
func jsonLine(r []any) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"id":%d`, r[0])
	if r[1] != nil {
		fmt.Fprintf(&sb, `,"name":%s`, jsonString(r[1].(string)))
	}
	if r[2] == nil {
		sb.WriteString(`,"price":null`)
	} else {
		fmt.Fprintf(&sb, `,"price":%v`, r[2])
	}
	fmt.Fprintf(&sb, `,"ts":"%s","qty":%d}`, r[3].(time.Time).Format("2006-01-02T15:04:05.000Z07:00"), r[4])
	return sb.String()
}

func jsonString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "\t", `\t`)
	return `"` + s + `"`
}

// csvLine writes an event as CSV by hand: fields in eventSchema order,
// quoted when they hold a comma or a quote, nulls as empty fields,
// timestamps in SQL form.
func csvLine(r []any) string {
	f := make([]string, len(r))
	for i, v := range r {
		switch v := v.(type) {
		case nil:
		case string:
			if strings.ContainsAny(v, `,"`) {
				v = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
			}
			f[i] = v
		case time.Time:
			f[i] = v.Format("2006-01-02 15:04:05.000")
		default:
			f[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(f, ",")
}

func mustNew(t testing.TB, o Options) *Source {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func mustSplits(t testing.TB, s *Source) []string {
	t.Helper()
	ids, err := s.Splits(ctx)
	if err != nil {
		t.Fatalf("Splits: %v", err)
	}
	return ids
}

// subtaskStates deals ids as the runtime does: split i to subtask i mod
// par, with the given positions.
func subtaskStates(ids []string, positions map[string][]byte, subtask, par int) []arrowflow.SplitState {
	var out []arrowflow.SplitState
	for i, id := range ids {
		if i%par == subtask {
			out = append(out, arrowflow.SplitState{Split: id, Position: positions[id]})
		}
	}
	return out
}

func openReader(t testing.TB, s *Source, mem memory.Allocator, subtask, par int, splits []arrowflow.SplitState) *reader {
	t.Helper()
	rd, err := s.Open(&arrowflow.TaskInfo{Job: "test", Name: "files", Subtask: subtask, Parallelism: par, Allocator: mem}, splits)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd.(*reader)
}

// readN reads up to n batches (all when n < 0) and returns their rows.
func readN(t testing.TB, rd arrowflow.SourceReader, n int) (rows [][]any, eof bool) {
	t.Helper()
	for k := 0; n < 0 || k < n; k++ {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, true
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		rows = appendRows(t, rows, b)
	}
	return rows, false
}

func appendRows(t testing.TB, rows [][]any, b arrowflow.Batch) [][]any {
	t.Helper()
	if b.IsZero() {
		return rows
	}
	defer b.Release()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < b.NumRows(); k++ {
		rows = append(rows, b.RowValues(k))
	}
	return rows
}

// runJob runs source -> collect sink at the given parallelism.
func runJob(t testing.TB, src arrowflow.Source, par int, opts arrowflow.Options) (*collect.Sink, error) {
	t.Helper()
	sink := collect.New()
	return sink, runJobInto(t, src, par, opts, sink)
}

func runJobInto(t testing.TB, src arrowflow.Source, par int, opts arrowflow.Options, sink *collect.Sink) error {
	t.Helper()
	g := arrowflow.NewGraph("files-test")
	n := g.Source("files", src, par)
	g.Sink("collect", sink, par, arrowflow.Forward(n))
	job, err := g.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	return job.Run(c)
}

// rowKey formats a row for multiset comparison.
func rowKey(r []any) string {
	var sb strings.Builder
	for i, v := range r {
		if i > 0 {
			sb.WriteByte('|')
		}
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&sb, "%x", v)
		case time.Time:
			sb.WriteString(v.UTC().Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(&sb, "%#v", v)
		}
	}
	return sb.String()
}

func rowKeys(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowKey(r)
	}
	return out
}

// sameRows fails unless got and want hold the same rows, as often.
func sameRows(t testing.TB, what string, got, want [][]any) {
	t.Helper()
	g, w := rowKeys(got), rowKeys(want)
	slices.Sort(g)
	slices.Sort(w)
	if slices.Equal(g, w) {
		return
	}
	count := map[string]int{}
	for _, k := range g {
		count[k]++
	}
	for _, k := range w {
		count[k]--
	}
	var diffs []string
	for k, n := range count {
		if n != 0 && len(diffs) < 10 {
			diffs = append(diffs, fmt.Sprintf("%+d× %s", n, k))
		}
	}
	slices.Sort(diffs)
	t.Fatalf("%s: %d rows, want %d; surplus(+)/missing(-) rows include:\n%s", what, len(g), len(w), strings.Join(diffs, "\n"))
}

// project returns the given columns (by index) of rows.
func project(rows [][]any, cols ...int) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(cols))
		for j, c := range cols {
			out[i][j] = r[c]
		}
	}
	return out
}

// wantErr fails unless err is non-nil and mentions every part.
func wantErr(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	t.Logf("error: %v", err)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}
