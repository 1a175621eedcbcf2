package ops

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// CountByKey counts rows and sums a float64 column per int64 key. It keeps
// its state in a Go map, which is fine for the demo and the runtime's
// tests; the columnar group-by of SQL jobs lives in kernels/.
//
// Rows with a null key are not counted. Its output schema is (key int64,
// count int64, sum float64), rows sorted by key, named after
// Key and "count" and "sum_"+Value. It emits each key's totals when its
// inputs end (bounded jobs); with EmitEvery > 0 it also emits the current
// totals of the keys updated since the last emission every EmitEvery input
// rows, as a changelog of latest values.
type CountByKey struct {
	// Key names the int64 key column. The operator must be fed through a
	// keyed edge on this column.
	Key string
	// Value names the float64 column to sum; null values are not summed.
	Value string
	// EmitEvery, when positive, emits updated totals every EmitEvery rows.
	EmitEvery int
}

// Factory returns the operator factory.
func (c CountByKey) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &countByKey{cfg: c} }
}

// Schema is the operator's output schema.
func (c CountByKey) Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: c.Key, Type: arrow.PrimitiveTypes.Int64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sum_" + c.Value, Type: arrow.PrimitiveTypes.Float64},
	}, nil)
}

type totals struct {
	count int64
	sum   float64
}

type countByKey struct {
	arrowflow.BaseOperator
	cfg     CountByKey
	info    *arrowflow.TaskInfo
	schema  *arrow.Schema
	totals  map[int64]*totals
	dirty   map[int64]bool
	pending int
}

func (o *countByKey) Open(info *arrowflow.TaskInfo) error {
	o.info = info
	o.schema = o.cfg.Schema()
	o.totals = make(map[int64]*totals)
	o.dirty = make(map[int64]bool)
	return nil
}

func (o *countByKey) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	schema := b.Schema()
	ki, vi := schema.FieldIndices(o.cfg.Key), schema.FieldIndices(o.cfg.Value)
	if len(ki) != 1 || len(vi) != 1 {
		return fmt.Errorf("count by key: columns %q and %q must each appear once in %s", o.cfg.Key, o.cfg.Value, schema)
	}
	keys, ok := b.Record.Column(ki[0]).(*array.Int64)
	if !ok {
		return fmt.Errorf("count by key: key column %q is %s, want int64", o.cfg.Key, b.Record.Column(ki[0]).DataType())
	}
	vals, ok := b.Record.Column(vi[0]).(*array.Float64)
	if !ok {
		return fmt.Errorf("count by key: value column %q is %s, want float64", o.cfg.Value, b.Record.Column(vi[0]).DataType())
	}
	n := b.NumRows()
	for k := 0; k < n; k++ {
		i := b.Row(k)
		if keys.IsNull(i) {
			continue
		}
		key := keys.Value(i)
		t := o.totals[key]
		if t == nil {
			t = &totals{}
			o.totals[key] = t
		}
		t.count++
		if vals.IsValid(i) {
			t.sum += vals.Value(i)
		}
		if o.cfg.EmitEvery > 0 {
			o.dirty[key] = true
		}
	}
	if o.cfg.EmitEvery > 0 {
		o.pending += n
		if o.pending >= o.cfg.EmitEvery {
			o.pending = 0
			keys := make([]int64, 0, len(o.dirty))
			for k := range o.dirty {
				keys = append(keys, k)
			}
			clear(o.dirty)
			return o.emit(keys, out)
		}
	}
	return nil
}

func (o *countByKey) Finish(out arrowflow.Emitter) error {
	keys := make([]int64, 0, len(o.totals))
	for k := range o.totals {
		keys = append(keys, k)
	}
	return o.emit(keys, out)
}

func (o *countByKey) emit(keys []int64, out arrowflow.Emitter) error {
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	rec := o.build(keys, o.info.Allocator)
	return out.Emit(arrowflow.NewBatch(rec))
}

func (o *countByKey) build(keys []int64, mem memory.Allocator) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, o.schema)
	defer bld.Release()
	kb := bld.Field(0).(*array.Int64Builder)
	cb := bld.Field(1).(*array.Int64Builder)
	sb := bld.Field(2).(*array.Float64Builder)
	kb.Reserve(len(keys))
	cb.Reserve(len(keys))
	sb.Reserve(len(keys))
	for _, k := range keys {
		t := o.totals[k]
		kb.UnsafeAppend(k)
		cb.UnsafeAppend(t.count)
		sb.UnsafeAppend(t.sum)
	}
	return bld.NewRecordBatch()
}

const stateTable = "totals"

// SnapshotState writes the totals as one columnar table (key, count, sum).
func (o *countByKey) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if len(o.totals) == 0 {
		return nil
	}
	keys := make([]int64, 0, len(o.totals))
	for k := range o.totals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rec := o.build(keys, o.info.Allocator)
	defer rec.Release()
	return w.Write(stateTable, rec)
}

// RestoreState keeps the rows of the key groups this subtask owns.
func (o *countByKey) RestoreState(r state.SnapshotReader) error {
	return r.Read(stateTable, func(rec arrow.RecordBatch) error {
		keys := rec.Column(0).(*array.Int64)
		counts := rec.Column(1).(*array.Int64)
		sums := rec.Column(2).(*array.Float64)
		hashes := make([]uint64, keys.Len())
		if err := kernels.HashColumns([]arrow.Array{keys}, nil, hashes); err != nil {
			return err
		}
		for i, h := range hashes {
			if !o.info.KeyGroups.Contains(state.KeyGroupOf(h, o.info.MaxParallelism)) {
				continue
			}
			o.totals[keys.Value(i)] = &totals{count: counts.Value(i), sum: sums.Value(i)}
		}
		return nil
	})
}
