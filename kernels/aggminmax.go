package kernels

import (
	"bytes"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func newMinMaxAcc(dt arrow.DataType, isMax bool) Accumulator {
	switch dt.ID() {
	case arrow.INT8:
		return newMinMaxNum[int8](dt, isMax, math.MinInt8, math.MaxInt8)
	case arrow.INT16:
		return newMinMaxNum[int16](dt, isMax, math.MinInt16, math.MaxInt16)
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return newMinMaxNum[int32](dt, isMax, math.MinInt32, math.MaxInt32)
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return newMinMaxNum[int64](dt, isMax, math.MinInt64, math.MaxInt64)
	case arrow.UINT8:
		return newMinMaxNum[uint8](dt, isMax, 0, math.MaxUint8)
	case arrow.UINT16:
		return newMinMaxNum[uint16](dt, isMax, 0, math.MaxUint16)
	case arrow.UINT32:
		return newMinMaxNum[uint32](dt, isMax, 0, math.MaxUint32)
	case arrow.UINT64:
		return newMinMaxNum[uint64](dt, isMax, 0, math.MaxUint64)
	case arrow.FLOAT32:
		// NaN sorts above every number, so it is min's starting point.
		return newMinMaxNum(dt, isMax, float32(math.Inf(-1)), float32(math.NaN()))
	case arrow.FLOAT64:
		return newMinMaxNum(dt, isMax, math.Inf(-1), math.NaN())
	case arrow.BOOL:
		return &boolMinMaxAcc{isMax: isMax}
	case arrow.STRING, arrow.BINARY:
		return &bytesMinMaxAcc[int32]{dt: dt, isMax: isMax}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return &bytesMinMaxAcc[int64]{dt: dt, isMax: isMax}
	case arrow.DECIMAL128:
		return &decimalMinMaxAcc{dt: dt, isMax: isMax}
	}
	return nil
}

func minMaxName(isMax bool) string {
	if isMax {
		return "max"
	}
	return "min"
}

func minMaxFields(dt arrow.DataType, isMax bool) []arrow.Field {
	return []arrow.Field{{Name: minMaxName(isMax), Type: dt, Nullable: true}}
}

// minMaxNum is min(x) or max(x) over numbers and temporal values held as
// their Go integer or float type. Every group starts at ident, the value
// no input can lose to (the type's lowest for max, its highest for min), so
// the update loop needs no "first value" branch; seen[g] says whether the
// group had a non-null x.
// Invariant: len(vals) == len(seen) == number of groups.
type minMaxNum[T integer | float32 | float64] struct {
	dt    arrow.DataType
	isMax bool
	ident T
	vals  []T
	seen  []bool
	valid validRows
}

func newMinMaxNum[T integer | float32 | float64](dt arrow.DataType, isMax bool, lowest, highest T) *minMaxNum[T] {
	a := &minMaxNum[T]{dt: dt, isMax: isMax, ident: highest}
	if isMax {
		a.ident = lowest
	}
	return a
}

func (a *minMaxNum[T]) ResultType() arrow.DataType { return a.dt }

func (a *minMaxNum[T]) StateFields() []arrow.Field { return minMaxFields(a.dt, a.isMax) }

func (a *minMaxNum[T]) Grow(groups int) {
	a.vals = growFill(a.vals, groups, a.ident)
	a.seen = growZero(a.seen, groups)
}

func (a *minMaxNum[T]) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax), []arrow.DataType{a.dt}, args, sel, gids); err != nil {
		return err
	}
	a.fold(args[0], sel, gids)
	return nil
}

// Merge is Update over the partial minima/maxima: min is associative.
func (a *minMaxNum[T]) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax)+": merge", []arrow.DataType{a.dt}, state, sel, gids); err != nil {
		return err
	}
	a.fold(state[0], sel, gids)
	return nil
}

func (a *minMaxNum[T]) fold(col arrow.Array, sel []int32, gids []uint32) {
	sel, gids = a.valid.filter(col, sel, gids)
	vals := arrow.GetValues[T](col.Data(), 1)
	if a.isMax {
		foldMax(a.vals, a.seen, vals, sel, gids)
	} else {
		foldMin(a.vals, a.seen, vals, sel, gids)
	}
}

// foldMin lowers each group's value to v when v sorts before it. For
// floats NaN sorts last: a NaN minimum (the starting point) gives way to
// any number. For integers the NaN tests are constant false.
func foldMin[T integer | float32 | float64](cur []T, seen []bool, vals []T, sel []int32, gids []uint32) {
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			v, c := vals[k], cur[g]
			if v < c || (c != c && v == v) {
				cur[g] = v
			}
			seen[g] = true
		}
		return
	}
	for k, g := range gids {
		v, c := vals[sel[k]], cur[g]
		if v < c || (c != c && v == v) {
			cur[g] = v
		}
		seen[g] = true
	}
}

// foldMax raises each group's value to v when v sorts after it; a NaN v
// sorts after every number.
func foldMax[T integer | float32 | float64](cur []T, seen []bool, vals []T, sel []int32, gids []uint32) {
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			v, c := vals[k], cur[g]
			if c < v || (v != v && c == c) {
				cur[g] = v
			}
			seen[g] = true
		}
		return
	}
	for k, g := range gids {
		v, c := vals[sel[k]], cur[g]
		if c < v || (v != v && c == c) {
			cur[g] = v
		}
		seen[g] = true
	}
}

func (a *minMaxNum[T]) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *minMaxNum[T]) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, a.dt, a.vals, a.seen)
}

func (a *minMaxNum[T]) Reset() { a.vals, a.seen = a.vals[:0], a.seen[:0] }

func (a *minMaxNum[T]) SizeBytes() int64 {
	var z T
	return int64(cap(a.vals)*goSizeOf(z)+cap(a.seen)) + a.valid.sizeBytes()
}

// boolMinMaxAcc is min (logical and) or max (logical or) over booleans.
// Invariant: len(vals) == len(seen) == number of groups.
type boolMinMaxAcc struct {
	isMax bool
	vals  []bool
	seen  []bool
	valid validRows
}

var aggBool = arrow.FixedWidthTypes.Boolean

func (a *boolMinMaxAcc) ResultType() arrow.DataType { return aggBool }

func (a *boolMinMaxAcc) StateFields() []arrow.Field { return minMaxFields(aggBool, a.isMax) }

func (a *boolMinMaxAcc) Grow(groups int) {
	a.vals = growFill(a.vals, groups, !a.isMax) // true is min's identity, false max's
	a.seen = growZero(a.seen, groups)
}

func (a *boolMinMaxAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax), []arrow.DataType{aggBool}, args, sel, gids); err != nil {
		return err
	}
	a.fold(args[0], sel, gids)
	return nil
}

func (a *boolMinMaxAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax)+": merge", []arrow.DataType{aggBool}, state, sel, gids); err != nil {
		return err
	}
	a.fold(state[0], sel, gids)
	return nil
}

func (a *boolMinMaxAcc) fold(col arrow.Array, sel []int32, gids []uint32) {
	sel, gids = a.valid.filter(col, sel, gids)
	data := col.Data()
	bm, off := data.Buffers()[1].Bytes(), data.Offset()
	for k, g := range gids {
		j := off + selRow(sel, k)
		v := bm[j>>3]&(1<<(j&7)) != 0
		if a.isMax {
			a.vals[g] = a.vals[g] || v
		} else {
			a.vals[g] = a.vals[g] && v
		}
		a.seen[g] = true
	}
}

func (a *boolMinMaxAcc) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *boolMinMaxAcc) Finish(mem memory.Allocator) arrow.Array {
	return newBoolArray(mem, a.vals, a.seen)
}

func (a *boolMinMaxAcc) Reset() { a.vals, a.seen = a.vals[:0], a.seen[:0] }

func (a *boolMinMaxAcc) SizeBytes() int64 {
	return int64(cap(a.vals)+cap(a.seen)) + a.valid.sizeBytes()
}

// decimalMinMaxAcc is min or max over decimal128.
// Invariant: len(vals) == len(seen) == number of groups.
type decimalMinMaxAcc struct {
	dt    arrow.DataType
	isMax bool
	vals  []decimal128.Num
	seen  []bool
	valid validRows
}

func (a *decimalMinMaxAcc) ResultType() arrow.DataType { return a.dt }

func (a *decimalMinMaxAcc) StateFields() []arrow.Field { return minMaxFields(a.dt, a.isMax) }

func (a *decimalMinMaxAcc) Grow(groups int) {
	a.vals = growZero(a.vals, groups)
	a.seen = growZero(a.seen, groups)
}

func (a *decimalMinMaxAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax), []arrow.DataType{a.dt}, args, sel, gids); err != nil {
		return err
	}
	a.fold(args[0], sel, gids)
	return nil
}

func (a *decimalMinMaxAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax)+": merge", []arrow.DataType{a.dt}, state, sel, gids); err != nil {
		return err
	}
	a.fold(state[0], sel, gids)
	return nil
}

func (a *decimalMinMaxAcc) fold(col arrow.Array, sel []int32, gids []uint32) {
	sel, gids = a.valid.filter(col, sel, gids)
	vals := arrow.GetValues[decimal128.Num](col.Data(), 1)
	for k, g := range gids {
		v := vals[selRow(sel, k)]
		if !a.seen[g] || (a.isMax && a.vals[g].Less(v)) || (!a.isMax && v.Less(a.vals[g])) {
			a.vals[g] = v
		}
		a.seen[g] = true
	}
}

func (a *decimalMinMaxAcc) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *decimalMinMaxAcc) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, a.dt, a.vals, a.seen)
}

func (a *decimalMinMaxAcc) Reset() { a.vals, a.seen = a.vals[:0], a.seen[:0] }

func (a *decimalMinMaxAcc) SizeBytes() int64 {
	return int64(cap(a.vals)*16+cap(a.seen)) + a.valid.sizeBytes()
}

// bytesMinMaxAcc is min or max over strings and binaries, compared
// bytewise (so strings by UTF-8 code points). The current extreme of each
// group lives in varSlots; it is copied only when it changes.
// Invariant: the slots and seen have one entry per group.
type bytesMinMaxAcc[O int32 | int64] struct {
	dt    arrow.DataType
	isMax bool
	slots varSlots
	seen  []bool
	valid validRows
}

func (a *bytesMinMaxAcc[O]) ResultType() arrow.DataType { return a.dt }

func (a *bytesMinMaxAcc[O]) StateFields() []arrow.Field { return minMaxFields(a.dt, a.isMax) }

func (a *bytesMinMaxAcc[O]) Grow(groups int) {
	a.slots.grow(groups)
	a.seen = growZero(a.seen, groups)
}

func (a *bytesMinMaxAcc[O]) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax), []arrow.DataType{a.dt}, args, sel, gids); err != nil {
		return err
	}
	a.fold(args[0], sel, gids)
	return nil
}

func (a *bytesMinMaxAcc[O]) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(minMaxName(a.isMax)+": merge", []arrow.DataType{a.dt}, state, sel, gids); err != nil {
		return err
	}
	a.fold(state[0], sel, gids)
	return nil
}

func (a *bytesMinMaxAcc[O]) fold(col arrow.Array, sel []int32, gids []uint32) {
	sel, gids = a.valid.filter(col, sel, gids)
	data := col.Data()
	offs, vals := arrow.GetOffsets[O](data, 1), bufferBytes(data, 2)
	want := -1 // bytes.Compare(v, current) that replaces the current value
	if a.isMax {
		want = 1
	}
	for k, g := range gids {
		i := selRow(sel, k)
		v := vals[offs[i]:offs[i+1]]
		if !a.seen[g] || bytes.Compare(v, a.slots.get(g)) == want {
			a.slots.set(g, v)
			a.seen[g] = true
		}
	}
}

func (a *bytesMinMaxAcc[O]) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *bytesMinMaxAcc[O]) Finish(mem memory.Allocator) arrow.Array {
	offs, data := a.slots.offsets()
	return newVarBinaryArray[O](mem, a.dt, offs, data, a.seen)
}

func (a *bytesMinMaxAcc[O]) Reset() {
	a.slots.reset()
	a.seen = a.seen[:0]
}

func (a *bytesMinMaxAcc[O]) SizeBytes() int64 {
	return a.slots.sizeBytes() + int64(cap(a.seen)) + a.valid.sizeBytes()
}
