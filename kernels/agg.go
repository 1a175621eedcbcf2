package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// AggFunc names an aggregate function of a hash aggregation.
type AggFunc int

// The aggregate functions. Their SQL semantics:
//
//   - AggCountStar, count(*): the number of rows. Result int64, never null.
//   - AggCount, count(x): the number of rows where x is not null. int64.
//   - AggSum, sum(x): over signed or unsigned integers an int64 (a sum that
//     leaves the int64 range, at any point in the order rows are added, is
//     an error), over floats a float64, over decimal128(p, s) a
//     decimal128(38, s) (null once the running sum needs more than 38
//     digits, agg_decimal.go). Null for a group with no non-null x.
//   - AggMin, AggMax: over numbers, strings, binaries, booleans, decimal128,
//     dates, times, timestamps and durations; the result has x's type. For
//     floats NaN is greater than every other value (as in PostgreSQL and
//     DuckDB). Null for a group with no non-null x.
//   - AggAvg, avg(x): over integers and floats, a float64 (the sum is kept
//     as a float64); over decimal128(p, s) a decimal128(38, max(s, 6)), the
//     exact sum divided by the count and rounded HALF_UP, as Flink. Null
//     for a group with no non-null x.
//   - AggCountDistinct, count(distinct x): the number of distinct non-null
//     x, with grouping equality (-0 = +0, NaN = NaN). int64.
//   - AggFirst, AggLast, first(x, t) and last(x, t): x of the row with the
//     smallest (first) or largest (last) event time t; among rows with equal
//     t, first keeps the earliest to arrive and last the latest. A null x is
//     a value like any other; rows with a null t are ignored. t is an
//     integer (not uint64) or a date, time, timestamp or duration. The
//     result has x's type; null for a group with no row with non-null t.
const (
	AggCountStar AggFunc = iota
	AggCount
	AggSum
	AggMin
	AggMax
	AggAvg
	AggCountDistinct
	AggFirst
	AggLast
)

var aggNames = [...]string{
	AggCountStar:     "count(*)",
	AggCount:         "count",
	AggSum:           "sum",
	AggMin:           "min",
	AggMax:           "max",
	AggAvg:           "avg",
	AggCountDistinct: "count(distinct)",
	AggFirst:         "first",
	AggLast:          "last",
}

// String returns the SQL-ish name of f: "count(*)", "count", "sum", "min",
// "max", "avg", "count(distinct)", "first", "last".
func (f AggFunc) String() string {
	if f >= 0 && int(f) < len(aggNames) {
		return aggNames[f]
	}
	return fmt.Sprintf("AggFunc(%d)", int(f))
}

// Arity is the number of input columns f takes: 0 for count(*), 2 for
// first and last (value and event time), 1 for the others.
func (f AggFunc) Arity() int {
	switch f {
	case AggCountStar:
		return 0
	case AggFirst, AggLast:
		return 2
	}
	return 1
}

// Accumulator keeps one aggregate's state for every group, columnar: Go
// slices indexed by group id, never maps or per-group structs. Group ids
// come from a GroupTable.
//
// Update, Merge and the lengths of their arguments follow the GroupTable
// conventions: sel nil means every row, else increasing row indices, and
// gids[k] is the group of the k-th selected row. Every group id must be
// below the count last passed to Grow. Mismatched lengths and types are
// errors; after an error the accumulator's state is unspecified (Reset it
// or drop it).
type Accumulator interface {
	// ResultType is the type of the column Finish returns.
	ResultType() arrow.DataType
	// StateFields describes the partial-state columns ExportState produces
	// and Merge consumes.
	StateFields() []arrow.Field
	// Grow makes room for group ids below groups; new groups start empty.
	// It never shrinks.
	Grow(groups int)
	// Update folds rows into their groups. args are the aggregate's input
	// columns: none for count(*), value and event time for first and last,
	// the value for the others.
	Update(args []arrow.Array, sel []int32, gids []uint32) error
	// Merge folds partial states (columns as StateFields, one row per
	// partial group) into groups, with the same result as if the rows
	// behind each partial state had gone through Update, in order.
	Merge(state []arrow.Array, sel []int32, gids []uint32) error
	// ExportState returns the partial state of every group, in group-id
	// order, allocated from mem; the caller releases the arrays.
	ExportState(mem memory.Allocator) []arrow.Array
	// Finish returns the result of every group, in group-id order,
	// allocated from mem; the caller releases it. It does not change the
	// state.
	Finish(mem memory.Allocator) arrow.Array
	// Reset forgets every group but keeps the memory.
	Reset()
	// SizeBytes approximates the memory the accumulator retains.
	SizeBytes() int64
}

// NewAccumulator returns an accumulator of f over input columns of the
// given types, or an error naming the function and the unsupported type.
func NewAccumulator(f AggFunc, argTypes []arrow.DataType) (Accumulator, error) {
	if f < 0 || int(f) >= len(aggNames) {
		return nil, fmt.Errorf("aggregate: unknown function %d", int(f))
	}
	if len(argTypes) != f.Arity() {
		return nil, fmt.Errorf("%s: %d arguments, want %d", f, len(argTypes), f.Arity())
	}
	for i, dt := range argTypes {
		if dt == nil {
			return nil, fmt.Errorf("%s: argument %d has no type", f, i)
		}
	}
	var acc Accumulator
	switch f {
	case AggCountStar:
		acc = &countAcc{star: true}
	case AggCount:
		acc = &countAcc{argType: argTypes[0]}
	case AggSum:
		acc = newSumAcc(argTypes[0])
	case AggAvg:
		acc = newAvgAcc(argTypes[0])
	case AggMin, AggMax:
		acc = newMinMaxAcc(argTypes[0], f == AggMax)
	case AggCountDistinct:
		if keyTypeSupported(argTypes[0]) {
			acc = newCountDistinctAcc(argTypes[0])
		}
	case AggFirst, AggLast:
		if !keyTypeSupported(argTypes[0]) {
			break
		}
		if !eventTimeType(argTypes[1]) {
			return nil, fmt.Errorf("%s: unsupported event-time type %s", f, argTypes[1])
		}
		acc = newFirstLastAcc(argTypes[0], argTypes[1], f == AggLast)
	}
	if acc == nil {
		return nil, fmt.Errorf("%s: unsupported argument type %s", f, argTypes[0])
	}
	return acc, nil
}

// checkArgs validates the columns of an Update or Merge call against the
// expected types and the selection, returning the number of rows.
func checkArgs(what string, types []arrow.DataType, args []arrow.Array, sel []int32, gids []uint32) error {
	if len(args) != len(types) {
		return fmt.Errorf("%s: %d columns, want %d", what, len(args), len(types))
	}
	if len(args) == 0 {
		if sel != nil && len(sel) != len(gids) {
			return fmt.Errorf("%s: selection has %d rows, %d group ids", what, len(sel), len(gids))
		}
		return nil
	}
	rows := args[0].Len()
	for i, a := range args {
		if !arrow.TypeEqual(a.DataType(), types[i]) {
			return fmt.Errorf("%s: column %d has type %s, want %s", what, i, a.DataType(), types[i])
		}
		if a.Len() != rows {
			return fmt.Errorf("%s: column %d has %d rows, column 0 has %d", what, i, a.Len(), rows)
		}
	}
	if err := checkSel(rows, sel, len(gids)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// growZero extends s with zero values to length n (never shrinks). append
// of a make is compiled to a clear of the spare capacity, so this
// allocates only when the capacity runs out, geometrically.
func growZero[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	return append(s, make([]T, n-len(s))...)
}

// growFill extends s to length n, new elements set to v.
func growFill[T any](s []T, n int, v T) []T {
	for len(s) < n {
		s = append(s, v)
	}
	return s
}

// validRows narrows a selection to the rows where a column is not null.
// It owns the scratch it returns, reused across batches.
type validRows struct {
	sel  []int32
	gids []uint32
}

// filter returns (sel, gids) restricted to the rows where col is valid.
// Without nulls it returns its arguments unchanged; otherwise the result
// is a non-nil selection. The bitmap is read a 64-bit word at a time: full
// words are copied in a tight loop, empty ones skipped.
func (f *validRows) filter(col arrow.Array, sel []int32, gids []uint32) ([]int32, []uint32) {
	if col.NullN() == 0 {
		return sel, gids
	}
	data := col.Data()
	bm, off := data.Buffers()[0].Bytes(), data.Offset()
	outSel, outGids := f.sel[:0], f.gids[:0]
	if sel == nil {
		n := col.Len()
		for base := 0; base < n; base += 64 {
			w := bitmapWord(bm, off+base, min(64, n-base))
			if w == math.MaxUint64 {
				for i := base; i < base+64; i++ {
					outSel = append(outSel, int32(i))
				}
				outGids = append(outGids, gids[base:base+64]...)
				continue
			}
			for w != 0 {
				i := base + bits.TrailingZeros64(w)
				outSel = append(outSel, int32(i))
				outGids = append(outGids, gids[i])
				w &= w - 1
			}
		}
	} else {
		for k, i := range sel {
			j := off + int(i)
			if bm[j>>3]&(1<<(j&7)) != 0 {
				outSel = append(outSel, i)
				outGids = append(outGids, gids[k])
			}
		}
	}
	if outSel == nil {
		outSel = []int32{} // an empty selection, not "every row"
	}
	f.sel, f.gids = outSel, outGids
	return outSel, outGids
}

func (f *validRows) sizeBytes() int64 { return int64(cap(f.sel))*4 + int64(cap(f.gids))*4 }

// bitmapWord returns the n (1..64) bits of bitmap bm starting at bit pos, as
// the low bits of a word.
func bitmapWord(bm []byte, pos, n int) uint64 {
	b, s := pos>>3, uint(pos&7)
	var lo uint64
	if b+8 <= len(bm) {
		lo = binary.LittleEndian.Uint64(bm[b:])
	} else {
		for j := 0; b+j < len(bm); j++ {
			lo |= uint64(bm[b+j]) << (8 * j)
		}
	}
	w := lo >> s
	if s > 0 && b+8 < len(bm) {
		w |= uint64(bm[b+8]) << (64 - s)
	}
	if n < 64 {
		w &= 1<<uint(n) - 1
	}
	return w
}

// selRow is the input row of batch position k.
func selRow(sel []int32, k int) int {
	if sel == nil {
		return k
	}
	return int(sel[k])
}
