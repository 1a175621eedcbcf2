package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// Snapshot layout. The groups table has one row per group: its key group
// (state.KeyGroupColumn) and key hash, the keys, the row count, flags, the
// time of its last row, and each aggregate's state columns (named after
// the aggregate's output column). Each aggregate keeping a multiset of
// values (COUNT DISTINCT, MIN/MAX over a retracting input) reads a value
// set, one per input column; each set is a table of (key group, hash,
// keys, value, count). Restore finds columns by name, so
// a snapshot restores into a job whose TTL changed.
const (
	aggGroupsTable  = "groupagg_groups"
	aggValuesTable  = "groupagg_values_" // + the aggregate's index
	aggHashColumn   = "_hash"
	aggRowsColumn   = "_rows"
	aggEmitColumn   = "_emitted"
	aggDirtyColumn  = "_dirty"
	aggUpdColumn    = "_updated"
	aggValueColumn  = "_value"
	aggCountColumn  = "_count"
	aggSnapshotRows = 64 << 10 // groups per snapshot batch
)

// opSlots are the operator's own per-group snapshot columns.
func (o *aggOp) opSlots() []aggSlot {
	s := []aggSlot{
		aggSliceSlot[int64]{name: aggRowsColumn, codec: aggInt64Codec, vals: &o.rows},
		aggSliceSlot[bool]{name: aggEmitColumn, codec: aggBoolCodec(), vals: &o.emitted},
		aggSliceSlot[bool]{name: aggDirtyColumn, codec: aggBoolCodec(), vals: &o.dirty},
	}
	if o.ttl > 0 {
		s = append(s, aggSliceSlot[int64]{name: aggUpdColumn, codec: aggInt64Codec, vals: &o.updated})
	}
	return s
}

// accSlots are the aggregates' snapshot columns, each prefixed so that no
// name clashes with a key's.
func (o *aggOp) accSlots() []aggSlot {
	var s []aggSlot
	for i, a := range o.accs {
		s = append(s, a.slots(fmt.Sprintf("_%d.%s", i, o.cfg.Aggs[i].Name))...)
	}
	return s
}

// keyedFields are the leading columns of every snapshot table: key group,
// hash (keyed only) and keys.
func (o *aggOp) keyedFields() []arrow.Field {
	f := []arrow.Field{{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}}
	if o.keys != nil {
		f = append(f, arrow.Field{Name: aggHashColumn, Type: arrow.PrimitiveTypes.Uint64})
		f = append(f, o.c.keys.Fields()...)
	}
	return f
}

// keyedColumns returns the leading columns for groups gids.
func (o *aggOp) keyedColumns(gids []uint32) ([]arrow.Array, error) {
	kgs := make([]uint16, len(gids))
	if o.keys == nil {
		for k := range kgs {
			kgs[k] = uint16(o.info.KeyGroups.Start)
		}
		return []arrow.Array{aggFixedArray(o.mem, arrow.PrimitiveTypes.Uint16, kgs, nil)}, nil
	}
	ids := make([]rowstore.RowID, len(gids))
	hashes := make([]uint64, len(gids))
	for k, g := range gids {
		ids[k] = rowstore.RowID(g)
		hashes[k] = o.keys.Hash(ids[k])
		kgs[k] = uint16(kernels.KeyGroupOf(hashes[k], o.info.MaxParallelism))
	}
	keys, err := o.keys.Gather(ids)
	if err != nil {
		return nil, o.errorf("%w", err)
	}
	defer keys.Release()
	cols := []arrow.Array{
		aggFixedArray(o.mem, arrow.PrimitiveTypes.Uint16, kgs, nil),
		aggFixedArray(o.mem, arrow.PrimitiveTypes.Uint64, hashes, nil),
	}
	for _, c := range keys.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	return cols, nil
}

// writeTable writes cols (released here) as a batch of table.
func (o *aggOp) writeTable(w state.SnapshotWriter, table string, fields []arrow.Field, cols []arrow.Array, rows int) error {
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	if err := w.Write(table, rec); err != nil {
		return o.errorf("snapshot: %w", err)
	}
	return nil
}

// SnapshotState writes the groups table and the value tables.
func (o *aggOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	var held []uint32
	for g := 0; g < o.ngroups; g++ {
		if o.held[g] {
			held = append(held, uint32(g))
		}
	}
	slots := append(o.opSlots(), o.accSlots()...)
	fields := o.keyedFields()
	for _, s := range slots {
		fields = append(fields, s.field())
	}
	for lo := 0; lo < len(held); lo += aggSnapshotRows {
		gids := held[lo:min(len(held), lo+aggSnapshotRows)]
		cols, err := o.keyedColumns(gids)
		if err != nil {
			return err
		}
		for _, s := range slots {
			cols = append(cols, s.export(o.mem, gids))
		}
		if err := o.writeTable(w, aggGroupsTable, fields, cols, len(gids)); err != nil {
			return err
		}
	}
	for si, set := range o.sets {
		gids, values, counts, err := set.export(o.mem)
		if err != nil {
			return o.errorf("snapshot: %w", err)
		}
		if len(gids) == 0 {
			values.Release()
			counts.Release()
			continue
		}
		cols, err := o.keyedColumns(gids)
		if err != nil {
			values.Release()
			counts.Release()
			return err
		}
		vf := append(o.keyedFields(),
			arrow.Field{Name: aggValueColumn, Type: values.DataType(), Nullable: true},
			arrow.Field{Name: aggCountColumn, Type: arrow.PrimitiveTypes.Int64})
		if err := o.writeTable(w, fmt.Sprintf("%s%d", aggValuesTable, si), vf, append(cols, values, counts), len(gids)); err != nil {
			return err
		}
	}
	return nil
}

// column returns the column of rec named name, or nil.
func aggColumn(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil
	}
	return rec.Column(idx[0])
}

// ownedRows lists the rows of a snapshot batch this subtask keeps: those
// of its key groups, or, without keys, every row on subtask 0.
func (o *aggOp) ownedRows(rec arrow.RecordBatch) ([]int32, error) {
	n := int(rec.NumRows())
	owned := make([]int32, 0, n)
	if o.keys == nil {
		if o.info.Subtask == 0 {
			for i := 0; i < n; i++ {
				owned = append(owned, int32(i))
			}
		}
		return owned, nil
	}
	kg, ok := aggColumn(rec, state.KeyGroupColumn).(*array.Uint16)
	if !ok {
		return nil, o.errorf("restore: snapshot table has no uint16 %q column", state.KeyGroupColumn)
	}
	for i := 0; i < n; i++ {
		if o.info.KeyGroups.Contains(int(kg.Value(i))) {
			owned = append(owned, int32(i))
		}
	}
	return owned, nil
}

// keyColumns returns the key columns of a snapshot batch.
func (o *aggOp) keyColumns(rec arrow.RecordBatch) ([]arrow.Array, error) {
	cols := make([]arrow.Array, o.c.keys.NumFields())
	for i, f := range o.c.keys.Fields() {
		c := aggColumn(rec, f.Name)
		if c == nil || !arrow.TypeEqual(c.DataType(), f.Type) {
			return nil, o.errorf("restore: snapshot has no key column %q of type %s (it has %s)", f.Name, f.Type, rec.Schema())
		}
		cols[i] = c
	}
	return cols, nil
}

// RestoreState loads the groups of this subtask's key groups from the
// snapshots of one or more old subtasks.
func (o *aggOp) RestoreState(r state.SnapshotReader) error {
	tables := r.Tables()
	if !slices.Contains(tables, aggGroupsTable) {
		return o.reportState()
	}
	slots := append(o.opSlots(), o.accSlots()...)
	err := r.Read(aggGroupsTable, func(rec arrow.RecordBatch) error {
		owned, err := o.ownedRows(rec)
		if err != nil || len(owned) == 0 {
			return err
		}
		gids, err := o.restoreGroups(rec, owned)
		if err != nil {
			return err
		}
		for _, s := range slots {
			col := aggColumn(rec, s.field().Name)
			if col == nil {
				if s.field().Name == aggUpdColumn {
					now := o.clock.Now().UnixNano()
					for _, g := range gids {
						o.updated[g] = now
					}
					continue
				}
				return o.errorf("restore: snapshot has no column %q (does it come from another query?)", s.field().Name)
			}
			if err := s.load(col, owned, gids); err != nil {
				return o.errorf("restore: %w", err)
			}
		}
		for _, g := range gids {
			if o.held[g] {
				return o.errorf("restore: group %d restored twice", g)
			}
			o.held[g] = true
			o.live++
			if o.dirty[g] {
				o.dirtyList = append(o.dirtyList, g)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for si, set := range o.sets {
		table := fmt.Sprintf("%s%d", aggValuesTable, si)
		if !slices.Contains(tables, table) {
			continue
		}
		vt := o.cfg.Input.Field(set.col).Type
		err := r.Read(table, func(rec arrow.RecordBatch) error {
			owned, err := o.ownedRows(rec)
			if err != nil || len(owned) == 0 {
				return err
			}
			gids := make([]uint32, len(owned))
			if o.table != nil {
				keys, err := o.keyColumns(rec)
				if err != nil {
					return err
				}
				if err := o.table.Lookup(keys, owned, gids); err != nil {
					return o.errorf("restore: %w", err)
				}
			}
			for _, g := range gids {
				if g == kernels.NoGroup || !o.held[g] {
					return o.errorf("restore: table %s has values of a group the groups table lacks", table)
				}
			}
			values, counts := aggColumn(rec, aggValueColumn), aggColumn(rec, aggCountColumn)
			if values == nil || counts == nil || !arrow.TypeEqual(values.DataType(), vt) || counts.DataType().ID() != arrow.INT64 {
				return o.errorf("restore: table %s has schema %s, want %s %s and int64 %s", table, rec.Schema(), aggValueColumn, vt, aggCountColumn)
			}
			if err := set.load(values, counts, owned, gids); err != nil {
				return o.errorf("restore: values of %q: %w", o.cfg.Input.Field(set.col).Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	o.nextExpiry = 0 // let the next flush find the expiry times
	return o.reportState()
}

// restoreGroups makes the groups of the owned rows of a groups batch and
// returns their ids.
func (o *aggOp) restoreGroups(rec arrow.RecordBatch, owned []int32) ([]uint32, error) {
	gids := make([]uint32, len(owned))
	if o.table == nil {
		return gids, nil
	}
	keys, err := o.keyColumns(rec)
	if err != nil {
		return nil, err
	}
	hashCol, ok := aggColumn(rec, aggHashColumn).(*array.Uint64)
	if !ok {
		return nil, o.errorf("restore: snapshot has no uint64 %q column", aggHashColumn)
	}
	prev := o.ngroups
	if err := o.table.FindOrInsert(keys, owned, gids); err != nil {
		return nil, o.errorf("restore: %w", err)
	}
	if o.table.Len()-prev != len(owned) {
		return nil, o.errorf("restore: the snapshot holds a key twice")
	}
	hashes := make([]uint64, len(owned))
	for k, i := range owned {
		hashes[k] = hashCol.Value(int(i))
	}
	keyRec := array.NewRecordBatch(o.c.keys, keys, rec.NumRows())
	first, err := o.keys.Append(keyRec, owned, hashes)
	keyRec.Release()
	if err != nil {
		return nil, o.errorf("restore: %w", err)
	}
	if int(first) != prev {
		panic(fmt.Sprintf("BUG: group aggregate: key row %d for group %d", first, prev))
	}
	o.growGroups(o.table.Len())
	return gids, nil
}
