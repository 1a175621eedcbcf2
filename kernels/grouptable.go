package kernels

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// NoGroup is the group id Lookup reports for a key tuple the table does not
// hold. It is never a valid group id.
const NoGroup uint32 = math.MaxUint32

// maxGroups bounds the number of groups of one table: group ids are uint32,
// NoGroup is reserved, and slots store id+1.
const maxGroups = math.MaxUint32 - 1

// GroupTable maps key tuples to dense group ids 0..Len()-1, in order of
// first appearance. It is the first half of a hash aggregation: the ids it
// hands out index the columnar state of Accumulators.
//
// Keys are compared, never only hashed: two tuples share a group exactly
// when they are equal under SQL grouping rules, where null is a value of
// its own (all nulls of a column group together), -0 equals +0 and all NaNs
// are equal.
//
// A table with one fixed-width key column (integers, floats, booleans,
// dates, times, timestamps, durations) indexes an array directly by key
// while the keys span a narrow range (a perfect hash), and otherwise keeps
// each key inline in its hash slot. Any other key tuple goes through a
// general table that stores keys columnar and compares them column by
// column, in vectorised rounds. Either way the work per batch allocates
// nothing once the table has stopped growing.
//
// A GroupTable is not safe for concurrent use.
type GroupTable struct {
	keyTypes []arrow.DataType
	fixed    *fixedTable   // one fixed-width key column, else nil
	general  *generalTable // every other key tuple, else nil

	// Scratch for the general path, reused across batches.
	hashFn func(cols []arrow.Array, sel []int32, out []uint64) error
	hashes []uint64
	iota   []int32 // 0, 1, 2, ...: the row of each position when sel is nil
}

// NewGroupTable returns an empty table for key tuples of the given column
// types. Every type HashColumns supports is supported; the error for any
// other type names the column index and the type.
func NewGroupTable(keyTypes []arrow.DataType) (*GroupTable, error) {
	return newGroupTable(keyTypes, false)
}

// newGroupTable is NewGroupTable with a switch that sends even a single
// fixed-width key through the general path, so tests can check both paths
// against the same oracle.
func newGroupTable(keyTypes []arrow.DataType, forceGeneral bool) (*GroupTable, error) {
	if len(keyTypes) == 0 {
		return nil, fmt.Errorf("group table: no key columns")
	}
	for c, dt := range keyTypes {
		if dt == nil || !keyTypeSupported(dt) {
			return nil, fmt.Errorf("group table: key column %d: unsupported type %s", c, dt)
		}
	}
	t := &GroupTable{keyTypes: append([]arrow.DataType(nil), keyTypes...), hashFn: HashColumns}
	if len(keyTypes) == 1 && fixedKeyType(keyTypes[0]) && !forceGeneral {
		t.fixed = newFixedTable(keyTypes[0])
		return t, nil
	}
	stores := make([]keyStore, len(keyTypes))
	for c, dt := range keyTypes {
		stores[c] = newKeyStore(dt)
	}
	t.general = newGeneralTable(stores)
	return t, nil
}

// keyTypeSupported reports whether dt can be a group key: exactly the types
// HashColumns hashes.
func keyTypeSupported(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY,
		arrow.FIXED_SIZE_BINARY, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return fixedKeyType(dt)
}

// fixedKeyType reports whether dt is a fixed-width type of at most 64 bits
// whose values (normalised for floats) fit a uint64 slot key.
func fixedKeyType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return true
	}
	return false
}

// FindOrInsert writes the group id of each selected row's key tuple into
// gids, creating groups for tuples not seen before. keys holds one array per
// key column, of the table's key types and of equal length. With sel nil,
// gids has one element per row; otherwise gids[k] is the group of row
// sel[k] and len(gids) == len(sel).
func (t *GroupTable) FindOrInsert(keys []arrow.Array, sel []int32, gids []uint32) error {
	return t.find(keys, sel, gids, true)
}

// Lookup is FindOrInsert without the insert: rows whose key tuple the table
// does not hold get NoGroup. It never changes the table.
func (t *GroupTable) Lookup(keys []arrow.Array, sel []int32, gids []uint32) error {
	return t.find(keys, sel, gids, false)
}

func (t *GroupTable) find(keys []arrow.Array, sel []int32, gids []uint32, insert bool) error {
	rows, err := checkKeys(t.keyTypes, keys, sel, gids)
	if err != nil {
		return err
	}
	if insert && t.Len()+len(gids) > maxGroups {
		return fmt.Errorf("group table: more than %d groups", maxGroups)
	}
	if t.fixed != nil {
		t.fixed.find(keys[0], sel, gids, insert)
		return nil
	}
	// The general path runs in chunks small enough that the hashes, group
	// ids and candidate lists of a chunk stay in the L1 cache between its
	// passes.
	m := len(gids)
	pos := sel
	if pos == nil {
		t.iota = iotaInt32(t.iota, rows)
		pos = t.iota[:rows]
	}
	t.hashes = growUint64(t.hashes, min(m, generalChunk))
	for c, st := range t.general.stores {
		st.bind(keys[c])
	}
	defer func() {
		for _, st := range t.general.stores {
			st.unbind()
		}
	}()
	for c := 0; c < m; c += generalChunk {
		e := min(m, c+generalChunk)
		hs := t.hashes[:e-c]
		if err := t.hashFn(keys, pos[c:e], hs); err != nil {
			return fmt.Errorf("group table: %w", err)
		}
		t.general.find(hs, pos[c:e], gids[c:e], insert)
	}
	return nil
}

// generalChunk is the number of rows the general path handles at a time.
const generalChunk = 2048

// checkKeys validates the arguments of a table probe and returns the number
// of rows of the key columns.
func checkKeys(types []arrow.DataType, keys []arrow.Array, sel []int32, gids []uint32) (int, error) {
	if len(keys) != len(types) {
		return 0, fmt.Errorf("group table: %d key columns, table has %d", len(keys), len(types))
	}
	rows := keys[0].Len()
	for c, k := range keys {
		if !arrow.TypeEqual(k.DataType(), types[c]) {
			return 0, fmt.Errorf("group table: key column %d has type %s, table has %s", c, k.DataType(), types[c])
		}
		if k.Len() != rows {
			return 0, fmt.Errorf("group table: key column %d has %d rows, column 0 has %d", c, k.Len(), rows)
		}
	}
	if err := checkSel(rows, sel, len(gids)); err != nil {
		return 0, fmt.Errorf("group table: %w", err)
	}
	return rows, nil
}

// checkSel validates a selection over rows rows against an output of n
// elements. It checks only the ends of sel: sel must be increasing.
func checkSel(rows int, sel []int32, n int) error {
	if sel == nil {
		if n != rows {
			return fmt.Errorf("%d rows, %d group ids", rows, n)
		}
		return nil
	}
	if n != len(sel) {
		return fmt.Errorf("selection has %d rows, %d group ids", len(sel), n)
	}
	if len(sel) > 0 && (sel[0] < 0 || int(sel[len(sel)-1]) >= rows) {
		return fmt.Errorf("selection [%d..%d] out of range of %d rows", sel[0], sel[len(sel)-1], rows)
	}
	return nil
}

// Len is the number of groups.
func (t *GroupTable) Len() int {
	if t.fixed != nil {
		return len(t.fixed.keys)
	}
	return t.general.n
}

// KeyTypes returns the types of the key columns. The caller must not modify
// the returned slice.
func (t *GroupTable) KeyTypes() []arrow.DataType { return t.keyTypes }

// Keys returns the key columns, one value per group in group-id order,
// allocated from mem; the caller releases them. Together with the
// accumulators' ExportState this is the table's state snapshot. Float keys
// come back normalised: a group first seen as -0 reads +0, and every NaN
// reads as the canonical NaN.
func (t *GroupTable) Keys(mem memory.Allocator) []arrow.Array {
	if t.fixed != nil {
		return []arrow.Array{t.fixed.array(mem)}
	}
	out := make([]arrow.Array, len(t.general.stores))
	for c, st := range t.general.stores {
		out[c] = st.array(mem, t.general.n)
	}
	return out
}

// Reset forgets every group but keeps the memory, so a table reused for the
// next window does not grow again.
func (t *GroupTable) Reset() {
	if t.fixed != nil {
		t.fixed.reset()
		return
	}
	t.general.reset()
}

// SizeBytes approximates the memory the table retains: slots, stored keys
// and scratch. It is meant for state budgets, not exact accounting.
func (t *GroupTable) SizeBytes() int64 {
	n := int64(cap(t.hashes))*8 + int64(cap(t.iota))*4
	if t.fixed != nil {
		return n + t.fixed.sizeBytes()
	}
	return n + t.general.sizeBytes()
}

// growUint64 returns s resized to n elements, reusing its array when it is
// large enough. The contents are not preserved.
func growUint64(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growUint32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}

// iotaInt32 returns s with s[i] == i for i < n, extending it if needed.
// The prefix already built is kept, so steady state costs nothing.
func iotaInt32(s []int32, n int) []int32 {
	for i := len(s); i < n; i++ {
		s = append(s, int32(i))
	}
	return s
}
