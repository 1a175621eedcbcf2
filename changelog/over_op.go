package changelog

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
)

// overCompactMin is the number of deleted rows past which a row store is
// compacted (when they are also most of it).
const overCompactMin = 4096

// overOp is one subtask of an OverAggregate.
//
// Rows wait in pend until the watermark reaches them. A flush takes the
// ready rows in (time, partition, arrival) order, appends their time,
// partition and argument columns to the frame store and runs them through
// their partitions' frames one by one (a RANGE frame: one peer group at a
// time), recording each aggregate's result; the output is the ready rows
// gathered in that order with the result columns.
type overOp struct {
	cfg  OverAggregate
	c    *overCompiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	// parts numbers the partitions (nil without PartitionBy: one
	// partition, 0).
	parts *kernels.GroupTable
	wm    arrowflow.EventTime

	pend     *rowstore.Store
	pendIDs  []rowstore.RowID // the waiting rows, in arrival order
	pendTime []int64          // by pend row id: event time (ns)
	pendPart []uint32         // by pend row id: partition
	pendMin  int64            // no waiting row is earlier (a flush before it has nothing to do)
	clock    arrowflow.Clock
	lastNow  int64 // processing time: the time of the last batch

	frame     *rowstore.Store
	frameTime []int64 // by frame row id
	refs      overRefs
	// win, for a bounded frame, are each partition's frame rows, oldest
	// first: win[g][winHead[g]:].
	win     [][]rowstore.RowID
	winHead []int32
	accs    []overAccum
	minmax  []*overMinMax
	nparts  int

	stats OverStats

	// scratch
	times   []int64
	keep    []int32
	gids    []uint32
	hashes  []uint64
	keyCols []arrow.Array
	ready   []rowstore.RowID
	rest    []rowstore.RowID
}

func (o *overOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.wm = arrowflow.MinEventTime
	o.clock = info.Clock
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	o.pendMin = math.MaxInt64
	if len(c.partType) > 0 {
		if o.parts, err = kernels.NewGroupTable(c.partType); err != nil {
			return err
		}
	}
	if o.pend, err = rowstore.New(o.cfg.Input, o.mem); err != nil {
		return o.errorf("%w", err)
	}
	if o.frame, err = rowstore.New(c.frameSchema, o.mem); err != nil {
		return o.errorf("%w", err)
	}
	o.refs.frame = o.frame
	for i, ag := range o.cfg.Aggs {
		var dt arrow.DataType
		if c.aggArg[i] >= 0 {
			dt = c.frameSchema.Field(c.aggArg[i]).Type
		}
		acc, err := overNewAccum(ag.Func, ag.Name, c.aggArg[i], dt, o.cfg.Frame.Unbounded, &o.refs)
		if err != nil {
			return o.errorf("%s: %w", ag.Name, err)
		}
		o.accs = append(o.accs, acc)
		if mm, ok := acc.(*overMinMax); ok {
			o.minmax = append(o.minmax, mm)
		}
	}
	return nil
}

func (o *overOp) errorf(format string, args ...any) error {
	return fmt.Errorf("over aggregate %s: "+format, append([]any{o.info.Name}, args...)...)
}

// LateRows implements arrowflow.LateRowCounter.
func (o *overOp) LateRows() int64 { return o.stats.LateRows }

// OverStats reports the subtask's counters.
func (o *overOp) OverStats() OverStats {
	s := o.stats
	s.PendingRows, s.FrameRows = int64(len(o.pendIDs)), int64(o.frame.Len())
	s.Partitions = int64(o.nparts)
	s.StateBytes = o.stateBytes()
	return s
}

func (o *overOp) stateBytes() int64 {
	n := o.pend.SizeBytes() + o.frame.SizeBytes()
	n += int64(cap(o.pendIDs))*4 + int64(cap(o.pendTime))*8 + int64(cap(o.pendPart))*4
	n += int64(cap(o.frameTime))*8 + int64(cap(o.refs.n)) + int64(cap(o.win))*24 + int64(cap(o.winHead))*4
	for _, w := range o.win {
		n += int64(cap(w)) * 4
	}
	for _, a := range o.accs {
		n += a.sizeBytes()
	}
	if o.parts != nil {
		n += o.parts.SizeBytes()
	}
	return n
}

func (o *overOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.nparts))
}

// growParts makes room for every partition id handed out.
func (o *overOp) growParts() {
	n := 1
	if o.parts != nil {
		n = o.parts.Len()
	}
	if n <= o.nparts {
		return
	}
	o.nparts = n
	if !o.cfg.Frame.Unbounded {
		for len(o.win) < n {
			o.win = append(o.win, nil)
			o.winHead = append(o.winHead, 0)
		}
	}
	for _, a := range o.accs {
		a.grow(n)
	}
}

// partitions fills o.gids and o.hashes for the rows sel of rec (sel nil:
// every row) from the partition columns at cols.
func (o *overOp) partitions(rec arrow.RecordBatch, cols []int, sel []int32, n int) error {
	o.gids = growZeroSlice(o.gids[:0], n)
	o.hashes = growZeroSlice(o.hashes[:0], n)
	if o.parts == nil {
		clear(o.gids)
		clear(o.hashes)
	} else {
		o.keyCols = o.keyCols[:0]
		for _, i := range cols {
			o.keyCols = append(o.keyCols, rec.Column(i))
		}
		if err := o.parts.FindOrInsert(o.keyCols, sel, o.gids); err != nil {
			return o.errorf("partition columns: %w", err)
		}
		if err := kernels.HashColumns(o.keyCols, sel, o.hashes); err != nil {
			return o.errorf("partition columns: %w", err)
		}
	}
	o.growParts()
	return nil
}

// readTimes appends the event times (ns) of rows sel of a timestamp
// column to dst; a null time is MinEventTime, reported by valid false.
func (o *overOp) readTime(col arrow.Array, i int) (int64, bool) {
	if col.IsNull(i) {
		return 0, false
	}
	return int64(arrowflow.TimestampToEventTime(col.(*array.Timestamp).Value(i), o.c.timeUnit)), true
}

func (o *overOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if s := b.Record.Schema(); s != o.cfg.Input && !s.Equal(o.cfg.Input) {
		return o.errorf("batch schema %s differs from the configured input %s", s, o.cfg.Input)
	}
	n := b.NumRows()
	if b.Kinds != nil {
		for k := range n {
			if kind := b.Kind(k); kind != arrowflow.Insert {
				return o.errorf("row %d of a batch is a %s, but an OVER aggregation takes an append-only input", b.Row(k), kind)
			}
		}
	}
	o.stats.InputRows += int64(n)
	o.keep, o.times = o.keep[:0], o.times[:0]
	if o.cfg.ProcessingTime {
		return o.processNow(b, out)
	}
	tc := b.Record.Column(o.c.timeIdx)
	for k := range n {
		r := b.Row(k)
		t, ok := o.readTime(tc, r)
		switch {
		case !ok:
			o.stats.NullTimeRows++
		case t <= int64(o.wm):
			o.stats.LateRows++
		default:
			o.keep = append(o.keep, int32(r))
			o.times = append(o.times, t)
		}
	}
	if len(o.keep) == 0 {
		return nil
	}
	return o.hold(b.Record)
}

// processNow emits the rows of a batch over processing time: they all
// arrive now, in order.
func (o *overOp) processNow(b arrowflow.Batch, out arrowflow.Emitter) error {
	now := o.clock.Now().UnixNano()
	now = max(now, o.lastNow) // a clock stepping back does not reorder rows
	o.lastNow = now
	for k := range b.NumRows() {
		o.keep = append(o.keep, int32(b.Row(k)))
		o.times = append(o.times, now)
	}
	if len(o.keep) == 0 {
		return nil
	}
	if err := o.hold(b.Record); err != nil {
		return err
	}
	return o.flush(arrowflow.MaxEventTime, out)
}

// hold appends the rows o.keep of rec, at times o.times, to the waiting
// rows.
func (o *overOp) hold(rec arrow.RecordBatch) error {
	if err := o.partitions(rec, o.c.partIdx, o.keep, len(o.keep)); err != nil {
		return err
	}
	first, err := o.pend.Append(rec, o.keep, o.hashes)
	if err != nil {
		return o.errorf("%w", err)
	}
	for k := range o.keep {
		o.pendIDs = append(o.pendIDs, first+rowstore.RowID(k))
		o.pendMin = min(o.pendMin, o.times[k])
	}
	o.pendTime = append(o.pendTime, o.times...)
	o.pendPart = append(o.pendPart, o.gids[:len(o.keep)]...)
	return o.reportState()
}

func (o *overOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	o.wm = wm
	if err := o.flush(wm, out); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// Finish emits every row still waiting, as the final watermark would.
func (o *overOp) Finish(out arrowflow.Emitter) error {
	return o.flush(arrowflow.MaxEventTime, out)
}

// flush emits the waiting rows at or before wm, in time order.
func (o *overOp) flush(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if len(o.pendIDs) == 0 || int64(wm) < o.pendMin {
		return nil
	}
	o.ready, o.rest = o.ready[:0], o.rest[:0]
	o.pendMin = math.MaxInt64
	for _, id := range o.pendIDs {
		if t := o.pendTime[id]; t <= int64(wm) {
			o.ready = append(o.ready, id)
		} else {
			o.rest = append(o.rest, id)
			o.pendMin = min(o.pendMin, t)
		}
	}
	if len(o.ready) == 0 {
		return nil
	}
	o.pendIDs, o.rest = o.rest, o.pendIDs
	slices.SortFunc(o.ready, func(a, b rowstore.RowID) int {
		return cmp.Or(cmp.Compare(o.pendTime[a], o.pendTime[b]), cmp.Compare(o.pendPart[a], o.pendPart[b]), cmp.Compare(a, b))
	})
	rec, err := o.pend.Gather(o.ready)
	if err != nil {
		return o.errorf("%w", err)
	}
	defer rec.Release()
	if err := o.run(rec); err != nil {
		return err
	}
	cols := slices.Clone(rec.Columns())
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	for i, a := range o.accs {
		arr, err := a.finish(o.mem, o.frame)
		if err != nil {
			return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
		}
		owned = append(owned, arr)
		cols = append(cols, arr)
	}
	for _, id := range o.ready {
		o.pend.Delete(id)
	}
	if err := o.compact(); err != nil {
		return err
	}
	if err := o.reportState(); err != nil {
		return err
	}
	outRec := array.NewRecordBatch(o.c.out, cols, rec.NumRows())
	o.stats.OutputRows += rec.NumRows()
	return out.Emit(arrowflow.Batch{Record: outRec})
}

// run passes the ready rows (rec, in order) through their frames.
func (o *overOp) run(rec arrow.RecordBatch) error {
	fcols := make([]arrow.Array, len(o.c.frameCols))
	for i, ci := range o.c.frameCols {
		fcols[i] = rec.Column(ci)
	}
	frec := array.NewRecordBatch(o.c.frameSchema, fcols, rec.NumRows())
	defer frec.Release()
	o.hashes = o.hashes[:0]
	for _, id := range o.ready {
		o.hashes = append(o.hashes, o.pend.Hash(id))
	}
	first, err := o.frame.Append(frec, nil, o.hashes)
	if err != nil {
		return o.errorf("%w", err)
	}
	n := len(o.ready)
	for _, id := range o.ready {
		o.frameTime = append(o.frameTime, o.pendTime[id])
	}
	o.refs.n = growZeroSlice(o.refs.n, o.frame.IDs())
	f := o.cfg.Frame
	for k := 0; k < n; {
		g, t := o.pendPart[o.ready[k]], o.pendTime[o.ready[k]]
		end := k + 1
		if f.Range {
			for end < n && o.pendPart[o.ready[end]] == g && o.pendTime[o.ready[end]] == t {
				end++
			}
		}
		for j := k; j < end; j++ {
			if err := o.enter(g, first+rowstore.RowID(j)); err != nil {
				return err
			}
		}
		if !f.Unbounded {
			if err := o.evict(g, t); err != nil {
				return err
			}
		}
		for j := k; j < end; j++ {
			id := first + rowstore.RowID(j)
			for _, a := range o.accs {
				a.emit(g, id)
			}
			if f.Unbounded && o.refs.n[id] == 0 {
				o.frame.Delete(id)
			}
		}
		k = end
	}
	return nil
}

// enter adds frame row id to partition g's frame.
func (o *overOp) enter(g uint32, id rowstore.RowID) error {
	if !o.cfg.Frame.Unbounded {
		o.win[g] = append(o.win[g], id)
		o.refs.hold(id)
	}
	chunk, row := o.frame.Locate(id)
	for i, a := range o.accs {
		if err := a.add(g, chunk, row, id); err != nil {
			return o.errorf("%w", err)
		}
		_ = i
	}
	return nil
}

// evict removes from partition g's bounded frame the rows before the
// frame of a row at time t that just entered.
func (o *overOp) evict(g uint32, t int64) error {
	f := o.cfg.Frame
	w, h := o.win[g], int(o.winHead[g])
	for h < len(w) {
		id := w[h]
		if f.Range {
			if o.frameTime[id] >= t-int64(f.Interval) {
				break
			}
		} else if int64(len(w)-h) <= f.Rows+1 {
			break
		}
		chunk, row := o.frame.Locate(id)
		for _, a := range o.accs {
			if err := a.remove(g, chunk, row, id); err != nil {
				return o.errorf("%w", err)
			}
		}
		o.refs.drop(id)
		h++
	}
	if h == len(w) {
		w, h = w[:0], 0
	} else if h >= 32 && h*2 >= len(w) {
		n := copy(w, w[h:])
		w, h = w[:n], 0
	}
	o.win[g], o.winHead[g] = w, int32(h)
	return nil
}

// compact compacts the row stores when most of their rows are deleted.
func (o *overOp) compact() error {
	lim := cmp.Or(o.cfg.compactMin, overCompactMin)
	if g := o.pend.Garbage(); g >= lim && g >= o.pend.Len() {
		remap, err := o.pend.Compact()
		if err != nil {
			return o.errorf("%w", err)
		}
		if remap != nil {
			times := make([]int64, o.pend.IDs())
			parts := make([]uint32, o.pend.IDs())
			for i, id := range o.pendIDs {
				nid := remap[id]
				times[nid], parts[nid] = o.pendTime[id], o.pendPart[id]
				o.pendIDs[i] = nid
			}
			o.pendTime, o.pendPart = times, parts
		}
	}
	if g := o.frame.Garbage(); g >= lim && g >= o.frame.Len() {
		remap, err := o.frame.Compact()
		if err != nil {
			return o.errorf("%w", err)
		}
		if remap != nil {
			times := make([]int64, o.frame.IDs())
			refs := make([]uint8, o.frame.IDs())
			for old, nid := range remap {
				if nid >= 0 {
					times[nid], refs[nid] = o.frameTime[old], o.refs.n[old]
				}
			}
			o.frameTime, o.refs.n = times, refs
			for g, w := range o.win {
				h := int(o.winHead[g])
				n := 0
				for _, id := range w[h:] {
					w[n] = remap[id]
					n++
				}
				o.win[g], o.winHead[g] = w[:n], 0
			}
			for _, mm := range o.minmax {
				mm.remap(remap)
			}
		}
	}
	return nil
}

func (o *overOp) Close() error {
	if o.pend != nil {
		o.pend.Release()
		o.pend = nil
	}
	if o.frame != nil {
		o.frame.Release()
		o.frame = nil
	}
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
