package format

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// jsonEncoder writes each row as one JSON object. Its output decodes back
// to the same row with the json decoder.
type jsonEncoder struct {
	schema *arrow.Schema
	opts   jsonOptions
	fields []jsonFieldPlan
	bufs   sync.Pool // *[]byte
}

// jsonBinder binds a compiled writer to one array.
type jsonBinder func(arr arrow.Array) jsonWriter

// jsonWriter appends the JSON of the non-null value at row i.
type jsonWriter interface {
	write(dst []byte, i int) []byte
}

type jsonFieldPlan struct {
	key  []byte // "name":
	bind jsonBinder
}

func newJSONEncoder(schema *arrow.Schema, opts jsonOptions) (*jsonEncoder, error) {
	fields, err := compileJSONFields(schema.Fields(), "", opts)
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	return &jsonEncoder{schema: schema, opts: opts, fields: fields}, nil
}

func compileJSONFields(fields []arrow.Field, path string, opts jsonOptions) ([]jsonFieldPlan, error) {
	plans := make([]jsonFieldPlan, len(fields))
	for i, f := range fields {
		b, err := compileJSONWriter(f.Type, join(path, f.Name), opts)
		if err != nil {
			return nil, err
		}
		key := appendJSONString(nil, []byte(f.Name))
		plans[i] = jsonFieldPlan{key: append(key, ':'), bind: b}
	}
	return plans, nil
}

func (e *jsonEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	if err := checkSchema("json", e.schema, rec); err != nil {
		return err
	}
	obj := &jsonObjectW{ignoreNull: e.opts.ignoreNullFields, fields: make([]jsonFieldW, len(e.fields))}
	for j, f := range e.fields {
		col := rec.Column(j)
		obj.fields[j] = jsonFieldW{key: f.key, mask: maskOf(col), w: f.bind(col)}
	}
	bp, _ := e.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer e.bufs.Put(bp)
	for i := range int(rec.NumRows()) {
		*bp = obj.write((*bp)[:0], i)
		if err := emit(i, *bp); err != nil {
			return err
		}
	}
	return nil
}

func compileJSONWriter(dt arrow.DataType, path string, opts jsonOptions) (jsonBinder, error) {
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
		return func(a arrow.Array) jsonWriter { return jsonFloatW[float32]{fixedValues[float32](a), 32} }, nil
	case arrow.FLOAT64:
		return func(a arrow.Array) jsonWriter { return jsonFloatW[float64]{fixedValues[float64](a), 64} }, nil
	case arrow.DECIMAL128:
		scale := dt.(*arrow.Decimal128Type).Scale
		return func(a arrow.Array) jsonWriter { return jsonDecimalW{fixedValues[decimal128.Num](a), scale} }, nil
	case arrow.STRING:
		return func(a arrow.Array) jsonWriter { return jsonStringW[int32]{varOf[int32](a)} }, nil
	case arrow.LARGE_STRING:
		return func(a arrow.Array) jsonWriter { return jsonStringW[int64]{varOf[int64](a)} }, nil
	case arrow.BINARY:
		return func(a arrow.Array) jsonWriter { return jsonBinaryW[int32]{varOf[int32](a)} }, nil
	case arrow.LARGE_BINARY:
		return func(a arrow.Array) jsonWriter { return jsonBinaryW[int64]{varOf[int64](a)} }, nil
	case arrow.FIXED_SIZE_BINARY:
		w := dt.(*arrow.FixedSizeBinaryType).ByteWidth
		return func(a arrow.Array) jsonWriter { return jsonFixedBinaryW{fixedBinaryValues(a), w} }, nil
	case arrow.TIMESTAMP:
		t := dt.(*arrow.TimestampType)
		zoned := t.TimeZone != ""
		return func(a arrow.Array) jsonWriter {
			return jsonTimestampW{fixedValues[int64](a), t.Unit, zoned, opts.tsStyle}
		}, nil
	case arrow.DATE32:
		return func(a arrow.Array) jsonWriter { return jsonDateW{fixedValues[int32](a)} }, nil
	case arrow.TIME32:
		u := dt.(*arrow.Time32Type).Unit
		return func(a arrow.Array) jsonWriter { return jsonTimeW[int32]{fixedValues[int32](a), u} }, nil
	case arrow.TIME64:
		u := dt.(*arrow.Time64Type).Unit
		return func(a arrow.Array) jsonWriter { return jsonTimeW[int64]{fixedValues[int64](a), u} }, nil
	case arrow.STRUCT:
		fields, err := compileJSONFields(dt.(*arrow.StructType).Fields(), path, opts)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) jsonWriter {
			s := a.(*array.Struct)
			obj := &jsonObjectW{ignoreNull: opts.ignoreNullFields, fields: make([]jsonFieldW, len(fields))}
			for j, f := range fields {
				child := s.Field(j)
				obj.fields[j] = jsonFieldW{key: f.key, mask: maskOf(child), w: f.bind(child)}
			}
			return obj
		}, nil
	case arrow.LIST:
		elem, err := compileJSONWriter(dt.(*arrow.ListType).Elem(), path+"[]", opts)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) jsonWriter {
			values := a.(*array.List).ListValues()
			return &jsonListW{offsets: offsetsOf[int32](a), mask: maskOf(values), elem: elem(values)}
		}, nil
	case arrow.MAP:
		mt := dt.(*arrow.MapType)
		if k := mt.KeyType().ID(); k != arrow.STRING && k != arrow.LARGE_STRING {
			return nil, fmt.Errorf("column %s: map keys of type %s are not supported by json", path, mt.KeyType())
		}
		key, err := compileJSONWriter(mt.KeyType(), path+"{}", opts)
		if err != nil {
			return nil, err
		}
		item, err := compileJSONWriter(mt.ItemType(), path+"{}", opts)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) jsonWriter {
			entries := a.(*array.Map).ListValues().(*array.Struct)
			keys, items := entries.Field(0), entries.Field(1)
			return &jsonMapW{offsets: offsetsOf[int32](a), key: key(keys), mask: maskOf(items), item: item(items)}
		}, nil
	}
	return nil, fmt.Errorf("column %s: type %s is not supported by json", path, dt)
}

type jsonFieldW struct {
	key  []byte
	mask nullMask
	w    jsonWriter
}

type jsonObjectW struct {
	fields     []jsonFieldW
	ignoreNull bool
}

func (o *jsonObjectW) write(dst []byte, i int) []byte {
	dst = append(dst, '{')
	first := true
	for j := range o.fields {
		f := &o.fields[j]
		null := f.mask.isNull(i)
		if null && o.ignoreNull {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		if null {
			dst = append(dst, "null"...)
		} else {
			dst = f.w.write(dst, i)
		}
	}
	return append(dst, '}')
}

type jsonListW struct {
	offsets []int32
	mask    nullMask
	elem    jsonWriter
}

func (l *jsonListW) write(dst []byte, i int) []byte {
	dst = append(dst, '[')
	for j := l.offsets[i]; j < l.offsets[i+1]; j++ {
		if j > l.offsets[i] {
			dst = append(dst, ',')
		}
		if l.mask.isNull(int(j)) {
			dst = append(dst, "null"...)
		} else {
			dst = l.elem.write(dst, int(j))
		}
	}
	return append(dst, ']')
}

type jsonMapW struct {
	offsets []int32
	key     jsonWriter
	mask    nullMask
	item    jsonWriter
}

func (m *jsonMapW) write(dst []byte, i int) []byte {
	dst = append(dst, '{')
	for j := m.offsets[i]; j < m.offsets[i+1]; j++ {
		if j > m.offsets[i] {
			dst = append(dst, ',')
		}
		dst = m.key.write(dst, int(j))
		dst = append(dst, ':')
		if m.mask.isNull(int(j)) {
			dst = append(dst, "null"...)
		} else {
			dst = m.item.write(dst, int(j))
		}
	}
	return append(dst, '}')
}

type jsonBoolW struct{ a *array.Boolean }

func (w jsonBoolW) write(dst []byte, i int) []byte {
	if w.a.Value(i) {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

type jsonSignedW[T int8 | int16 | int32 | int64] struct{ v []T }

func (w jsonSignedW[T]) write(dst []byte, i int) []byte {
	return strconv.AppendInt(dst, int64(w.v[i]), 10)
}

func bindSigned[T int8 | int16 | int32 | int64](a arrow.Array) jsonWriter {
	return jsonSignedW[T]{fixedValues[T](a)}
}

type jsonUnsignedW[T uint8 | uint16 | uint32 | uint64] struct{ v []T }

func (w jsonUnsignedW[T]) write(dst []byte, i int) []byte {
	return strconv.AppendUint(dst, uint64(w.v[i]), 10)
}

func bindUnsigned[T uint8 | uint16 | uint32 | uint64](a arrow.Array) jsonWriter {
	return jsonUnsignedW[T]{fixedValues[T](a)}
}

// jsonFloatW writes finite floats as numbers and NaN and the infinities as
// the strings "NaN", "Infinity" and "-Infinity", which JSON has no number
// for and the decoder reads back.
type jsonFloatW[T float32 | float64] struct {
	v    []T
	bits int
}

func (w jsonFloatW[T]) write(dst []byte, i int) []byte {
	f := float64(w.v[i])
	if f-f != 0 { // NaN or ±Inf
		dst = append(dst, '"')
		dst = appendFloat(dst, f, w.bits)
		return append(dst, '"')
	}
	return strconv.AppendFloat(dst, f, 'g', -1, w.bits)
}

type jsonDecimalW struct {
	v     []decimal128.Num
	scale int32
}

func (w jsonDecimalW) write(dst []byte, i int) []byte { return appendDecimal(dst, w.v[i], w.scale) }

type jsonStringW[O int32 | int64] struct{ v varValues[O] }

func (w jsonStringW[O]) write(dst []byte, i int) []byte { return appendJSONString(dst, w.v.at(i)) }

type jsonBinaryW[O int32 | int64] struct{ v varValues[O] }

func (w jsonBinaryW[O]) write(dst []byte, i int) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, w.v.at(i))
	return append(dst, '"')
}

type jsonFixedBinaryW struct {
	b []byte
	w int
}

func (w jsonFixedBinaryW) write(dst []byte, i int) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, w.b[i*w.w:(i+1)*w.w])
	return append(dst, '"')
}

type jsonTimestampW struct {
	v     []int64
	unit  arrow.TimeUnit
	zoned bool
	style timestampStyle
}

func (w jsonTimestampW) write(dst []byte, i int) []byte {
	n := len(dst)
	dst = append(dst, '"')
	dst, ok := appendTimestamp(dst, w.v[i], w.unit, w.zoned, w.style)
	if !ok {
		return strconv.AppendInt(dst[:n], w.v[i], 10)
	}
	return append(dst, '"')
}

type jsonDateW struct{ v []int32 }

func (w jsonDateW) write(dst []byte, i int) []byte {
	n := len(dst)
	dst = append(dst, '"')
	dst, ok := appendDate(dst, int64(w.v[i]))
	if !ok {
		return strconv.AppendInt(dst[:n], int64(w.v[i]), 10)
	}
	return append(dst, '"')
}

type jsonTimeW[T int32 | int64] struct {
	v    []T
	unit arrow.TimeUnit
}

func (w jsonTimeW[T]) write(dst []byte, i int) []byte {
	per := unitPerSecond(w.unit)
	v := int64(w.v[i])
	if v < 0 || v >= 86400*per {
		return strconv.AppendInt(dst, v, 10) // not a time of day: the decoder rejects it
	}
	dst = append(dst, '"')
	dst = appendClock(dst, v*(1e9/per))
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonPlain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
