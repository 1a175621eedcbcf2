package optest

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BuildRecord builds a record of schema from rows of Go values (the
// conventions of Value, plus int for integers and int64 for timestamps in
// the column's unit, and strings for decimals). The caller releases it.
func BuildRecord(mem memory.Allocator, schema *arrow.Schema, rows [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for r, row := range rows {
		if len(row) != schema.NumFields() {
			return nil, fmt.Errorf("row %d %s has %d values, schema has %d columns", r, FormatRow(row), len(row), schema.NumFields())
		}
		for c, v := range row {
			if err := appendValue(b.Field(c), normalizeValue(v)); err != nil {
				return nil, fmt.Errorf("row %d column %q: %w", r, schema.Field(c).Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("cannot store %T %v in a %s column", v, v, b.Type()) }
	switch bb := b.(type) {
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(int32(x))
	case *array.Int16Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(int16(x))
	case *array.Int8Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(int8(x))
	case *array.Uint64Builder:
		x, ok := v.(uint64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint32Builder:
		x, ok := v.(uint64)
		if !ok {
			return bad()
		}
		bb.Append(uint32(x))
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			bb.Append(x)
		case int64:
			bb.Append(float64(x))
		default:
			return bad()
		}
	case *array.Float32Builder:
		switch x := v.(type) {
		case float64:
			bb.Append(float32(x))
		case int64:
			bb.Append(float32(x))
		default:
			return bad()
		}
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.LargeStringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		case string:
			bb.AppendString(x)
		default:
			return bad()
		}
	case *array.TimestampBuilder:
		unit := bb.Type().(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case time.Time:
			ts, err := arrow.TimestampFromTime(x, unit)
			if err != nil {
				return err
			}
			bb.Append(ts)
		case int64:
			bb.Append(arrow.Timestamp(x))
		default:
			return bad()
		}
	case *array.Date32Builder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Date32FromTime(x))
	case *array.Decimal128Builder:
		dt := bb.Type().(*arrow.Decimal128Type)
		switch x := v.(type) {
		case string:
			n, err := decimal128.FromString(x, dt.Precision, dt.Scale)
			if err != nil {
				return fmt.Errorf("decimal %q: %w", x, err)
			}
			bb.Append(n)
		case int64:
			bb.Append(decimal128.FromI64(x).Mul(decimal128.GetScaleMultiplier(int(dt.Scale))))
		default:
			return bad()
		}
	default:
		return fmt.Errorf("optest cannot build %s columns", b.Type())
	}
	return nil
}
