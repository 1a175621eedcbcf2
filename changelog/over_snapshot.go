package changelog

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// Snapshot layout:
//   - over_pending: the waiting rows (rowstore, by key group);
//   - over_frame: the frame store's live rows (rowstore, by key group); a
//     restore rebuilds each partition's frame and MIN/MAX candidates by
//     running them through it again, in their order;
//   - over_acc, for an unbounded frame: per partition, its key group, the
//     partition columns, and the running counts and sums of the
//     aggregates other than MIN/MAX;
//   - over_watermark: the subtask's watermark (no key group: every
//     restored subtask reads every one and keeps the lowest).

func (o *overOp) maxParallelism() int {
	if o.info.MaxParallelism > 0 {
		return o.info.MaxParallelism
	}
	return state.DefaultMaxParallelism
}

var overWatermarkSchema = arrow.NewSchema([]arrow.Field{{Name: "watermark", Type: arrow.PrimitiveTypes.Int64}}, nil)

// accSchema is the layout of the over_acc table.
func (o *overOp) accSchema() *arrow.Schema {
	fields := []arrow.Field{{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}}
	for _, i := range o.c.partIdx {
		fields = append(fields, o.cfg.Input.Field(i))
	}
	for i, a := range o.accs {
		name := o.cfg.Aggs[i].Name
		switch a := a.(type) {
		case *overCounter:
			fields = append(fields, arrow.Field{Name: name + "$count", Type: arrow.PrimitiveTypes.Int64})
		case *overIntSum:
			fields = append(fields, arrow.Field{Name: name + "$count", Type: arrow.PrimitiveTypes.Int64},
				arrow.Field{Name: name + "$sum", Type: arrow.PrimitiveTypes.Int64})
		case *overFloatSum:
			fields = append(fields, arrow.Field{Name: name + "$count", Type: arrow.PrimitiveTypes.Int64},
				arrow.Field{Name: name + "$sum", Type: arrow.PrimitiveTypes.Float64},
				arrow.Field{Name: name + "$nan", Type: arrow.PrimitiveTypes.Int64},
				arrow.Field{Name: name + "$pinf", Type: arrow.PrimitiveTypes.Int64},
				arrow.Field{Name: name + "$ninf", Type: arrow.PrimitiveTypes.Int64})
		case *overDecSum:
			for _, f := range []string{"$count", "$w0", "$w1", "$w2", "$overflow"} {
				fields = append(fields, arrow.Field{Name: name + f, Type: arrow.PrimitiveTypes.Int64})
			}
		default:
			_ = a
		}
	}
	return arrow.NewSchema(fields, nil)
}

// SnapshotState writes the waiting rows, the frames and the watermark.
func (o *overOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	maxPar := o.maxParallelism()
	if err := o.pend.Snapshot(w, overPendingTable, maxPar); err != nil {
		return o.errorf("snapshot: %w", err)
	}
	if err := o.frame.Snapshot(w, overFrameTable, maxPar); err != nil {
		return o.errorf("snapshot: %w", err)
	}
	if o.cfg.Frame.Unbounded && o.nparts > 0 {
		if err := o.snapshotAcc(w, maxPar); err != nil {
			return o.errorf("snapshot: %w", err)
		}
	}
	b := array.NewInt64Builder(o.mem)
	defer b.Release()
	b.Append(int64(o.wm))
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(overWatermarkSchema, []arrow.Array{col}, 1)
	defer rec.Release()
	return w.Write(overWatermarkTable, rec)
}

func (o *overOp) snapshotAcc(w state.SnapshotWriter, maxPar int) error {
	n := o.nparts
	var cols []arrow.Array
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	kg := array.NewUint16Builder(o.mem)
	defer kg.Release()
	kg.Reserve(n)
	var keys []arrow.Array
	if o.parts == nil {
		kg.UnsafeAppend(uint16(o.info.KeyGroups.Start))
	} else {
		keys = o.parts.Keys(o.mem)
		hashes := make([]uint64, n)
		if err := kernels.HashColumns(keys, nil, hashes); err != nil {
			for _, k := range keys {
				k.Release()
			}
			return err
		}
		for _, h := range hashes {
			kg.UnsafeAppend(uint16(kernels.KeyGroupOf(h, maxPar)))
		}
	}
	cols = append(cols, kg.NewArray())
	cols = append(cols, keys...)
	ib := array.NewInt64Builder(o.mem)
	defer ib.Release()
	fb := array.NewFloat64Builder(o.mem)
	defer fb.Release()
	ints := func(v []int64) {
		ib.AppendValues(v[:n], nil)
		cols = append(cols, ib.NewArray())
	}
	for _, a := range o.accs {
		switch a := a.(type) {
		case *overCounter:
			ints(a.cnt)
		case *overIntSum:
			ints(a.cnt)
			ints(a.sum)
		case *overFloatSum:
			ints(a.cnt)
			fb.AppendValues(a.sum[:n], nil)
			cols = append(cols, fb.NewArray())
			for j := range 3 {
				odd := make([]int64, n)
				for g := range odd {
					odd[g] = int64(a.odd[g][j])
				}
				ints(odd)
			}
		case *overDecSum:
			ints(a.cnt)
			for j := range 3 {
				w := make([]int64, n)
				for g := range w {
					w[g] = int64(a.w[g][j])
				}
				ints(w)
			}
			ovf := make([]int64, n)
			for g := range ovf {
				if a.ovf[g] {
					ovf[g] = 1
				}
			}
			ints(ovf)
		}
	}
	rec := array.NewRecordBatch(o.accSchema(), cols, int64(n))
	defer rec.Release()
	return w.Write(overAccTable, rec)
}

// RestoreState loads the rows and partitions of this subtask's key
// groups.
func (o *overOp) RestoreState(r state.SnapshotReader) error {
	kgs := o.info.KeyGroups
	partCols := make([]int, len(o.c.partIdx))
	for i := range partCols {
		partCols[i] = o.c.partOff + i // the frame store's partition columns
	}
	err := o.pend.Restore(r, overPendingTable, kgs, func(first rowstore.RowID, rec arrow.RecordBatch) error {
		n := int(rec.NumRows())
		if err := o.partitions(rec, o.c.partIdx, nil, n); err != nil {
			return err
		}
		o.pendTime = growZeroSlice(o.pendTime, int(first))
		for i := range n {
			t := int64(0)
			if o.c.timeIdx >= 0 {
				t, _ = o.readTime(rec.Column(o.c.timeIdx), i)
			}
			o.pendTime = append(o.pendTime, t)
			o.pendPart = append(o.pendPart, o.gids[i])
			o.pendIDs = append(o.pendIDs, first+rowstore.RowID(i))
			o.pendMin = min(o.pendMin, t)
		}
		return nil
	})
	if err != nil {
		return o.errorf("restore: %w", err)
	}
	err = o.frame.Restore(r, overFrameTable, kgs, func(first rowstore.RowID, rec arrow.RecordBatch) error {
		n := int(rec.NumRows())
		if err := o.partitions(rec, partCols, nil, n); err != nil {
			return err
		}
		o.refs.n = growZeroSlice(o.refs.n, o.frame.IDs())
		gids := slices.Clone(o.gids[:n])
		for i := range n {
			t := int64(0) // processing time: RANGE frames over it are unbounded
			if o.c.timeIdx >= 0 {
				t, _ = o.readTime(rec.Column(0), i)
			}
			o.frameTime = append(o.frameTime, t)
		}
		for i, g := range gids {
			id := first + rowstore.RowID(i)
			if o.cfg.Frame.Unbounded {
				// Only the MIN/MAX candidates were kept; the counts and
				// sums come from over_acc.
				for _, mm := range o.minmax {
					if err := mm.add(g, rec, i, id); err != nil {
						return err
					}
				}
				continue
			}
			o.win[g] = append(o.win[g], id)
			o.refs.hold(id)
			for _, a := range o.accs {
				if err := a.add(g, rec, i, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return o.errorf("restore: %w", err)
	}
	if o.cfg.Frame.Unbounded {
		for id := range o.frame.IDs() {
			if o.refs.n[id] == 0 {
				o.frame.Delete(rowstore.RowID(id))
			}
		}
		if err := o.restoreAcc(r); err != nil {
			return o.errorf("restore: %w", err)
		}
	}
	if slices.Contains(r.Tables(), overWatermarkTable) {
		wm, seen := arrowflow.MaxEventTime, false
		err := r.Read(overWatermarkTable, func(rec arrow.RecordBatch) error {
			if !rec.Schema().Equal(overWatermarkSchema) {
				return o.errorf("restore: snapshot table %q has schema %s, want %s", overWatermarkTable, rec.Schema(), overWatermarkSchema)
			}
			col := rec.Column(0).(*array.Int64)
			for i := range col.Len() {
				wm, seen = min(wm, arrowflow.EventTime(col.Value(i))), true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if seen {
			o.wm = wm
		}
	}
	if err := o.compact(); err != nil {
		return err
	}
	return o.reportState()
}

func (o *overOp) restoreAcc(r state.SnapshotReader) error {
	if !slices.Contains(r.Tables(), overAccTable) {
		return nil
	}
	want := o.accSchema()
	np := len(o.c.partIdx)
	return r.Read(overAccTable, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(want) {
			return o.errorf("snapshot table %q has schema %s, want %s", overAccTable, rec.Schema(), want)
		}
		kg := rec.Column(0).(*array.Uint16)
		var sel []int32
		for i := range kg.Len() {
			if o.info.KeyGroups.Contains(int(kg.Value(i))) {
				sel = append(sel, int32(i))
			}
		}
		if len(sel) == 0 {
			return nil
		}
		cols := make([]int, np)
		for i := range cols {
			cols[i] = 1 + i
		}
		if err := o.partitions(rec, cols, sel, len(sel)); err != nil {
			return err
		}
		c := 1 + np
		ints := func() *array.Int64 { a := rec.Column(c).(*array.Int64); c++; return a }
		for _, a := range o.accs {
			switch a := a.(type) {
			case *overCounter:
				cnt := ints()
				for k, i := range sel {
					a.cnt[o.gids[k]] += cnt.Value(int(i))
				}
			case *overIntSum:
				cnt, sum := ints(), ints()
				for k, i := range sel {
					a.cnt[o.gids[k]] += cnt.Value(int(i))
					a.sum[o.gids[k]] += sum.Value(int(i))
				}
			case *overFloatSum:
				cnt := ints()
				sum := rec.Column(c).(*array.Float64)
				c++
				odd := [3]*array.Int64{ints(), ints(), ints()}
				for k, i := range sel {
					g := o.gids[k]
					a.cnt[g] += cnt.Value(int(i))
					a.sum[g] += sum.Value(int(i))
					for j, col := range odd {
						a.odd[g][j] += int32(col.Value(int(i)))
					}
				}
			case *overDecSum:
				cnt := ints()
				w := [3]*array.Int64{ints(), ints(), ints()}
				ovf := ints()
				for k, i := range sel {
					g := o.gids[k]
					a.cnt[g] += cnt.Value(int(i))
					for j, col := range w {
						a.w[g][j] = uint64(col.Value(int(i)))
					}
					a.ovf[g] = a.ovf[g] || ovf.Value(int(i)) != 0
				}
			}
		}
		return nil
	})
}
