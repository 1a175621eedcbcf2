package changelog

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// aggMaxDirty is the number of changed groups past which ProcessBatch
// flushes by itself: with no periodic epochs an unbounded job would
// otherwise hold every change until Finish.
const aggMaxDirty = 64 << 10

// aggOp is one subtask of a GroupAggregate.
//
// Group ids come from table (on the key columns; a keyless aggregate has
// the one group 0) and are never reused for another key: a group whose
// rows were all retracted, or which expired, keeps its id, with its state
// cleared, and the key's next row finds it again; once such gone groups
// outnumber the live ones, compactGroups renumbers the live ones. keys
// holds the key tuple of every group, at row id = group id.
type aggOp struct {
	cfg   GroupAggregate
	final bool // the final phase of a two-phase aggregate: input is partial rows
	c     *aggCompiled
	info  *arrowflow.TaskInfo
	mem   memory.Allocator
	clock arrowflow.Clock
	ttl   int64 // ns; 0 = none

	table *kernels.GroupTable // nil without keys
	keys  *rowstore.Store     // nil without keys
	accs  []aggAcc
	// sets are the value multisets (one per input column) of the
	// aggregates that need one; viaSet[i] says aggregate i takes its rows
	// through a set instead of update.
	sets   []*aggValueSet
	viaSet []bool

	// By group id.
	ngroups int
	rows    []int64 // inserts minus retractions
	emitted []bool  // the group has an emitted result row
	held    []bool  // the group has state (rows, an emitted row, or changes to flush)
	dirty   []bool  // changed since the last flush (listed in dirtyList)
	updated []int64 // processing time of the last row (ns), with a TTL

	// The final phase's input: the partial schema, its key columns and
	// the number of partial columns of each aggregate.
	partial      *arrow.Schema
	partialKeys  []int
	partialWidth []int

	dirtyList  []uint32
	live       int64 // groups with rows or an emitted row
	nextExpiry int64 // no group expires before (ns)
	stats      GroupAggregateStats

	// Scratch reused across batches.
	gids           []uint32
	addSel, retSel []int32
	addG, retG     []uint32
	newSel         []int32
	hashes         []uint64
	args           []arrow.Array
	keyCols        []arrow.Array
	outRows        []aggOutRow
	outKinds       []arrowflow.RowKind
	outIDs         []rowstore.RowID
}

func (o *aggOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.clock = info.Clock
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	o.ttl = int64(o.cfg.StateTTL)
	if o.final {
		if err := o.cfg.checkTwoPhase(); err != nil {
			return o.errorf("%w", err)
		}
		if o.partial, err = c.partialSchema(o.cfg); err != nil {
			return err
		}
		for i := range c.keyIdx {
			o.partialKeys = append(o.partialKeys, i)
		}
	}
	if err := o.initState(); err != nil {
		return err
	}
	if o.final {
		for i, a := range o.accs {
			o.partialWidth = append(o.partialWidth, len(a.slots(o.cfg.Aggs[i].Name))-1)
		}
	}
	return nil
}

// initState makes the empty state: no groups (one, without keys).
func (o *aggOp) initState() error {
	c := o.c
	o.nextExpiry = math.MaxInt64
	o.ngroups, o.live = 0, 0
	o.rows, o.emitted, o.held, o.dirty, o.updated, o.dirtyList = nil, nil, nil, nil, nil, nil
	var err error
	if len(c.keyIdx) > 0 {
		if o.table, err = kernels.NewGroupTable(c.keyTypes); err != nil {
			return o.errorf("%w", err)
		}
		if o.keys, err = rowstore.New(c.keys, o.mem); err != nil {
			return o.errorf("%w", err)
		}
	}
	o.accs, o.sets, o.viaSet = nil, nil, nil
	for i := range o.cfg.Aggs {
		acc, err := c.newAcc(o.cfg, i)
		if err != nil {
			return err
		}
		o.accs = append(o.accs, acc)
		u, ok := acc.(aggValueUser)
		o.viaSet = append(o.viaSet, ok && u.usesValues())
		if !o.viaSet[i] {
			continue
		}
		col := c.argIdx[i][0]
		var set *aggValueSet
		for _, s := range o.sets {
			if s.col == col {
				set = s
			}
		}
		if set == nil {
			pairs, err := newAggPairs(o.cfg.Input.Field(col).Type)
			if err != nil {
				return o.errorf("aggregate %q: %w", o.cfg.Aggs[i].Name, err)
			}
			set = &aggValueSet{col: col, pairs: pairs}
			o.sets = append(o.sets, set)
		}
		u.bindValues(set.pairs)
		set.users = append(set.users, u)
	}
	if o.table == nil {
		o.growGroups(1)
	}
	return nil
}

// compactGroups rebuilds the state without the group ids of groups that
// are gone (deleted or expired), when they outnumber the groups held: a
// GroupTable cannot delete. It goes through a snapshot in memory, so the
// rebuilt state is exactly what a restore would make.
func (o *aggOp) compactGroups() error {
	if o.table == nil || o.ngroups-int(o.live) <= max(aggMinCompact, int(o.live)) {
		return nil
	}
	store := state.NewMemoryStore()
	w, err := store.Create(state.SnapshotID{Job: "compact", Operator: o.info.Name}, o.info.KeyGroups)
	if err != nil {
		return o.errorf("compacting: %w", err)
	}
	if err := o.SnapshotState(0, w); err != nil {
		w.Abort()
		return err
	}
	h, err := w.Finish()
	if err != nil {
		return o.errorf("compacting: %w", err)
	}
	o.keys.Release()
	if err := o.initState(); err != nil {
		return err
	}
	o.stats.Compactions++
	if h.IsZero() {
		return nil
	}
	r, err := store.Open(h, o.mem)
	if err != nil {
		return o.errorf("compacting: %w", err)
	}
	defer r.Close()
	return o.RestoreState(r)
}

// aggMinCompact is the number of gone groups below which compactGroups
// does not bother.
var aggMinCompact = 64 << 10

// errorf returns an error naming the operator.
func (o *aggOp) errorf(format string, args ...any) error {
	name := "?"
	if o.info != nil {
		name = o.info.Name
	}
	return fmt.Errorf("group aggregate %s: "+format, append([]any{name}, args...)...)
}

// growGroups makes room for group ids below n.
func (o *aggOp) growGroups(n int) {
	if n <= o.ngroups {
		return
	}
	o.ngroups = n
	o.rows, o.emitted, o.dirty, o.held = aggGrow(o.rows, n), aggGrow(o.emitted, n), aggGrow(o.dirty, n), aggGrow(o.held, n)
	if o.ttl > 0 {
		o.updated = aggGrow(o.updated, n)
	}
	for _, a := range o.accs {
		a.grow(n)
	}
	for _, s := range o.sets {
		s.pairs.grow(n)
	}
}

// GroupAggregateStats reports the subtask's counters.
func (o *aggOp) GroupAggregateStats() GroupAggregateStats {
	s := o.stats
	s.Groups = o.live
	s.StateBytes = o.stateBytes()
	return s
}

func (o *aggOp) stateBytes() int64 {
	n := int64(cap(o.rows))*8 + int64(cap(o.emitted)) + int64(cap(o.dirty)) + int64(cap(o.held)) + int64(cap(o.updated))*8 + int64(cap(o.dirtyList))*4
	if o.table != nil {
		n += o.table.SizeBytes() + o.keys.SizeBytes()
	}
	for _, a := range o.accs {
		n += a.sizeBytes()
	}
	for _, s := range o.sets {
		n += s.sizeBytes()
	}
	return n
}

// reportState tells the job's state memory budget what the subtask holds.
func (o *aggOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), o.live)
}

func (o *aggOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if o.final {
		return o.processPartial(b, out)
	}
	rec := b.Record
	if s := rec.Schema(); s != o.cfg.Input && !s.Equal(o.cfg.Input) {
		return o.errorf("batch schema %s differs from the configured input %s", s, o.cfg.Input)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	o.stats.InputRows += int64(n)
	if !o.cfg.Retracting && b.Kinds != nil {
		for k := 0; k < n; k++ {
			if kind := b.Kind(k); kind.IsRetraction() {
				return o.errorf("input row %s (a retraction) in an aggregate configured for an append-only input (Retracting false)", kind)
			}
		}
	}
	if cap(o.gids) < n {
		o.gids = make([]uint32, n)
	}
	gids := o.gids[:n]
	if o.table != nil {
		if err := o.findGroups(rec, o.c.keyIdx, b.Sel, gids); err != nil {
			return err
		}
	} else {
		clear(gids)
	}
	var now int64
	if o.ttl > 0 {
		now = o.clock.Now().UnixNano()
		o.nextExpiry = min(o.nextExpiry, now+o.ttl)
	}
	// One pass in row order keeps each group's row count as a
	// row-at-a-time operator would, so that a retraction of a group with
	// no rows is dropped (Flink ignores it) and PerRowOutputRows counts.
	addSel, retSel, addG, retG := o.addSel[:0], o.retSel[:0], o.addG[:0], o.retG[:0]
	rows, dirty := o.rows, o.dirty
	perRow := int64(0)
	for k, g := range gids {
		r := int32(b.Row(k))
		if b.Kinds != nil && b.Kinds[r].IsRetraction() {
			if rows[g] <= 0 {
				o.stats.IgnoredRetractions++
				continue
			}
			rows[g]--
			retSel, retG = append(retSel, r), append(retG, g)
			perRow += 1 + int64(min(rows[g], 1))
		} else {
			if !o.held[g] {
				o.held[g] = true
				o.live++
			}
			perRow += 1 + int64(min(rows[g], 1))
			rows[g]++
			addSel, addG = append(addSel, r), append(addG, g)
		}
		if !dirty[g] {
			dirty[g] = true
			o.dirtyList = append(o.dirtyList, g)
		}
		if o.ttl > 0 {
			o.updated[g] = now
		}
	}
	o.addSel, o.retSel, o.addG, o.retG = addSel, retSel, addG, retG
	o.stats.PerRowOutputRows += perRow
	for i, a := range o.accs {
		if o.viaSet[i] {
			continue
		}
		args := o.args[:0]
		for _, x := range o.c.argIdx[i] {
			args = append(args, rec.Column(x))
		}
		o.args = args
		if len(addSel) > 0 {
			if err := a.update(args, addSel, addG, false); err != nil {
				return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
			}
		}
		if len(retSel) > 0 {
			if err := a.update(args, retSel, retG, true); err != nil {
				return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
			}
		}
	}
	for _, s := range o.sets {
		col := rec.Column(s.col)
		if len(addSel) > 0 {
			if err := s.apply(col, addSel, addG, false); err != nil {
				return o.errorf("values of %q: %w", o.cfg.Input.Field(s.col).Name, err)
			}
		}
		if len(retSel) > 0 {
			if err := s.apply(col, retSel, retG, true); err != nil {
				return o.errorf("values of %q: %w", o.cfg.Input.Field(s.col).Name, err)
			}
		}
	}
	if err := o.settle(); err != nil {
		return err
	}
	if len(o.dirtyList) > aggMaxDirty {
		if err := o.flush(out); err != nil {
			return err
		}
	}
	return o.reportState()
}

// settle finishes a batch: aggregates first (MIN/MAX rescan the groups
// whose extreme went), then the value sets (which may compact).
func (o *aggOp) settle() error {
	for _, a := range o.accs {
		a.settle()
	}
	for _, s := range o.sets {
		if err := s.settle(); err != nil {
			return o.errorf("%w", err)
		}
	}
	return nil
}

// findGroups writes the group of every selected row to gids, creating
// groups (and storing their keys) for new key tuples.
func (o *aggOp) findGroups(rec arrow.RecordBatch, keyIdx []int, sel []int32, gids []uint32) error {
	cols := o.keyCols[:0]
	for _, x := range keyIdx {
		cols = append(cols, rec.Column(x))
	}
	o.keyCols = cols
	if err := o.table.FindOrInsert(cols, sel, gids); err != nil {
		return o.errorf("%w", err)
	}
	prev, now := o.ngroups, o.table.Len()
	if now == prev {
		return nil
	}
	// New groups have ids in order of first appearance: store the key
	// tuple of the first row of each, so that key row id = group id.
	newSel := o.newSel[:0]
	next := uint32(prev)
	for k, g := range gids {
		if g == next {
			newSel = append(newSel, int32(aggSelRow(sel, k)))
			next++
		}
	}
	o.newSel = newSel
	if cap(o.hashes) < len(newSel) {
		o.hashes = make([]uint64, len(newSel))
	}
	hashes := o.hashes[:len(newSel)]
	if err := kernels.HashColumns(cols, newSel, hashes); err != nil {
		return o.errorf("%w", err)
	}
	keyRec := array.NewRecordBatch(o.c.keys, cols, rec.NumRows())
	first, err := o.keys.Append(keyRec, newSel, hashes)
	keyRec.Release()
	if err != nil {
		return o.errorf("%w", err)
	}
	if int(first) != prev {
		panic(fmt.Sprintf("BUG: group aggregate: key row %d for group %d", first, prev))
	}
	o.growGroups(now)
	return nil
}

func aggSelRow(sel []int32, k int) int {
	if sel == nil {
		return k
	}
	return int(sel[k])
}

func (o *aggOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// FlushEpoch implements arrowflow.EpochFlusher: it emits the changes of
// the groups changed since the last flush.
func (o *aggOp) FlushEpoch(_ uint64, out arrowflow.Emitter) error { return o.flush(out) }

// Finish emits what the last epoch changed.
func (o *aggOp) Finish(out arrowflow.Emitter) error { return o.flush(out) }

// flush drops the groups the TTL expired, then emits one change per
// changed group: +I for a group without an emitted row, -U and +U when
// its result changed, -D when its rows are gone.
func (o *aggOp) flush(out arrowflow.Emitter) error {
	if o.ttl > 0 {
		o.expire(o.clock.Now().UnixNano())
	}
	if len(o.dirtyList) == 0 {
		return nil
	}
	// In group-id order the key rows come out of the key store in long
	// runs (ids are key row ids); the order of changes of different keys
	// means nothing.
	if len(o.dirtyList) > o.ngroups/16 {
		// Many changed: collecting them from the flags beats sorting.
		dl := o.dirtyList[:0]
		for g, d := range o.dirty[:o.ngroups] {
			if d {
				dl = append(dl, uint32(g))
			}
		}
		o.dirtyList = dl
	} else {
		slices.Sort(o.dirtyList)
	}
	rows, kinds, ids := o.outRows[:0], o.outKinds[:0], o.outIDs[:0]
	add := func(g uint32, old bool, kind arrowflow.RowKind) {
		rows, kinds, ids = append(rows, aggOutRow{gid: g, old: old}), append(kinds, kind), append(ids, rowstore.RowID(g))
	}
	for _, g := range o.dirtyList {
		switch {
		case o.rows[g] == 0:
			if o.emitted[g] {
				add(g, true, arrowflow.Delete)
			}
		case !o.emitted[g]:
			add(g, false, arrowflow.Insert)
		default:
			for _, a := range o.accs {
				if a.changed(g) {
					add(g, true, arrowflow.UpdateBefore)
					add(g, false, arrowflow.UpdateAfter)
					break
				}
			}
		}
	}
	o.outRows, o.outKinds, o.outIDs = rows, kinds, ids
	if len(rows) > 0 {
		rec, err := o.buildRows(rows, ids)
		if err != nil {
			return err
		}
		o.stats.OutputRows += int64(len(rows))
		o.stats.Flushes++
		if err := out.Emit(arrowflow.NewChangeBatch(rec, append([]arrowflow.RowKind(nil), kinds...))); err != nil {
			return err
		}
	}
	for _, g := range o.dirtyList {
		o.dirty[g] = false
		if o.rows[g] == 0 {
			o.forget(g)
			continue
		}
		o.emitted[g] = true
		for _, a := range o.accs {
			a.commit(g)
		}
	}
	o.dirtyList = o.dirtyList[:0]
	if err := o.compactGroups(); err != nil {
		return err
	}
	return o.reportState()
}

// forget clears group g, which has no rows.
func (o *aggOp) forget(g uint32) {
	if o.held[g] {
		o.live--
	}
	o.rows[g], o.emitted[g], o.held[g] = 0, false, false
	for _, a := range o.accs {
		a.clear(g)
	}
	for _, s := range o.sets {
		s.pairs.clearGroup(g)
	}
}

// expire drops, without output, the groups not updated for the TTL.
func (o *aggOp) expire(now int64) {
	if now < o.nextExpiry {
		return
	}
	next := int64(math.MaxInt64)
	for g := 0; g < o.ngroups; g++ {
		if !o.held[g] {
			continue
		}
		if exp := o.updated[g] + o.ttl; exp <= now && !o.dirty[g] {
			o.rows[g] = 0
			o.forget(uint32(g))
			o.stats.ExpiredGroups++
		} else {
			next = min(next, exp)
		}
	}
	o.nextExpiry = next
}

// buildRows materializes the output rows: key columns from the key store,
// then each aggregate's column.
func (o *aggOp) buildRows(rows []aggOutRow, ids []rowstore.RowID) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	if o.keys != nil {
		keys, err := o.keys.Gather(ids)
		if err != nil {
			return nil, o.errorf("%w", err)
		}
		for _, c := range keys.Columns() {
			c.Retain()
			cols = append(cols, c)
		}
		keys.Release()
	}
	for _, a := range o.accs {
		cols = append(cols, a.build(o.mem, rows))
	}
	rec := array.NewRecordBatch(o.c.out, cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

func (o *aggOp) Close() error {
	if o.keys != nil {
		o.keys.Release()
		o.keys = nil
	}
	o.table, o.accs = nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
