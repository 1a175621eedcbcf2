package changelog

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// rankAccessColumn holds, in a partition table, the processing time
// (Unix nanoseconds) a row last reached the partition, so that a restored
// partition expires when it would have without the restore.
const rankAccessColumn = "_access"

// partitionSchema is the layout of a partition table (KeepFirst's seen
// partitions, the general path's access times): the key group, the
// partition columns, the last access.
func (o *rankBase) partitionSchema() *arrow.Schema {
	fields := []arrow.Field{{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}}
	for _, i := range o.c.partIdx {
		fields = append(fields, o.cfg.Input.Field(i))
	}
	fields = append(fields, arrow.Field{Name: rankAccessColumn, Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil)
}

// writePartitions writes the partitions pids with their access times as
// table, by key group of their keys (without PartitionBy, the one
// partition in this subtask's first key group).
func (o *rankBase) writePartitions(w state.SnapshotWriter, table string, pids []int32, access []int64) error {
	if len(pids) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, 2+len(o.c.partIdx))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	kg := array.NewUint16Builder(o.mem)
	defer kg.Release()
	kg.Reserve(len(pids))
	var keys []arrow.Array
	if o.parts == nil {
		kg.UnsafeAppend(uint16(o.info.KeyGroups.Start))
	} else {
		all := o.parts.Keys(o.mem)
		var err error
		for _, a := range all {
			var t arrow.Array
			if err == nil {
				t, err = kernels.Take(o.mem, a, pids)
			}
			a.Release()
			if t != nil {
				keys = append(keys, t)
			}
		}
		if err == nil {
			hashes := make([]uint64, len(pids))
			if err = kernels.HashColumns(keys, nil, hashes); err == nil {
				maxPar := o.maxParallelism()
				for _, h := range hashes {
					kg.UnsafeAppend(uint16(kernels.KeyGroupOf(h, maxPar)))
				}
			}
		}
		if err != nil {
			for _, k := range keys {
				k.Release()
			}
			return o.errorf("snapshot: %w", err)
		}
	}
	cols = append(cols, kg.NewArray())
	cols = append(cols, keys...)
	ab := array.NewInt64Builder(o.mem)
	ab.AppendValues(access, nil)
	cols = append(cols, ab.NewArray())
	ab.Release()
	rec := array.NewRecordBatch(o.partitionSchema(), cols, int64(len(pids)))
	defer rec.Release()
	return w.Write(table, rec)
}

// readPartitions calls fn with the partition id and access time of each
// row of table in this subtask's key groups: partitions not held yet are
// created when insert, else skipped.
func (o *rankBase) readPartitions(r state.SnapshotReader, table string, insert bool, fn func(pid uint32, access int64)) error {
	if !slices.Contains(r.Tables(), table) {
		return nil
	}
	want := o.partitionSchema()
	return r.Read(table, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(want) {
			return o.errorf("snapshot table %q has schema %s, want %s", table, rec.Schema(), want)
		}
		kgs := rec.Column(0).(*array.Uint16)
		acc := rec.Column(int(rec.NumCols()) - 1).(*array.Int64)
		var sel []int32
		for i := range kgs.Len() {
			if o.info.KeyGroups.Contains(int(kgs.Value(i))) {
				sel = append(sel, int32(i))
			}
		}
		if len(sel) == 0 {
			return nil
		}
		pids := make([]uint32, len(sel))
		if o.parts != nil {
			keys := rec.Columns()[1 : rec.NumCols()-1]
			find := o.parts.Lookup
			if insert {
				find = o.parts.FindOrInsert
			}
			if err := find(keys, sel, pids); err != nil {
				return o.errorf("restore: %w", err)
			}
		}
		for k, pid := range pids {
			if pid != kernels.NoGroup {
				fn(pid, acc.Value(int(sel[k])))
			}
		}
		return nil
	})
}
