package datagen

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// generator computes one field's values. It is immutable after New and
// shared by every reader of a Source.
type generator interface {
	// value returns row r's value as a Go value (see Source.Row), nil
	// when it is null.
	value(r int64) any
	// newColumn returns a builder of this field's arrays allocating from
	// mem; each reader has its own.
	newColumn(mem memory.Allocator) column
}

// column builds one field's array of a batch. The type dispatch happens
// once, when the column is made; appendRows runs typed loops.
type column interface {
	// appendRows appends the values of the n rows first, first+step, ...
	appendRows(first, step int64, n int)
	// newArray returns the appended values as an array and resets the
	// column.
	newArray() arrow.Array
	// release frees the builder's memory.
	release()
}

// nullGen decides which rows of a field are null: row r is null when its
// hash is below threshold (or always, when all is set).
type nullGen struct {
	key       uint64
	threshold uint64
	all       bool
}

func newNullGen(seed uint64, field int, rate float64) nullGen {
	g := nullGen{key: streamKey(seed, field, purposeNull)}
	if t := math.Ldexp(rate, 64); t >= 0x1p64 {
		g.all = true
	} else {
		g.threshold = uint64(t)
	}
	return g
}

// none reports whether no row is ever null.
func (g nullGen) none() bool { return !g.all && g.threshold == 0 }

func (g nullGen) isNull(r int64) bool {
	return g.all || hashRow(g.key, r) < g.threshold
}

// fill sets valid[i] for row first+i*step.
func (g nullGen) fill(valid []bool, first, step int64) {
	if g.all {
		clear(valid)
		return
	}
	r := first
	for i := range valid {
		valid[i] = hashRow(g.key, r) >= g.threshold
		r += step
	}
}

// sliceColumn fills a scratch slice of values with a typed loop and
// appends it to a typed builder in one call.
type sliceColumn[T any] struct {
	bld    array.Builder
	append func([]T, []bool) // bld's AppendValues
	fill   func(dst []T, first, step int64)
	nulls  nullGen
	vals   []T
	valid  []bool
}

func newSliceColumn[T any](mem memory.Allocator, dt arrow.DataType, fill func([]T, int64, int64), nulls nullGen) *sliceColumn[T] {
	bld := array.NewBuilder(mem, dt)
	app, ok := bld.(interface{ AppendValues([]T, []bool) })
	if !ok {
		panic("BUG: datagen: builder of " + dt.String() + " has no AppendValues for the generator's value type")
	}
	return &sliceColumn[T]{bld: bld, append: app.AppendValues, fill: fill, nulls: nulls}
}

func (c *sliceColumn[T]) appendRows(first, step int64, n int) {
	c.vals = resize(c.vals, n)
	c.fill(c.vals, first, step)
	var valid []bool
	if !c.nulls.none() {
		c.valid = resize(c.valid, n)
		c.nulls.fill(c.valid, first, step)
		valid = c.valid
	}
	c.bld.Reserve(n)
	c.append(c.vals, valid)
}

func (c *sliceColumn[T]) newArray() arrow.Array { return c.bld.NewArray() }
func (c *sliceColumn[T]) release()              { c.bld.Release() }

// stringColumn builds string arrays; values point into a reused arena or
// into the generator's Values.
type stringColumn struct {
	bld   *array.StringBuilder
	gen   *stringGen
	vals  [][]byte
	arena []byte
	valid []bool
}

func (c *stringColumn) appendRows(first, step int64, n int) {
	c.vals = resize(c.vals, n)
	c.arena = c.gen.fill(c.vals, c.arena, first, step)
	var valid []bool
	if !c.gen.nulls.none() {
		c.valid = resize(c.valid, n)
		c.gen.nulls.fill(c.valid, first, step)
		valid = c.valid
		for i, ok := range valid {
			if !ok {
				c.vals[i] = nil // no payload behind null slots
			}
		}
	}
	c.bld.Reserve(n)
	// BinaryBuilder.AppendValues takes [][]byte: no string conversions.
	c.bld.BinaryBuilder.AppendValues(c.vals, valid)
}

func (c *stringColumn) newArray() arrow.Array { return c.bld.NewArray() }
func (c *stringColumn) release()              { c.bld.Release() }

// resize returns s with length n, reusing its storage when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
