package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// joinValueEq reports whether a[i] equals b[j], two values of one column
// type: NULL equals NULL (a retraction removes a row equal on every column,
// NULLs included), floats compare as grouping does (-0 equals +0, NaN
// equals NaN). It runs once per retraction and column, after the row
// hashes matched, so it is chosen per type at compile time and reads the
// buffers directly.
type joinValueEq func(a arrow.Array, i int, b arrow.Array, j int) bool

// joinValueEqOf returns the comparison for values of type dt: every type a
// rowstore.Store can hold.
func joinValueEqOf(dt arrow.DataType) (joinValueEq, error) {
	var eq joinValueEq
	switch dt.ID() {
	case arrow.NULL:
		return func(arrow.Array, int, arrow.Array, int) bool { return true }, nil
	case arrow.FLOAT32:
		eq = joinEqFloat[float32]
	case arrow.FLOAT64:
		eq = joinEqFloat[float64]
	case arrow.BOOL:
		eq = joinEqBool
	case arrow.STRING, arrow.BINARY:
		eq = joinEqBytes[int32]
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		eq = joinEqBytes[int64]
	default:
		fw, ok := dt.(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth()%8 != 0 {
			return nil, fmt.Errorf("type %s cannot be compared", dt)
		}
		width := fw.BitWidth() / 8
		eq = func(a arrow.Array, i int, b arrow.Array, j int) bool {
			x, y := joinFixedAt(a, i, width), joinFixedAt(b, j, width)
			return string(x) == string(y)
		}
	}
	return func(a arrow.Array, i int, b arrow.Array, j int) bool {
		an, bn := a.IsNull(i), b.IsNull(j)
		if an || bn {
			return an && bn
		}
		return eq(a, i, b, j)
	}, nil
}

func joinEqFloat[T float32 | float64](a arrow.Array, i int, b arrow.Array, j int) bool {
	x, y := arrow.GetValues[T](a.Data(), 1)[i], arrow.GetValues[T](b.Data(), 1)[j]
	return x == y || (x != x && y != y)
}

func joinEqBool(a arrow.Array, i int, b arrow.Array, j int) bool {
	x := bitutil.BitIsSet(a.Data().Buffers()[1].Bytes(), a.Data().Offset()+i)
	y := bitutil.BitIsSet(b.Data().Buffers()[1].Bytes(), b.Data().Offset()+j)
	return x == y
}

func joinEqBytes[O int32 | int64](a arrow.Array, i int, b arrow.Array, j int) bool {
	return string(joinBytesAt[O](a, i)) == string(joinBytesAt[O](b, j))
}

// joinBytesAt is the value of row i of a string or binary array.
func joinBytesAt[O int32 | int64](a arrow.Array, i int) []byte {
	off := arrow.GetOffsets[O](a.Data(), 1)
	buf := a.Data().Buffers()[2]
	if buf == nil {
		return nil
	}
	return buf.Bytes()[off[i]:off[i+1]]
}

// joinFixedAt is the width bytes of row i of a fixed-width array.
func joinFixedAt(a arrow.Array, i, width int) []byte {
	at := (a.Data().Offset() + i) * width
	return a.Data().Buffers()[1].Bytes()[at : at+width]
}
