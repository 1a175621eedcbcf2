package changelog

import (
	"bytes"
	"cmp"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// rankPart is one partition of the general (Top-N) path.
type rankPart struct {
	// rows are the partition's rows in rank order, rows tied on every
	// ORDER BY column in arrival order (the later first with
	// LaterFirstOnTies): all of them when Retracting, else
	// only the candidates (rows of rank <= N). An entry is a row id of the
	// store, or while a batch is processed (not Retracting) -(k+1) for its
	// k-th row, not stored yet.
	rows rankList
	// shown is the top N as last emitted, with the ranks emitted.
	shown  []rankShown
	access int64  // processing time of the last row (with a TTL)
	stamp  uint64 // the batch that last touched the partition
	dirty  bool   // changed since the last flush (in rankOp.dirty)
	live   bool   // holds rows or shown rows (counted in rankOp.live)
}

// rankShown is an emitted row: its reference (as in rankPart.rows) and
// its rank (0 without RankColumn, where ranks do not matter).
type rankShown struct {
	ref  int32
	rank int64
}

// Per stored row: a candidate of its partition (in rows), and shown (in
// shown). A row neither is deleted from the store.
const (
	rankFlagCand  uint8 = 1
	rankFlagShown uint8 = 2
)

// rankCompactMin is the least number of deleted rows the store compacts.
const rankCompactMin = 1024

// rankOutChunk bounds the rows of one output batch.
const rankOutChunk = 64 << 10

// rankOp is one subtask of the general path: Top-N and keep-last
// deduplication, emitting a retract changelog folded per epoch.
type rankOp struct {
	rankBase
	store *rowstore.Store
	p     []rankPart // by partition id
	live  int        // partitions with rows or shown rows
	dirty []uint32   // partitions changed since the last flush, in order

	// By row id: the row's order key keys[keyOff[id]:keyOff[id+1]], and
	// its flags.
	keys   []byte
	keyOff []int64
	flags  []uint8

	seq       uint64 // batches processed
	lastSweep int64

	// scratch, reused
	batch    arrow.RecordBatch // the batch being processed
	alive    []bool            // its k-th row is referenced by a partition
	newID    []int32
	touched  []uint32
	surv     []int32
	survHash []uint64
	before   []rankShown
	after    []rankShown
	diffA    []rankShown
	diffB    []rankShown
	rem, add []rankShown
	outIDs   []int32
	outKinds []arrowflow.RowKind
	outRanks []int64
	dropped  []int32
	flat     []int32
	chunkMax int
}

func (o *rankOp) Open(info *arrowflow.TaskInfo) error {
	if err := o.open(info); err != nil {
		return err
	}
	s, err := rowstore.New(o.cfg.Input, o.mem)
	if err != nil {
		return o.errorf("%w", err)
	}
	o.store = s
	o.keyOff = []int64{0}
	o.chunkMax = cmp.Or(o.cfg.chunkMax, rankChunkMax)
	return nil
}

// RankStats reports the subtask's counters.
func (o *rankOp) RankStats() RankStats {
	s := o.stats
	s.Partitions = int64(o.live)
	s.StateRows = int64(o.store.Len())
	s.StateBytes = o.stateBytes()
	return s
}

func (o *rankOp) stateBytes() int64 {
	n := o.store.SizeBytes() + int64(cap(o.keys)) + int64(cap(o.keyOff))*8 + int64(cap(o.flags))
	n += int64(cap(o.p)) * int64(unsafe.Sizeof(rankPart{}))
	n += int64(o.store.Len()) * (4 + int64(unsafe.Sizeof(rankShown{})))
	if o.parts != nil {
		n += o.parts.SizeBytes()
	}
	return n
}

func (o *rankOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.live))
}

// key is the order key of a row reference.
func (o *rankOp) key(ref int32) []byte {
	if ref >= 0 {
		return o.keys[o.keyOff[ref]:o.keyOff[ref+1]]
	}
	return o.bkey(int(-ref - 1))
}

// cmpKey compares the order key of a row reference with key.
func (o *rankOp) cmpKey(ref int32, key []byte) int { return bytes.Compare(o.key(ref), key) }

// cutoff is the number of rows of l (in rank order) whose rank is at most
// N: the top N.
func (o *rankOp) cutoff(l *rankList) int {
	n, limit := l.len(), o.c.n
	if n <= limit || o.cfg.Func == RowNumber {
		return min(n, limit)
	}
	c := n
	var prev []byte
	d := 0
	l.walk(func(i int, ref int32) bool {
		k := o.key(ref)
		switch {
		case o.cfg.Func == RankWithGaps:
			// The rows after the N-th tied with it.
			if i >= limit && !bytes.Equal(k, prev) {
				c = i
				return false
			}
		case i == 0 || !bytes.Equal(k, prev): // DenseRank
			if d++; d > limit {
				c = i
				return false
			}
		}
		prev = k
		return true
	})
	return c
}

// top appends the first c rows of l to dst with their ranks (0 without
// RankColumn).
func (o *rankOp) top(l *rankList, c int, dst []rankShown) []rankShown {
	list := l.first(c, o.flat[:0])
	o.flat = list
	if o.cfg.RankColumn == "" {
		for _, r := range list {
			dst = append(dst, rankShown{ref: r})
		}
		return dst
	}
	var rank int64
	for i, r := range list {
		switch {
		case o.cfg.Func == RowNumber:
			rank = int64(i + 1)
		case i > 0 && bytes.Equal(o.key(r), o.key(list[i-1])):
			// tied with the previous row: same rank
		case o.cfg.Func == RankWithGaps:
			rank = int64(i + 1)
		default:
			rank++
		}
		dst = append(dst, rankShown{ref: r, rank: rank})
	}
	return dst
}

// diff returns the rows of old not in now (removed) and of now not in old
// (added); a row whose rank changed is both. The results are scratch,
// valid until the next call.
func (o *rankOp) diff(old, now []rankShown) (removed, added []rankShown) {
	byRef := func(a, b rankShown) int { return cmp.Compare(a.ref, b.ref) }
	a := append(o.diffA[:0], old...)
	b := append(o.diffB[:0], now...)
	slices.SortFunc(a, byRef)
	slices.SortFunc(b, byRef)
	removed, added = o.rem[:0], o.add[:0]
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].ref < b[j].ref):
			removed = append(removed, a[i])
			i++
		case i == len(a) || b[j].ref < a[i].ref:
			added = append(added, b[j])
			j++
		default:
			if a[i].rank != b[j].rank {
				removed = append(removed, a[i])
				added = append(added, b[j])
			}
			i++
			j++
		}
	}
	o.diffA, o.diffB, o.rem, o.add = a, b, removed, added
	return removed, added
}

func (o *rankOp) markDirty(pid uint32) {
	if p := &o.p[pid]; !p.dirty {
		p.dirty = true
		o.dirty = append(o.dirty, pid)
	}
}

// updateLive recounts whether partition pid holds anything.
func (o *rankOp) updateLive(pid uint32) {
	p := &o.p[pid]
	if l := p.rows.len() > 0 || len(p.shown) > 0; l != p.live {
		p.live = l
		if l {
			o.live++
		} else {
			o.live--
		}
	}
}

func (o *rankOp) ensureParts() {
	if n := o.partitionsLen(); n > len(o.p) {
		o.p = append(o.p, make([]rankPart, n-len(o.p))...)
	}
}

// unref drops a row from its partition's rows: a batch row is not stored;
// a stored row that is not shown is deleted.
func (o *rankOp) unref(ref int32) {
	if ref < 0 {
		o.alive[-ref-1] = false
		return
	}
	o.flags[ref] &^= rankFlagCand
	if o.flags[ref] == 0 {
		o.store.Delete(ref)
	}
}

// locate returns where a referenced row's values are.
func (o *rankOp) locate(ref int32) (arrow.RecordBatch, int) {
	if ref >= 0 {
		return o.store.Locate(ref)
	}
	return o.batch, int(o.rows[-ref-1])
}

// equalRow reports whether the referenced row equals row of the batch in
// every column.
func (o *rankOp) equalRow(ref int32, row int) bool {
	rec, i := o.locate(ref)
	for c, eq := range o.c.eq {
		if !eq(rec.Column(c), i, o.batch.Column(c), row) {
			return false
		}
	}
	return true
}

func (o *rankOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if err := o.checkSchema(b); err != nil {
		return err
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if !o.cfg.Retracting && b.Kinds != nil {
		for k := range n {
			if kind := b.Kind(k); kind.IsRetraction() {
				return o.errorf("row %d of a batch is a retraction (%s), but the rank keeps only candidates (Retracting is false): plan it for an updating input", b.Row(k), kind)
			}
		}
	}
	o.stats.InputRows += int64(n)
	now := o.now()
	if o.ttl > 0 && now-o.lastSweep >= o.ttl {
		if err := o.sweep(now); err != nil {
			return err
		}
	}
	if err := o.prepare(b.Record, b.Sel); err != nil {
		return err
	}
	o.ensureParts()
	o.batch = b.Record
	defer func() { o.batch = nil }()
	o.alive = rankGrow(o.alive, n)
	clear(o.alive)
	if o.cfg.Retracting {
		// Every inserted row is kept: store them all now, so that
		// references are row ids from the start.
		for k := range n {
			o.alive[k] = !b.Kind(k).IsRetraction()
		}
		if err := o.storeAlive(b.Record); err != nil {
			return err
		}
	}
	o.seq++
	o.touched = o.touched[:0]
	for k := range n {
		pid := o.pids[k]
		part := &o.p[pid]
		if part.stamp != o.seq {
			part.stamp = o.seq
			o.touched = append(o.touched, pid)
			if o.ttl > 0 && part.live && now-part.access >= o.ttl {
				o.expire(pid)
			}
		}
		part.access = now
		if kind := b.Kind(k); kind.IsRetraction() {
			if err := o.retract(pid, k, kind); err != nil {
				return err
			}
		} else {
			o.insert(pid, k)
		}
	}
	if !o.cfg.Retracting {
		if err := o.storeAlive(b.Record); err != nil {
			return err
		}
		for _, pid := range o.touched {
			o.p[pid].rows.each(func(r *int32) {
				if *r < 0 {
					*r = o.newID[-*r-1]
				}
			})
		}
	}
	for _, pid := range o.touched {
		o.updateLive(pid)
	}
	if len(o.dirty) > rankMaxDirty {
		if err := o.flush(out); err != nil {
			return err
		}
	}
	if err := o.maybeCompact(); err != nil {
		return err
	}
	return o.reportState()
}

// insert adds the k-th row of the batch to partition pid.
func (o *rankOp) insert(pid uint32, k int) {
	part := &o.p[pid]
	l := &part.rows
	key := o.bkey(k)
	// After the rows tied with it (it arrived last), or before them with
	// LaterFirstOnTies.
	at := l.search(o, key, !o.cfg.LaterFirstOnTies)
	oldC := o.cutoff(l)
	limit := max(oldC, o.c.n) + 1
	p := l.index(at, limit)
	ref := int32(-k - 1)
	if o.cfg.Retracting {
		ref = o.newID[k]
	} else {
		// Rows that cannot rank within N are not kept.
		switch o.cfg.Func {
		case RowNumber:
			if p >= o.c.n {
				return
			}
		case RankWithGaps:
			if p >= o.c.n && l.index(l.search(o, key, false), limit) >= o.c.n {
				return
			}
		}
		o.alive[k] = true
	}
	// A candidates-only ROW_NUMBER without ranks out is its top N: a row
	// that enters adds itself and, when the top was full, removes the
	// last row, which is all a per-row emission would send.
	simple := !o.cfg.Retracting && o.cfg.Func == RowNumber && o.cfg.RankColumn == ""
	if p <= oldC && !simple {
		// Only then can the row change the top N.
		o.before = o.top(l, oldC, o.before[:0])
	}
	oldLen := l.len()
	l.insert(at, ref, o.chunkMax)
	newC := o.cutoff(l)
	if !o.cfg.Retracting && newC < l.len() {
		l.truncate(newC, o.unref)
	}
	if simple {
		o.stats.PerRowOutputRows++
		if oldLen == o.c.n {
			o.stats.PerRowOutputRows++
		}
		o.markDirty(pid)
		return
	}
	if p < newC {
		o.after = o.top(l, newC, o.after[:0])
		rem, add := o.diff(o.before, o.after)
		o.stats.PerRowOutputRows += int64(len(rem) + len(add))
		o.markDirty(pid)
	}
}

// retract removes the row equal to the k-th row of the batch from
// partition pid: of the equal rows, the one ranked last.
func (o *rankOp) retract(pid uint32, k int, kind arrowflow.RowKind) error {
	part := &o.p[pid]
	l := &part.rows
	key := o.bkey(k)
	row := int(o.rows[k])
	var at rankPos
	found := false
	for p, ok := l.prev(l.search(o, key, true)); ok; p, ok = l.prev(p) {
		ref := l.at(p)
		if !bytes.Equal(o.key(ref), key) {
			break
		}
		if o.equalRow(ref, row) {
			at, found = p, true
			break
		}
	}
	if !found {
		if o.ttl > 0 {
			o.stats.IgnoredRetractions++
			return nil
		}
		return o.errorf("row %d of a batch retracts (%s) a row its partition does not hold; the input changelog is inconsistent", row, kind)
	}
	oldC := o.cutoff(l)
	q := l.index(at, oldC+1)
	if q < oldC {
		o.before = o.top(l, oldC, o.before[:0])
	}
	ref := l.at(at)
	l.delete(at)
	o.unref(ref)
	if q < oldC {
		o.after = o.top(l, o.cutoff(l), o.after[:0])
		rem, add := o.diff(o.before, o.after)
		o.stats.PerRowOutputRows += int64(len(rem) + len(add))
		o.markDirty(pid)
	}
	return nil
}

// storeAlive appends the batch's rows marked alive to the store, and sets
// newID[k] to the row id of the k-th row.
func (o *rankOp) storeAlive(rec arrow.RecordBatch) error {
	sel, hs := o.surv[:0], o.survHash[:0]
	for k, a := range o.alive {
		if a {
			sel = append(sel, o.rows[k])
			hs = append(hs, o.hashes[k])
		}
	}
	o.surv, o.survHash = sel, hs
	if len(sel) == 0 {
		return nil
	}
	first, err := o.store.Append(rec, sel, hs)
	if err != nil {
		return o.errorf("%w", err)
	}
	if int(first) != len(o.keyOff)-1 {
		panic("BUG: rank: row ids out of step with the order keys")
	}
	o.newID = rankGrow(o.newID, len(o.alive))
	id := first
	for k, a := range o.alive {
		if a {
			o.newID[k] = id
			id++
			o.keys = append(o.keys, o.bkey(k)...)
			o.keyOff = append(o.keyOff, int64(len(o.keys)))
			o.flags = append(o.flags, rankFlagCand)
		}
	}
	return nil
}

// FlushEpoch emits the changes of every partition changed since the last
// flush (arrowflow.EpochFlusher).
func (o *rankOp) FlushEpoch(_ uint64, out arrowflow.Emitter) error {
	if now := o.now(); o.ttl > 0 && now-o.lastSweep >= o.ttl {
		if err := o.sweep(now); err != nil {
			return err
		}
	}
	if err := o.flush(out); err != nil {
		return err
	}
	if err := o.maybeCompact(); err != nil {
		return err
	}
	return o.reportState()
}

// flush emits, per changed partition, the difference between its shown
// rows and its current top N, and makes the top N the shown rows.
func (o *rankOp) flush(out arrowflow.Emitter) error {
	if len(o.dirty) == 0 {
		return nil
	}
	ids, kinds, ranks := o.outIDs[:0], o.outKinds[:0], o.outRanks[:0]
	dropped := o.dropped[:0]
	byRank := func(a, b rankShown) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.ref, b.ref)) }
	for _, pid := range o.dirty {
		part := &o.p[pid]
		part.dirty = false
		o.after = o.top(&part.rows, o.cutoff(&part.rows), o.after[:0])
		rem, add := o.diff(part.shown, o.after)
		slices.SortFunc(rem, byRank)
		slices.SortFunc(add, byRank)
		pairs := min(len(rem), len(add))
		for i := range pairs {
			ids = append(ids, rem[i].ref, add[i].ref)
			kinds = append(kinds, arrowflow.UpdateBefore, arrowflow.UpdateAfter)
			ranks = append(ranks, rem[i].rank, add[i].rank)
		}
		for _, r := range rem[pairs:] {
			ids, kinds, ranks = append(ids, r.ref), append(kinds, arrowflow.Delete), append(ranks, r.rank)
		}
		for _, a := range add[pairs:] {
			ids, kinds, ranks = append(ids, a.ref), append(kinds, arrowflow.Insert), append(ranks, a.rank)
		}
		for _, s := range part.shown {
			o.flags[s.ref] &^= rankFlagShown
		}
		for _, s := range o.after {
			o.flags[s.ref] |= rankFlagShown
		}
		for _, s := range part.shown {
			if o.flags[s.ref] == 0 {
				dropped = append(dropped, s.ref)
			}
		}
		part.shown = append(part.shown[:0], o.after...)
		o.updateLive(pid)
	}
	o.dirty = o.dirty[:0]
	o.outIDs, o.outKinds, o.outRanks, o.dropped = ids, kinds, ranks, dropped
	for start := 0; start < len(ids); start += rankOutChunk {
		end := min(start+rankOutChunk, len(ids))
		if err := o.emit(ids[start:end], kinds[start:end], ranks[start:end], out); err != nil {
			return err
		}
	}
	// Only now: the removed rows were read for the output.
	for _, id := range dropped {
		o.store.Delete(id)
	}
	return nil
}

// emit emits the stored rows ids with their kinds (and ranks).
func (o *rankOp) emit(ids []int32, kinds []arrowflow.RowKind, ranks []int64, out arrowflow.Emitter) error {
	rec, err := o.store.Gather(ids)
	if err != nil {
		return o.errorf("%w", err)
	}
	if o.cfg.RankColumn != "" {
		b := array.NewInt64Builder(o.mem)
		b.AppendValues(ranks, nil)
		rk := b.NewArray()
		b.Release()
		cols := append(slices.Clone(rec.Columns()), rk)
		withRank := array.NewRecordBatch(o.c.out, cols, int64(len(ids)))
		rk.Release()
		rec.Release()
		rec = withRank
	}
	o.stats.OutputRows += int64(len(ids))
	return out.Emit(arrowflow.NewChangeBatch(rec, slices.Clone(kinds)))
}

// maybeCompact compacts the store once deleted rows outnumber the live
// ones, renumbering every reference. It runs between batches, when every
// reference is a row id.
func (o *rankOp) maybeCompact() error {
	g := o.store.Garbage()
	switch {
	case o.cfg.compactMin > 0:
		if g < o.cfg.compactMin {
			return nil
		}
	case g < rankCompactMin || g < o.store.Len():
		return nil
	}
	remap, err := o.store.Compact()
	if err != nil {
		return o.errorf("%w", err)
	}
	if remap == nil {
		return nil
	}
	live := o.store.Len()
	keys := make([]byte, 0, len(o.keys)*live/max(1, len(remap)))
	off := make([]int64, 1, live+1)
	flags := make([]uint8, 0, live)
	for old, id := range remap {
		if id < 0 {
			continue
		}
		if int(id) != len(flags) {
			panic("BUG: rank: the row store's compaction reordered rows")
		}
		keys = append(keys, o.keys[o.keyOff[old]:o.keyOff[old+1]]...)
		off = append(off, int64(len(keys)))
		flags = append(flags, o.flags[old])
	}
	o.keys, o.keyOff, o.flags = keys, off, flags
	for i := range o.p {
		p := &o.p[i]
		p.rows.each(func(r *int32) { *r = remap[*r] })
		for j, s := range p.shown {
			p.shown[j].ref = remap[s.ref]
		}
	}
	return nil
}

// sweep drops every partition no row reached for the TTL, and rebuilds
// the partition table when most of its partitions are gone. It runs
// between batches.
func (o *rankOp) sweep(now int64) error {
	o.lastSweep = now
	for pid := range o.p {
		if p := &o.p[pid]; p.live && now-p.access >= o.ttl {
			o.expire(uint32(pid))
		}
	}
	if o.parts == nil {
		return nil
	}
	held := o.live
	for _, pid := range o.dirty {
		if !o.p[pid].live {
			held++ // changed, then dropped: still to flush (emitting nothing)
		}
	}
	if dead := len(o.p) - held; dead < cmp.Or(o.cfg.compactMin, rankCompactPartitionsMin) || dead < held {
		return nil
	}
	keep := make([]int32, 0, held)
	remap := make([]int32, len(o.p))
	for pid := range o.p {
		remap[pid] = -1
		if p := &o.p[pid]; p.live || p.dirty {
			remap[pid] = int32(len(keep))
			keep = append(keep, int32(pid))
		}
	}
	if err := o.compactPartitions(keep); err != nil {
		return err
	}
	parts := make([]rankPart, len(keep))
	for i, pid := range keep {
		parts[i] = o.p[pid]
	}
	o.p = parts
	for i, pid := range o.dirty {
		o.dirty[i] = uint32(remap[pid])
	}
	return nil
}

// expire drops partition pid's rows without emitting anything, as
// Flink's state TTL does.
func (o *rankOp) expire(pid uint32) {
	p := &o.p[pid]
	p.rows.each(func(r *int32) {
		if o.flags[*r] &^= rankFlagCand; o.flags[*r] == 0 {
			o.store.Delete(*r)
		}
	})
	for _, s := range p.shown {
		if o.flags[s.ref] &^= rankFlagShown; o.flags[s.ref] == 0 {
			o.store.Delete(s.ref)
		}
	}
	p.rows, p.shown = rankList{}, nil
	o.stats.ExpiredPartitions++
	o.updateLive(pid)
}

func (o *rankOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// Finish emits what the last epoch changed.
func (o *rankOp) Finish(out arrowflow.Emitter) error {
	if err := o.flush(out); err != nil {
		return err
	}
	return o.reportState()
}

// SnapshotState writes the stored rows by key group of their partition.
// The runtime flushes before it snapshots, so the rows are exactly every
// partition's rows and the shown ones are their top N.
func (o *rankOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if len(o.dirty) > 0 {
		return o.errorf("snapshot with %d partitions changed since the last flush: FlushEpoch must run before SnapshotState", len(o.dirty))
	}
	if err := o.store.Snapshot(w, rankRowsTable, o.maxParallelism()); err != nil {
		return err
	}
	if o.ttl == 0 {
		return nil
	}
	var pids []int32
	var access []int64
	for pid := range o.p {
		if p := &o.p[pid]; p.live {
			pids = append(pids, int32(pid))
			access = append(access, p.access)
		}
	}
	return o.writePartitions(w, rankAccessTable, pids, access)
}

func (o *rankBase) maxParallelism() int {
	return cmp.Or(o.info.MaxParallelism, state.DefaultMaxParallelism)
}

// RestoreState appends the rows of this subtask's key groups and rebuilds
// each partition's order; the top N of each is what was emitted.
func (o *rankOp) RestoreState(r state.SnapshotReader) error {
	o.seq++
	o.touched = o.touched[:0]
	err := o.store.Restore(r, rankRowsTable, o.info.KeyGroups, func(first rowstore.RowID, rec arrow.RecordBatch) error {
		if int(first) != len(o.keyOff)-1 {
			panic("BUG: rank: row ids out of step with the order keys")
		}
		if err := o.prepare(rec, nil); err != nil {
			return err
		}
		o.ensureParts()
		for k := range int(rec.NumRows()) {
			o.keys = append(o.keys, o.bkey(k)...)
			o.keyOff = append(o.keyOff, int64(len(o.keys)))
			o.flags = append(o.flags, rankFlagCand)
			pid := o.pids[k]
			part := &o.p[pid]
			if part.stamp != o.seq {
				part.stamp = o.seq
				o.touched = append(o.touched, pid)
			}
			part.rows.push(first+int32(k), o.chunkMax)
		}
		return nil
	})
	if err != nil {
		return o.errorf("restore: %w", err)
	}
	now := o.now()
	o.lastSweep = now
	for _, pid := range o.touched {
		part := &o.p[pid]
		// Ids are in arrival order within a partition (one old subtask
		// held it, its store snapshots rows in id order, and compaction
		// keeps that order): tied rows rank by id.
		flat := part.rows.first(part.rows.len(), o.flat[:0])
		later := o.cfg.LaterFirstOnTies
		slices.SortFunc(flat, func(a, b int32) int {
			if c := bytes.Compare(o.key(a), o.key(b)); c != 0 {
				return c
			}
			if later {
				return cmp.Compare(b, a)
			}
			return cmp.Compare(a, b)
		})
		part.rows.set(flat, o.chunkMax)
		o.flat = flat
		c := o.cutoff(&part.rows)
		if !o.cfg.Retracting && c < part.rows.len() {
			part.rows.truncate(c, o.unref)
		}
		part.shown = o.top(&part.rows, c, part.shown[:0])
		for _, s := range part.shown {
			o.flags[s.ref] |= rankFlagShown
		}
		part.access = now
		o.updateLive(pid)
	}
	if o.ttl > 0 {
		err := o.readPartitions(r, rankAccessTable, false, func(pid uint32, access int64) {
			if int(pid) < len(o.p) && o.p[pid].live && access > 0 {
				o.p[pid].access = access
			}
		})
		if err != nil {
			return err
		}
	}
	return o.reportState()
}

func (o *rankOp) Close() error {
	if o.store != nil {
		o.store.Release()
	}
	o.p, o.keys, o.keyOff, o.flags = nil, nil, nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
