package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// aggPairs is the multiset of values of every group: a kernels.GroupTable
// on (group id, value) hands out dense pair ids, which index the pairs'
// counts. The pairs of a group form a list (head, next) so that a group can
// be scanned (a MIN whose minimum was retracted) or cleared. A pair whose
// count drops to 0 stays until compact rebuilds the table without it.
type aggPairs struct {
	types []arrow.DataType // uint32, the value type
	table *kernels.GroupTable
	count []int64  // by pair
	group []uint32 // by pair
	next  []int32  // by pair: the next pair of the group, -1 at the end
	head  []int32  // by group: its first pair, -1 for none
	live  int      // pairs with a positive count
	// compactions counts rebuilds (for tests).
	compactions int

	gidCol []uint32 // scratch: the group of each physical row
	pids   []uint32 // scratch
}

func newAggPairs(dt arrow.DataType) (*aggPairs, error) {
	types := []arrow.DataType{arrow.PrimitiveTypes.Uint32, dt}
	t, err := kernels.NewGroupTable(types)
	if err != nil {
		return nil, err
	}
	return &aggPairs{types: types, table: t}, nil
}

func (p *aggPairs) grow(groups int) {
	for len(p.head) < groups {
		p.head = append(p.head, -1)
	}
}

// find returns the pair of each selected row (value vals[sel[k]] in group
// gids[k]), creating missing pairs (with count 0) when insert, else
// reporting kernels.NoGroup for them. The result is scratch.
func (p *aggPairs) find(vals arrow.Array, sel []int32, gids []uint32, insert bool) ([]uint32, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	n := vals.Len()
	if cap(p.gidCol) < n {
		p.gidCol = make([]uint32, n)
	}
	gc := p.gidCol[:n]
	for k, i := range sel {
		gc[i] = gids[k]
	}
	buf := memory.NewBufferBytes(arrow.Uint32Traits.CastToBytes(gc))
	d := array.NewData(arrow.PrimitiveTypes.Uint32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	gcol := array.NewUint32Data(d)
	d.Release()
	defer gcol.Release()
	if cap(p.pids) < len(sel) {
		p.pids = make([]uint32, len(sel))
	}
	pids := p.pids[:len(sel)]
	keys := []arrow.Array{gcol, vals}
	var err error
	if insert {
		err = p.table.FindOrInsert(keys, sel, pids)
	} else {
		err = p.table.Lookup(keys, sel, pids)
	}
	if err != nil {
		return nil, err
	}
	if insert {
		// New pairs have ids in order of first appearance.
		for k, id := range pids {
			if int(id) == len(p.count) {
				g := gids[k]
				p.count = append(p.count, 0)
				p.group = append(p.group, g)
				p.next = append(p.next, p.head[g])
				p.head[g] = int32(id)
			}
		}
	}
	return pids, nil
}

// add changes pair id's count by d (never below 0) and reports whether the
// pair became live (+1) or dead (-1).
func (p *aggPairs) add(id uint32, d int64) int {
	c := p.count[id]
	n := max(c+d, 0)
	p.count[id] = n
	switch {
	case c == 0 && n > 0:
		p.live++
		return 1
	case c > 0 && n == 0:
		p.live--
		return -1
	}
	return 0
}

// clearGroup zeroes the counts of group g's pairs.
func (p *aggPairs) clearGroup(g uint32) {
	for id := p.head[g]; id >= 0; id = p.next[id] {
		if p.count[id] > 0 {
			p.live--
		}
		p.count[id] = 0
	}
}

// needsCompact reports whether dead pairs outnumber live ones enough to
// rebuild the table.
func (p *aggPairs) needsCompact() bool {
	dead := len(p.count) - p.live
	return dead > aggMinPairCompact && dead > p.live
}

// aggMinPairCompact is the number of dead pairs below which a multiset is
// not rebuilt.
var aggMinPairCompact = 4096

// compact rebuilds the table with the live pairs only, renumbered in order,
// and returns the old -> new pair id map (-1 for dropped pairs).
func (p *aggPairs) compact() ([]int32, error) {
	mem := memory.DefaultAllocator
	keys := p.table.Keys(mem)
	defer func() {
		for _, k := range keys {
			k.Release()
		}
	}()
	sel := make([]int32, 0, p.live)
	remap := make([]int32, len(p.count))
	for id, c := range p.count {
		remap[id] = -1
		if c > 0 {
			remap[id] = int32(len(sel))
			sel = append(sel, int32(id))
		}
	}
	t, err := kernels.NewGroupTable(p.types)
	if err != nil {
		return nil, err
	}
	ids := make([]uint32, len(sel))
	if err := t.FindOrInsert(keys, sel, ids); err != nil {
		return nil, err
	}
	count, group := make([]int64, len(sel)), make([]uint32, len(sel))
	next := make([]int32, len(sel))
	for i := range p.head {
		p.head[i] = -1
	}
	for k, old := range sel {
		if ids[k] != uint32(k) {
			panic("BUG: group aggregate: compacted pairs renumbered out of order")
		}
		g := p.group[old]
		count[k], group[k] = p.count[old], g
		next[k], p.head[g] = p.head[g], int32(k)
	}
	p.table, p.count, p.group, p.next = t, count, group, next
	p.compactions++
	return remap, nil
}

// liveIDs lists the live pairs in id order.
func (p *aggPairs) liveIDs() []int32 {
	ids := make([]int32, 0, p.live)
	for id, c := range p.count {
		if c > 0 {
			ids = append(ids, int32(id))
		}
	}
	return ids
}

func (p *aggPairs) exportCounts(mem memory.Allocator, ids []int32) ([]uint32, arrow.Array) {
	gids := make([]uint32, len(ids))
	counts := make([]int64, len(ids))
	for k, id := range ids {
		gids[k], counts[k] = p.group[id], p.count[id]
	}
	return gids, aggFixedArray(mem, arrow.PrimitiveTypes.Int64, counts, nil)
}

func (p *aggPairs) sizeBytes() int64 {
	return p.table.SizeBytes() + int64(cap(p.count))*8 + int64(cap(p.group))*4 + int64(cap(p.next))*4 +
		int64(cap(p.head))*4 + int64(cap(p.gidCol))*4 + int64(cap(p.pids))*4
}

// aggDistinct is COUNT(DISTINCT x): the number of values of the group's
// multiset (an aggValueSet shared with the other aggregates over x) with a
// positive count.
type aggDistinct struct {
	aggResult[int64]
	dt       arrow.DataType
	distinct []int64
}

func newAggDistinct(dt arrow.DataType) (*aggDistinct, error) {
	if !aggKeyType(dt) {
		return nil, fmt.Errorf("count(distinct): unsupported argument type %s", dt)
	}
	a := &aggDistinct{dt: dt}
	a.codec = aggInt64Codec
	a.cur = func(g uint32) (int64, bool) { return a.distinct[g], true }
	return a, nil
}

func (a *aggDistinct) grow(n int) {
	a.distinct = aggGrow(a.distinct, n)
	a.growResult(n)
}

func (a *aggDistinct) update([]arrow.Array, []int32, []uint32, bool) error {
	panic("BUG: group aggregate: count(distinct) takes its rows through its value set")
}

func (a *aggDistinct) usesValues() bool { return true }

func (a *aggDistinct) updateValues(_ arrow.Array, _ []int32, gids []uint32, _ []uint32, trans []int8, _ bool) {
	for k, t := range trans {
		a.distinct[gids[k]] += int64(t)
	}
}

func (a *aggDistinct) remapValues([]int32, int) {}

func (a *aggDistinct) bindValues(*aggPairs) {}

func (a *aggDistinct) settle() {}

func (a *aggDistinct) merge([]arrow.Array, []int32, []uint32) error {
	return fmt.Errorf("count(distinct) has no two-phase form")
}

func (a *aggDistinct) clear(g uint32) {
	a.distinct[g] = 0
	a.clearResult(g)
}

func (a *aggDistinct) slots(name string) []aggSlot { return []aggSlot{a.resultSlot(name)} }

func (a *aggDistinct) sizeBytes() int64 { return int64(cap(a.distinct))*8 + a.resultBytes() }

// aggMinMax is MIN or MAX. Over an append-only input it keeps each
// group's running extreme (run, has). Over a retracting input it reads
// the group's multiset of values (pairs, an aggValueSet shared with the
// other aggregates over the same column), keeps each pair's value (pval)
// and best, the pair holding the extreme; retracting the extreme's last
// copy marks the group stale, and settle rescans the group's pairs.
type aggMinMax[T comparable] struct {
	aggResult[T]
	vc         aggCodec[T]
	better     func(a, b T) bool // a is strictly more extreme than b
	retracting bool
	run        []T // append-only: the running extreme
	has        []bool
	pairs      *aggPairs
	pval       []T     // by pair
	best       []int32 // by group, -1 for none
	stale      []uint32
	valid      aggValid
}

func newAggMinMax(dt arrow.DataType, isMax, retracting bool) (aggAcc, error) {
	switch dt.ID() {
	case arrow.INT8:
		return newAggMinMaxOf(aggFixedCodec[int8](dt, aggEqual[int8]), aggOrderedLess[int8], isMax, retracting)
	case arrow.INT16:
		return newAggMinMaxOf(aggFixedCodec[int16](dt, aggEqual[int16]), aggOrderedLess[int16], isMax, retracting)
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return newAggMinMaxOf(aggFixedCodec[int32](dt, aggEqual[int32]), aggOrderedLess[int32], isMax, retracting)
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return newAggMinMaxOf(aggFixedCodec[int64](dt, aggEqual[int64]), aggOrderedLess[int64], isMax, retracting)
	case arrow.UINT8:
		return newAggMinMaxOf(aggFixedCodec[uint8](dt, aggEqual[uint8]), aggOrderedLess[uint8], isMax, retracting)
	case arrow.UINT16:
		return newAggMinMaxOf(aggFixedCodec[uint16](dt, aggEqual[uint16]), aggOrderedLess[uint16], isMax, retracting)
	case arrow.UINT32:
		return newAggMinMaxOf(aggFixedCodec[uint32](dt, aggEqual[uint32]), aggOrderedLess[uint32], isMax, retracting)
	case arrow.UINT64:
		return newAggMinMaxOf(aggFixedCodec[uint64](dt, aggEqual[uint64]), aggOrderedLess[uint64], isMax, retracting)
	case arrow.FLOAT32:
		return newAggMinMaxOf(aggFixedCodec[float32](dt, aggFloatEqual[float32]), aggFloatLess[float32], isMax, retracting)
	case arrow.FLOAT64:
		return newAggMinMaxOf(aggFixedCodec[float64](dt, aggFloatEqual[float64]), aggFloatLess[float64], isMax, retracting)
	case arrow.DECIMAL128:
		return newAggMinMaxOf(aggDec128Codec(dt), func(a, b decimal128.Num) bool { return a.Less(b) }, isMax, retracting)
	case arrow.BOOL:
		return newAggMinMaxOf(aggBoolCodec(), func(a, b bool) bool { return !a && b }, isMax, retracting)
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return newAggMinMaxOf(aggStringCodec(dt), aggOrderedLess[string], isMax, retracting)
	}
	return nil, fmt.Errorf("min/max over %s is not supported over a changelog", dt)
}

func newAggMinMaxOf[T comparable](vc aggCodec[T], less func(a, b T) bool, isMax, retracting bool) (aggAcc, error) {
	a := &aggMinMax[T]{vc: vc, better: less, retracting: retracting}
	if isMax {
		a.better = func(x, y T) bool { return less(y, x) }
	}
	a.codec = vc
	if retracting {
		if !aggKeyType(vc.dt) {
			return nil, fmt.Errorf("min/max over a retracting input: unsupported argument type %s", vc.dt)
		}
		a.cur = func(g uint32) (T, bool) {
			if b := a.best[g]; b >= 0 {
				return a.pval[b], true
			}
			var z T
			return z, false
		}
	} else {
		a.cur = func(g uint32) (T, bool) { return a.run[g], a.has[g] }
	}
	return a, nil
}

func (a *aggMinMax[T]) keep(v T) T {
	if a.vc.own != nil {
		return a.vc.own(v)
	}
	return v
}

func (a *aggMinMax[T]) grow(n int) {
	a.growResult(n)
	if !a.retracting {
		a.run, a.has = aggGrow(a.run, n), aggGrow(a.has, n)
		return
	}
	for len(a.best) < n {
		a.best = append(a.best, -1)
	}
}

func (a *aggMinMax[T]) update(args []arrow.Array, sel []int32, gids []uint32, retract bool) error {
	sel, gids = a.valid.filter(args[0], sel, gids)
	rd := a.vc.reader(args[0])
	if !a.retracting {
		if retract {
			panic("BUG: group aggregate: retraction into an append-only min/max")
		}
		cur, has := a.run, a.has
		for k, g := range gids {
			v := rd(int(sel[k]))
			if !has[g] || a.better(v, cur[g]) {
				cur[g], has[g] = a.keep(v), true
			}
		}
		return nil
	}
	panic("BUG: group aggregate: a retracting min/max takes its rows through its value set")
}

func (a *aggMinMax[T]) usesValues() bool { return a.retracting }

func (a *aggMinMax[T]) updateValues(vals arrow.Array, sel []int32, gids []uint32, pids []uint32, trans []int8, retract bool) {
	if !retract {
		var rd func(int) T
		for k, id := range pids {
			if int(id) == len(a.pval) {
				if rd == nil {
					rd = a.vc.reader(vals)
				}
				a.pval = append(a.pval, a.keep(rd(int(sel[k]))))
			}
			g := gids[k]
			if a.pairs.count[id] > 0 {
				if b := a.best[g]; b < 0 || a.better(a.pval[id], a.pval[b]) {
					a.best[g] = int32(id)
				}
			}
		}
		return
	}
	for k, id := range pids {
		if g := gids[k]; id != kernels.NoGroup && trans[k] < 0 && a.best[g] == int32(id) {
			a.best[g] = -1
			a.stale = append(a.stale, g)
		}
	}
}

func (a *aggMinMax[T]) bindValues(p *aggPairs) { a.pairs = p }

// remapValues follows a compaction of the value set.
func (a *aggMinMax[T]) remapValues(remap []int32, live int) {
	pval := make([]T, live)
	for old, nw := range remap {
		if nw >= 0 {
			pval[nw] = a.pval[old]
		}
	}
	a.pval = pval
	for g, b := range a.best {
		if b >= 0 {
			a.best[g] = remap[b]
		}
	}
}

func (a *aggMinMax[T]) settle() {
	if !a.retracting {
		return
	}
	p := a.pairs
	for _, g := range a.stale {
		if a.best[g] >= 0 {
			continue // a later add of the batch found one
		}
		best := int32(-1)
		for id := p.head[g]; id >= 0; id = p.next[id] {
			if p.count[id] > 0 && (best < 0 || a.better(a.pval[id], a.pval[best])) {
				best = id
			}
		}
		a.best[g] = best
	}
	a.stale = a.stale[:0]
}

func (a *aggMinMax[T]) merge(cols []arrow.Array, sel []int32, gids []uint32) error {
	if a.retracting {
		return fmt.Errorf("min/max over a retracting input has no two-phase form")
	}
	return a.update(cols, sel, gids, false) // skips NULLs: groups without values
}

func (a *aggMinMax[T]) clear(g uint32) {
	a.clearResult(g)
	if !a.retracting {
		var z T
		a.run[g], a.has[g] = z, false
		return
	}
	a.best[g] = -1
}

func (a *aggMinMax[T]) slots(name string) []aggSlot {
	if a.retracting {
		return []aggSlot{a.resultSlot(name)}
	}
	return []aggSlot{aggSliceSlot[T]{name: name + ".value", codec: a.vc, vals: &a.run, valid: &a.has}, a.resultSlot(name)}
}

func (a *aggMinMax[T]) sizeBytes() int64 {
	var z T
	w := int64(aggSizeof(z))
	n := a.resultBytes() + int64(cap(a.run))*w + int64(cap(a.has)) + int64(cap(a.pval))*w + int64(cap(a.best))*4
	return n
}
