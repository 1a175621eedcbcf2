package kernels

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// This file is the GroupTable fast path: one fixed-width key column, its
// values normalised to uint64 keys.
//
// The table has two modes. While the integer keys span a narrow range it
// is direct-mapped (a "perfect hash", as DuckDB does for small key ranges):
// direct[key-base] holds the group, one load per row and no probing. Once
// the range outgrows what the number of groups justifies it becomes an
// open-addressing hash table with linear probing whose slots hold the key
// inline next to the group id. A hash-mode table whose keys have become
// dense again (e.g. keys 0..1e6 arriving in random order) switches back to
// direct at the next batch.

// fixedSlot is one slot of the hash mode: the normalised key inline next to
// its group id, so a probe touches one cache line and compares without an
// indirection.
type fixedSlot struct {
	key uint64
	gid uint32 // group id + 1; 0 marks an empty slot
}

// fixedTable maps normalised 64-bit keys to group ids. The null key is in
// neither the direct array nor the slots: it has a reserved group, nullGid,
// assigned at its first appearance like any other.
//
// Invariants:
//   - keys[g] is the normalised key of group g (0 for the null group), and
//     lo, hi are the smallest and largest non-null keys as int64 (lo > hi
//     when there are none).
//   - Direct mode (isDirect): slots is nil; for every non-null group g,
//     keys[g]-base (mod 2^64) < len(direct) and direct[keys[g]-base] = g+1;
//     every other entry is 0.
//   - Hash mode: direct is nil; len(slots) is a power of two and 64-shift
//     its log2; the non-null groups fill at most growAt < len(slots)
//     slots, so every probe ends.
type fixedTable struct {
	dt      arrow.DataType
	keys    []uint64
	nullGid uint32 // NoGroup until a null key is seen
	lo, hi  int64

	isDirect  bool
	canDirect bool // integer-like keys; float bits have no useful range
	direct    []uint32
	base      uint64

	slots  []fixedSlot
	shift  uint
	growAt int

	buf []uint64 // scratch for normalised input keys
}

// A large hash table (the general path's too) doubles once it is
// maxLoadNum/maxLoadDen full: linear probing stays short well past half
// full when the next slots share the cache line, and at 1e6 groups the
// memory saved by a higher load is worth more than the probes. Small
// tables are kept sparser; see growAt.
const (
	fixedMinSlots = 64
	maxLoadNum    = 5
	maxLoadDen    = 8
)

// The direct mode may span directFloor keys whatever the number of groups
// (256 KiB of uint32), or more while there is at least one group per
// directKeep keys of range. A hash-mode table turns direct once there is a
// group per directEnter keys, so the modes do not flap.
const (
	directFloor = 1 << 16
	directKeep  = 4
	directEnter = 2
)

func newFixedTable(dt arrow.DataType) *fixedTable {
	t := &fixedTable{dt: dt, nullGid: NoGroup, lo: math.MaxInt64, hi: math.MinInt64}
	switch dt.ID() {
	case arrow.FLOAT32, arrow.FLOAT64:
		t.allocSlots(fixedMinSlots)
	default:
		t.canDirect, t.isDirect = true, true
	}
	return t
}

func (t *fixedTable) allocSlots(n int) {
	t.slots = make([]fixedSlot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	t.growAt = growAt(n)
}

// growAt is the number of keys at which a table of n slots doubles. A
// slot array of up to sparseSlots slots (cache-resident) is kept at most a
// quarter full: a probe that does not end at its home slot costs a
// mispredicted branch, which at small sizes costs more than the memory
// saved by packing slots tighter.
func growAt(n int) int {
	if n <= sparseSlots {
		return n / 4
	}
	return n / maxLoadDen * maxLoadNum
}

const sparseSlots = 1 << 16

// fixedHash spreads a normalised key over the slot array: fold the high
// half into the low half (so keys differing only in high bits separate),
// then Fibonacci hashing; the top bits of the product index the slots.
func fixedHash(key uint64, shift uint) uint64 {
	return ((key ^ key>>32) * 0x9e3779b97f4a7c15) >> shift
}

// normalise returns the key of each selected row as a uint64: integers
// sign- or zero-extended, floats as the bits of the float64 value with -0
// made +0 and every NaN the canonical NaN, booleans 0 or 1. Values of null
// rows are unspecified. For 64-bit types without a selection it returns the
// column's own buffer, without copying.
func (t *fixedTable) normalise(col arrow.Array, sel []int32) []uint64 {
	data := col.Data()
	m := col.Len()
	if sel != nil {
		m = len(sel)
	}
	switch t.dt.ID() {
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		vals := arrow.GetValues[uint64](data, 1)
		if sel == nil {
			return vals[:m:m]
		}
		t.buf = widenKeys(t.buf, vals, sel, m)
	case arrow.INT8:
		t.buf = widenKeys(t.buf, arrow.GetValues[int8](data, 1), sel, m)
	case arrow.INT16:
		t.buf = widenKeys(t.buf, arrow.GetValues[int16](data, 1), sel, m)
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		t.buf = widenKeys(t.buf, arrow.GetValues[int32](data, 1), sel, m)
	case arrow.UINT8:
		t.buf = widenKeys(t.buf, arrow.GetValues[uint8](data, 1), sel, m)
	case arrow.UINT16:
		t.buf = widenKeys(t.buf, arrow.GetValues[uint16](data, 1), sel, m)
	case arrow.UINT32:
		t.buf = widenKeys(t.buf, arrow.GetValues[uint32](data, 1), sel, m)
	case arrow.FLOAT32:
		t.buf = floatKeys(t.buf, arrow.GetValues[float32](data, 1), sel, m)
	case arrow.FLOAT64:
		t.buf = floatKeys(t.buf, arrow.GetValues[float64](data, 1), sel, m)
	case arrow.BOOL:
		out := growUint64(t.buf, m)
		bm, off := data.Buffers()[1].Bytes(), data.Offset()
		for k := range out {
			j := off + selRow(sel, k)
			out[k] = uint64(bm[j>>3]>>(j&7)) & 1
		}
		t.buf = out
	default:
		panic("BUG: fixed table over " + t.dt.String())
	}
	return t.buf
}

func widenKeys[T integer](buf []uint64, vals []T, sel []int32, m int) []uint64 {
	out := growUint64(buf, m)
	if sel == nil {
		for i, v := range vals[:m] {
			out[i] = uint64(v)
		}
		return out
	}
	for k, i := range sel {
		out[k] = uint64(vals[i])
	}
	return out
}

func floatKeys[F float32 | float64](buf []uint64, vals []F, sel []int32, m int) []uint64 {
	out := growUint64(buf, m)
	if sel == nil {
		for i, v := range vals[:m] {
			out[i] = floatKey(float64(v))
		}
		return out
	}
	for k, i := range sel {
		out[k] = floatKey(float64(vals[i]))
	}
	return out
}

// floatKey is the grouping identity of a float: equal floats, -0 and +0,
// and all NaNs map to the same bits.
func floatKey(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return canonicalNaN
	}
	return math.Float64bits(f)
}

var canonicalNaN = math.Float64bits(math.NaN())

// probeRows is what one probe loop needs besides the keys: where rows are
// null (valid nil when none), which rows they are, where group ids go.
type probeRows struct {
	keys   []uint64
	valid  []byte
	off    int
	sel    []int32
	gids   []uint32
	insert bool
}

func (p *probeRows) isNull(k int) bool {
	j := p.off + selRow(p.sel, k)
	return p.valid[j>>3]&(1<<(j&7)) == 0
}

func (t *fixedTable) find(col arrow.Array, sel []int32, gids []uint32, insert bool) {
	p := probeRows{keys: t.normalise(col, sel), sel: sel, gids: gids[:len(gids):len(gids)], insert: insert}
	if col.NullN() > 0 {
		data := col.Data()
		p.valid, p.off = data.Buffers()[0].Bytes(), data.Offset()
	}
	if !t.isDirect && t.canDirect && insert && t.denseEnough(directEnter) {
		t.toDirect()
	}
	for start := 0; start < len(p.keys); {
		if !t.isDirect {
			t.probeHash(&p, start)
			return
		}
		start = t.probeDirect(&p, start)
	}
}

// nullGroup returns the null key's group, creating it when inserting.
func (t *fixedTable) nullGroup(insert bool) uint32 {
	if t.nullGid == NoGroup && insert {
		t.nullGid = uint32(len(t.keys))
		t.keys = append(t.keys, 0)
	}
	return t.nullGid
}

// newGroup appends a group for the non-null key and returns its id.
func (t *fixedTable) newGroup(key uint64) uint32 {
	gid := uint32(len(t.keys))
	t.keys = append(t.keys, key)
	t.lo, t.hi = min(t.lo, int64(key)), max(t.hi, int64(key))
	return gid
}

// probeDirect runs the direct-mode loop from row start and returns where
// it stopped: len(keys), or the row whose key made the table switch to
// hash mode. The inner loop handles only the steady state, a non-null key
// whose group exists, so that it keeps everything in registers; anything
// else drops to the per-row slow path and resumes.
func (t *fixedTable) probeDirect(p *probeRows, start int) int {
	keys, gids := p.keys, p.gids[:len(p.keys)]
	k := start
	for k < len(keys) {
		if p.valid == nil {
			direct, base := t.direct, t.base
			for ; k < len(keys); k++ {
				d := keys[k] - base
				if d >= uint64(len(direct)) {
					break
				}
				g := direct[d]
				if g == 0 {
					break
				}
				gids[k] = g - 1
			}
		} else {
			k = t.probeDirectNulls(p, k)
		}
		if k == len(keys) {
			break
		}
		if !t.directSlow(p, k) {
			return k
		}
		k++
	}
	return len(keys)
}

// probeDirectNulls is the steady-state loop for a column with nulls: it
// stops at the first row that is neither null nor an existing key.
func (t *fixedTable) probeDirectNulls(p *probeRows, k int) int {
	direct, base := t.direct, t.base
	keys, gids := p.keys, p.gids[:len(p.keys)]
	for ; k < len(keys); k++ {
		if p.isNull(k) {
			if t.nullGid == NoGroup {
				break
			}
			gids[k] = t.nullGid
			continue
		}
		d := keys[k] - base
		if d >= uint64(len(direct)) {
			break
		}
		g := direct[d]
		if g == 0 {
			break
		}
		gids[k] = g - 1
	}
	return k
}

// directSlow handles row k that the steady-state loops left: a null key,
// a new key, or a key outside the direct range. It reports false when the
// key made the table switch to hash mode, leaving row k unassigned.
//
//go:noinline
func (t *fixedTable) directSlow(p *probeRows, k int) bool {
	if p.valid != nil && p.isNull(k) {
		p.gids[k] = t.nullGroup(p.insert)
		return true
	}
	key := p.keys[k]
	d := key - t.base
	if d >= uint64(len(t.direct)) {
		if !p.insert {
			p.gids[k] = NoGroup
			return true
		}
		if !t.widen(key) {
			t.toHash()
			return false
		}
		d = key - t.base
	}
	if g := t.direct[d]; g != 0 {
		p.gids[k] = g - 1
		return true
	}
	if !p.insert {
		p.gids[k] = NoGroup
		return true
	}
	g := t.newGroup(key)
	t.direct[d] = g + 1
	p.gids[k] = g
	return true
}

// span is the number of keys from lo to hi with key included, saturated
// at MaxUint64.
func (t *fixedTable) span(key int64) uint64 {
	lo, hi := min(t.lo, key), max(t.hi, key)
	s := uint64(hi) - uint64(lo)
	if s == math.MaxUint64 {
		return s
	}
	return s + 1
}

// directLimit is the widest range the direct mode may span with groups
// groups, at one group per `per` keys.
func directLimit(groups, per int) uint64 {
	return max(directFloor, uint64(groups)*uint64(per))
}

// denseEnough reports whether the keys so far fit the direct mode at one
// group per `per` keys.
func (t *fixedTable) denseEnough(per int) bool {
	groups := len(t.keys)
	if t.nullGid != NoGroup {
		groups--
	}
	return groups > 0 && t.span(t.lo) <= directLimit(groups, per)
}

// widen makes the direct array cover key as well, or reports that the
// range would be too wide for the number of groups. The array grows
// geometrically, with the headroom split on both sides, so a range that
// creeps outwards is copied O(log) times.
func (t *fixedTable) widen(key uint64) bool {
	need := t.span(int64(key))
	limit := directLimit(len(t.keys)+1, directKeep)
	if need > limit {
		return false
	}
	size := max(need, 64)
	if grown := 2 * uint64(len(t.direct)); grown > size {
		size = min(grown, max(limit, need))
	}
	lo := min(t.lo, int64(key))
	base := uint64(lo) - (size-need)/2 // modular: the invariant holds mod 2^64
	direct := make([]uint32, size)
	for g, k := range t.keys {
		if uint32(g) != t.nullGid {
			direct[k-base] = uint32(g) + 1
		}
	}
	t.direct, t.base = direct, base
	return true
}

// toHash turns a direct-mode table into a hash-mode one.
func (t *fixedTable) toHash() {
	n := fixedMinSlots
	for growAt(n) <= len(t.keys) {
		n *= 2
	}
	t.allocSlots(n)
	for g, k := range t.keys {
		if uint32(g) != t.nullGid {
			t.slots[t.emptySlot(k)] = fixedSlot{key: k, gid: uint32(g) + 1}
		}
	}
	t.direct, t.isDirect = nil, false
}

// toDirect turns a hash-mode table whose keys are dense into a direct one.
func (t *fixedTable) toDirect() {
	t.direct, t.isDirect = nil, true
	need := t.span(t.lo)
	t.direct = make([]uint32, need)
	t.base = uint64(t.lo)
	for g, k := range t.keys {
		if uint32(g) != t.nullGid {
			t.direct[k-t.base] = uint32(g) + 1
		}
	}
	t.slots = nil
}

// probeHash is the hash-mode loop, from row start to the end. Like
// probeDirect it keeps the steady state, a non-null key already in the
// table, in a tight loop: one multiply, one load and two compares when the
// key sits in its home slot. Empty slots (new keys) and nulls drop to the
// slow path.
func (t *fixedTable) probeHash(p *probeRows, start int) {
	keys, gids := p.keys, p.gids[:len(p.keys)]
	for k := start; k < len(keys); k++ {
		slots, shift := t.slots, t.shift
		mask := uint64(len(slots) - 1)
		if p.valid == nil {
		rows:
			for ; k < len(keys); k++ {
				key := keys[k]
				for h := fixedHash(key, shift); ; h = (h + 1) & mask {
					s := slots[h]
					if s.key == key && s.gid != 0 {
						gids[k] = s.gid - 1
						continue rows
					}
					if s.gid == 0 {
						break rows
					}
				}
			}
		} else {
			k = t.probeHashNulls(p, k)
		}
		if k == len(keys) {
			return
		}
		t.hashSlow(p, k)
	}
}

// probeHashNulls is the steady-state loop for a column with nulls: it
// stops at the first row that is neither null nor an existing key.
func (t *fixedTable) probeHashNulls(p *probeRows, k int) int {
	slots, shift := t.slots, t.shift
	mask := uint64(len(slots) - 1)
	keys, gids := p.keys, p.gids[:len(p.keys)]
rows:
	for ; k < len(keys); k++ {
		if p.isNull(k) {
			if t.nullGid == NoGroup {
				break
			}
			gids[k] = t.nullGid
			continue
		}
		key := keys[k]
		for h := fixedHash(key, shift); ; h = (h + 1) & mask {
			s := slots[h]
			if s.key == key && s.gid != 0 {
				gids[k] = s.gid - 1
				continue rows
			}
			if s.gid == 0 {
				break rows
			}
		}
	}
	return k
}

// hashSlow handles row k that the steady-state loops left: a null key or
// a key not in the table.
//
//go:noinline
func (t *fixedTable) hashSlow(p *probeRows, k int) {
	if p.valid != nil && p.isNull(k) {
		p.gids[k] = t.nullGroup(p.insert)
		return
	}
	key := p.keys[k]
	mask := uint64(len(t.slots) - 1)
	h := fixedHash(key, t.shift)
	for t.slots[h].gid != 0 {
		if t.slots[h].key == key {
			p.gids[k] = t.slots[h].gid - 1
			return
		}
		h = (h + 1) & mask
	}
	if !p.insert {
		p.gids[k] = NoGroup
		return
	}
	p.gids[k] = t.insert(h, key)
}

// insert adds key, known to be absent, as a new group in the empty slot h,
// growing the table first if it is full enough. It is the slow path of
// probeHash, kept out of line.
//
//go:noinline
func (t *fixedTable) insert(h uint64, key uint64) uint32 {
	if t.nonNullGroups() >= t.growAt {
		t.rehash(2 * len(t.slots))
		h = t.emptySlot(key)
	}
	gid := t.newGroup(key)
	t.slots[h] = fixedSlot{key: key, gid: gid + 1}
	return gid
}

func (t *fixedTable) nonNullGroups() int {
	if t.nullGid != NoGroup {
		return len(t.keys) - 1
	}
	return len(t.keys)
}

// emptySlot returns the first empty slot of key's probe sequence.
func (t *fixedTable) emptySlot(key uint64) uint64 {
	mask := uint64(len(t.slots) - 1)
	h := fixedHash(key, t.shift)
	for t.slots[h].gid != 0 {
		h = (h + 1) & mask
	}
	return h
}

func (t *fixedTable) rehash(n int) {
	old := t.slots
	t.allocSlots(n)
	for _, s := range old {
		if s.gid != 0 {
			t.slots[t.emptySlot(s.key)] = s
		}
	}
}

func (t *fixedTable) reset() {
	clear(t.slots)
	clear(t.direct)
	t.keys = t.keys[:0]
	t.nullGid = NoGroup
	t.lo, t.hi = math.MaxInt64, math.MinInt64
}

func (t *fixedTable) sizeBytes() int64 {
	return int64(len(t.slots))*16 + int64(len(t.direct))*4 + int64(cap(t.keys))*8 + int64(cap(t.buf))*8
}

// array rebuilds the key column from the normalised keys.
func (t *fixedTable) array(mem memory.Allocator) arrow.Array {
	var valid []bool // nil: no null group
	if t.nullGid != NoGroup {
		valid = make([]bool, len(t.keys))
		for g := range valid {
			valid[g] = true
		}
		valid[t.nullGid] = false
	}
	keys := t.keys
	switch t.dt.ID() {
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return newFixedArray(mem, t.dt, keys, valid)
	case arrow.INT8:
		return newFixedArray(mem, t.dt, narrowKeys[int8](keys), valid)
	case arrow.INT16:
		return newFixedArray(mem, t.dt, narrowKeys[int16](keys), valid)
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return newFixedArray(mem, t.dt, narrowKeys[int32](keys), valid)
	case arrow.UINT8:
		return newFixedArray(mem, t.dt, narrowKeys[uint8](keys), valid)
	case arrow.UINT16:
		return newFixedArray(mem, t.dt, narrowKeys[uint16](keys), valid)
	case arrow.UINT32:
		return newFixedArray(mem, t.dt, narrowKeys[uint32](keys), valid)
	case arrow.FLOAT64:
		return newFixedArray(mem, t.dt, keys, valid) // the bits are the float64 values
	case arrow.FLOAT32:
		f := make([]float32, len(keys))
		for i, k := range keys {
			f[i] = float32(math.Float64frombits(k))
		}
		return newFixedArray(mem, t.dt, f, valid)
	case arrow.BOOL:
		b := make([]bool, len(keys))
		for i, k := range keys {
			b[i] = k != 0
		}
		return newBoolArray(mem, b, valid)
	}
	panic("BUG: fixed table over " + t.dt.String())
}

func narrowKeys[T integer](keys []uint64) []T {
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = T(k)
	}
	return out
}
