package kernels

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DECIMAL(p, s) in expressions: Arrow decimal128 columns and literals,
// with Flink's (Calcite's) result types and Flink's runtime semantics
// (DecimalDataUtils): results are exact, rounded HALF_UP to the result
// scale, and NULL when they need more digits than the result precision
// (DecimalData.fromBigDecimal returns null). docs/sql.md's DECIMAL section
// lists the rules.
//
// Inside the evaluator a decimal vector has kind kindBytes and type
// *arrow.Decimal128Type: row r's value is the 16 bytes data[so[r]:eo[r]],
// Arrow's little-endian two's-complement layout, so a decimal128 column
// is viewed without a copy and the type-agnostic kernels (CASE, COALESCE,
// IN over constants) move decimal values as they move bytes. A null row
// may hold fewer bytes; it reads as zero.

// maxDecimalPrecision is decimal128's (and Flink's) largest precision.
const maxDecimalPrecision = 38

// minAdjustedScale is the scale Flink keeps at least when a result's
// precision is capped (LogicalTypeMerging.MINIMUM_ADJUSTED_SCALE).
const minAdjustedScale = 6

// Decimal is the value of a DECIMAL literal: Unscaled × 10^-Scale. Its
// String form is the plain decimal text (817.200).
type Decimal struct {
	Unscaled decimal128.Num
	Scale    int32
}

// String renders d with Scale digits after the point.
func (d Decimal) String() string { return string(appendDecimal(nil, d.Unscaled, d.Scale)) }

// ParseDecimal reads an exact decimal number such as "-0.908" or "12"
// (no exponent) and returns its value with as many scale digits as the
// text has, and its precision: the number of digits it has, leading
// zeros included, as Calcite's SqlLiteral.createExactNumeric counts them
// (so 0.908 is DECIMAL(4, 3), and 0.908 * BIGINT is DECIMAL(23, 3)).
func ParseDecimal(text string) (d Decimal, precision int32, err error) {
	s := text
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	digits := make([]byte, 0, len(s))
	scale, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			if point {
				scale++
			}
		case c == '.' && !point:
			point = true
		default:
			return Decimal{}, 0, fmt.Errorf("%q is not an exact decimal number", text)
		}
	}
	if len(digits) == 0 {
		return Decimal{}, 0, fmt.Errorf("%q is not an exact decimal number", text)
	}
	if len(digits) > maxDecimalPrecision {
		return Decimal{}, 0, fmt.Errorf("%s has %d digits; DECIMAL holds at most %d", text, len(digits), maxDecimalPrecision)
	}
	var u big.Int
	u.SetString(string(digits), 10)
	if neg {
		u.Neg(&u)
	}
	return Decimal{Unscaled: decimal128.FromBigInt(&u), Scale: int32(scale)}, int32(len(digits)), nil
}

// decType returns dt as a decimal128 type.
func decType(dt arrow.DataType) (*arrow.Decimal128Type, bool) {
	t, ok := dt.(*arrow.Decimal128Type)
	return t, ok
}

func isDecimal(dt arrow.DataType) bool { return dt.ID() == arrow.DECIMAL128 }

// exprKind is kindOf extended with decimal128.
func exprKind(dt arrow.DataType) (physKind, bool) {
	if isDecimal(dt) {
		return kindBytes, true
	}
	return kindOf(dt)
}

// newDecimal is DECIMAL(p, s), with p capped at 38 and s at p.
func newDecimal(p, s int32) *arrow.Decimal128Type {
	p = min(max(p, 1), maxDecimalPrecision)
	return &arrow.Decimal128Type{Precision: p, Scale: min(s, p)}
}

// adjustDecimal caps a result type at precision 38 as Flink's
// LogicalTypeMerging.adjustPrecisionScale does: the integral digits are
// kept, the scale gives way but keeps min(s, 6) digits.
func adjustDecimal(p, s int32) *arrow.Decimal128Type {
	if p <= maxDecimalPrecision {
		return newDecimal(p, s)
	}
	intDigits := p - s
	return newDecimal(maxDecimalPrecision, max(maxDecimalPrecision-intDigits, min(s, minAdjustedScale)))
}

// exactDecimal is the DECIMAL type an exact numeric type takes in
// DECIMAL arithmetic (Flink's implicit types: TINYINT DECIMAL(3, 0),
// SMALLINT (5, 0), INT (10, 0), BIGINT (19, 0)).
func exactDecimal(dt arrow.DataType) (*arrow.Decimal128Type, bool) {
	switch dt.ID() {
	case arrow.DECIMAL128:
		return dt.(*arrow.Decimal128Type), true
	case arrow.INT8, arrow.UINT8:
		return newDecimal(3, 0), true
	case arrow.INT16, arrow.UINT16:
		return newDecimal(5, 0), true
	case arrow.INT32, arrow.UINT32:
		return newDecimal(10, 0), true
	case arrow.INT64:
		return newDecimal(19, 0), true
	case arrow.UINT64:
		return newDecimal(20, 0), true
	}
	return nil, false
}

// declaredType is the type n's values had before the evaluator widened
// them: a column's own type, a cast's target (so TINYINT stays TINYINT
// for the DECIMAL typing rules).
func declaredType(n node) arrow.DataType {
	switch x := n.(type) {
	case *colNode:
		return x.colType
	case *castNode:
		return x.to
	}
	return n.dtype()
}

// decimalOperands reports whether a binary numeric operator over a and
// b is computed as DECIMAL (one is DECIMAL, the other DECIMAL or an
// integer) and returns both sides' DECIMAL types; with a float on the
// other side it is computed as DOUBLE (float reports true).
func decimalOperands(a, b node) (da, db *arrow.Decimal128Type, float, ok bool) {
	ta, tb := a.dtype(), b.dtype()
	if !isDecimal(ta) && !isDecimal(tb) {
		return nil, nil, false, false
	}
	if isNullLit(a) {
		ta = tb
	}
	if isNullLit(b) {
		tb = ta
	}
	if isFloatType(ta) || isFloatType(tb) {
		return nil, nil, true, true
	}
	da, oka := exactDecimal(declaredType(a))
	if !oka {
		da, oka = exactDecimal(ta)
	}
	db, okb := exactDecimal(declaredType(b))
	if !okb {
		db, okb = exactDecimal(tb)
	}
	if isNullLit(a) {
		da, oka = db, okb
	}
	if isNullLit(b) {
		db, okb = da, oka
	}
	return da, db, false, oka && okb
}

// decimalCommon is the common type of two types at least one of which is
// DECIMAL (CASE branches, IN lists): DOUBLE with a float, else the
// DECIMAL holding both (Flink's LogicalTypeMerging: the largest integral
// part and the largest scale, capped at 38).
func decimalCommon(a, b arrow.DataType) (arrow.DataType, bool) {
	if isFloatType(a) || isFloatType(b) {
		return arrow.PrimitiveTypes.Float64, true
	}
	da, oka := exactDecimal(a)
	db, okb := exactDecimal(b)
	if !oka || !okb {
		return nil, false
	}
	s := max(da.Scale, db.Scale)
	return adjustDecimal(max(da.Precision-da.Scale, db.Precision-db.Scale)+s, s), true
}

// decAt reads row r of a decimal vector.
func decAt(v *vec, r int32) decimal128.Num {
	b := v.data[v.so[r]:v.eo[r]]
	if len(b) < 16 {
		return decimal128.Num{}
	}
	return decimal128.New(int64(binary.LittleEndian.Uint64(b[8:16])), binary.LittleEndian.Uint64(b[:8]))
}

// decPut writes x as row r of a vector prepared by decVec.
func decPut(data []byte, r int32, x decimal128.Num) {
	o := int(r) * 16
	binary.LittleEndian.PutUint64(data[o:o+8], x.LowBits())
	binary.LittleEndian.PutUint64(data[o+8:o+16], uint64(x.HighBits()))
}

// decOffsets gives out the offsets of n fixed 16-byte values (row r at
// 16r). The pattern is written once and kept: a vector that holds
// decimals is only ever given these offsets.
func decOffsets(out *vec, n int) {
	if len(out.so) >= n && len(out.eo) >= n && (n == 0 || out.eo[n-1] == int32(16*n)) {
		return
	}
	size := n + n/4
	out.so, out.eo = make([]int32, size), make([]int32, size)
	for i := range out.so {
		out.so[i], out.eo[i] = int32(16*i), int32(16*i+16)
	}
}

// decVec prepares out as a decimal vector of type typ for n rows and
// returns its value bytes (16 per row).
func decVec(out *vec, typ arrow.DataType, n int) []byte {
	out.typ, out.kind = typ, kindBytes
	decOffsets(out, n)
	if len(out.data) < 16*n {
		out.data = make([]byte, 16*len(out.so))
	}
	return out.data
}

// setNull marks row r of out null, making its null flags (all false for
// the selected rows) when it has none.
func setNull(s *scratch, out *vec, sel []int32, n int, r int32) {
	if out.nulls == nil {
		nulls := out.setNulls(&s.nulls, n)
		forSel(sel, n, func(r int32) { nulls[r] = false })
	}
	out.nulls[r] = true
}

// loadDecimal views a decimal128 column as a decimal vector.
func loadDecimal(col *array.Decimal128, sel []int32, s *scratch) *vec {
	n := col.Len()
	v := &s.out
	v.typ, v.kind = col.DataType(), kindBytes
	v.nulls = nil
	if col.NullN() > 0 {
		nulls := v.setNulls(&s.nulls, n)
		bitsToBools(col.NullBitmapBytes(), col.Data().Offset(), sel, nulls, true)
	}
	decOffsets(v, n)
	off := col.Data().Offset()
	v.data = bufferBytes(col.Data(), 1)[16*off : 16*(off+n)]
	return v
}

// decToArray materialises the selected rows of a decimal vector.
func decToArray(mem memory.Allocator, v *vec, sel []int32, n int) arrow.Array {
	rows := n
	if sel != nil {
		rows = len(sel)
	}
	var validity *memory.Buffer
	nullCount := 0
	if v.nulls != nil {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(rows))))
		nullCount = boolsToBits(validity.Bytes(), v.nulls, sel, n, true)
		if nullCount == 0 {
			validity.Release()
			validity = nil
		}
	}
	vals := memory.NewResizableBuffer(mem)
	vals.Resize(16 * rows)
	dst := vals.Bytes()
	k := 0
	forSel(sel, n, func(r int32) {
		if c := copy(dst[16*k:16*k+16], v.data[v.so[r]:v.eo[r]]); c < 16 {
			clear(dst[16*k+c : 16*k+16])
		}
		k++
	})
	data := array.NewData(v.typ, rows, []*memory.Buffer{validity, vals}, nil, nullCount, 0)
	if validity != nil {
		validity.Release()
	}
	vals.Release()
	defer data.Release()
	return array.MakeFromData(data)
}

// decLiteral converts a literal's value to the unscaled value of type dt.
func decLiteral(e *LiteralExpr, dt *arrow.Decimal128Type) ([]byte, error) {
	var x decimal128.Num
	var scale int32
	switch v := e.Value.(type) {
	case Decimal:
		x, scale = v.Unscaled, v.Scale
	case decimal128.Num:
		x, scale = v, dt.Scale
	case string:
		d, _, err := ParseDecimal(v)
		if err != nil {
			return nil, compileErr(e, "%v", err)
		}
		x, scale = d.Unscaled, d.Scale
	case int64:
		x = decimal128.FromI64(v)
	case int32:
		x = decimal128.FromI64(int64(v))
	case int:
		x = decimal128.FromI64(int64(v))
	default:
		return nil, compileErr(e, "literal value %v (Go type %T) does not fit type %s", e.Value, e.Value, dt)
	}
	if scale < 0 || scale > maxDecimalPrecision {
		return nil, compileErr(e, "literal scale %d is out of range", scale)
	}
	y, ok := decRescale(x, scale, dt.Scale, dt.Precision)
	if !ok || decCmp(x, scale, y, dt.Scale) != 0 {
		return nil, compileErr(e, "literal value %s does not fit type %s", Decimal{x, scale}, dt)
	}
	b := make([]byte, 16)
	decPut(b, 0, y)
	return b, nil
}

// appendDecimal appends x at scale s in Flink's text form
// (BigDecimal.toPlainString): every scale digit, a leading 0 before the
// point, a minus sign for negative values.
func appendDecimal(dst []byte, x decimal128.Num, s int32) []byte {
	neg, m := magnitude(x)
	var digits [40]byte
	i := len(digits)
	w := m.wide()
	for {
		i--
		digits[i] = byte('0' + w.divWord(10))
		if w == (u256{}) {
			break
		}
	}
	ds := digits[i:]
	if neg {
		dst = append(dst, '-')
	}
	if s <= 0 {
		return append(dst, ds...)
	}
	if int(s) >= len(ds) {
		dst = append(dst, '0', '.')
		for k := len(ds); k < int(s); k++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	at := len(ds) - int(s)
	dst = append(dst, ds[:at]...)
	dst = append(dst, '.')
	return append(dst, ds[at:]...)
}

// decToFloat is Flink's DecimalDataUtils.doubleValue: for a compact
// decimal (precision <= 18) the unscaled long divided by 10^s in double
// arithmetic, else the double nearest the exact value
// (BigDecimal.doubleValue).
func decToFloat(x decimal128.Num, dt *arrow.Decimal128Type, buf []byte) (float64, []byte) {
	if dt.Precision <= 18 {
		return float64(int64(x.LowBits())) / pow10f[dt.Scale], buf
	}
	buf = appendDecimal(buf[:0], x, dt.Scale)
	f, _ := strconv.ParseFloat(unsafeString(buf), 64)
	return f, buf
}
