package format

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// jsonOptions are the json format's options.
type jsonOptions struct {
	failOnMissing    bool           // json.fail-on-missing-field
	ignoreNullFields bool           // json.encode.ignore-null-fields
	tsStyle          timestampStyle // json.timestamp-format.standard
}

// jsonDecoder decodes one JSON object per value into rows of a schema.
type jsonDecoder struct {
	schema *arrow.Schema
	opts   jsonOptions
}

func newJSONDecoder(schema *arrow.Schema, opts jsonOptions) (*jsonDecoder, error) {
	d := &jsonDecoder{schema: schema, opts: opts}
	cols, err := newColumns(schema)
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	if _, err := compileJSONRoot(cols, opts); err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	return d, nil
}

func (d *jsonDecoder) Schema() *arrow.Schema { return d.schema }

func (d *jsonDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: json: schema validated by newJSONDecoder: " + err.Error())
	}
	root, err := compileJSONRoot(cols, d.opts)
	if err != nil {
		panic("BUG: json: schema validated by newJSONDecoder: " + err.Error())
	}
	return &batchBuilder{format: "json", mem: mem, cols: cols, dec: root}
}

// jsonErr is a json RecordError.
func jsonErr(path string, off int, err error) error {
	return &RecordError{Format: "json", Field: path, Offset: off, Err: err}
}

func jsonTypeErr(path string, s *jsonScanner, want string) error {
	return jsonErr(path, s.pos, fmt.Errorf("expected %s, found %s", want, describe(s.peek())))
}

var errNullNotAllowed = errors.New("null in a non-nullable field")

// jsonNode decodes one non-null JSON value, which starts at the scanner's
// position, into its column.
type jsonNode interface {
	decode(s *jsonScanner) error
}

// jsonField is a named, possibly nullable slot: a struct field, a list
// element or a map value.
type jsonField struct {
	name     string
	path     string // dotted path from the top-level column, for errors
	nullable bool
	col      column
	node     jsonNode
}

func (f *jsonField) decode(s *jsonScanner) error {
	if s.peek() == 'n' {
		start := s.pos
		if !s.isNull() {
			return jsonErr(f.path, start, errJSONLiteral)
		}
		if !f.nullable {
			return jsonErr(f.path, start, errNullNotAllowed)
		}
		f.col.appendNull()
		return nil
	}
	return f.node.decode(s)
}

// jsonRoot decodes a top-level object.
type jsonRoot struct {
	s    jsonScanner
	body *jsonStruct
}

func (r *jsonRoot) decodeRow(value []byte) error {
	s := &r.s
	s.buf, s.pos = value, 0
	defer func() { s.buf = nil }()
	s.ws()
	if s.peek() != '{' {
		return jsonErr("", s.pos, fmt.Errorf("expected a JSON object, found %s", describe(s.peek())))
	}
	if err := r.body.decode(s); err != nil {
		return err
	}
	s.ws()
	if s.pos != len(value) {
		return jsonErr("", s.pos, errors.New("data after the top-level object"))
	}
	return nil
}

func compileJSONRoot(cols *columns, opts jsonOptions) (*jsonRoot, error) {
	body, err := compileJSONStruct(nil, cols.schema.Fields(), cols.cols, "", opts)
	if err != nil {
		return nil, err
	}
	return &jsonRoot{body: body}, nil
}

func compileJSONStruct(col *structColumn, fields []arrow.Field, children []column, path string, opts jsonOptions) (*jsonStruct, error) {
	n := &jsonStruct{col: col, p: path, index: make(map[string]int, len(fields)), failOnMissing: opts.failOnMissing}
	n.seen = make([]uint64, (len(fields)+63)/64)
	for i, f := range fields {
		p := join(path, f.Name)
		node, err := compileJSONNode(children[i], p, opts)
		if err != nil {
			return nil, err
		}
		if _, dup := n.index[f.Name]; dup {
			return nil, fmt.Errorf("column %s: duplicate field name", p)
		}
		n.index[f.Name] = i
		n.fields = append(n.fields, jsonField{name: f.Name, path: p, nullable: f.Nullable, col: children[i], node: node})
	}
	return n, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func compileJSONNode(col column, path string, opts jsonOptions) (jsonNode, error) {
	dt := col.dataType()
	switch dt.ID() {
	case arrow.BOOL:
		return &jsonBool{col: col.(*boolColumn), path: path}, nil
	case arrow.INT8:
		return &jsonSigned[int8]{col: col.(*fixedColumn[int8]), path: path, min: math.MinInt8, max: math.MaxInt8}, nil
	case arrow.INT16:
		return &jsonSigned[int16]{col: col.(*fixedColumn[int16]), path: path, min: math.MinInt16, max: math.MaxInt16}, nil
	case arrow.INT32:
		return &jsonSigned[int32]{col: col.(*fixedColumn[int32]), path: path, min: math.MinInt32, max: math.MaxInt32}, nil
	case arrow.INT64:
		return &jsonSigned[int64]{col: col.(*fixedColumn[int64]), path: path, min: math.MinInt64, max: math.MaxInt64}, nil
	case arrow.UINT8:
		return &jsonUnsigned[uint8]{col: col.(*fixedColumn[uint8]), path: path, max: math.MaxUint8}, nil
	case arrow.UINT16:
		return &jsonUnsigned[uint16]{col: col.(*fixedColumn[uint16]), path: path, max: math.MaxUint16}, nil
	case arrow.UINT32:
		return &jsonUnsigned[uint32]{col: col.(*fixedColumn[uint32]), path: path, max: math.MaxUint32}, nil
	case arrow.UINT64:
		return &jsonUnsigned[uint64]{col: col.(*fixedColumn[uint64]), path: path, max: math.MaxUint64}, nil
	case arrow.FLOAT32:
		return &jsonFloat[float32]{col: col.(*fixedColumn[float32]), path: path, bits: 32}, nil
	case arrow.FLOAT64:
		return &jsonFloat[float64]{col: col.(*fixedColumn[float64]), path: path, bits: 64}, nil
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		return &jsonDecimal{col: col.(*fixedColumn[decimal128.Num]), path: path, precision: t.Precision, scale: t.Scale}, nil
	case arrow.STRING:
		return &jsonString[int32]{col: col.(*varColumn[int32]), path: path}, nil
	case arrow.LARGE_STRING:
		return &jsonString[int64]{col: col.(*varColumn[int64]), path: path}, nil
	case arrow.BINARY:
		return &jsonBinary[int32]{col: col.(*varColumn[int32]), path: path}, nil
	case arrow.LARGE_BINARY:
		return &jsonBinary[int64]{col: col.(*varColumn[int64]), path: path}, nil
	case arrow.FIXED_SIZE_BINARY:
		return &jsonFixedBinary{col: col.(*fixedBinaryColumn), path: path}, nil
	case arrow.TIMESTAMP:
		return &jsonTimestamp{col: col.(*fixedColumn[int64]), path: path, unit: dt.(*arrow.TimestampType).Unit, dtype: dt}, nil
	case arrow.DATE32:
		return &jsonDate{col: col.(*fixedColumn[int32]), path: path}, nil
	case arrow.TIME32:
		return &jsonTime[int32]{col: col.(*fixedColumn[int32]), path: path, unit: dt.(*arrow.Time32Type).Unit, dtype: dt}, nil
	case arrow.TIME64:
		return &jsonTime[int64]{col: col.(*fixedColumn[int64]), path: path, unit: dt.(*arrow.Time64Type).Unit, dtype: dt}, nil
	case arrow.STRUCT:
		sc := col.(*structColumn)
		return compileJSONStruct(sc, dt.(*arrow.StructType).Fields(), sc.children, path, opts)
	case arrow.LIST:
		lc := col.(*listColumn)
		ef := dt.(*arrow.ListType).ElemField()
		node, err := compileJSONNode(lc.child, path+"[]", opts)
		if err != nil {
			return nil, err
		}
		return &jsonList{col: lc, path: path, elem: jsonField{name: ef.Name, path: path + "[]", nullable: ef.Nullable, col: lc.child, node: node}}, nil
	case arrow.MAP:
		lc := col.(*listColumn)
		entries := lc.child.(*structColumn)
		mt := dt.(*arrow.MapType)
		item := mt.ItemField()
		vpath := path + "{}"
		node, err := compileJSONNode(entries.children[1], vpath, opts)
		if err != nil {
			return nil, err
		}
		m := &jsonMap{col: lc, entries: entries, path: path,
			value: jsonField{name: item.Name, path: vpath, nullable: item.Nullable, col: entries.children[1], node: node}}
		switch k := entries.children[0].(type) {
		case *varColumn[int32]:
			m.key = k.appendJSONKey
		case *varColumn[int64]:
			m.key = k.appendJSONKey
		}
		return m, nil
	}
	return nil, fmt.Errorf("column %s: type %s is not supported by json", path, dt)
}

// jsonStruct decodes an object into the fields of a struct column (or,
// with col nil, into the top-level columns).
type jsonStruct struct {
	col           *structColumn
	p             string // the struct's path, "" at the top
	fields        []jsonField
	index         map[string]int
	seen          []uint64 // bitset of the fields decoded in this object
	failOnMissing bool
}

func (n *jsonStruct) decode(s *jsonScanner) error {
	if s.peek() != '{' {
		return jsonTypeErr(n.p, s, "an object")
	}
	s.pos++
	clear(n.seen)
	decoded := 0
	next := 0 // fields usually come in schema order: try the next one first
	s.ws()
	if s.peek() == '}' {
		s.pos++
	} else {
		for {
			if s.peek() != '"' {
				return jsonErr(n.p, s.pos, errJSONExpected("a string key", s.peek()))
			}
			keyStart := s.pos
			key, err := s.rawString()
			if err != nil {
				return jsonErr(n.p, s.pos, err)
			}
			idx := -1
			if next < len(n.fields) && string(key) == n.fields[next].name {
				idx = next
			} else if i, ok := n.index[string(key)]; ok {
				idx = i
			}
			s.ws()
			if s.peek() != ':' {
				return jsonErr(n.p, s.pos, errJSONExpected("':'", s.peek()))
			}
			s.pos++
			s.ws()
			if idx < 0 {
				if err := s.skip(0); err != nil {
					return jsonErr(n.p, s.pos, err)
				}
			} else {
				f := &n.fields[idx]
				if n.seen[idx>>6]&(1<<(idx&63)) != 0 {
					return jsonErr(f.path, keyStart, errors.New("duplicate field"))
				}
				n.seen[idx>>6] |= 1 << (idx & 63)
				decoded++
				if err := f.decode(s); err != nil {
					return err
				}
				next = idx + 1
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.pos++
				s.ws()
				continue
			case '}':
				s.pos++
			default:
				return jsonErr(n.p, s.pos, errJSONExpected("',' or '}'", s.peek()))
			}
			break
		}
	}
	if decoded < len(n.fields) {
		for i := range n.fields {
			if n.seen[i>>6]&(1<<(i&63)) != 0 {
				continue
			}
			f := &n.fields[i]
			if !f.nullable || n.failOnMissing {
				return jsonErr(f.path, s.pos-1, errors.New("missing field"))
			}
			f.col.appendNull()
		}
	}
	if n.col != nil {
		n.col.appendValid()
	}
	return nil
}

type jsonList struct {
	col  *listColumn
	path string
	elem jsonField
}

func (n *jsonList) decode(s *jsonScanner) error {
	if s.peek() != '[' {
		return jsonTypeErr(n.path, s, "an array")
	}
	s.pos++
	s.ws()
	if s.peek() == ']' {
		s.pos++
		n.col.commit()
		return nil
	}
	for {
		if err := n.elem.decode(s); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
			continue
		case ']':
			s.pos++
			n.col.commit()
			return nil
		}
		return jsonErr(n.path, s.pos, errJSONExpected("',' or ']'", s.peek()))
	}
}

// jsonMap decodes an object into a map<string, T> column.
type jsonMap struct {
	col     *listColumn
	entries *structColumn
	key     func(s *jsonScanner) error
	path    string
	value   jsonField
}

func (n *jsonMap) decode(s *jsonScanner) error {
	if s.peek() != '{' {
		return jsonTypeErr(n.path, s, "an object")
	}
	s.pos++
	s.ws()
	if s.peek() == '}' {
		s.pos++
		n.col.commit()
		return nil
	}
	for {
		if s.peek() != '"' {
			return jsonErr(n.path, s.pos, errJSONExpected("a string key", s.peek()))
		}
		if err := n.key(s); err != nil {
			return jsonErr(n.path, s.pos, err)
		}
		s.ws()
		if s.peek() != ':' {
			return jsonErr(n.path, s.pos, errJSONExpected("':'", s.peek()))
		}
		s.pos++
		s.ws()
		if err := n.value.decode(s); err != nil {
			return err
		}
		n.entries.appendValid()
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
			continue
		case '}':
			s.pos++
			n.col.commit()
			return nil
		}
		return jsonErr(n.path, s.pos, errJSONExpected("',' or '}'", s.peek()))
	}
}

// appendJSONKey appends the string at the scanner's position as a value.
func (c *varColumn[O]) appendJSONKey(s *jsonScanner) error {
	var err error
	if c.data, err = s.appendString(c.data); err != nil {
		c.rollback()
		return err
	}
	c.commit()
	return nil
}

type jsonBool struct {
	col  *boolColumn
	path string
}

func (n *jsonBool) decode(s *jsonScanner) error {
	start := s.pos
	switch s.peek() {
	case 't':
		if err := s.literal("true"); err != nil {
			return jsonErr(n.path, start, err)
		}
		n.col.append(true)
		return nil
	case 'f':
		if err := s.literal("false"); err != nil {
			return jsonErr(n.path, start, err)
		}
		n.col.append(false)
		return nil
	case '"':
		str, err := s.rawString()
		if err != nil {
			return jsonErr(n.path, s.pos, err)
		}
		v, ok := parseBool(str)
		if !ok {
			return jsonErr(n.path, start, errNotBool)
		}
		n.col.append(v)
		return nil
	}
	return jsonTypeErr(n.path, s, "a boolean")
}

// numberText returns the text of the number at pos, or of the string at
// pos (Flink reads numbers from strings too), with the start offset.
func numberText(s *jsonScanner, path string) (tok []byte, isInt bool, start int, err error) {
	start = s.pos
	switch c := s.peek(); {
	case c == '"':
		tok, err = s.rawString()
		if err != nil {
			return nil, false, start, jsonErr(path, s.pos, err)
		}
		return tok, true, start + 1, nil
	case c == '-' || c >= '0' && c <= '9':
		tok, isInt, err = s.number()
		if err != nil {
			return nil, false, start, jsonErr(path, s.pos, err)
		}
		return tok, isInt, start, nil
	}
	return nil, false, start, jsonTypeErr(path, s, "a number")
}

type jsonSigned[T int8 | int16 | int32 | int64] struct {
	col      *fixedColumn[T]
	path     string
	min, max int64
}

func (n *jsonSigned[T]) decode(s *jsonScanner) error {
	tok, isInt, start, err := numberText(s, n.path)
	if err != nil {
		return err
	}
	v, ok, inRange := parseInt(tok)
	if !isInt || !ok {
		return jsonErr(n.path, start, fmt.Errorf("%.64q is %w", tok, errNotInteger))
	}
	if !inRange || v < n.min || v > n.max {
		return jsonErr(n.path, start, errRange(tok, n.col.dtype))
	}
	n.col.append(T(v))
	return nil
}

type jsonUnsigned[T uint8 | uint16 | uint32 | uint64] struct {
	col  *fixedColumn[T]
	path string
	max  uint64
}

func (n *jsonUnsigned[T]) decode(s *jsonScanner) error {
	tok, isInt, start, err := numberText(s, n.path)
	if err != nil {
		return err
	}
	if len(tok) > 0 && tok[0] == '-' {
		if v, ok, _ := parseInt(tok); ok && isInt && v == 0 {
			n.col.append(0)
			return nil
		}
		return jsonErr(n.path, start, errRange(tok, n.col.dtype))
	}
	if len(tok) > 0 && tok[0] == '+' {
		tok = tok[1:]
	}
	v, ok, inRange := parseUint(tok)
	if !isInt || !ok {
		return jsonErr(n.path, start, fmt.Errorf("%.64q is %w", tok, errNotInteger))
	}
	if !inRange || v > n.max {
		return jsonErr(n.path, start, errRange(tok, n.col.dtype))
	}
	n.col.append(T(v))
	return nil
}

type jsonFloat[T float32 | float64] struct {
	col  *fixedColumn[T]
	path string
	bits int
}

func (n *jsonFloat[T]) decode(s *jsonScanner) error {
	tok, _, start, err := numberText(s, n.path)
	if err != nil {
		return err
	}
	f, ok := parseFloat(tok, n.bits)
	if !ok {
		return jsonErr(n.path, start, fmt.Errorf("%.64q is %w", tok, errNotNumber))
	}
	n.col.append(T(f))
	return nil
}

type jsonDecimal struct {
	col              *fixedColumn[decimal128.Num]
	path             string
	precision, scale int32
	parser           decimalParser
}

func (n *jsonDecimal) decode(s *jsonScanner) error {
	tok, _, start, err := numberText(s, n.path)
	if err != nil {
		return err
	}
	v, err := n.parser.parse(tok, n.precision, n.scale)
	if err != nil {
		return jsonErr(n.path, start, err)
	}
	n.col.append(v)
	return nil
}

// jsonString reads a string; like Flink, it also takes any other value as
// its JSON text (a number's digits, an object's source).
type jsonString[O int32 | int64] struct {
	col  *varColumn[O]
	path string
}

func (n *jsonString[O]) decode(s *jsonScanner) error {
	if s.peek() == '"' {
		var err error
		if n.col.data, err = s.appendString(n.col.data); err != nil {
			n.col.rollback()
			return jsonErr(n.path, s.pos, err)
		}
		n.col.commit()
		return nil
	}
	start := s.pos
	if err := s.skip(0); err != nil {
		return jsonErr(n.path, s.pos, err)
	}
	n.col.appendBytes(s.buf[start:s.pos])
	return nil
}

// jsonBinary reads base64 (standard alphabet, padded) strings.
type jsonBinary[O int32 | int64] struct {
	col  *varColumn[O]
	path string
}

var errBase64 = errors.New("invalid base64 (standard alphabet with padding)")

func (n *jsonBinary[O]) decode(s *jsonScanner) error {
	if s.peek() != '"' {
		return jsonTypeErr(n.path, s, "a base64 string")
	}
	start := s.pos
	str, err := s.rawString()
	if err != nil {
		return jsonErr(n.path, s.pos, err)
	}
	if n.col.data, err = base64.StdEncoding.AppendDecode(n.col.data, str); err != nil {
		n.col.rollback()
		return jsonErr(n.path, start, errBase64)
	}
	n.col.commit()
	return nil
}

type jsonFixedBinary struct {
	col     *fixedBinaryColumn
	path    string
	scratch []byte
}

func (n *jsonFixedBinary) decode(s *jsonScanner) error {
	if s.peek() != '"' {
		return jsonTypeErr(n.path, s, "a base64 string")
	}
	start := s.pos
	str, err := s.rawString()
	if err != nil {
		return jsonErr(n.path, s.pos, err)
	}
	if n.scratch, err = base64.StdEncoding.AppendDecode(n.scratch[:0], str); err != nil {
		return jsonErr(n.path, start, errBase64)
	}
	if len(n.scratch) != n.col.width {
		return jsonErr(n.path, start, fmt.Errorf("%d bytes for %s", len(n.scratch), n.col.dtype))
	}
	n.col.appendBytes(n.scratch)
	return nil
}

// jsonTimestamp reads date-time strings (RFC 3339, ISO-8601 or SQL) and
// integers, taken as counts of the column's unit since the epoch.
type jsonTimestamp struct {
	col   *fixedColumn[int64]
	path  string
	unit  arrow.TimeUnit
	dtype arrow.DataType
}

func (n *jsonTimestamp) decode(s *jsonScanner) error {
	start := s.pos
	if s.peek() == '"' {
		str, err := s.rawString()
		if err != nil {
			return jsonErr(n.path, s.pos, err)
		}
		secs, nanos, err := parseTimestamp(str)
		if err != nil {
			return jsonErr(n.path, start+1, err)
		}
		v, ok := toUnit(secs, nanos, n.unit)
		if !ok {
			return jsonErr(n.path, start+1, errRange(str, n.dtype))
		}
		n.col.append(v)
		return nil
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return jsonTypeErr(n.path, s, "a timestamp string or an integer")
	}
	v, err := jsonInteger(s, n.path, n.dtype, math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	n.col.append(v)
	return nil
}

// jsonInteger reads an integer literal in [min, max].
func jsonInteger(s *jsonScanner, path string, dt arrow.DataType, min, max int64) (int64, error) {
	start := s.pos
	tok, isInt, err := s.number()
	if err != nil {
		return 0, jsonErr(path, s.pos, err)
	}
	if !isInt {
		return 0, jsonErr(path, start, fmt.Errorf("%.64q is %w", tok, errNotInteger))
	}
	v, _, inRange := parseInt(tok)
	if !inRange || v < min || v > max {
		return 0, jsonErr(path, start, errRange(tok, dt))
	}
	return v, nil
}

// jsonDate reads yyyy-MM-dd strings and integers (days since the epoch).
type jsonDate struct {
	col  *fixedColumn[int32]
	path string
}

func (n *jsonDate) decode(s *jsonScanner) error {
	start := s.pos
	if s.peek() == '"' {
		str, err := s.rawString()
		if err != nil {
			return jsonErr(n.path, s.pos, err)
		}
		d, err := parseDate(str)
		if err != nil {
			return jsonErr(n.path, start+1, err)
		}
		n.col.append(d)
		return nil
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return jsonTypeErr(n.path, s, "a date string or an integer")
	}
	v, err := jsonInteger(s, n.path, n.col.dtype, math.MinInt32, math.MaxInt32)
	if err != nil {
		return err
	}
	n.col.append(int32(v))
	return nil
}

// jsonTime reads HH:mm:ss[.f] strings and integers (the column's unit
// since midnight).
type jsonTime[T int32 | int64] struct {
	col   *fixedColumn[T]
	path  string
	unit  arrow.TimeUnit
	dtype arrow.DataType
}

func (n *jsonTime[T]) decode(s *jsonScanner) error {
	start := s.pos
	per := unitPerSecond(n.unit)
	if s.peek() == '"' {
		str, err := s.rawString()
		if err != nil {
			return jsonErr(n.path, s.pos, err)
		}
		nanos, err := parseTimeOfDay(str)
		if err != nil {
			return jsonErr(n.path, start+1, err)
		}
		n.col.append(T(nanos / (1e9 / per)))
		return nil
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return jsonTypeErr(n.path, s, "a time string or an integer")
	}
	v, err := jsonInteger(s, n.path, n.dtype, 0, 86400*per-1)
	if err != nil {
		return err
	}
	n.col.append(T(v))
	return nil
}
