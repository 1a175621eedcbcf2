package format

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// csvOptions are the csv format's options.
type csvOptions struct {
	delim     byte   // csv.field-delimiter
	quote     byte   // csv.quote-character
	quoting   bool   // !csv.disable-quote-character
	escape    byte   // csv.escape-character
	hasEscape bool   // csv.escape-character is set
	null      string // csv.null-literal; "" by default
}

func parseCSVOptions(o *options) (csvOptions, error) {
	opts := csvOptions{delim: ',', quote: '"', quoting: true}
	var err error
	if opts.delim, _, err = o.char("csv.field-delimiter", ','); err != nil {
		return opts, err
	}
	if opts.quote, _, err = o.char("csv.quote-character", '"'); err != nil {
		return opts, err
	}
	disable, err := o.boolean("csv.disable-quote-character", false)
	if err != nil {
		return opts, err
	}
	opts.quoting = !disable
	if opts.escape, opts.hasEscape, err = o.char("csv.escape-character", 0); err != nil {
		return opts, err
	}
	opts.null = o.str("csv.null-literal", "")
	if err := o.reject("csv.allow-comments", "every value is one row, and a comment would be a value without a row"); err != nil {
		return opts, err
	}
	if err := o.reject("csv.ignore-parse-errors", "bad records are the connector's policy"); err != nil {
		return opts, err
	}
	switch {
	case opts.delim == '\r' || opts.delim == '\n':
		return opts, errors.New("csv: the field delimiter cannot be a line break")
	case opts.quoting && opts.quote == opts.delim:
		return opts, errors.New("csv: the quote character and the field delimiter are the same")
	case opts.hasEscape && (opts.escape == opts.delim || opts.quoting && opts.escape == opts.quote):
		return opts, errors.New("csv: the escape character is the field delimiter or the quote character")
	}
	return opts, nil
}

// csvDecoder decodes one CSV line per value, fields in schema order.
//
// Nulls follow PostgreSQL's CSV convention: an unquoted field equal to the
// null literal (by default the empty string) is null, a quoted one is the
// string itself, so "" is an empty string and an empty field a null. An
// unquoted empty field is null in non-string columns whatever the literal.
// Fields of non-string columns are trimmed of spaces, as Flink does.
type csvDecoder struct {
	schema *arrow.Schema
	opts   csvOptions
}

func newCSVDecoder(schema *arrow.Schema, opts csvOptions) (*csvDecoder, error) {
	cols, err := newColumns(schema)
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	if _, err := compileCSV(cols, opts); err != nil {
		return nil, err
	}
	return &csvDecoder{schema: schema, opts: opts}, nil
}

func (d *csvDecoder) Schema() *arrow.Schema { return d.schema }

func (d *csvDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: csv: schema validated by newCSVDecoder: " + err.Error())
	}
	dec, err := compileCSV(cols, d.opts)
	if err != nil {
		panic("BUG: csv: schema validated by newCSVDecoder: " + err.Error())
	}
	return &batchBuilder{format: "csv", mem: mem, cols: cols, dec: dec}
}

// csvParser parses one field's text into its column.
type csvParser interface {
	parse(text []byte) error
}

type csvField struct {
	name     string
	nullable bool
	isString bool // string or binary: not trimmed, empty is not null
	utf8     bool // string: the field's bytes must be UTF-8
	col      column
	p        csvParser
}

type csvRow struct {
	opts    csvOptions
	fields  []csvField
	scratch []byte
}

func compileCSV(cols *columns, opts csvOptions) (*csvRow, error) {
	r := &csvRow{opts: opts}
	for i, f := range cols.schema.Fields() {
		p, err := compileCSVParser(cols.cols[i])
		if err != nil {
			return nil, fmt.Errorf("csv: column %s: %w", f.Name, err)
		}
		id := f.Type.ID()
		text := id == arrow.STRING || id == arrow.LARGE_STRING
		r.fields = append(r.fields, csvField{name: f.Name, nullable: f.Nullable, col: cols.cols[i], p: p,
			isString: text || id == arrow.BINARY || id == arrow.LARGE_BINARY, utf8: text})
	}
	return r, nil
}

func csvErr(field string, off int, err error) error {
	return &RecordError{Format: "csv", Field: field, Offset: off, Err: err}
}

var errCSVExtra = errors.New("more fields than columns")

func (r *csvRow) decodeRow(value []byte) error {
	pos := 0
	for i := range r.fields {
		f := &r.fields[i]
		if i > 0 {
			if pos >= len(value) || value[pos] != r.opts.delim {
				return csvErr(f.name, pos, errors.New("missing field"))
			}
			pos++
		}
		start := pos
		text, quoted, next, err := r.field(value, pos)
		if err != nil {
			return csvErr(f.name, next, err)
		}
		pos = next
		// A string field is checked as written, so that the offset is
		// that of the bad byte in the value. Quotes and escapes are ASCII,
		// and taking ASCII bytes out of UTF-8 leaves UTF-8, so the
		// unescaped text is UTF-8 too.
		if f.utf8 {
			if off := invalidUTF8At(value[start:pos]); off >= 0 {
				return csvErr(f.name, start+off, ErrInvalidUTF8)
			}
		}
		// The null literal is matched before unescaping (\N with escape
		// character \ is PostgreSQL's text null).
		if raw := value[start:pos]; !quoted && (string(raw) == r.opts.null || len(raw) == 0 && !f.isString) {
			if !f.nullable {
				return csvErr(f.name, start, errNullNotAllowed)
			}
			f.col.appendNull()
			continue
		}
		if !f.isString {
			text = bytes.TrimSpace(text)
		}
		if err := f.p.parse(text); err != nil {
			return csvErr(f.name, start, err)
		}
	}
	// One line terminator may end the value.
	switch {
	case pos == len(value):
	case value[pos] == '\n' && pos+1 == len(value):
	case value[pos] == '\r' && (pos+1 == len(value) || value[pos+1] == '\n' && pos+2 == len(value)):
	case value[pos] == r.opts.delim:
		return csvErr("", pos, errCSVExtra)
	default:
		return csvErr("", pos, errors.New("more than one line"))
	}
	return nil
}

// field reads the field at pos, returning its text (a sub-slice of value,
// or the row's scratch when it had quotes or escapes to undo), whether it
// was quoted and the position after it (or of the error).
func (r *csvRow) field(value []byte, pos int) (text []byte, quoted bool, next int, err error) {
	o := &r.opts
	if o.quoting && pos < len(value) && value[pos] == o.quote {
		r.scratch = r.scratch[:0]
		i := pos + 1
		start := i
		for {
			if i >= len(value) {
				return nil, true, pos, errors.New("unterminated quoted field")
			}
			c := value[i]
			switch {
			case c == o.quote:
				r.scratch = append(r.scratch, value[start:i]...)
				if i+1 < len(value) && value[i+1] == o.quote {
					r.scratch = append(r.scratch, o.quote)
					i += 2
					start = i
					continue
				}
				i++
				if i < len(value) && value[i] != o.delim && value[i] != '\r' && value[i] != '\n' {
					return nil, true, i, errors.New("data after a closing quote")
				}
				return r.scratch, true, i, nil
			case o.hasEscape && c == o.escape:
				if i+1 >= len(value) {
					return nil, true, i, errors.New("escape character at the end")
				}
				r.scratch = append(r.scratch, value[start:i]...)
				r.scratch = append(r.scratch, value[i+1])
				i += 2
				start = i
			default:
				i++
			}
		}
	}
	i := pos
	escaped := false
	for i < len(value) {
		c := value[i]
		if c == o.delim || c == '\r' || c == '\n' {
			break
		}
		if o.hasEscape && c == o.escape {
			escaped = true
			i += 2
			continue
		}
		i++
	}
	if i > len(value) {
		return nil, false, len(value) - 1, errors.New("escape character at the end")
	}
	if !escaped {
		return value[pos:i], false, i, nil
	}
	r.scratch = r.scratch[:0]
	for j := pos; j < i; j++ {
		if value[j] == o.escape {
			j++
		}
		r.scratch = append(r.scratch, value[j])
	}
	return r.scratch, false, i, nil
}

func compileCSVParser(col column) (csvParser, error) {
	dt := col.dataType()
	switch dt.ID() {
	case arrow.BOOL:
		return csvBool{col.(*boolColumn)}, nil
	case arrow.INT8:
		return csvSigned[int8]{col.(*fixedColumn[int8]), math.MinInt8, math.MaxInt8}, nil
	case arrow.INT16:
		return csvSigned[int16]{col.(*fixedColumn[int16]), math.MinInt16, math.MaxInt16}, nil
	case arrow.INT32:
		return csvSigned[int32]{col.(*fixedColumn[int32]), math.MinInt32, math.MaxInt32}, nil
	case arrow.INT64:
		return csvSigned[int64]{col.(*fixedColumn[int64]), math.MinInt64, math.MaxInt64}, nil
	case arrow.UINT8:
		return csvUnsigned[uint8]{col.(*fixedColumn[uint8]), math.MaxUint8}, nil
	case arrow.UINT16:
		return csvUnsigned[uint16]{col.(*fixedColumn[uint16]), math.MaxUint16}, nil
	case arrow.UINT32:
		return csvUnsigned[uint32]{col.(*fixedColumn[uint32]), math.MaxUint32}, nil
	case arrow.UINT64:
		return csvUnsigned[uint64]{col.(*fixedColumn[uint64]), math.MaxUint64}, nil
	case arrow.FLOAT32:
		return csvFloat[float32]{col.(*fixedColumn[float32]), 32}, nil
	case arrow.FLOAT64:
		return csvFloat[float64]{col.(*fixedColumn[float64]), 64}, nil
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		return &csvDecimal{col: col.(*fixedColumn[decimal128.Num]), precision: t.Precision, scale: t.Scale}, nil
	case arrow.STRING:
		return csvString[int32]{col.(*varColumn[int32])}, nil
	case arrow.LARGE_STRING:
		return csvString[int64]{col.(*varColumn[int64])}, nil
	case arrow.BINARY:
		return csvBinary[int32]{col.(*varColumn[int32])}, nil
	case arrow.LARGE_BINARY:
		return csvBinary[int64]{col.(*varColumn[int64])}, nil
	case arrow.FIXED_SIZE_BINARY:
		return &csvFixedBinary{col: col.(*fixedBinaryColumn)}, nil
	case arrow.TIMESTAMP:
		return csvTimestamp{col.(*fixedColumn[int64]), dt.(*arrow.TimestampType).Unit}, nil
	case arrow.DATE32:
		return csvDate{col.(*fixedColumn[int32])}, nil
	case arrow.TIME32:
		return csvTime[int32]{col.(*fixedColumn[int32]), dt.(*arrow.Time32Type).Unit}, nil
	case arrow.TIME64:
		return csvTime[int64]{col.(*fixedColumn[int64]), dt.(*arrow.Time64Type).Unit}, nil
	}
	return nil, fmt.Errorf("type %s is not supported by csv", dt)
}

type csvBool struct{ col *boolColumn }

func (p csvBool) parse(t []byte) error {
	v, ok := parseBool(t)
	if !ok {
		return errNotBool
	}
	p.col.append(v)
	return nil
}

type csvSigned[T int8 | int16 | int32 | int64] struct {
	col      *fixedColumn[T]
	min, max int64
}

func (p csvSigned[T]) parse(t []byte) error {
	v, ok, inRange := parseInt(t)
	if !ok {
		return fmt.Errorf("%.64q is %w", t, errNotInteger)
	}
	if !inRange || v < p.min || v > p.max {
		return errRange(t, p.col.dtype)
	}
	p.col.append(T(v))
	return nil
}

type csvUnsigned[T uint8 | uint16 | uint32 | uint64] struct {
	col *fixedColumn[T]
	max uint64
}

func (p csvUnsigned[T]) parse(t []byte) error {
	u := t
	if len(u) > 0 && u[0] == '+' {
		u = u[1:]
	}
	v, ok, inRange := parseUint(u)
	if !ok {
		if v, ok, _ := parseInt(t); ok && v == 0 {
			p.col.append(0)
			return nil
		} else if ok {
			return errRange(t, p.col.dtype)
		}
		return fmt.Errorf("%.64q is %w", t, errNotInteger)
	}
	if !inRange || v > p.max {
		return errRange(t, p.col.dtype)
	}
	p.col.append(T(v))
	return nil
}

type csvFloat[T float32 | float64] struct {
	col  *fixedColumn[T]
	bits int
}

func (p csvFloat[T]) parse(t []byte) error {
	f, ok := parseFloat(t, p.bits)
	if !ok {
		return fmt.Errorf("%.64q is %w", t, errNotNumber)
	}
	p.col.append(T(f))
	return nil
}

type csvDecimal struct {
	col              *fixedColumn[decimal128.Num]
	precision, scale int32
	parser           decimalParser
}

func (p *csvDecimal) parse(t []byte) error {
	v, err := p.parser.parse(t, p.precision, p.scale)
	if err != nil {
		return err
	}
	p.col.append(v)
	return nil
}

type csvString[O int32 | int64] struct{ col *varColumn[O] }

// parse appends t, which decodeRow has checked to be UTF-8.
func (p csvString[O]) parse(t []byte) error {
	p.col.appendBytes(t)
	return nil
}

// csvBinary reads base64, as Flink's csv format writes bytes.
type csvBinary[O int32 | int64] struct{ col *varColumn[O] }

func (p csvBinary[O]) parse(t []byte) error {
	var err error
	if p.col.data, err = base64.StdEncoding.AppendDecode(p.col.data, t); err != nil {
		p.col.rollback()
		return errBase64
	}
	p.col.commit()
	return nil
}

type csvFixedBinary struct {
	col     *fixedBinaryColumn
	scratch []byte
}

func (p *csvFixedBinary) parse(t []byte) error {
	var err error
	if p.scratch, err = base64.StdEncoding.AppendDecode(p.scratch[:0], t); err != nil {
		return errBase64
	}
	if len(p.scratch) != p.col.width {
		return fmt.Errorf("%d bytes for %s", len(p.scratch), p.col.dtype)
	}
	p.col.appendBytes(p.scratch)
	return nil
}

// csvTimestamp reads date-time text, or an integer count of the column's
// unit since the epoch.
type csvTimestamp struct {
	col  *fixedColumn[int64]
	unit arrow.TimeUnit
}

func (p csvTimestamp) parse(t []byte) error {
	if v, ok, inRange := parseInt(t); ok {
		if !inRange {
			return errRange(t, p.col.dtype)
		}
		p.col.append(v)
		return nil
	}
	secs, nanos, err := parseTimestamp(t)
	if err != nil {
		return err
	}
	v, ok := toUnit(secs, nanos, p.unit)
	if !ok {
		return errRange(t, p.col.dtype)
	}
	p.col.append(v)
	return nil
}

type csvDate struct{ col *fixedColumn[int32] }

func (p csvDate) parse(t []byte) error {
	if v, ok, inRange := parseInt(t); ok {
		if !inRange || v < math.MinInt32 || v > math.MaxInt32 {
			return errRange(t, p.col.dtype)
		}
		p.col.append(int32(v))
		return nil
	}
	d, err := parseDate(t)
	if err != nil {
		return err
	}
	p.col.append(d)
	return nil
}

type csvTime[T int32 | int64] struct {
	col  *fixedColumn[T]
	unit arrow.TimeUnit
}

func (p csvTime[T]) parse(t []byte) error {
	per := unitPerSecond(p.unit)
	if v, ok, inRange := parseInt(t); ok {
		if !inRange || v < 0 || v >= 86400*per {
			return errRange(t, p.col.dtype)
		}
		p.col.append(T(v))
		return nil
	}
	nanos, err := parseTimeOfDay(t)
	if err != nil {
		return err
	}
	p.col.append(T(nanos / (1e9 / per)))
	return nil
}
