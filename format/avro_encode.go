package format

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"
)

// avroEncoder writes each row as Avro binary of a writer schema, compiled
// against the Arrow schema: record fields by column name, nullable columns
// through the union's null branch, and numbers widened where the writer
// schema asks. With a non-empty prefix (the Confluent header) every value
// starts with it.
type avroEncoder struct {
	format string
	schema *arrow.Schema
	prefix []byte
	fields []avroFieldPlan
	bufs   sync.Pool // *[]byte
}

// avroWriter appends the Avro encoding of row i.
type avroWriter interface {
	write(dst []byte, i int) ([]byte, error)
}

type avroBinder func(arr arrow.Array) avroWriter

// avroFieldPlan writes one Avro record field: from a column, or a null
// for a writer field the Arrow schema lacks.
type avroFieldPlan struct {
	column  int // index of the Arrow field, or -1
	nullIdx int // union branch of null, or -1
	valIdx  int // union branch of the value, or -1 when not a union
	bind    avroBinder
	path    string
}

func newAvroEncoder(format string, w avro.Schema, schema *arrow.Schema, prefix []byte) (*avroEncoder, error) {
	rec, ok := deref(w).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("%s: the Avro schema is a %s, not a record", format, w.Type())
	}
	fields, err := compileAvroFields(rec, schema.Fields(), "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", format, err)
	}
	return &avroEncoder{format: format, schema: schema, prefix: prefix, fields: fields}, nil
}

func compileAvroFields(rec *avro.RecordSchema, fields []arrow.Field, path string) ([]avroFieldPlan, error) {
	index := make(map[string]int, len(fields))
	for i, f := range fields {
		index[f.Name] = i
	}
	used := make([]bool, len(fields))
	var plans []avroFieldPlan
	for _, wf := range rec.Fields() {
		p := join(path, wf.Name())
		j, ok := index[wf.Name()]
		if !ok {
			nullIdx := avroNullBranch(wf.Type())
			if nullIdx < 0 {
				return nil, fmt.Errorf("Avro field %s is not nullable and has no column", p)
			}
			plans = append(plans, avroFieldPlan{column: -1, nullIdx: nullIdx, valIdx: -1, path: p})
			continue
		}
		used[j] = true
		plan, err := compileAvroSlot(wf.Type(), fields[j].Type, p)
		if err != nil {
			return nil, err
		}
		plan.column = j
		plans = append(plans, plan)
	}
	for j, f := range fields {
		if !used[j] {
			return nil, fmt.Errorf("column %s is not in the Avro schema", join(path, f.Name))
		}
	}
	return plans, nil
}

func avroNullBranch(w avro.Schema) int {
	if u, ok := deref(w).(*avro.UnionSchema); ok {
		for i, t := range u.Types() {
			if t.Type() == avro.Null {
				return i
			}
		}
	}
	return -1
}

// compileAvroSlot compiles a possibly nullable value: a union's null
// branch takes nulls, its first branch the column's type resolves to takes
// values.
func compileAvroSlot(w avro.Schema, dt arrow.DataType, path string) (avroFieldPlan, error) {
	plan := avroFieldPlan{column: -1, nullIdx: -1, valIdx: -1, path: path}
	w = deref(w)
	u, ok := w.(*avro.UnionSchema)
	if !ok {
		b, err := compileAvroWriter(w, dt, path)
		plan.bind = b
		return plan, err
	}
	var firstErr error
	for i, t := range u.Types() {
		if t.Type() == avro.Null {
			if plan.nullIdx < 0 {
				plan.nullIdx = i
			}
			continue
		}
		if plan.valIdx >= 0 {
			continue
		}
		b, err := compileAvroWriter(t, dt, path)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		plan.valIdx, plan.bind = i, b
	}
	if plan.valIdx < 0 {
		if firstErr == nil {
			firstErr = fmt.Errorf("column %s: the Avro union has no branch for %s", path, dt)
		}
		return plan, firstErr
	}
	return plan, nil
}

// avroSlotW writes a possibly null value.
type avroSlotW struct {
	mask    nullMask
	nullIdx int
	valIdx  int
	w       avroWriter
	path    string
}

func (s *avroSlotW) write(dst []byte, i int) ([]byte, error) {
	if s.mask.isNull(i) {
		if s.nullIdx < 0 {
			return dst, fmt.Errorf("column %s: null, and the Avro type is not nullable", s.path)
		}
		return appendAvroLong(dst, int64(s.nullIdx)), nil
	}
	if s.valIdx >= 0 {
		dst = appendAvroLong(dst, int64(s.valIdx))
	}
	return s.w.write(dst, i)
}

func bindAvroSlot(p *avroFieldPlan, arr arrow.Array) *avroSlotW {
	s := &avroSlotW{nullIdx: p.nullIdx, valIdx: p.valIdx, path: p.path}
	if arr == nil {
		return s // a writer field without a column: always null
	}
	s.mask = maskOf(arr)
	s.w = p.bind(arr)
	return s
}

type avroRecordW struct {
	slots []*avroSlotW
}

func (r *avroRecordW) write(dst []byte, i int) ([]byte, error) {
	var err error
	for _, s := range r.slots {
		if s.w == nil { // a writer field without a column
			dst = appendAvroLong(dst, int64(s.nullIdx))
			continue
		}
		if dst, err = s.write(dst, i); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func bindAvroRecord(plans []avroFieldPlan, column func(int) arrow.Array) *avroRecordW {
	r := &avroRecordW{slots: make([]*avroSlotW, len(plans))}
	for k := range plans {
		p := &plans[k]
		if p.column < 0 {
			r.slots[k] = bindAvroSlot(p, nil)
			continue
		}
		r.slots[k] = bindAvroSlot(p, column(p.column))
	}
	return r
}

func (e *avroEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	if err := checkSchema(e.format, e.schema, rec); err != nil {
		return err
	}
	w := bindAvroRecord(e.fields, rec.Column)
	bp, _ := e.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer e.bufs.Put(bp)
	for i := range int(rec.NumRows()) {
		buf := append((*bp)[:0], e.prefix...)
		buf, err := w.write(buf, i)
		*bp = buf
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", e.format, i, err)
		}
		if err := emit(i, buf); err != nil {
			return err
		}
	}
	return nil
}

func appendAvroLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

func compileAvroWriter(w avro.Schema, dt arrow.DataType, path string) (avroBinder, error) {
	w = deref(w)
	wt := w.Type()
	logical, dec := avroLogical(w)
	fail := func() (avroBinder, error) {
		return nil, fmt.Errorf("column %s: %s cannot be written as Avro %s", path, dt, typeName(w))
	}
	switch dt.ID() {
	case arrow.BOOL:
		if wt == avro.Boolean {
			return func(a arrow.Array) avroWriter { return avroBoolW{a.(*array.Boolean)} }, nil
		}
	case arrow.INT8:
		return avroIntW[int8](wt, path)
	case arrow.INT16:
		return avroIntW[int16](wt, path)
	case arrow.INT32:
		return avroIntW[int32](wt, path)
	case arrow.INT64:
		return avroIntW[int64](wt, path)
	case arrow.UINT8:
		return avroIntW[uint8](wt, path)
	case arrow.UINT16:
		return avroIntW[uint16](wt, path)
	case arrow.UINT32:
		return avroIntW[uint32](wt, path)
	case arrow.UINT64:
		return avroIntW[uint64](wt, path)
	case arrow.FLOAT32:
		return avroFloatW[float32](wt)
	case arrow.FLOAT64:
		return avroFloatW[float64](wt)
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		large := dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY
		isString := dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING
		at := func(a arrow.Array) func(int) []byte {
			if large {
				return varOf[int64](a).at
			}
			return varOf[int32](a).at
		}
		switch t := w.(type) {
		case *avro.EnumSchema:
			if !isString {
				return fail()
			}
			symbols := make(map[string]int, len(t.Symbols()))
			for i, s := range t.Symbols() {
				symbols[s] = i
			}
			return func(a arrow.Array) avroWriter { return &avroEnumW{at(a), symbols, path} }, nil
		case *avro.FixedSchema:
			if isString {
				return fail()
			}
			return func(a arrow.Array) avroWriter { return &avroBytesW{at: at(a), fixed: t.Size(), path: path} }, nil
		}
		if wt == avro.String || wt == avro.Bytes {
			check := wt == avro.String && !isString
			return func(a arrow.Array) avroWriter {
				return &avroBytesW{at: at(a), fixed: -1, utf8: check, repair: isString, path: path}
			}, nil
		}
	case arrow.FIXED_SIZE_BINARY:
		width := dt.(*arrow.FixedSizeBinaryType).ByteWidth
		fixed := -1
		if f, ok := w.(*avro.FixedSchema); ok {
			if f.Size() != width {
				return fail()
			}
			fixed = width
		} else if wt != avro.Bytes {
			return fail()
		}
		return func(a arrow.Array) avroWriter {
			b := fixedBinaryValues(a)
			return &avroBytesW{at: func(i int) []byte { return b[i*width : (i+1)*width] }, fixed: fixed, path: path}
		}, nil
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		if logical != "decimal" || int32(dec.Scale()) < t.Scale {
			return fail()
		}
		fixed := -1
		if f, ok := w.(*avro.FixedSchema); ok {
			fixed = f.Size()
		}
		mul := pow10u128[int32(dec.Scale())-t.Scale]
		limit := pow10u128[min(dec.Precision(), 38)]
		return func(a arrow.Array) avroWriter {
			return &avroDecimalW{v: fixedValues[decimal128.Num](a), fixed: fixed, mul: mul, limit: limit, path: path}
		}, nil
	case arrow.TIMESTAMP:
		if wt != avro.Long {
			return fail()
		}
		unit := dt.(*arrow.TimestampType).Unit
		to := unit
		switch logical {
		case "timestamp-millis", "local-timestamp-millis":
			to = arrow.Millisecond
		case "timestamp-micros", "local-timestamp-micros":
			to = arrow.Microsecond
		case "timestamp-nanos", "local-timestamp-nanos":
			to = arrow.Nanosecond
		case "":
		default:
			return fail()
		}
		return avroScaledW[int64](unit, to, false, path), nil
	case arrow.DATE32:
		if wt == avro.Int && (logical == "date" || logical == "") {
			return avroScaledW[int32](arrow.Second, arrow.Second, true, path), nil
		}
	case arrow.TIME32, arrow.TIME64:
		var to arrow.TimeUnit
		switch {
		case wt == avro.Int && logical == "time-millis":
			to = arrow.Millisecond
		case wt == avro.Long && logical == "time-micros":
			to = arrow.Microsecond
		default:
			return fail()
		}
		if dt.ID() == arrow.TIME32 {
			return avroScaledW[int32](dt.(*arrow.Time32Type).Unit, to, wt == avro.Int, path), nil
		}
		return avroScaledW[int64](dt.(*arrow.Time64Type).Unit, to, wt == avro.Int, path), nil
	case arrow.STRUCT:
		rec, ok := w.(*avro.RecordSchema)
		if !ok {
			return fail()
		}
		plans, err := compileAvroFields(rec, dt.(*arrow.StructType).Fields(), path)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) avroWriter {
			return bindAvroRecord(plans, a.(*array.Struct).Field)
		}, nil
	case arrow.LIST:
		arr, ok := w.(*avro.ArraySchema)
		if !ok {
			return fail()
		}
		elem, err := compileAvroSlot(arr.Items(), dt.(*arrow.ListType).Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) avroWriter {
			return &avroBlocksW{offsets: offsetsOf[int32](a), value: bindAvroSlot(&elem, a.(*array.List).ListValues())}
		}, nil
	case arrow.MAP:
		m, ok := w.(*avro.MapSchema)
		mt := dt.(*arrow.MapType)
		if !ok || (mt.KeyType().ID() != arrow.STRING && mt.KeyType().ID() != arrow.LARGE_STRING) {
			return fail()
		}
		key, err := compileAvroWriter(avro.NewPrimitiveSchema(avro.String, nil), mt.KeyType(), path+"{}")
		if err != nil {
			return nil, err
		}
		item, err := compileAvroSlot(m.Values(), mt.ItemType(), path+"{}")
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array) avroWriter {
			entries := a.(*array.Map).ListValues().(*array.Struct)
			return &avroBlocksW{offsets: offsetsOf[int32](a), key: key(entries.Field(0)), value: bindAvroSlot(&item, entries.Field(1))}
		}, nil
	}
	return fail()
}

type avroBoolW struct{ a *array.Boolean }

func (w avroBoolW) write(dst []byte, i int) ([]byte, error) {
	if w.a.Value(i) {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

type integer interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64
}

// avroIntW writes an integer column as Avro int or long (range-checked),
// float or double.
func avroIntW[T integer](wt avro.Type, path string) (avroBinder, error) {
	switch wt {
	case avro.Int:
		return func(a arrow.Array) avroWriter {
			return &avroIntegerW[T]{fixedValues[T](a), math.MinInt32, math.MaxInt32, path}
		}, nil
	case avro.Long:
		return func(a arrow.Array) avroWriter {
			return &avroIntegerW[T]{fixedValues[T](a), math.MinInt64, math.MaxInt64, path}
		}, nil
	case avro.Float:
		return func(a arrow.Array) avroWriter { return avroNumFloatW[T]{fixedValues[T](a)} }, nil
	case avro.Double:
		return func(a arrow.Array) avroWriter { return avroNumDoubleW[T]{fixedValues[T](a)} }, nil
	}
	return nil, fmt.Errorf("column %s: an integer cannot be written as Avro %s", path, wt)
}

type avroIntegerW[T integer] struct {
	v        []T
	min, max int64
	path     string
}

func (w *avroIntegerW[T]) write(dst []byte, i int) ([]byte, error) {
	x := w.v[i]
	v := int64(x)
	if (x > 0) != (v > 0) || v < w.min || v > w.max { // the first test catches uint64 past 2^63-1
		return dst, fmt.Errorf("column %s: %d is out of range for the Avro type", w.path, x)
	}
	return appendAvroLong(dst, v), nil
}

type avroNumFloatW[T integer | float32 | float64] struct{ v []T }

func (w avroNumFloatW[T]) write(dst []byte, i int) ([]byte, error) {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(w.v[i]))), nil
}

type avroNumDoubleW[T integer | float32 | float64] struct{ v []T }

func (w avroNumDoubleW[T]) write(dst []byte, i int) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(float64(w.v[i]))), nil
}

func avroFloatW[T float32 | float64](wt avro.Type) (avroBinder, error) {
	switch wt {
	case avro.Float:
		return func(a arrow.Array) avroWriter { return avroNumFloatW[T]{fixedValues[T](a)} }, nil
	case avro.Double:
		return func(a arrow.Array) avroWriter { return avroNumDoubleW[T]{fixedValues[T](a)} }, nil
	}
	return nil, fmt.Errorf("a float cannot be written as Avro %s", wt)
}

// avroBytesW writes bytes, fixed or strings. A string column has its
// invalid UTF-8 written as U+FFFD, as an Avro string or bytes (Avro
// strings are UTF-8, and weir's decoders take nothing else into a string
// column); a binary column written as an Avro string must be UTF-8: bytes
// that are not text have no faithful repair, so they are an error.
type avroBytesW struct {
	at      func(int) []byte
	fixed   int  // the fixed size, or -1 for length-prefixed
	utf8    bool // check (binary written as an Avro string)
	repair  bool // replace invalid UTF-8 (a string column)
	path    string
	scratch []byte
}

func (w *avroBytesW) write(dst []byte, i int) ([]byte, error) {
	b := w.at(i)
	if w.fixed >= 0 {
		if len(b) != w.fixed {
			return dst, fmt.Errorf("column %s: %d bytes for Avro fixed(%d)", w.path, len(b), w.fixed)
		}
		return append(dst, b...), nil
	}
	if (w.utf8 || w.repair) && !utf8.Valid(b) {
		if w.utf8 {
			return dst, fmt.Errorf("column %s: invalid UTF-8 for an Avro string", w.path)
		}
		w.scratch = appendValidUTF8(w.scratch[:0], b)
		b = w.scratch
	}
	dst = appendAvroLong(dst, int64(len(b)))
	return append(dst, b...), nil
}

type avroEnumW struct {
	at      func(int) []byte
	symbols map[string]int
	path    string
}

func (w *avroEnumW) write(dst []byte, i int) ([]byte, error) {
	b := w.at(i)
	k, ok := w.symbols[string(b)]
	if !ok {
		return dst, fmt.Errorf("column %s: %.64q is not a symbol of the Avro enum", w.path, b)
	}
	return appendAvroLong(dst, int64(k)), nil
}

type avroDecimalW struct {
	v     []decimal128.Num
	fixed int
	mul   u128
	limit u128
	path  string
}

func (w *avroDecimalW) write(dst []byte, i int) ([]byte, error) {
	v := w.v[i]
	if w.mul != (u128{0, 1}) || w.limit != pow10u128[38] {
		neg := v.Sign() < 0
		if neg {
			v = v.Negate()
		}
		m, ok := u128{uint64(v.HighBits()), v.LowBits()}.mulMul(w.mul)
		if !ok || !m.less(w.limit) {
			return dst, fmt.Errorf("column %s: decimal out of range for the Avro decimal", w.path)
		}
		v = decimal128.New(int64(m.hi), m.lo)
		if neg {
			v = v.Negate()
		}
	}
	var full [16]byte
	binary.BigEndian.PutUint64(full[:8], uint64(v.HighBits()))
	binary.BigEndian.PutUint64(full[8:], v.LowBits())
	if w.fixed >= 0 {
		if w.fixed < 16 {
			// The dropped bytes must be sign extension.
			sign := byte(0)
			if full[0]&0x80 != 0 {
				sign = 0xff
			}
			for _, c := range full[:16-w.fixed] {
				if c != sign {
					return dst, fmt.Errorf("column %s: decimal too wide for Avro fixed(%d)", w.path, w.fixed)
				}
			}
			if w.fixed > 0 && full[16-w.fixed]&0x80 != sign&0x80 {
				return dst, fmt.Errorf("column %s: decimal too wide for Avro fixed(%d)", w.path, w.fixed)
			}
			return append(dst, full[16-w.fixed:]...), nil
		}
		sign := byte(0)
		if full[0]&0x80 != 0 {
			sign = 0xff
		}
		for range w.fixed - 16 {
			dst = append(dst, sign)
		}
		return append(dst, full[:]...), nil
	}
	// The shortest two's complement: drop leading sign bytes while the
	// next byte keeps the sign bit.
	k := 0
	for k < 15 && (full[k] == 0 && full[k+1]&0x80 == 0 || full[k] == 0xff && full[k+1]&0x80 != 0) {
		k++
	}
	dst = appendAvroLong(dst, int64(16-k))
	return append(dst, full[k:]...), nil
}

// avroScaledW writes a temporal column, converting its unit to the Avro
// type's (floored when coarser).
func avroScaledW[T int32 | int64](from, to arrow.TimeUnit, toInt bool, path string) avroBinder {
	f, t := unitPerSecond(from), unitPerSecond(to)
	mul, div := int64(1), int64(1)
	if t >= f {
		mul = t / f
	} else {
		div = f / t
	}
	return func(a arrow.Array) avroWriter {
		return &avroTemporalW[T]{v: fixedValues[T](a), mul: mul, div: div, toInt: toInt, path: path}
	}
}

type avroTemporalW[T int32 | int64] struct {
	v        []T
	mul, div int64
	toInt    bool
	path     string
}

func (w *avroTemporalW[T]) write(dst []byte, i int) ([]byte, error) {
	v := int64(w.v[i])
	switch {
	case w.mul > 1:
		if v > math.MaxInt64/w.mul || v < math.MinInt64/w.mul {
			return dst, fmt.Errorf("column %s: %d overflows the Avro type's unit", w.path, v)
		}
		v *= w.mul
	case w.div > 1:
		q := v / w.div
		if v%w.div < 0 {
			q--
		}
		v = q
	}
	if w.toInt && (v < math.MinInt32 || v > math.MaxInt32) {
		return dst, fmt.Errorf("column %s: %d is out of range for an Avro int", w.path, v)
	}
	return appendAvroLong(dst, v), nil
}

// avroBlocksW writes a list as one array block or a map as one map block.
type avroBlocksW struct {
	offsets []int32
	key     avroWriter // nil for arrays
	value   *avroSlotW
}

func (w *avroBlocksW) write(dst []byte, i int) ([]byte, error) {
	start, end := int(w.offsets[i]), int(w.offsets[i+1])
	if end > start {
		dst = appendAvroLong(dst, int64(end-start))
		var err error
		for j := start; j < end; j++ {
			if w.key != nil {
				if dst, err = w.key.write(dst, j); err != nil {
					return dst, err
				}
			}
			if dst, err = w.value.write(dst, j); err != nil {
				return dst, err
			}
		}
	}
	return append(dst, 0), nil
}
