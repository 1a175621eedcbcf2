package format

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"
)

// An Avro decoding program is compiled once per writer schema against the
// columns of a batch: a tree of nodes that read Avro binary and append to
// the columns, resolving the writer schema against the Arrow schema as
// Avro's schema resolution does with the Arrow schema as the reader's:
// fields match by name, writer fields without a column are skipped,
// columns without a writer field are null, unions pick a branch per value,
// and numbers widen (int to long, float, double; long to float, double;
// float to double), as do timestamps between units.

// avroNode decodes one value of the writer's type into its column.
type avroNode interface {
	decode(r *avroReader) error
}

func avroErr(r *avroReader, path string, off int, err error) error {
	return &RecordError{Format: r.format, Field: path, Offset: off, Err: err}
}

// avroProgram decodes a whole record into the top-level columns.
type avroProgram struct {
	root *avroRecord
}

// compileAvroProgram compiles a writer schema (a record) against cols.
func compileAvroProgram(w avro.Schema, cols *columns) (*avroProgram, error) {
	rec, ok := deref(w).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the writer schema is a %s, not a record", w.Type())
	}
	root, err := compileAvroRecord(rec, nil, cols.schema.Fields(), cols.cols, "", map[string]bool{})
	if err != nil {
		return nil, err
	}
	return &avroProgram{root: root}, nil
}

// run decodes the record at r.pos, which must end the value.
func (p *avroProgram) run(r *avroReader) error {
	if err := p.root.decode(r); err != nil {
		return err
	}
	if r.pos != len(r.buf) {
		return avroErr(r, "", r.pos, errAvroTrailing)
	}
	return nil
}

type avroRecord struct {
	col     *structColumn // nil at the top
	steps   []avroNode    // one per writer field: decode or skip
	missing []column      // columns the writer does not have: null
}

func compileAvroRecord(w *avro.RecordSchema, col *structColumn, fields []arrow.Field, children []column, path string, visiting map[string]bool) (*avroRecord, error) {
	// The Arrow type is finite, so compiling a recursive writer record
	// stops where the columns end (deeper levels are skipped).
	index := make(map[string]int, len(fields))
	for i, f := range fields {
		index[f.Name] = i
	}
	n := &avroRecord{col: col}
	found := make([]bool, len(fields))
	for _, wf := range w.Fields() {
		j, ok := index[wf.Name()]
		if !ok {
			n.steps = append(n.steps, compileAvroSkip(wf.Type(), map[string]bool{}))
			continue
		}
		found[j] = true
		node, err := compileAvroValue(wf.Type(), children[j], fields[j].Nullable, join(path, fields[j].Name), visiting)
		if err != nil {
			return nil, err
		}
		n.steps = append(n.steps, node)
	}
	for j, f := range fields {
		if found[j] {
			continue
		}
		if !f.Nullable {
			return nil, fmt.Errorf("column %s: not in the writer schema and not nullable", join(path, f.Name))
		}
		n.missing = append(n.missing, children[j])
	}
	return n, nil
}

func (n *avroRecord) decode(r *avroReader) error {
	for _, s := range n.steps {
		if err := s.decode(r); err != nil {
			return err
		}
	}
	for _, c := range n.missing {
		c.appendNull()
	}
	if n.col != nil {
		n.col.appendValid()
	}
	return nil
}

// avroUnion reads a branch index and decodes the branch.
type avroUnion struct {
	path     string
	branches []avroNode
}

func (n *avroUnion) decode(r *avroReader) error {
	start := r.pos
	i, err := r.long()
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if i < 0 || i >= int64(len(n.branches)) {
		return avroErr(r, n.path, start, fmt.Errorf("union branch %d out of %d", i, len(n.branches)))
	}
	return n.branches[i].decode(r)
}

// avroNull is the null branch of a union (or a null-typed field).
type avroNull struct {
	col      column
	nullable bool
	path     string
}

func (n *avroNull) decode(r *avroReader) error {
	if !n.nullable {
		return avroErr(r, n.path, r.pos, errNullNotAllowed)
	}
	n.col.appendNull()
	return nil
}

// avroFail is a union branch that does not resolve against the column:
// only values that take it fail.
type avroFail struct {
	path string
	err  error
}

func (n *avroFail) decode(r *avroReader) error { return avroErr(r, n.path, r.pos, n.err) }

func typeName(w avro.Schema) string {
	if l, _ := avroLogical(w); l != "" {
		return fmt.Sprintf("%s (%s)", w.Type(), l)
	}
	return string(w.Type())
}

func compileAvroValue(w avro.Schema, col column, nullable bool, path string, visiting map[string]bool) (avroNode, error) {
	w = deref(w)
	if u, ok := w.(*avro.UnionSchema); ok {
		n := &avroUnion{path: path}
		var firstErr error
		ok := 0
		for _, t := range u.Types() {
			if t.Type() == avro.Null {
				n.branches = append(n.branches, &avroNull{col: col, nullable: nullable, path: path})
				continue
			}
			b, err := compileAvroValue(t, col, nullable, path, visiting)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				n.branches = append(n.branches, &avroFail{path: path, err: err})
				continue
			}
			n.branches = append(n.branches, b)
			ok++
		}
		if ok == 0 && firstErr != nil {
			return nil, firstErr
		}
		return n, nil
	}
	if w.Type() == avro.Null {
		if !nullable {
			return nil, fmt.Errorf("column %s: the writer's type is null and the column is not nullable", path)
		}
		return &avroNull{col: col, nullable: true, path: path}, nil
	}
	node := compileAvroScalar(w, col, path)
	if node != nil {
		return node, nil
	}
	dt := col.dataType()
	switch t := w.(type) {
	case *avro.RecordSchema:
		if dt.ID() == arrow.STRUCT {
			sc := col.(*structColumn)
			return compileAvroRecord(t, sc, dt.(*arrow.StructType).Fields(), sc.children, path, visiting)
		}
	case *avro.ArraySchema:
		if dt.ID() == arrow.LIST {
			lc := col.(*listColumn)
			ef := dt.(*arrow.ListType).ElemField()
			elem, err := compileAvroValue(t.Items(), lc.child, ef.Nullable, path+"[]", visiting)
			if err != nil {
				return nil, err
			}
			return &avroArray{col: lc, elem: elem, path: path, minSize: avroMinSize(t.Items(), map[string]bool{})}, nil
		}
	case *avro.MapSchema:
		if dt.ID() == arrow.MAP {
			lc := col.(*listColumn)
			entries := lc.child.(*structColumn)
			item := dt.(*arrow.MapType).ItemField()
			value, err := compileAvroValue(t.Values(), entries.children[1], item.Nullable, path+"{}", visiting)
			if err != nil {
				return nil, err
			}
			m := &avroMap{col: lc, entries: entries, value: value, path: path,
				minSize: 1 + avroMinSize(t.Values(), map[string]bool{})}
			switch k := entries.children[0].(type) {
			case *varColumn[int32]:
				m.key = k.appendAvroString
			case *varColumn[int64]:
				m.key = k.appendAvroString
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("column %s: the writer's %s does not resolve to %s", path, typeName(w), dt)
}

// compileAvroScalar returns the node for a non-nested writer type, or nil.
func compileAvroScalar(w avro.Schema, col column, path string) avroNode {
	dt := col.dataType()
	wt := w.Type()
	logical, dec := avroLogical(w)
	switch dt.ID() {
	case arrow.BOOL:
		if wt == avro.Boolean {
			return &avroBool{col: col.(*boolColumn), path: path}
		}
	case arrow.INT8:
		return avroSignedNode[int8](wt, col, path, math.MinInt8, math.MaxInt8)
	case arrow.INT16:
		return avroSignedNode[int16](wt, col, path, math.MinInt16, math.MaxInt16)
	case arrow.INT32:
		return avroSignedNode[int32](wt, col, path, math.MinInt32, math.MaxInt32)
	case arrow.INT64:
		return avroSignedNode[int64](wt, col, path, math.MinInt64, math.MaxInt64)
	case arrow.UINT8:
		return avroUnsignedNode[uint8](wt, col, path, math.MaxUint8)
	case arrow.UINT16:
		return avroUnsignedNode[uint16](wt, col, path, math.MaxUint16)
	case arrow.UINT32:
		return avroUnsignedNode[uint32](wt, col, path, math.MaxUint32)
	case arrow.UINT64:
		return avroUnsignedNode[uint64](wt, col, path, math.MaxInt64)
	case arrow.FLOAT32:
		switch wt {
		case avro.Int, avro.Long, avro.Float:
			return &avroFloat[float32]{col: col.(*fixedColumn[float32]), wt: wt, path: path}
		}
	case arrow.FLOAT64:
		switch wt {
		case avro.Int, avro.Long, avro.Float, avro.Double:
			return &avroFloat[float64]{col: col.(*fixedColumn[float64]), wt: wt, path: path}
		}
	case arrow.STRING:
		return avroBytesNode[int32](w, col.(*varColumn[int32]), path, true)
	case arrow.LARGE_STRING:
		return avroBytesNode[int64](w, col.(*varColumn[int64]), path, true)
	case arrow.BINARY:
		return avroBytesNode[int32](w, col.(*varColumn[int32]), path, false)
	case arrow.LARGE_BINARY:
		return avroBytesNode[int64](w, col.(*varColumn[int64]), path, false)
	case arrow.FIXED_SIZE_BINARY:
		c := col.(*fixedBinaryColumn)
		switch t := w.(type) {
		case *avro.FixedSchema:
			if t.Size() == c.width {
				return &avroFixedBinary{col: c, fixed: t.Size(), path: path}
			}
		case *avro.PrimitiveSchema:
			if wt == avro.Bytes {
				return &avroFixedBinary{col: c, fixed: -1, path: path}
			}
		}
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		if logical != "decimal" || int32(dec.Scale()) > t.Scale {
			return nil
		}
		n := &avroDecimal{col: col.(*fixedColumn[decimal128.Num]), fixed: -1, path: path, dtype: t,
			mul: pow10u128[t.Scale-int32(dec.Scale())], limit: pow10u128[t.Precision]}
		if f, ok := w.(*avro.FixedSchema); ok {
			n.fixed = f.Size()
		}
		return n
	case arrow.TIMESTAMP:
		if wt != avro.Long {
			return nil
		}
		unit := dt.(*arrow.TimestampType).Unit
		var from arrow.TimeUnit
		switch logical {
		case "timestamp-millis", "local-timestamp-millis":
			from = arrow.Millisecond
		case "timestamp-micros", "local-timestamp-micros":
			from = arrow.Microsecond
		case "timestamp-nanos", "local-timestamp-nanos":
			from = arrow.Nanosecond
		case "":
			from = unit // a plain long counts the column's unit
		default:
			return nil
		}
		return newAvroScaled[int64](col.(*fixedColumn[int64]), avro.Long, from, unit, path, dt)
	case arrow.DATE32:
		if wt == avro.Int && (logical == "date" || logical == "") {
			return newAvroScaled[int32](col.(*fixedColumn[int32]), avro.Int, arrow.Second, arrow.Second, path, dt)
		}
	case arrow.TIME32, arrow.TIME64:
		var from arrow.TimeUnit
		switch {
		case wt == avro.Int && logical == "time-millis":
			from = arrow.Millisecond
		case wt == avro.Long && logical == "time-micros":
			from = arrow.Microsecond
		default:
			return nil
		}
		if dt.ID() == arrow.TIME32 {
			return newAvroScaled[int32](col.(*fixedColumn[int32]), wt, from, dt.(*arrow.Time32Type).Unit, path, dt)
		}
		return newAvroScaled[int64](col.(*fixedColumn[int64]), wt, from, dt.(*arrow.Time64Type).Unit, path, dt)
	}
	return nil
}

type avroBool struct {
	col  *boolColumn
	path string
}

func (n *avroBool) decode(r *avroReader) error {
	v, err := r.boolean()
	if err != nil {
		return avroErr(r, n.path, r.pos, err)
	}
	n.col.append(v)
	return nil
}

// avroSigned reads an int or long into a signed column, range-checked.
type avroSigned[T int8 | int16 | int32 | int64] struct {
	col      *fixedColumn[T]
	path     string
	min, max int64
}

func avroSignedNode[T int8 | int16 | int32 | int64](wt avro.Type, col column, path string, min, max int64) avroNode {
	if wt != avro.Int && wt != avro.Long {
		return nil
	}
	if wt == avro.Long && max < math.MaxInt64 {
		return nil // no narrowing
	}
	return &avroSigned[T]{col: col.(*fixedColumn[T]), path: path, min: min, max: max}
}

func (n *avroSigned[T]) decode(r *avroReader) error {
	start := r.pos
	v, err := r.long()
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if v < n.min || v > n.max {
		return avroErr(r, n.path, start, fmt.Errorf("%d is out of range for %s", v, n.col.dtype))
	}
	n.col.append(T(v))
	return nil
}

// avroUnsigned reads an int or long into an unsigned column: Avro has no
// unsigned type, so weir writes uint32 and uint64 as longs (uint64 only up
// to 2^63-1).
type avroUnsigned[T uint8 | uint16 | uint32 | uint64] struct {
	col  *fixedColumn[T]
	path string
	max  int64
}

func avroUnsignedNode[T uint8 | uint16 | uint32 | uint64](wt avro.Type, col column, path string, max int64) avroNode {
	if wt != avro.Int && wt != avro.Long {
		return nil
	}
	return &avroUnsigned[T]{col: col.(*fixedColumn[T]), path: path, max: max}
}

func (n *avroUnsigned[T]) decode(r *avroReader) error {
	start := r.pos
	v, err := r.long()
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if v < 0 || v > n.max {
		return avroErr(r, n.path, start, fmt.Errorf("%d is out of range for %s", v, n.col.dtype))
	}
	n.col.append(T(v))
	return nil
}

type avroFloat[T float32 | float64] struct {
	col  *fixedColumn[T]
	wt   avro.Type
	path string
}

func (n *avroFloat[T]) decode(r *avroReader) error {
	start := r.pos
	var v T
	switch n.wt {
	case avro.Int, avro.Long:
		i, err := r.long()
		if err != nil {
			return avroErr(r, n.path, start, err)
		}
		v = T(i)
	case avro.Float:
		f, err := r.float()
		if err != nil {
			return avroErr(r, n.path, start, err)
		}
		v = T(f)
	default:
		f, err := r.double()
		if err != nil {
			return avroErr(r, n.path, start, err)
		}
		v = T(f)
	}
	n.col.append(v)
	return nil
}

// avroBytesNode reads string, bytes, enum or fixed into a string or binary
// column.
func avroBytesNode[O int32 | int64](w avro.Schema, col *varColumn[O], path string, isString bool) avroNode {
	switch t := w.(type) {
	case *avro.EnumSchema:
		if !isString {
			return nil
		}
		n := &avroEnum[O]{col: col, path: path}
		for _, s := range t.Symbols() {
			n.symbols = append(n.symbols, []byte(s))
		}
		return n
	case *avro.FixedSchema:
		if isString {
			return nil
		}
		return &avroBytes[O]{col: col, path: path, fixed: t.Size()}
	}
	if wt := w.Type(); wt == avro.String || wt == avro.Bytes {
		return &avroBytes[O]{col: col, path: path, utf8: isString, fixed: -1}
	}
	return nil
}

type avroBytes[O int32 | int64] struct {
	col   *varColumn[O]
	path  string
	utf8  bool
	fixed int // the fixed size, or -1 for length-prefixed
}

func (n *avroBytes[O]) decode(r *avroReader) error {
	start := r.pos
	var b []byte
	var err error
	if n.fixed >= 0 {
		b, err = r.fixed(n.fixed)
	} else {
		b, err = r.bytes()
	}
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if n.utf8 {
		if off := invalidUTF8At(b); off >= 0 {
			return avroErr(r, n.path, r.pos-len(b)+off, ErrInvalidUTF8)
		}
	}
	n.col.appendBytes(b)
	return nil
}

// appendAvroString appends a map key; on error it returns the offset to
// report: the key's, or that of its first byte that is not UTF-8.
func (c *varColumn[O]) appendAvroString(r *avroReader) (int, error) {
	start := r.pos
	b, err := r.bytes()
	if err != nil {
		return start, err
	}
	if off := invalidUTF8At(b); off >= 0 {
		return r.pos - len(b) + off, ErrInvalidUTF8
	}
	c.appendBytes(b)
	return 0, nil
}

type avroEnum[O int32 | int64] struct {
	col     *varColumn[O]
	path    string
	symbols [][]byte
}

func (n *avroEnum[O]) decode(r *avroReader) error {
	start := r.pos
	i, err := r.int()
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if i < 0 || int(i) >= len(n.symbols) {
		return avroErr(r, n.path, start, fmt.Errorf("enum index %d out of %d symbols", i, len(n.symbols)))
	}
	n.col.appendBytes(n.symbols[i])
	return nil
}

type avroFixedBinary struct {
	col   *fixedBinaryColumn
	fixed int
	path  string
}

func (n *avroFixedBinary) decode(r *avroReader) error {
	start := r.pos
	var b []byte
	var err error
	if n.fixed >= 0 {
		b, err = r.fixed(n.fixed)
	} else if b, err = r.bytes(); err == nil && len(b) != n.col.width {
		err = fmt.Errorf("%d bytes for %s", len(b), n.col.dtype)
	}
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	n.col.appendBytes(b)
	return nil
}

// avroDecimal reads a big-endian two's-complement unscaled integer from
// bytes or fixed, scaled up to the column's scale.
type avroDecimal struct {
	col   *fixedColumn[decimal128.Num]
	fixed int
	path  string
	dtype arrow.DataType
	mul   u128 // 10^(column scale - writer scale)
	limit u128 // 10^precision
}

var errDecimalWidth = errors.New("decimal wider than 128 bits")

func (n *avroDecimal) decode(r *avroReader) error {
	start := r.pos
	var b []byte
	var err error
	if n.fixed >= 0 {
		b, err = r.fixed(n.fixed)
	} else {
		b, err = r.bytes()
	}
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	v, err := decimalFromBigEndian(b)
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	neg := v.Sign() < 0
	if neg {
		v = v.Negate()
	}
	m := u128{uint64(v.HighBits()), v.LowBits()}
	if n.mul != (u128{0, 1}) {
		var ok bool
		if m, ok = m.mulMul(n.mul); !ok {
			return avroErr(r, n.path, start, fmt.Errorf("decimal out of range for %s", n.dtype))
		}
	}
	if !m.less(n.limit) {
		return avroErr(r, n.path, start, fmt.Errorf("decimal out of range for %s", n.dtype))
	}
	v = decimal128.New(int64(m.hi), m.lo)
	if neg {
		v = v.Negate()
	}
	n.col.append(v)
	return nil
}

// mulMul returns x*y when it fits 127 bits.
func (x u128) mulMul(y u128) (u128, bool) {
	if x.hi != 0 && y.hi != 0 {
		return u128{}, false
	}
	if y.hi != 0 {
		x, y = y, x
	}
	p, ok := x.mulAdd(y.lo, 0)
	if !ok || p.hi>>63 != 0 {
		return u128{}, false
	}
	return p, true
}

// decimalFromBigEndian converts a big-endian two's-complement integer.
func decimalFromBigEndian(b []byte) (decimal128.Num, error) {
	if len(b) == 0 {
		return decimal128.Num{}, nil
	}
	sign := byte(0)
	if b[0]&0x80 != 0 {
		sign = 0xff
	}
	for len(b) > 16 {
		if b[0] != sign {
			return decimal128.Num{}, errDecimalWidth
		}
		b = b[1:]
	}
	if len(b) == 16 && b[0]&0x80 != sign&0x80 {
		return decimal128.Num{}, errDecimalWidth
	}
	var full [16]byte
	for i := range 16 - len(b) {
		full[i] = sign
	}
	copy(full[16-len(b):], b)
	hi := int64(uint64(full[0])<<56 | uint64(full[1])<<48 | uint64(full[2])<<40 | uint64(full[3])<<32 |
		uint64(full[4])<<24 | uint64(full[5])<<16 | uint64(full[6])<<8 | uint64(full[7]))
	lo := uint64(full[8])<<56 | uint64(full[9])<<48 | uint64(full[10])<<40 | uint64(full[11])<<32 |
		uint64(full[12])<<24 | uint64(full[13])<<16 | uint64(full[14])<<8 | uint64(full[15])
	return decimal128.New(hi, lo), nil
}

// avroScaled reads an int or long counting one time unit into a column
// counting another (or the same): timestamps, dates and times of day.
type avroScaled[T int32 | int64] struct {
	col   *fixedColumn[T]
	wt    avro.Type
	mul   int64 // > 1 when the column's unit is finer
	div   int64 // > 1 when it is coarser (floored)
	path  string
	dtype arrow.DataType
}

func newAvroScaled[T int32 | int64](col *fixedColumn[T], wt avro.Type, from, to arrow.TimeUnit, path string, dt arrow.DataType) avroNode {
	n := &avroScaled[T]{col: col, wt: wt, mul: 1, div: 1, path: path, dtype: dt}
	f, t := unitPerSecond(from), unitPerSecond(to)
	if t >= f {
		n.mul = t / f
	} else {
		n.div = f / t
	}
	return n
}

func (n *avroScaled[T]) decode(r *avroReader) error {
	start := r.pos
	v, err := r.long()
	if err != nil {
		return avroErr(r, n.path, start, err)
	}
	if n.wt == avro.Int && (v < math.MinInt32 || v > math.MaxInt32) {
		return avroErr(r, n.path, start, errAvroVarint)
	}
	switch {
	case n.mul > 1:
		if v > math.MaxInt64/n.mul || v < math.MinInt64/n.mul {
			return avroErr(r, n.path, start, fmt.Errorf("%d is out of range for %s", v, n.dtype))
		}
		v *= n.mul
	case n.div > 1:
		q := v / n.div
		if v%n.div < 0 {
			q--
		}
		v = q
	}
	if int64(T(v)) != v {
		return avroErr(r, n.path, start, fmt.Errorf("%d is out of range for %s", v, n.dtype))
	}
	n.col.append(T(v))
	return nil
}

// avroArray reads array blocks into a list column.
type avroArray struct {
	col     *listColumn
	elem    avroNode
	path    string
	minSize int
}

func (n *avroArray) decode(r *avroReader) error {
	for {
		start := r.pos
		count, err := r.blockCount(n.minSize)
		if err != nil {
			return avroErr(r, n.path, start, err)
		}
		if count == 0 {
			break
		}
		for range count {
			if err := n.elem.decode(r); err != nil {
				return err
			}
		}
	}
	n.col.commit()
	return nil
}

// avroMap reads map blocks into a map column.
type avroMap struct {
	col     *listColumn
	entries *structColumn
	key     func(r *avroReader) (int, error)
	value   avroNode
	path    string
	minSize int
}

func (n *avroMap) decode(r *avroReader) error {
	for {
		start := r.pos
		count, err := r.blockCount(n.minSize)
		if err != nil {
			return avroErr(r, n.path, start, err)
		}
		if count == 0 {
			break
		}
		for range count {
			if off, err := n.key(r); err != nil {
				return avroErr(r, n.path, off, err)
			}
			if err := n.value.decode(r); err != nil {
				return err
			}
			n.entries.appendValid()
		}
	}
	n.col.commit()
	return nil
}

// avroMinSize is the fewest bytes a value of w takes.
func avroMinSize(w avro.Schema, visiting map[string]bool) int {
	w = deref(w)
	switch t := w.(type) {
	case *avro.NullSchema:
		return 0
	case *avro.FixedSchema:
		return t.Size()
	case *avro.RecordSchema:
		if visiting[t.FullName()] {
			return 0
		}
		visiting[t.FullName()] = true
		defer delete(visiting, t.FullName())
		n := 0
		for _, f := range t.Fields() {
			n += avroMinSize(f.Type(), visiting)
		}
		return n
	}
	switch w.Type() {
	case avro.Float:
		return 4
	case avro.Double:
		return 8
	}
	return 1
}
