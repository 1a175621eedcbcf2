package changelog

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// Normalize is Flink's ChangelogNormalize: it turns an upsert changelog
// keyed by Key into a retract changelog by keeping each key's last row.
// The planner puts it after an upsert-kafka source (whose records are
// upserts and tombstones) and after a change-format source under SET
// 'table.exec.source.cdc-events-duplicate' = 'true' (where an event
// delivered twice must change nothing).
//
// An insert or update-after (+I, +U) of a key makes the row the key's
// value; an update-before or delete (-U, -D) of a key removes the key's
// value, whatever the retraction's other columns hold (a Kafka tombstone
// carries only the key). As Flink's does, the operator emits what the
// table downstream must see:
//
//   - the first value of a key: +I(value);
//   - a new value of a key: -U(old) and +U(new), nothing when the new
//     value equals the old in every column (unless StateTTL is set: then
//     the pair is emitted anyway, as Flink does, so that downstream state
//     sees the key again);
//   - a removal of a key: -D(old), the full row the key held; a removal of
//     a key not held emits nothing and is counted
//     (NormalizeStats.IgnoredRetractions).
//
// Changes are folded per epoch, as weir's other updating operators fold
// them (see the package documentation): a key changed many times between
// two checkpoints emits its difference once, when the epoch closes
// (arrowflow.EpochFlusher) or at Finish. More than 64K changed keys flush
// early.
//
// Put the operator behind arrowflow.KeyBy on Key (in that order). The
// rows are kept in a state/rowstore.Store, snapshotted by key group of
// Key, so a job restores into another parallelism.
type Normalize struct {
	// Input is the schema of the batches the operator receives (and of
	// the rows it emits).
	Input *arrow.Schema
	// Key names the primary key columns, at least one.
	Key []string
	// StateTTL, when positive, forgets a key that no row reached for
	// StateTTL of processing time (TaskInfo.Clock), as Flink's
	// table.exec.state.ttl: its row stays downstream, and a later row of
	// the key is a first value (+I) again.
	StateTTL time.Duration

	compactMin int // tests: compact the store at this many deleted rows
}

// NormalizeStats are a Normalize subtask's counters.
type NormalizeStats struct {
	// InputRows counts the rows received; OutputRows the rows emitted.
	InputRows, OutputRows int64
	// PerRowOutputRows counts the rows the operator would have emitted
	// without folding, one change per input row as Flink's
	// ChangelogNormalize does without mini-batch.
	PerRowOutputRows int64
	// Keys is the number of keys held (with a row).
	Keys int64
	// StateBytes approximates the memory the state takes.
	StateBytes int64
	// IgnoredRetractions counts removals (-U, -D) of keys that held no
	// row: tombstones of keys never seen or already deleted, or of keys
	// StateTTL forgot.
	IgnoredRetractions int64
	// UnchangedRows counts new values equal to the key's old one, which
	// emitted nothing.
	UnchangedRows int64
	// ExpiredKeys counts keys dropped by StateTTL.
	ExpiredKeys int64
}

// NormalizeStatsReporter is implemented by the operator instances a
// Normalize makes.
type NormalizeStatsReporter interface {
	NormalizeStats() NormalizeStats
}

// rank is the Rank whose partition machinery the operator shares: one
// partition per key.
func (n Normalize) rank() Rank {
	return Rank{Input: n.Input, PartitionBy: n.Key, Func: RowNumber, N: 1, StateTTL: n.StateTTL, compactMin: n.compactMin}
}

// Validate checks the configuration against its input schema.
func (n Normalize) Validate() error {
	if len(n.Key) == 0 {
		return fmt.Errorf("changelog-normalize: no key columns (the PRIMARY KEY)")
	}
	if err := n.rank().Validate(); err != nil {
		return fmt.Errorf("changelog-normalize: %w", err)
	}
	return nil
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (n Normalize) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator {
		return &normalizeOp{rankBase: rankBase{cfg: n.rank(), what: "changelog-normalize"}}
	}
}

// Snapshot tables.
const (
	normalizeRowsTable   = "normalize_rows"   // every key's row
	normalizeAccessTable = "normalize_access" // with a TTL: access times (partitionSchema)
)

// Pending change of a key in the epoch being folded.
const (
	normNone   uint8 = iota // not changed since the last flush
	normRow                 // pend holds the key's new row
	normRemove              // the key's row was removed
)

// normalizeOp is one subtask of a Normalize. Per key (partition id of
// rankBase): shown, the stored row emitted last (-1 none); state and
// pend, the change folded since the last flush. Every stored live row is
// a key's shown row or its pending one.
type normalizeOp struct {
	rankBase
	store  *rowstore.Store
	shown  []int32
	pend   []int32
	state  []uint8
	access []int64 // with a TTL
	dirty  []uint32
	keys   int // keys with a shown row

	lastSweep int64
	ns        NormalizeStats

	// scratch
	adds     []int32
	addHash  []uint64
	outIDs   []int32
	outKinds []arrowflow.RowKind
	dropped  []int32
}

func (o *normalizeOp) Open(info *arrowflow.TaskInfo) error {
	if len(o.cfg.PartitionBy) == 0 {
		return fmt.Errorf("changelog-normalize %s: no key columns (the PRIMARY KEY)", info.Name)
	}
	if err := o.open(info); err != nil {
		return fmt.Errorf("changelog-normalize: %w", err)
	}
	st, err := rowstore.New(o.cfg.Input, o.mem)
	if err != nil {
		return o.errorf("%w", err)
	}
	o.store = st
	o.lastSweep = o.now()
	return nil
}

// NormalizeStats reports the subtask's counters.
func (o *normalizeOp) NormalizeStats() NormalizeStats {
	s := o.ns
	s.InputRows, s.OutputRows, s.PerRowOutputRows = o.stats.InputRows, o.stats.OutputRows, o.stats.PerRowOutputRows
	s.Keys = int64(o.keys)
	s.StateBytes = o.stateBytes()
	return s
}

func (o *normalizeOp) stateBytes() int64 {
	n := int64(cap(o.shown)+cap(o.pend))*4 + int64(cap(o.state)) + int64(cap(o.access))*8
	if o.store != nil {
		n += o.store.SizeBytes()
	}
	if o.parts != nil {
		n += o.parts.SizeBytes()
	}
	return n
}

func (o *normalizeOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.keys))
}

func (o *normalizeOp) grow() {
	for n := o.partitionsLen(); len(o.shown) < n; {
		o.shown = append(o.shown, -1)
		o.pend = append(o.pend, -1)
		o.state = append(o.state, normNone)
		o.access = append(o.access, 0)
	}
}

func (o *normalizeOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if err := o.checkSchema(b); err != nil {
		return err
	}
	n := b.NumRows()
	if n == 0 {
		return nil
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
	o.grow()
	// Store every added row first, so that pending rows are row ids.
	adds, hs := o.adds[:0], o.addHash[:0]
	for k := range n {
		if !b.Kind(k).IsRetraction() {
			adds = append(adds, o.rows[k])
			hs = append(hs, o.hashes[k])
		}
	}
	o.adds, o.addHash = adds, hs
	var next int32
	if len(adds) > 0 {
		first, err := o.store.Append(b.Record, adds, hs)
		if err != nil {
			return o.errorf("%w", err)
		}
		next = first
	}
	for k := range n {
		pid := o.pids[k]
		if o.ttl > 0 {
			if o.shown[pid] >= 0 && o.state[pid] == normNone && now-o.access[pid] >= o.ttl {
				o.expire(pid)
			}
			o.access[pid] = now
		}
		// present: the key holds a row after the changes so far (what
		// a per-row operator would have emitted against).
		present := o.state[pid] == normRow || o.state[pid] == normNone && o.shown[pid] >= 0
		if o.state[pid] == normNone {
			o.dirty = append(o.dirty, pid)
		}
		if p := o.pend[pid]; p >= 0 {
			o.store.Delete(p)
			o.pend[pid] = -1
		}
		if b.Kind(k).IsRetraction() {
			o.state[pid] = normRemove
			if present {
				o.stats.PerRowOutputRows++
			}
		} else {
			o.state[pid] = normRow
			o.pend[pid] = next
			next++
			o.stats.PerRowOutputRows++
			if present {
				o.stats.PerRowOutputRows++
			}
		}
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

// equalStored reports whether stored rows a and b are equal in every
// column.
func (o *normalizeOp) equalStored(a, b int32) bool {
	ra, i := o.store.Locate(a)
	rb, j := o.store.Locate(b)
	for c, eq := range o.c.eq {
		if !eq(ra.Column(c), i, rb.Column(c), j) {
			return false
		}
	}
	return true
}

// FlushEpoch emits the changes of every key changed since the last flush
// (arrowflow.EpochFlusher).
func (o *normalizeOp) FlushEpoch(_ uint64, out arrowflow.Emitter) error {
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

// flush emits, per changed key, the difference between its shown row and
// its pending change, and makes the result the shown row.
func (o *normalizeOp) flush(out arrowflow.Emitter) error {
	if len(o.dirty) == 0 {
		return nil
	}
	ids, kinds, dropped := o.outIDs[:0], o.outKinds[:0], o.dropped[:0]
	for _, pid := range o.dirty {
		old := o.shown[pid]
		switch o.state[pid] {
		case normRow:
			nw := o.pend[pid]
			switch {
			case old < 0:
				ids, kinds = append(ids, nw), append(kinds, arrowflow.Insert)
				o.keys++
			case o.ttl == 0 && o.equalStored(old, nw):
				o.ns.UnchangedRows++
				dropped = append(dropped, nw)
				nw = old
			default:
				ids, kinds = append(ids, old, nw), append(kinds, arrowflow.UpdateBefore, arrowflow.UpdateAfter)
				dropped = append(dropped, old)
			}
			o.shown[pid] = nw
		case normRemove:
			if old < 0 {
				o.ns.IgnoredRetractions++
				break
			}
			ids, kinds = append(ids, old), append(kinds, arrowflow.Delete)
			dropped = append(dropped, old)
			o.shown[pid] = -1
			o.keys--
		}
		o.state[pid], o.pend[pid] = normNone, -1
	}
	o.dirty = o.dirty[:0]
	o.outIDs, o.outKinds, o.dropped = ids, kinds, dropped
	for start := 0; start < len(ids); start += rankOutChunk {
		end := min(start+rankOutChunk, len(ids))
		rec, err := o.store.Gather(ids[start:end])
		if err != nil {
			return o.errorf("%w", err)
		}
		o.stats.OutputRows += int64(end - start)
		if err := out.Emit(arrowflow.NewChangeBatch(rec, slices.Clone(kinds[start:end]))); err != nil {
			return err
		}
	}
	// Only now: the replaced rows were read for the output.
	for _, id := range dropped {
		o.store.Delete(id)
	}
	return nil
}

// maybeCompact compacts the store once deleted rows outnumber the live
// ones, renumbering every reference. It runs between batches.
func (o *normalizeOp) maybeCompact() error {
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
	for pid := range o.shown {
		if r := o.shown[pid]; r >= 0 {
			o.shown[pid] = remap[r]
		}
		if r := o.pend[pid]; r >= 0 {
			o.pend[pid] = remap[r]
		}
	}
	return nil
}

// expire forgets key pid's shown row without emitting anything, as
// Flink's state TTL does. A pending change stays.
func (o *normalizeOp) expire(pid uint32) {
	if r := o.shown[pid]; r >= 0 {
		o.store.Delete(r)
		o.shown[pid] = -1
		o.keys--
		o.ns.ExpiredKeys++
	}
}

// sweep forgets every key no row reached for the TTL, and rebuilds the
// key table when most of its keys are gone. It runs between batches.
func (o *normalizeOp) sweep(now int64) error {
	o.lastSweep = now
	for pid := range o.shown {
		if o.shown[pid] >= 0 && o.state[pid] == normNone && now-o.access[pid] >= o.ttl {
			o.expire(uint32(pid))
		}
	}
	held := 0
	for pid := range o.shown {
		if o.shown[pid] >= 0 || o.state[pid] != normNone {
			held++
		}
	}
	if dead := len(o.shown) - held; dead < max(o.cfg.compactMin, rankCompactPartitionsMin) || dead < held {
		return nil
	}
	keep := make([]int32, 0, held)
	remap := make([]int32, len(o.shown))
	for pid := range o.shown {
		remap[pid] = -1
		if o.shown[pid] >= 0 || o.state[pid] != normNone {
			remap[pid] = int32(len(keep))
			keep = append(keep, int32(pid))
		}
	}
	if err := o.compactPartitions(keep); err != nil {
		return err
	}
	shown, pend, st, acc := make([]int32, len(keep)), make([]int32, len(keep)), make([]uint8, len(keep)), make([]int64, len(keep))
	for i, pid := range keep {
		shown[i], pend[i], st[i], acc[i] = o.shown[pid], o.pend[pid], o.state[pid], o.access[pid]
	}
	o.shown, o.pend, o.state, o.access = shown, pend, st, acc
	for i, pid := range o.dirty {
		o.dirty[i] = uint32(remap[pid])
	}
	return nil
}

func (o *normalizeOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// Finish emits what the last epoch changed.
func (o *normalizeOp) Finish(out arrowflow.Emitter) error {
	if err := o.flush(out); err != nil {
		return err
	}
	return o.reportState()
}

// SnapshotState writes every key's row by key group of its key. The
// runtime flushes before it snapshots, so the stored rows are exactly the
// shown ones.
func (o *normalizeOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if len(o.dirty) > 0 {
		return o.errorf("snapshot with %d keys changed since the last flush: FlushEpoch must run before SnapshotState", len(o.dirty))
	}
	if err := o.store.Snapshot(w, normalizeRowsTable, o.maxParallelism()); err != nil {
		return err
	}
	if o.ttl == 0 {
		return nil
	}
	var pids []int32
	var access []int64
	for pid, r := range o.shown {
		if r >= 0 {
			pids = append(pids, int32(pid))
			access = append(access, o.access[pid])
		}
	}
	return o.writePartitions(w, normalizeAccessTable, pids, access)
}

// RestoreState takes the rows of this subtask's key groups as the keys'
// shown rows.
func (o *normalizeOp) RestoreState(r state.SnapshotReader) error {
	now := o.now()
	err := o.store.Restore(r, normalizeRowsTable, o.info.KeyGroups, func(first rowstore.RowID, rec arrow.RecordBatch) error {
		if err := o.prepare(rec, nil); err != nil {
			return err
		}
		o.grow()
		for k := range int(rec.NumRows()) {
			pid := o.pids[k]
			if o.shown[pid] >= 0 {
				return o.errorf("restore: key held twice in the snapshot (table %s)", normalizeRowsTable)
			}
			o.shown[pid] = first + int32(k)
			o.access[pid] = now
			o.keys++
		}
		return nil
	})
	if err != nil {
		return o.errorf("restore: %w", err)
	}
	o.lastSweep = now
	if o.ttl > 0 {
		err := o.readPartitions(r, normalizeAccessTable, false, func(pid uint32, access int64) {
			if int(pid) < len(o.shown) && o.shown[pid] >= 0 && access > 0 {
				o.access[pid] = access
			}
		})
		if err != nil {
			return err
		}
	}
	return o.reportState()
}

func (o *normalizeOp) Close() error {
	if o.store != nil {
		o.store.Release()
	}
	o.shown, o.pend, o.state, o.access = nil, nil, nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
