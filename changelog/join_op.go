package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
)

// joinOp is one subtask of a regular join.
//
// Invariants: every live row of side s is in exactly one chain,
// sides[s].head[g] for its key's group g; groupRows[g] counts the live rows
// of both sides in group g; a row of an outer side holds in matches the
// number of stored rows of the other side it matched when the counts were
// last updated (Flink's numOfAssociations).
type joinOp struct {
	cfg    Join
	c      *joinCompiled
	info   *arrowflow.TaskInfo
	mem    memory.Allocator
	clock  arrowflow.Clock
	filter *kernels.Filter // the compiled residual, or nil

	keys       *kernels.GroupTable // key tuples of both sides -> group ids
	groupNull  []bool              // by group: the key tuple has a NULL
	groupRows  []int32             // by group: live rows of both sides
	liveGroups int                 // groups with groupRows > 0
	sides      [2]joinSide
	stats      JoinStats
	// compactions and rebuilds count store compactions and key table
	// rebuilds, for tests.
	compactions, rebuilds int
	// bucketShift sizes the buckets of ids gather orders by: 1<<10 ids,
	// 0 in tests so that small states take the reordering paths.
	bucketShift uint
	// candRows bounds the candidate pairs of a round: joinCandRows, less
	// in tests so that batches take several rounds.
	candRows int

	sc joinScratch
}

// joinSide is the state of one input.
type joinSide struct {
	store *rowstore.Store
	head  []int32 // by group: the first row of the group's chain, -1: none
	// By row id: the chain links (-1: none), the row's group, its identity
	// hash (over the stored data columns) and, for an outer side, its
	// match count.
	next, prev []rowstore.RowID
	gid        []uint32
	rowHash    []uint64
	matches    []int32
	// ident, inext and iprev are the identity index (join_ident.go), nil
	// until the side's first retraction.
	ident        map[uint64]rowstore.RowID
	inext, iprev []rowstore.RowID
	// expiry lists the rows by storage time, for StateTTL; expHead is the
	// first entry not yet expired.
	expiry  []joinExpiry
	expHead int
}

// joinExpiry is a stored row and the time it was stored.
type joinExpiry struct {
	at int64
	id rowstore.RowID
}

// joinScratch is per-batch scratch, reused.
type joinScratch struct {
	rows              []int32 // per selected row: its physical row
	keyCols, hashCols []arrow.Array
	keyHash, rowHash  []uint64
	gids              []uint32
	candStart         []int32          // per row of the round, its first candidate; one more at the end
	candID            []rowstore.RowID // per candidate: the other side's row
	candRow           []int32          // per candidate: the row of this side (index in its record)
	ok                []bool           // per candidate: the residual holds
	sel               []int32
	insSel            []int32
	insHash           []uint64
	outKind           []arrowflow.RowKind
	outS, outO        []int32 // per output row: index in the input record / candidate, -1 for NULLs
	ids               []rowstore.RowID
	idx, tmp          []int32
	// gather's and evalResidual's scratch: candPos[c] is candidate c's
	// row in the gathered candidates (nil: c).
	sorted           []rowstore.RowID
	perm, buckets    []int32
	sortKeys         []uint64
	candPos, permRow []int32
	permOK           []bool
}

func (o *joinOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err // it starts with "join: "; the runtime names the node
	}
	o.c, o.info, o.mem, o.clock = c, info, info.Allocator, info.Clock
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	if c.residual != nil {
		if o.filter, err = kernels.CompileFilter(c.residual.expr, c.residual.schema); err != nil {
			return fmt.Errorf("join %s: residual condition: %w", info.Name, err)
		}
	}
	if o.keys, err = kernels.NewGroupTable(c.keyTypes); err != nil {
		return fmt.Errorf("join %s: %w", info.Name, err)
	}
	for s := range o.sides {
		st, err := rowstore.New(c.sides[s].stored, o.mem)
		if err != nil {
			return fmt.Errorf("join %s: %s rows: %w", info.Name, c.sides[s].name, err)
		}
		o.sides[s].store = st
	}
	return nil
}

// JoinStats reports the subtask's counters.
func (o *joinOp) JoinStats() JoinStats {
	s := o.stats
	if o.c == nil { // not open
		return s
	}
	s.StateRows, s.StateBytes = o.stateRows(), o.stateBytes()
	return s
}

func (o *joinOp) stateRows() int64 {
	return int64(o.sides[joinLeft].store.Len() + o.sides[joinRight].store.Len())
}

func (o *joinOp) stateBytes() int64 {
	n := o.keys.SizeBytes() + int64(cap(o.groupNull)) + int64(cap(o.groupRows))*4
	for _, sd := range o.sides {
		n += sd.store.SizeBytes() + int64(cap(sd.head)+cap(sd.next)+cap(sd.prev)+cap(sd.gid)+cap(sd.matches))*4 +
			int64(cap(sd.rowHash))*8 + int64(cap(sd.expiry))*16 + int64(cap(sd.inext)+cap(sd.iprev))*4 + int64(len(sd.ident))*24
	}
	return n
}

func (o *joinOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), o.stateRows())
}

// ProcessWatermark drops expired rows and forwards wm: a regular join has
// no event-time state.
func (o *joinOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if o.expire() {
		if err := o.reportState(); err != nil {
			return err
		}
	}
	return out.EmitWatermark(wm)
}

// Finish emits nothing: every change was emitted when it came in.
func (o *joinOp) Finish(arrowflow.Emitter) error { return nil }

func (o *joinOp) Close() error {
	for s := range o.sides {
		if st := o.sides[s].store; st != nil {
			st.Release()
		}
		o.sides[s] = joinSide{}
	}
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}

// ProcessBatch joins the batch's rows with the other side's stored rows,
// in order, and stores (or removes) them. The batch is processed in rounds
// of consecutive rows holding up to joinCandRows candidate pairs: a round
// finds the candidates of its rows (the other side's rows of equal key,
// which no row of this batch changes), evaluates the residual over all of
// them at once, then walks its rows in order to update match counts and
// the side's rows, and emits one output batch.
func (o *joinOp) ProcessBatch(input int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if input != joinLeft && input != joinRight {
		return fmt.Errorf("join %s: batch on input %d; a join has two inputs, 0 (left) and 1 (right)", o.info.Name, input)
	}
	d := &o.c.sides[input]
	rec := b.Record
	if s := rec.Schema(); s != d.input && !s.Equal(d.input) {
		return fmt.Errorf("join %s: %s batch schema %s differs from the configured %s", o.info.Name, d.name, s, d.input)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if input == joinLeft {
		o.stats.LeftRows += int64(n)
	} else {
		o.stats.RightRows += int64(n)
	}
	o.expire()
	srec := o.project(input, rec)
	defer srec.Release()
	sc := &o.sc
	sc.rows = sc.rows[:0]
	for k := range n {
		sc.rows = append(sc.rows, int32(b.Row(k)))
	}
	if err := o.index(input, srec, b.Sel, n); err != nil {
		return err
	}
	for k0 := 0; k0 < n; {
		k1 := o.candidates(input, k0, n, sc.rows, sc.gids)
		if err := o.round(input, b, srec, k0, k1, out); err != nil {
			return err
		}
		k0 = k1
	}
	if err := o.maintain(); err != nil {
		return err
	}
	return o.reportState()
}

// project returns the stored columns of an input record (sharing its
// arrays), with the storage time column when StateTTL is set.
func (o *joinOp) project(side int, rec arrow.RecordBatch) arrow.RecordBatch {
	d := &o.c.sides[side]
	cols := make([]arrow.Array, 0, d.stored.NumFields())
	for _, i := range d.storeIdx {
		cols = append(cols, rec.Column(i))
	}
	if o.c.ttl > 0 {
		now := o.clock.Now().UnixNano()
		n := int(rec.NumRows())
		b := array.NewInt64Builder(o.mem)
		b.Reserve(n)
		for range n {
			b.UnsafeAppend(now)
		}
		at := b.NewArray()
		b.Release()
		defer at.Release()
		cols = append(cols, at)
	}
	return array.NewRecordBatch(d.stored, cols, rec.NumRows())
}

// index computes, for the n selected rows of srec, the key hash, the
// group id (creating groups) and the identity hash.
func (o *joinOp) index(side int, srec arrow.RecordBatch, sel []int32, n int) error {
	d := &o.c.sides[side]
	sc := &o.sc
	sc.keyCols = sc.keyCols[:0]
	for _, p := range d.keyPos {
		sc.keyCols = append(sc.keyCols, srec.Column(p))
	}
	sc.keyHash = slices.Grow(sc.keyHash[:0], n)[:n]
	if err := kernels.HashColumns(sc.keyCols, sel, sc.keyHash); err != nil {
		return fmt.Errorf("join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	sc.gids = slices.Grow(sc.gids[:0], n)[:n]
	if err := o.keys.FindOrInsert(sc.keyCols, sel, sc.gids); err != nil {
		return fmt.Errorf("join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	o.growGroups()
	// A group's key tuple has a NULL or not, whichever row created it.
	for _, col := range sc.keyCols {
		if col.NullN() == 0 {
			continue
		}
		for k, g := range sc.gids {
			if col.IsNull(int(sc.rows[k])) {
				o.groupNull[g] = true
			}
		}
	}
	sc.rowHash = slices.Grow(sc.rowHash[:0], n)[:n]
	return o.hashRows(side, srec, sel, sc.rowHash)
}

// hashRows computes the identity hashes of the rows sel of srec.
func (o *joinOp) hashRows(side int, srec arrow.RecordBatch, sel []int32, out []uint64) error {
	d := &o.c.sides[side]
	sc := &o.sc
	sc.hashCols = sc.hashCols[:0]
	for _, p := range d.hashPos {
		sc.hashCols = append(sc.hashCols, srec.Column(p))
	}
	if err := kernels.HashColumns(sc.hashCols, sel, out); err != nil {
		return fmt.Errorf("join %s: hashing %s rows: %w", o.info.Name, d.name, err)
	}
	return nil
}

// growGroups extends the per-group slices to the key table's groups.
func (o *joinOp) growGroups() {
	g := o.keys.Len()
	for len(o.groupNull) < g {
		o.groupNull = append(o.groupNull, false)
		o.groupRows = append(o.groupRows, 0)
	}
	for s := range o.sides {
		for len(o.sides[s].head) < g {
			o.sides[s].head = append(o.sides[s].head, -1)
		}
	}
}

// candidates lists the candidate pairs of rows k0, k0+1, ... of a round
// (rows[k] the row's index in its record, gids[k] its group): the other
// side's rows of the same group, unless the key has a NULL. It returns the
// end of the round: rows are added while the candidates stay below
// o.candRows (joinCandRows), and at least one row is.
func (o *joinOp) candidates(side, k0, n int, rows []int32, gids []uint32) int {
	sc := &o.sc
	other := &o.sides[1-side]
	sc.candStart, sc.candID, sc.candRow = sc.candStart[:0], sc.candID[:0], sc.candRow[:0]
	k := k0
	for ; k < n && (k == k0 || len(sc.candID) < o.candRows); k++ {
		sc.candStart = append(sc.candStart, int32(len(sc.candID)))
		g := gids[k]
		if o.groupNull[g] {
			continue
		}
		for id := other.head[g]; id >= 0; id = other.next[id] {
			sc.candID = append(sc.candID, id)
			sc.candRow = append(sc.candRow, rows[k])
		}
	}
	sc.candStart = append(sc.candStart, int32(len(sc.candID)))
	return k
}

// evalResidual sets sc.ok for the candidates: whether the residual holds
// for the pair. It returns the other side's candidate rows, gathered,
// with candidate c at row sc.candPos[c] (nil when there is no residual:
// every candidate matches, sc.ok is nil). The residual is evaluated in
// the gathered record's row order, so that only this side's columns are
// copied into that order.
func (o *joinOp) evalResidual(side int, srec arrow.RecordBatch) (arrow.RecordBatch, error) {
	sc := &o.sc
	sc.ok, sc.candPos = sc.ok[:0], nil
	res := o.c.residual
	if res == nil || len(sc.candID) == 0 {
		return nil, nil
	}
	cand, perm, err := o.gather(1-side, sc.candID)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", o.info.Name, err)
	}
	sc.candPos = perm
	n := len(sc.candID)
	rows := sc.candRow // this side's row of each gathered row
	if perm != nil {
		sc.permRow = slices.Grow(sc.permRow[:0], n)[:n]
		for c, q := range perm {
			sc.permRow[q] = sc.candRow[c]
		}
		rows = sc.permRow
	}
	cols := make([]arrow.Array, len(res.pos))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, p := range res.pos {
		if res.side[i] != side {
			cols[i] = cand.Column(p)
			cols[i].Retain()
			continue
		}
		if cols[i], err = kernels.Take(o.mem, srec.Column(p), rows); err != nil {
			cand.Release()
			return nil, fmt.Errorf("join %s: residual column %q: %w", o.info.Name, res.schema.Field(i).Name, err)
		}
	}
	rrec := array.NewRecordBatch(res.schema, cols, int64(n))
	defer rrec.Release()
	sc.sel, err = o.filter.Select(rrec, nil, sc.sel)
	if err != nil {
		cand.Release()
		return nil, fmt.Errorf("join %s: residual condition: %w", o.info.Name, err)
	}
	sc.ok = slices.Grow(sc.ok, n)[:n]
	clear(sc.ok)
	for _, q := range sc.sel {
		sc.ok[q] = true // indexed by gathered row for now
	}
	if perm != nil {
		sc.permOK = slices.Grow(sc.permOK[:0], n)[:n]
		for c, q := range perm {
			sc.permOK[c] = sc.ok[q]
		}
		sc.ok, sc.permOK = sc.permOK, sc.ok
	}
	return cand, nil
}

// round processes rows [k0, k1) of the batch (their candidates listed by
// candidates) and emits their output.
func (o *joinOp) round(side int, b arrowflow.Batch, srec arrow.RecordBatch, k0, k1 int, out arrowflow.Emitter) error {
	sc := &o.sc
	d := &o.c.sides[side]
	me, other := &o.sides[side], &o.sides[1-side]
	otherOuter := o.c.sides[1-side].outer
	cand, err := o.evalResidual(side, srec)
	if err != nil {
		return err
	}
	if cand != nil {
		defer cand.Release()
	}
	// Store the round's insert-type rows at once; each is linked into its
	// chain when the walk reaches it, so that a retraction finds exactly
	// the rows stored before it.
	sc.insSel, sc.insHash = sc.insSel[:0], sc.insHash[:0]
	for k := k0; k < k1; k++ {
		if !b.Kind(k).IsRetraction() && (d.outer || !o.groupNull[sc.gids[k]]) {
			sc.insSel = append(sc.insSel, sc.rows[k])
			sc.insHash = append(sc.insHash, sc.keyHash[k])
		}
	}
	next := rowstore.RowID(0)
	if len(sc.insSel) > 0 {
		if next, err = me.store.Append(srec, sc.insSel, sc.insHash); err != nil {
			return fmt.Errorf("join %s: storing %s rows: %w", o.info.Name, d.name, err)
		}
		o.growRows(side)
	}
	var at int64
	if o.c.ttl > 0 {
		at = srec.Column(srec.Schema().NumFields() - 1).(*array.Int64).Value(0)
	}
	sc.outKind, sc.outS, sc.outO = sc.outKind[:0], sc.outS[:0], sc.outO[:0]
	emit := func(kind arrowflow.RowKind, s, c int32) {
		sc.outKind = append(sc.outKind, kind)
		sc.outS = append(sc.outS, s)
		sc.outO = append(sc.outO, c)
	}
	for k := k0; k < k1; k++ {
		g, r := sc.gids[k], sc.rows[k]
		if o.groupNull[g] && !d.outer {
			o.stats.NullKeyRows++ // never stored, never output
			continue
		}
		cs, ce := sc.candStart[k-k0], sc.candStart[k-k0+1]
		matched := int32(0)
		for c := cs; c < ce; c++ {
			if sc.ok == nil || sc.ok[c] {
				matched++
			}
		}
		if !b.Kind(k).IsRetraction() {
			id := next
			next++
			o.link(side, id, g, sc.rowHash[k])
			if o.c.ttl > 0 {
				me.pushExpiry(id, at)
			}
			if otherOuter {
				for c := cs; c < ce; c++ {
					if sc.ok == nil || sc.ok[c] {
						m := sc.candID[c]
						if other.matches[m] == 0 {
							emit(arrowflow.Delete, -1, c)
						}
						other.matches[m]++
					}
				}
			}
			for c := cs; c < ce; c++ {
				if sc.ok == nil || sc.ok[c] {
					emit(arrowflow.Insert, r, c)
				}
			}
			if d.outer {
				me.matches[id] = matched
				if matched == 0 {
					emit(arrowflow.Insert, r, -1)
				}
			}
			continue
		}
		e := o.find(side, srec, int(r), sc.rowHash[k])
		if e < 0 {
			o.stats.UnknownRetractions++
			continue
		}
		// The padded row was emitted, and is retracted, when the stored
		// row's count is 0. Without StateTTL that is when nothing matches
		// now; with it, the count may exceed the current matches (an
		// expired row does not update the counts of the rows it matched),
		// and the pair rows of expired matches stay in the output, so
		// retracting a padded row would retract a row never emitted.
		if d.outer && me.matches[e] == 0 {
			emit(arrowflow.Delete, r, -1)
		}
		o.remove(side, e)
		for c := cs; c < ce; c++ {
			if sc.ok == nil || sc.ok[c] {
				emit(arrowflow.Delete, r, c)
			}
		}
		if otherOuter {
			for c := cs; c < ce; c++ {
				if sc.ok == nil || sc.ok[c] {
					m := sc.candID[c]
					if other.matches[m] == 1 {
						emit(arrowflow.Insert, -1, c)
					}
					other.matches[m]--
				}
			}
		}
	}
	return o.emit(side, srec, cand, out)
}

// emit assembles and emits the round's output rows: the side's columns
// from srec (rows sc.outS), the other side's from its candidate rows
// (sc.outO), NULL where the index is -1.
func (o *joinOp) emit(side int, srec, cand arrow.RecordBatch, out arrowflow.Emitter) error {
	sc := &o.sc
	n := len(sc.outKind)
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	// The other side's rows: the gathered candidates (with a residual),
	// or the output's rows gathered now. oidx[k] is output row k's row in
	// it, -1 for NULLs; aligned: oidx[k] is k or -1.
	sc.idx = sc.idx[:0]
	aligned := false
	if cand != nil {
		for _, c := range sc.outO {
			switch {
			case c < 0:
				sc.idx = append(sc.idx, -1)
			case sc.candPos != nil:
				sc.idx = append(sc.idx, sc.candPos[c])
			default:
				sc.idx = append(sc.idx, c)
			}
		}
	} else {
		// Rows padded with NULLs gather some other row (then masked).
		sc.ids = sc.ids[:0]
		pad := rowstore.RowID(-1)
		for _, c := range sc.outO {
			if c >= 0 {
				pad = sc.candID[c]
				break
			}
		}
		for _, c := range sc.outO {
			if c >= 0 {
				sc.ids = append(sc.ids, sc.candID[c])
			} else {
				sc.ids = append(sc.ids, pad)
			}
		}
		if pad >= 0 {
			rec, perm, err := o.gather(1-side, sc.ids)
			if err != nil {
				return fmt.Errorf("join %s: %w", o.info.Name, err)
			}
			cand = rec
			defer cand.Release()
			aligned = perm == nil
			for k, c := range sc.outO {
				switch {
				case c < 0:
					sc.idx = append(sc.idx, -1)
				case perm != nil:
					sc.idx = append(sc.idx, perm[k])
				default:
					sc.idx = append(sc.idx, int32(k))
				}
			}
		}
	}
	for s := range o.c.sides {
		src, idx, al := srec, sc.outS, false
		if s != side {
			src, idx, al = cand, sc.idx, aligned
		}
		for _, p := range o.c.sides[s].outPos {
			f := o.c.out.Field(len(cols))
			var col arrow.Array
			var err error
			switch {
			case src == nil:
				col = array.MakeArrayOfNull(o.mem, f.Type, n)
			case al:
				col, err = joinMaskNulls(o.mem, src.Column(p), idx)
			default:
				col, err = joinTakeNulls(o.mem, src.Column(p), idx, &sc.tmp)
			}
			if err != nil {
				return fmt.Errorf("join %s: output column %q: %w", o.info.Name, f.Name, err)
			}
			cols = append(cols, col)
		}
	}
	var kinds []arrowflow.RowKind
	for _, k := range sc.outKind {
		if k != arrowflow.Insert {
			kinds = slices.Clone(sc.outKind)
			break
		}
	}
	rec := array.NewRecordBatch(o.c.out, cols, int64(n))
	o.stats.OutputRows += int64(n)
	return out.Emit(arrowflow.NewChangeBatch(rec, kinds))
}
