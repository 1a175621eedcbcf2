package datagen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

func mustNew(t testing.TB, cfg Config) *Source {
	t.Helper()
	src, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return src
}

// states returns SplitStates from scratch for the given split numbers.
func states(nums ...int) []arrowflow.SplitState {
	out := make([]arrowflow.SplitState, len(nums))
	for i, n := range nums {
		out[i] = arrowflow.SplitState{Split: fmt.Sprintf("datagen-%d", n)}
	}
	return out
}

// allStates returns every split of src from scratch.
func allStates(src *Source) []arrowflow.SplitState {
	return states(seq(src.Config().Splits)...)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func open(t testing.TB, src *Source, mem memory.Allocator, splits []arrowflow.SplitState) *reader {
	t.Helper()
	rd, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, splits)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd.(*reader)
}

// readBatches reads up to maxBatches non-zero batches (all when
// maxBatches < 0) and returns their rows; eof reports whether Next
// returned io.EOF.
func readBatches(t testing.TB, rd arrowflow.SourceReader, maxBatches int) (rows [][]any, eof bool) {
	t.Helper()
	for n := 0; maxBatches < 0 || n < maxBatches; {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, true
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if b.IsZero() {
			continue
		}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rowsOf(t, b.Record)...)
		b.Release()
		n++
	}
	return rows, false
}

// rowsOf converts a record to rows of Go values typed as Source.Row types
// them; it reads the arrays independently of the generator.
func rowsOf(t testing.TB, rec arrow.RecordBatch) [][]any {
	t.Helper()
	rows := make([][]any, rec.NumRows())
	for i := range rows {
		rows[i] = make([]any, rec.NumCols())
	}
	for j, col := range rec.Columns() {
		for i := range rows {
			if col.IsNull(i) {
				continue
			}
			var v any
			switch a := col.(type) {
			case *array.Int8:
				v = a.Value(i)
			case *array.Int16:
				v = a.Value(i)
			case *array.Int32:
				v = a.Value(i)
			case *array.Int64:
				v = a.Value(i)
			case *array.Uint8:
				v = a.Value(i)
			case *array.Uint16:
				v = a.Value(i)
			case *array.Uint32:
				v = a.Value(i)
			case *array.Uint64:
				v = a.Value(i)
			case *array.Float32:
				v = a.Value(i)
			case *array.Float64:
				v = a.Value(i)
			case *array.Boolean:
				v = a.Value(i)
			case *array.String:
				v = a.Value(i)
			case *array.Timestamp:
				v = a.Value(i)
			case *array.Date32:
				v = a.Value(i)
			default:
				t.Fatalf("column %d: unexpected array type %T", j, col)
			}
			rows[i][j] = v
		}
	}
	return rows
}

// sortByID sorts rows by their first column, an int64 id.
func sortByID(rows [][]any) {
	slices.SortFunc(rows, func(a, b []any) int { return cmp.Compare(a[0].(int64), b[0].(int64)) })
}
