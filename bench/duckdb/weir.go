package main

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/kernels"
)

// weirGroupBy runs a fresh weir group-by (k; sum(v) AS s, count(*) AS c)
// over every batch of data on the calling goroutine and returns the result
// batch, which the caller releases. This is the timed part of the weir side.
func weirGroupBy(mem memory.Allocator, data *dataset) (arrow.RecordBatch, error) {
	g, err := kernels.NewGroupBy(schema, []int{0}, []kernels.AggregateSpec{
		{Func: kernels.AggSum, Args: []int{1}, Name: "s"},
		{Func: kernels.AggCountStar, Name: "c"},
	})
	if err != nil {
		return nil, fmt.Errorf("weir: %w", err)
	}
	for _, rec := range data.batches {
		if err := g.Update(rec, nil); err != nil {
			return nil, fmt.Errorf("weir: update: %w", err)
		}
	}
	out, err := g.Finish(mem)
	if err != nil {
		return nil, fmt.Errorf("weir: finish: %w", err)
	}
	return out, nil
}

// weirTotals reduces a weir group-by result to its totals: the number of
// groups and the totals of its s and c columns.
func weirTotals(out arrow.RecordBatch) (totals, error) {
	t := totals{groups: out.NumRows()}
	var err error
	if t.sum, err = columnTotal(out, "s"); err != nil {
		return t, err
	}
	if t.count, err = columnTotal(out, "c"); err != nil {
		return t, err
	}
	return t, nil
}

// columnTotal adds up the integer column name of rec, which must have no
// nulls.
func columnTotal(rec arrow.RecordBatch, name string) (int64, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return 0, fmt.Errorf("weir: result has %d columns named %q, want 1", len(idx), name)
	}
	col := rec.Column(idx[0])
	if col.NullN() != 0 {
		return 0, fmt.Errorf("weir: result column %q has %d nulls", name, col.NullN())
	}
	var total int64
	switch a := col.(type) {
	case *array.Int64:
		for _, x := range a.Int64Values() {
			total += x
		}
	case *array.Uint64:
		for _, x := range a.Uint64Values() {
			total += int64(x)
		}
	default:
		return 0, fmt.Errorf("weir: result column %q has type %s, want an integer", name, col.DataType())
	}
	return total, nil
}
