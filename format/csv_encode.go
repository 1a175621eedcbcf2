package format

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// csvEncoder writes each row as one CSV line without a line terminator:
// nulls as the null literal, strings quoted when they hold the delimiter,
// the quote, a line break or the escape character, are empty or equal the
// null literal; timestamps in the SQL format, bytes in base64, invalid
// UTF-8 in strings as U+FFFD.
type csvEncoder struct {
	schema *arrow.Schema
	opts   csvOptions
	cols   []csvColumnPlan
	bufs   sync.Pool // *csvScratch
}

type csvColumnPlan struct {
	name     string
	isString bool
	bind     func(arrow.Array) jsonWriter // writes the value's text
}

type csvScratch struct{ line, field []byte }

func newCSVEncoder(schema *arrow.Schema, opts csvOptions) (*csvEncoder, error) {
	e := &csvEncoder{schema: schema, opts: opts}
	for _, f := range schema.Fields() {
		b, err := compileCSVWriter(f.Type)
		if err != nil {
			return nil, fmt.Errorf("csv: column %s: %w", f.Name, err)
		}
		id := f.Type.ID()
		e.cols = append(e.cols, csvColumnPlan{name: f.Name, bind: b,
			isString: id == arrow.STRING || id == arrow.LARGE_STRING || id == arrow.BINARY || id == arrow.LARGE_BINARY})
	}
	return e, nil
}

func (e *csvEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	if err := checkSchema("csv", e.schema, rec); err != nil {
		return err
	}
	ws := make([]jsonWriter, len(e.cols))
	masks := make([]nullMask, len(e.cols))
	for j, c := range e.cols {
		ws[j] = c.bind(rec.Column(j))
		masks[j] = maskOf(rec.Column(j))
	}
	sc, _ := e.bufs.Get().(*csvScratch)
	if sc == nil {
		sc = new(csvScratch)
	}
	defer e.bufs.Put(sc)
	o := &e.opts
	for i := range int(rec.NumRows()) {
		line := sc.line[:0]
		for j := range e.cols {
			if j > 0 {
				line = append(line, o.delim)
			}
			if masks[j].isNull(i) {
				line = append(line, o.null...)
				continue
			}
			sc.field = ws[j].write(sc.field[:0], i)
			var err error
			if line, err = e.appendField(line, sc.field, e.cols[j].isString); err != nil {
				return fmt.Errorf("csv: row %d: column %s: %w", i, e.cols[j].name, err)
			}
		}
		sc.line = line
		if err := emit(i, line); err != nil {
			return err
		}
	}
	return nil
}

// appendField appends a field's text, quoted or escaped when the decoder
// would otherwise read it differently.
func (e *csvEncoder) appendField(dst, text []byte, isString bool) ([]byte, error) {
	o := &e.opts
	special := false
	for _, c := range text {
		if c == o.delim || c == '\n' || c == '\r' || o.quoting && c == o.quote || o.hasEscape && c == o.escape {
			special = true
			break
		}
	}
	// The decoder matches the null literal on the unquoted field as
	// written, and takes an empty field of a non-string column as null.
	ambiguous := !special && string(text) == o.null || len(text) == 0 && !isString
	if !special && !ambiguous {
		return append(dst, text...), nil
	}
	if o.quoting {
		dst = append(dst, o.quote)
		for _, c := range text {
			switch {
			case c == o.quote:
				dst = append(dst, o.quote, o.quote)
			case o.hasEscape && c == o.escape:
				dst = append(dst, o.escape, c)
			default:
				dst = append(dst, c)
			}
		}
		return append(dst, o.quote), nil
	}
	if ambiguous {
		return dst, fmt.Errorf("value %.64q reads back as null; set csv.null-literal or enable quoting", text)
	}
	if !o.hasEscape || bytes.ContainsAny(text, "\r\n") {
		return dst, fmt.Errorf("value %.64q holds the delimiter or a line break and quoting is disabled", text)
	}
	n := len(dst)
	for _, c := range text {
		if c == o.delim || c == o.escape {
			dst = append(dst, o.escape)
		}
		dst = append(dst, c)
	}
	if string(dst[n:]) == o.null {
		return dst[:n], fmt.Errorf("value %.64q reads back as null; set another csv.null-literal", text)
	}
	return dst, nil
}

// compileCSVWriter returns a binder of writers of a column's text, which
// share the jsonWriter interface (they append text for row i).
func compileCSVWriter(dt arrow.DataType) (func(arrow.Array) jsonWriter, error) {
	switch dt.ID() {
	case arrow.BOOL:
		return func(a arrow.Array) jsonWriter { return jsonBoolW{a.(*array.Boolean)} }, nil
	case arrow.INT8:
		return bindSigned[int8], nil
	case arrow.INT16:
		return bindSigned[int16], nil
	case arrow.INT32:
		return bindSigned[int32], nil
	case arrow.INT64:
		return bindSigned[int64], nil
	case arrow.UINT8:
		return bindUnsigned[uint8], nil
	case arrow.UINT16:
		return bindUnsigned[uint16], nil
	case arrow.UINT32:
		return bindUnsigned[uint32], nil
	case arrow.UINT64:
		return bindUnsigned[uint64], nil
	case arrow.FLOAT32:
		return func(a arrow.Array) jsonWriter { return textFloatW[float32]{fixedValues[float32](a), 32} }, nil
	case arrow.FLOAT64:
		return func(a arrow.Array) jsonWriter { return textFloatW[float64]{fixedValues[float64](a), 64} }, nil
	case arrow.DECIMAL128:
		scale := dt.(*arrow.Decimal128Type).Scale
		return func(a arrow.Array) jsonWriter { return jsonDecimalW{fixedValues[decimal128.Num](a), scale} }, nil
	case arrow.STRING:
		return func(a arrow.Array) jsonWriter { return textStringW[int32]{varOf[int32](a)} }, nil
	case arrow.LARGE_STRING:
		return func(a arrow.Array) jsonWriter { return textStringW[int64]{varOf[int64](a)} }, nil
	case arrow.BINARY:
		return func(a arrow.Array) jsonWriter { return textBase64W[int32]{varOf[int32](a)} }, nil
	case arrow.LARGE_BINARY:
		return func(a arrow.Array) jsonWriter { return textBase64W[int64]{varOf[int64](a)} }, nil
	case arrow.FIXED_SIZE_BINARY:
		w := dt.(*arrow.FixedSizeBinaryType).ByteWidth
		return func(a arrow.Array) jsonWriter { return textFixedBase64W{fixedBinaryValues(a), w} }, nil
	case arrow.TIMESTAMP:
		t := dt.(*arrow.TimestampType)
		return func(a arrow.Array) jsonWriter { return textTimestampW{fixedValues[int64](a), t.Unit} }, nil
	case arrow.DATE32:
		return func(a arrow.Array) jsonWriter { return textDateW{fixedValues[int32](a)} }, nil
	case arrow.TIME32:
		u := dt.(*arrow.Time32Type).Unit
		return func(a arrow.Array) jsonWriter { return textTimeW[int32]{fixedValues[int32](a), u} }, nil
	case arrow.TIME64:
		u := dt.(*arrow.Time64Type).Unit
		return func(a arrow.Array) jsonWriter { return textTimeW[int64]{fixedValues[int64](a), u} }, nil
	}
	return nil, fmt.Errorf("type %s is not supported by csv", dt)
}

type textFloatW[T float32 | float64] struct {
	v    []T
	bits int
}

func (w textFloatW[T]) write(dst []byte, i int) []byte {
	return appendFloat(dst, float64(w.v[i]), w.bits)
}

// textStringW writes a string, invalid UTF-8 as U+FFFD (the decoder
// takes only UTF-8).
type textStringW[O int32 | int64] struct{ v varValues[O] }

func (w textStringW[O]) write(dst []byte, i int) []byte { return appendValidUTF8(dst, w.v.at(i)) }

type textBase64W[O int32 | int64] struct{ v varValues[O] }

func (w textBase64W[O]) write(dst []byte, i int) []byte {
	return base64.StdEncoding.AppendEncode(dst, w.v.at(i))
}

type textFixedBase64W struct {
	b []byte
	w int
}

func (w textFixedBase64W) write(dst []byte, i int) []byte {
	return base64.StdEncoding.AppendEncode(dst, w.b[i*w.w:(i+1)*w.w])
}

type textTimestampW struct {
	v    []int64
	unit arrow.TimeUnit
}

func (w textTimestampW) write(dst []byte, i int) []byte {
	n := len(dst)
	dst, ok := appendTimestamp(dst, w.v[i], w.unit, false, styleSQL)
	if !ok {
		return strconv.AppendInt(dst[:n], w.v[i], 10)
	}
	return dst
}

type textDateW struct{ v []int32 }

func (w textDateW) write(dst []byte, i int) []byte {
	n := len(dst)
	dst, ok := appendDate(dst, int64(w.v[i]))
	if !ok {
		return strconv.AppendInt(dst[:n], int64(w.v[i]), 10)
	}
	return dst
}

type textTimeW[T int32 | int64] struct {
	v    []T
	unit arrow.TimeUnit
}

func (w textTimeW[T]) write(dst []byte, i int) []byte {
	per := unitPerSecond(w.unit)
	v := int64(w.v[i])
	if v < 0 || v >= 86400*per {
		return strconv.AppendInt(dst, v, 10)
	}
	return appendClock(dst, v*(1e9/per))
}
