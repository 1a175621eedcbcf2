package changelog

import (
	"cmp"
	"slices"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// rankFirstOp is one subtask of a keep-first deduplication (Rank.KeepFirst,
// no ORDER BY): it emits the first row to arrive in each partition, once,
// from the batch it arrives in, and holds only a seen flag per partition.
type rankFirstOp struct {
	rankBase
	seen   []bool  // by partition id
	access []int64 // by partition id, with a TTL
	best   []int32 // by partition id: the batch's first row, or -1
	nseen  int

	lastSweep int64
	touched   []uint32
	out       []int32
}

func (o *rankFirstOp) Open(info *arrowflow.TaskInfo) error { return o.open(info) }

// RankStats reports the subtask's counters.
func (o *rankFirstOp) RankStats() RankStats {
	s := o.stats
	s.Partitions, s.StateRows = int64(o.nseen), int64(o.nseen)
	s.StateBytes = o.stateBytes()
	return s
}

func (o *rankFirstOp) stateBytes() int64 {
	n := int64(cap(o.seen)) + int64(cap(o.access))*8 + int64(cap(o.best))*4
	if o.parts != nil {
		n += o.parts.SizeBytes()
	}
	return n
}

func (o *rankFirstOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.nseen))
}

func (o *rankFirstOp) grow() {
	n := o.partitionsLen()
	for len(o.seen) < n {
		o.seen = append(o.seen, false)
		o.access = append(o.access, 0)
		o.best = append(o.best, -1)
	}
}

func (o *rankFirstOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	if err := o.checkSchema(b); err != nil {
		b.Release()
		return err
	}
	n := b.NumRows()
	if n == 0 {
		b.Release()
		return nil
	}
	if b.Kinds != nil {
		for k := range n {
			if kind := b.Kind(k); kind != arrowflow.Insert {
				b.Release()
				return o.errorf("row %d of a batch is a %s, but a keep-first deduplication takes an append-only input", b.Row(k), kind)
			}
		}
	}
	o.stats.InputRows += int64(n)
	now := o.now()
	if o.ttl > 0 && now-o.lastSweep >= o.ttl {
		if err := o.sweep(now); err != nil {
			b.Release()
			return err
		}
	}
	if err := o.prepare(b.Record, b.Sel); err != nil {
		b.Release()
		return err
	}
	o.grow()
	o.touched = o.touched[:0]
	for k := range n {
		pid := o.pids[k]
		if o.ttl > 0 {
			if o.seen[pid] && now-o.access[pid] >= o.ttl {
				o.seen[pid] = false
				o.nseen--
				o.stats.ExpiredPartitions++
			}
			o.access[pid] = now
		}
		if o.seen[pid] {
			continue
		}
		if o.best[pid] < 0 {
			o.best[pid] = int32(k)
			o.touched = append(o.touched, pid)
		}
	}
	sel := o.out[:0]
	for _, pid := range o.touched {
		sel = append(sel, o.rows[o.best[pid]])
		o.best[pid] = -1
		o.seen[pid] = true
	}
	o.out = sel
	o.nseen += len(sel)
	if err := o.reportState(); err != nil {
		b.Release()
		return err
	}
	if len(sel) == 0 {
		b.Release()
		return nil
	}
	o.stats.OutputRows += int64(len(sel))
	o.stats.PerRowOutputRows += int64(len(sel))
	// The first rows go on in the input's own record: only the
	// selection changes.
	if len(sel) == int(b.Record.NumRows()) {
		return out.Emit(arrowflow.Batch{Record: b.Record})
	}
	slices.Sort(sel)
	return out.Emit(arrowflow.Batch{Record: b.Record, Sel: slices.Clone(sel)})
}

// sweep forgets every partition no row reached for the TTL, and rebuilds
// the partition table when most of its partitions are gone. It runs
// between batches.
func (o *rankFirstOp) sweep(now int64) error {
	o.lastSweep = now
	for pid, s := range o.seen {
		if s && now-o.access[pid] >= o.ttl {
			o.seen[pid] = false
			o.nseen--
			o.stats.ExpiredPartitions++
		}
	}
	if dead := len(o.seen) - o.nseen; o.parts == nil || dead < cmp.Or(o.cfg.compactMin, rankCompactPartitionsMin) || dead < o.nseen {
		return nil
	}
	keep := make([]int32, 0, o.nseen)
	for pid, s := range o.seen {
		if s {
			keep = append(keep, int32(pid))
		}
	}
	if err := o.compactPartitions(keep); err != nil {
		return err
	}
	access := make([]int64, len(keep))
	for i, pid := range keep {
		access[i] = o.access[pid]
	}
	o.access = access
	o.seen = slices.Repeat([]bool{true}, len(keep))
	o.best = slices.Repeat([]int32{-1}, len(keep))
	return nil
}

func (o *rankFirstOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// FlushEpoch has nothing to flush (rows are emitted as they arrive); it
// sweeps expired partitions.
func (o *rankFirstOp) FlushEpoch(_ uint64, _ arrowflow.Emitter) error {
	if now := o.now(); o.ttl > 0 && now-o.lastSweep >= o.ttl {
		if err := o.sweep(now); err != nil {
			return err
		}
		return o.reportState()
	}
	return nil
}

// Finish emits nothing: every first row went out with its batch.
func (o *rankFirstOp) Finish(arrowflow.Emitter) error { return nil }

// SnapshotState writes the partitions seen, by key group, with their
// access times.
func (o *rankFirstOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	var pids []int32
	var access []int64
	for pid, s := range o.seen {
		if s {
			pids = append(pids, int32(pid))
			access = append(access, o.access[pid])
		}
	}
	return o.writePartitions(w, rankFirstTable, pids, access)
}

// RestoreState marks seen the partitions of this subtask's key groups.
func (o *rankFirstOp) RestoreState(r state.SnapshotReader) error {
	now := o.now()
	o.lastSweep = now
	err := o.readPartitions(r, rankFirstTable, true, func(pid uint32, access int64) {
		o.grow()
		if !o.seen[pid] {
			o.seen[pid] = true
			o.nseen++
		}
		o.access[pid] = now
		if o.ttl > 0 && access > 0 {
			o.access[pid] = access
		}
	})
	if err != nil {
		return err
	}
	return o.reportState()
}

func (o *rankFirstOp) Close() error {
	o.seen, o.access, o.best = nil, nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
