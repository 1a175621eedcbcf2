package arrowflow

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ValueAt returns the value of row i of arr as a plain Go value: nil for
// null, int64 for signed integers, uint64 for unsigned ones, float64 for
// floats, bool, string, []byte, time.Time (UTC) for timestamps and dates,
// a string with every digit of the scale for decimals ("136.200"),
// and the array's string form for other types. It is meant for row-at-a-
// time consumers (printing, tests, reference implementations), not for hot
// paths.
func ValueAt(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.LargeBinary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Timestamp:
		// Per unit, so that values beyond the nanosecond range (years
		// before 1678 or after 2262, such as 9999-12-31) stay right.
		v := int64(a.Value(i))
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			return time.Unix(v, 0).UTC()
		case arrow.Millisecond:
			return time.UnixMilli(v).UTC()
		case arrow.Microsecond:
			return time.UnixMicro(v).UTC()
		default:
			return time.Unix(0, v).UTC()
		}
	case *array.Decimal128:
		// Exact, with every digit of the scale, as Flink prints a
		// DECIMAL (BigDecimal.toPlainString): 136.200 for DECIMAL(p, 3).
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Decimal256:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Date64:
		return a.Value(i).ToTime()
	}
	return arr.ValueStr(i)
}

// RowValues returns the values of the k-th selected row of b, one per
// column, as ValueAt converts them.
func (b Batch) RowValues(k int) []any {
	row := b.Row(k)
	out := make([]any, b.Record.NumCols())
	for c := range out {
		out[c] = ValueAt(b.Record.Column(c), row)
	}
	return out
}
