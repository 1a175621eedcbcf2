package format

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rawSchema is the raw format's default schema: the value as bytes.
var rawSchema = arrow.NewSchema([]arrow.Field{{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true}}, nil)

func parseRawOptions(o *options) error {
	if cs := o.str("raw.charset", "UTF-8"); !strings.EqualFold(cs, "UTF-8") && !strings.EqualFold(cs, "UTF8") {
		return fmt.Errorf("raw: option raw.charset: %q is not supported (only UTF-8)", cs)
	}
	// Endianness only matters for numeric columns, which raw does not take.
	switch e := o.str("raw.endianness", "big-endian"); e {
	case "big-endian", "little-endian":
	default:
		return fmt.Errorf("raw: option raw.endianness: %q is not big-endian or little-endian", e)
	}
	return nil
}

// checkRawSchema accepts one string or binary column.
func checkRawSchema(schema *arrow.Schema) error {
	if schema.NumFields() != 1 {
		return fmt.Errorf("raw: the schema must have one column, not %d", schema.NumFields())
	}
	switch t := schema.Field(0).Type; t.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING, arrow.LARGE_STRING:
		return nil
	default:
		return fmt.Errorf("raw: column %s: type %s is not supported (binary or string only)", schema.Field(0).Name, t)
	}
}

// rawDecoder takes the whole value as one column. A nil value (a Kafka
// tombstone) is a null, an empty one an empty string or binary; a string
// column takes only valid UTF-8.
type rawDecoder struct {
	schema *arrow.Schema
}

func (d *rawDecoder) Schema() *arrow.Schema { return d.schema }

func (d *rawDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: raw: schema validated by NewDecoder: " + err.Error())
	}
	f := d.schema.Field(0)
	r := &rawRow{field: f.Name, nullable: f.Nullable}
	switch c := cols.cols[0].(type) {
	case *varColumn[int32]:
		r.col, r.appendBytes = c, c.appendBytes
	case *varColumn[int64]:
		r.col, r.appendBytes = c, c.appendBytes
	}
	id := f.Type.ID()
	r.utf8 = id == arrow.STRING || id == arrow.LARGE_STRING
	return &batchBuilder{format: "raw", mem: mem, cols: cols, dec: r}
}

type rawRow struct {
	field       string
	nullable    bool
	utf8        bool
	col         column
	appendBytes func([]byte)
}

func (r *rawRow) decodeRow(value []byte) error {
	if value == nil {
		if !r.nullable {
			return &RecordError{Format: "raw", Field: r.field, Offset: -1, Err: errNullNotAllowed}
		}
		r.col.appendNull()
		return nil
	}
	if r.utf8 {
		if off := invalidUTF8At(value); off >= 0 {
			return &RecordError{Format: "raw", Field: r.field, Offset: off, Err: ErrInvalidUTF8}
		}
	}
	r.appendBytes(value)
	return nil
}

// rawEncoder emits the column's bytes as the value, and a nil value (a
// tombstone) for a null; a string column's invalid UTF-8 is written as
// U+FFFD, so that the raw decoder reads every value back.
type rawEncoder struct {
	schema *arrow.Schema
}

func (e *rawEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	if err := checkSchema("raw", e.schema, rec); err != nil {
		return err
	}
	col := rec.Column(0)
	mask := maskOf(col)
	var at func(int) []byte
	id := col.DataType().ID()
	switch id {
	case arrow.BINARY, arrow.STRING:
		at = varOf[int32](col).at
	default:
		at = varOf[int64](col).at
	}
	text := id == arrow.STRING || id == arrow.LARGE_STRING
	var repaired []byte
	for i := range int(rec.NumRows()) {
		var v []byte
		if !mask.isNull(i) {
			if v = at(i); v == nil {
				v = []byte{}
			}
			if text && !utf8.Valid(v) {
				repaired = appendValidUTF8(repaired[:0], v)
				v = repaired
			}
		}
		if err := emit(i, v); err != nil {
			return err
		}
	}
	return nil
}
