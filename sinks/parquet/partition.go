package parquet

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// partitionKeyer reads one partition column of the batch it is bound to.
// The type switch happens once, when the writer learns the schema; the
// per-row calls are on a concrete array type.
type partitionKeyer interface {
	// bind points the keyer at the column of the next batch.
	bind(arr arrow.Array)
	// appendKey appends an encoding of the row's value that differs for
	// different values (null included) and tells where it ends.
	appendKey(dst []byte, row int) []byte
	// format returns the row's value as a folder name shows it; null
	// reports a null.
	format(row int) (value string, null bool)
}

// valueArray is an Arrow array with a typed Value accessor.
type valueArray[T any] interface {
	arrow.Array
	Value(int) T
}

// intKeyer reads an integer column.
type intKeyer[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64, A valueArray[T]] struct {
	arr    A
	signed bool
}

func (k *intKeyer[T, A]) bind(arr arrow.Array) { k.arr = arr.(A) }

func (k *intKeyer[T, A]) appendKey(dst []byte, row int) []byte {
	if k.arr.IsNull(row) {
		return append(dst, 0)
	}
	return binary.LittleEndian.AppendUint64(append(dst, 1), uint64(k.arr.Value(row)))
}

func (k *intKeyer[T, A]) format(row int) (string, bool) {
	if k.arr.IsNull(row) {
		return "", true
	}
	if k.signed {
		return strconv.FormatInt(int64(k.arr.Value(row)), 10), false
	}
	return strconv.FormatUint(uint64(k.arr.Value(row)), 10), false
}

// boolKeyer reads a boolean column.
type boolKeyer struct{ arr *array.Boolean }

func (k *boolKeyer) bind(arr arrow.Array) { k.arr = arr.(*array.Boolean) }

func (k *boolKeyer) appendKey(dst []byte, row int) []byte {
	switch {
	case k.arr.IsNull(row):
		return append(dst, 0)
	case k.arr.Value(row):
		return append(dst, 2)
	}
	return append(dst, 1)
}

func (k *boolKeyer) format(row int) (string, bool) {
	if k.arr.IsNull(row) {
		return "", true
	}
	return strconv.FormatBool(k.arr.Value(row)), false
}

// stringArray is a string or large string array.
type stringArray interface {
	valueArray[string]
	ValueLen(int) int
}

// stringKeyer reads a string or large string column.
type stringKeyer[A stringArray] struct{ arr A }

func (k *stringKeyer[A]) bind(arr arrow.Array) { k.arr = arr.(A) }

func (k *stringKeyer[A]) appendKey(dst []byte, row int) []byte {
	if k.arr.IsNull(row) || k.arr.ValueLen(row) == 0 {
		return append(dst, 0) // "" shares null's folder, so it is the same partition
	}
	v := k.arr.Value(row)
	return append(binary.AppendUvarint(append(dst, 1), uint64(len(v))), v...)
}

func (k *stringKeyer[A]) format(row int) (string, bool) {
	if k.arr.IsNull(row) {
		return "", true
	}
	return k.arr.Value(row), false
}

// dateLayout is how dates appear in folder names, as in Hive.
const dateLayout = "2006-01-02"

// dateKeyer reads a date32 (days) or date64 (milliseconds) column.
type dateKeyer[T arrow.Date32 | arrow.Date64, A valueArray[T]] struct {
	arr    A
	millis bool
}

func (k *dateKeyer[T, A]) bind(arr arrow.Array) { k.arr = arr.(A) }

func (k *dateKeyer[T, A]) appendKey(dst []byte, row int) []byte {
	if k.arr.IsNull(row) {
		return append(dst, 0)
	}
	return binary.LittleEndian.AppendUint64(append(dst, 1), uint64(k.arr.Value(row)))
}

func (k *dateKeyer[T, A]) format(row int) (string, bool) {
	if k.arr.IsNull(row) {
		return "", true
	}
	v := int64(k.arr.Value(row))
	if k.millis {
		return time.UnixMilli(v).UTC().Format(dateLayout), false
	}
	return time.Unix(v*86400, 0).UTC().Format(dateLayout), false
}

// newPartitionKeyer returns the keyer for a partition column of type dt.
func newPartitionKeyer(dt arrow.DataType) (partitionKeyer, error) {
	switch dt.ID() {
	case arrow.INT8:
		return &intKeyer[int8, *array.Int8]{signed: true}, nil
	case arrow.INT16:
		return &intKeyer[int16, *array.Int16]{signed: true}, nil
	case arrow.INT32:
		return &intKeyer[int32, *array.Int32]{signed: true}, nil
	case arrow.INT64:
		return &intKeyer[int64, *array.Int64]{signed: true}, nil
	case arrow.UINT8:
		return &intKeyer[uint8, *array.Uint8]{}, nil
	case arrow.UINT16:
		return &intKeyer[uint16, *array.Uint16]{}, nil
	case arrow.UINT32:
		return &intKeyer[uint32, *array.Uint32]{}, nil
	case arrow.UINT64:
		return &intKeyer[uint64, *array.Uint64]{}, nil
	case arrow.BOOL:
		return &boolKeyer{}, nil
	case arrow.STRING:
		return &stringKeyer[*array.String]{}, nil
	case arrow.LARGE_STRING:
		return &stringKeyer[*array.LargeString]{}, nil
	case arrow.DATE32:
		return &dateKeyer[arrow.Date32, *array.Date32]{}, nil
	case arrow.DATE64:
		return &dateKeyer[arrow.Date64, *array.Date64]{millis: true}, nil
	}
	return nil, fmt.Errorf("type %s cannot name partitions (integers, bool, strings, date32 and date64 can)", dt)
}

// partitionTypes maps PartitionColumn.Type back to the Arrow type.
var partitionTypes = func() map[string]arrow.DataType {
	m := make(map[string]arrow.DataType)
	for _, dt := range []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64,
	} {
		m[dt.String()] = dt
	}
	return m
}()

// appendPartitionValue appends a value parsed from a folder name to b,
// which builds an array of the partition column's type.
func appendPartitionValue(b array.Builder, value string, null bool) error {
	if null {
		b.AppendNull()
		return nil
	}
	var err error
	switch b := b.(type) {
	case *array.Int8Builder:
		var v int64
		if v, err = strconv.ParseInt(value, 10, 8); err == nil {
			b.Append(int8(v))
		}
	case *array.Int16Builder:
		var v int64
		if v, err = strconv.ParseInt(value, 10, 16); err == nil {
			b.Append(int16(v))
		}
	case *array.Int32Builder:
		var v int64
		if v, err = strconv.ParseInt(value, 10, 32); err == nil {
			b.Append(int32(v))
		}
	case *array.Int64Builder:
		var v int64
		if v, err = strconv.ParseInt(value, 10, 64); err == nil {
			b.Append(v)
		}
	case *array.Uint8Builder:
		var v uint64
		if v, err = strconv.ParseUint(value, 10, 8); err == nil {
			b.Append(uint8(v))
		}
	case *array.Uint16Builder:
		var v uint64
		if v, err = strconv.ParseUint(value, 10, 16); err == nil {
			b.Append(uint16(v))
		}
	case *array.Uint32Builder:
		var v uint64
		if v, err = strconv.ParseUint(value, 10, 32); err == nil {
			b.Append(uint32(v))
		}
	case *array.Uint64Builder:
		var v uint64
		if v, err = strconv.ParseUint(value, 10, 64); err == nil {
			b.Append(v)
		}
	case *array.BooleanBuilder:
		var v bool
		if v, err = strconv.ParseBool(value); err == nil {
			b.Append(v)
		}
	case *array.StringBuilder:
		b.Append(value)
	case *array.LargeStringBuilder:
		b.Append(value)
	case *array.Date32Builder:
		var t time.Time
		if t, err = time.Parse(dateLayout, value); err == nil {
			b.Append(arrow.Date32FromTime(t))
		}
	case *array.Date64Builder:
		var t time.Time
		if t, err = time.Parse(dateLayout, value); err == nil {
			b.Append(arrow.Date64FromTime(t))
		}
	default:
		return fmt.Errorf("BUG: no partition builder for %s", b.Type())
	}
	if err != nil {
		return fmt.Errorf("partition value %q is not a %s: %w", value, b.Type(), err)
	}
	return nil
}
