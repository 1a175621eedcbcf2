package format

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
)

// avroRecordName is the name of the records of Avro schemas derived from
// Arrow schemas, nested records taking "_<field>" suffixes: the names
// Flink's AvroSchemaConverter gives, so weir and Flink register identical
// schemas for the same table and a subject's compatibility check does not
// flip between them.
const avroRecordName = "org.apache.flink.avro.generated.record"

// parseAvroSchema parses an Avro schema with its own name cache (hamba's
// default cache is global, and named types of unrelated schemas must not
// resolve against each other).
func parseAvroSchema(text string) (avro.Schema, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("invalid Avro schema: %w", err)
	}
	return s, nil
}

// AvroSchema returns the Avro schema (JSON) that the avro and
// avro-confluent encoders write rows of schema with: a record with one
// field per column, nullable columns as ["null", T] unions with a null
// default, timestamps as (local-)timestamp-millis/micros/nanos, decimals as
// bytes with the decimal logical type, lists as arrays and string-keyed
// maps as maps.
func AvroSchema(schema *arrow.Schema) (string, error) {
	var b avroJSON
	if err := b.record(avroRecordName, schema.Fields(), ""); err != nil {
		return "", err
	}
	if _, err := parseAvroSchema(string(b.buf)); err != nil {
		return "", fmt.Errorf("BUG: derived Avro schema does not parse: %w", err)
	}
	return string(b.buf), nil
}

type avroJSON struct{ buf []byte }

func (b *avroJSON) str(s string) {
	b.buf = strconv.AppendQuote(b.buf, s) // names are ASCII identifiers
}

func (b *avroJSON) raw(s string) { b.buf = append(b.buf, s...) }

func validAvroName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (b *avroJSON) record(name string, fields []arrow.Field, path string) error {
	b.raw(`{"type":"record","name":`)
	b.str(name)
	b.raw(`,"fields":[`)
	for i, f := range fields {
		p := join(path, f.Name)
		if !validAvroName(f.Name) {
			return fmt.Errorf("avro: column %s: %q is not a valid Avro field name", p, f.Name)
		}
		if i > 0 {
			b.raw(",")
		}
		b.raw(`{"name":`)
		b.str(f.Name)
		b.raw(`,"type":`)
		if err := b.nullable(f.Type, f.Nullable, name+"_"+f.Name, p); err != nil {
			return err
		}
		if f.Nullable {
			b.raw(`,"default":null`)
		}
		b.raw("}")
	}
	b.raw("]}")
	return nil
}

func (b *avroJSON) nullable(dt arrow.DataType, nullable bool, name, path string) error {
	if nullable {
		b.raw(`["null",`)
	}
	if err := b.typ(dt, name, path); err != nil {
		return err
	}
	if nullable {
		b.raw("]")
	}
	return nil
}

func (b *avroJSON) typ(dt arrow.DataType, name, path string) error {
	switch dt.ID() {
	case arrow.BOOL:
		b.raw(`"boolean"`)
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16:
		b.raw(`"int"`)
	case arrow.INT64, arrow.UINT32, arrow.UINT64:
		b.raw(`"long"`)
	case arrow.FLOAT32:
		b.raw(`"float"`)
	case arrow.FLOAT64:
		b.raw(`"double"`)
	case arrow.STRING, arrow.LARGE_STRING:
		b.raw(`"string"`)
	case arrow.BINARY, arrow.LARGE_BINARY:
		b.raw(`"bytes"`)
	case arrow.FIXED_SIZE_BINARY:
		b.raw(`{"type":"fixed","name":`)
		b.str(name)
		b.raw(`,"size":` + strconv.Itoa(dt.(*arrow.FixedSizeBinaryType).ByteWidth) + "}")
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		if t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("avro: column %s: %s has no Avro decimal (scale must be in [0, precision])", path, dt)
		}
		b.raw(fmt.Sprintf(`{"type":"bytes","logicalType":"decimal","precision":%d,"scale":%d}`, t.Precision, t.Scale))
	case arrow.DATE32:
		b.raw(`{"type":"int","logicalType":"date"}`)
	case arrow.TIME32:
		b.raw(`{"type":"int","logicalType":"time-millis"}`)
	case arrow.TIME64:
		if dt.(*arrow.Time64Type).Unit == arrow.Nanosecond {
			return fmt.Errorf("avro: column %s: %s has no Avro type (time-micros at most)", path, dt)
		}
		b.raw(`{"type":"long","logicalType":"time-micros"}`)
	case arrow.TIMESTAMP:
		t := dt.(*arrow.TimestampType)
		lt := "timestamp-"
		if t.TimeZone == "" {
			lt = "local-timestamp-"
		}
		switch t.Unit {
		case arrow.Second, arrow.Millisecond:
			lt += "millis"
		case arrow.Microsecond:
			lt += "micros"
		default:
			lt += "nanos"
		}
		b.raw(`{"type":"long","logicalType":"` + lt + `"}`)
	case arrow.STRUCT:
		return b.record(name, dt.(*arrow.StructType).Fields(), path)
	case arrow.LIST:
		ef := dt.(*arrow.ListType).ElemField()
		b.raw(`{"type":"array","items":`)
		if err := b.nullable(ef.Type, ef.Nullable, name, path+"[]"); err != nil {
			return err
		}
		b.raw("}")
	case arrow.MAP:
		mt := dt.(*arrow.MapType)
		if k := mt.KeyType().ID(); k != arrow.STRING && k != arrow.LARGE_STRING {
			return fmt.Errorf("avro: column %s: map keys of type %s have no Avro type (string keys only)", path, mt.KeyType())
		}
		item := mt.ItemField()
		b.raw(`{"type":"map","values":`)
		if err := b.nullable(item.Type, item.Nullable, name, path+"{}"); err != nil {
			return err
		}
		b.raw("}")
	default:
		return fmt.Errorf("avro: column %s: type %s is not supported by avro", path, dt)
	}
	return nil
}

// ArrowSchemaFromAvro returns the Arrow schema of the rows an Avro record
// schema (JSON) decodes to: one column per field; ["null", T] unions
// become nullable columns; int, long, float, double, boolean, string and
// bytes the matching Arrow types; enums strings; fixed fixed-size
// binaries; arrays lists; maps string-keyed maps; records structs; the
// logical types date, time-millis/micros, timestamp-millis/micros/nanos
// (timestamps with time zone UTC), local-timestamp-* (without) and decimal
// (precision at most 38) their Arrow types. Other unions and recursive
// records have no Arrow type.
func ArrowSchemaFromAvro(schemaJSON string) (*arrow.Schema, error) {
	s, err := parseAvroSchema(schemaJSON)
	if err != nil {
		return nil, err
	}
	return arrowSchemaOf(s)
}

func arrowSchemaOf(s avro.Schema) (*arrow.Schema, error) {
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro: the schema is a %s, not a record", s.Type())
	}
	fields, err := arrowFieldsOf(rec, "", map[string]bool{})
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// deref follows named-type references.
func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func arrowFieldsOf(rec *avro.RecordSchema, path string, visiting map[string]bool) ([]arrow.Field, error) {
	if visiting[rec.FullName()] {
		return nil, fmt.Errorf("avro: column %s: recursive record %s has no Arrow type", path, rec.FullName())
	}
	visiting[rec.FullName()] = true
	defer delete(visiting, rec.FullName())
	fields := make([]arrow.Field, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		p := join(path, f.Name())
		dt, nullable, err := arrowTypeOf(f.Type(), p, visiting)
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: f.Name(), Type: dt, Nullable: nullable})
	}
	return fields, nil
}

// avroLogical returns the logical type of s when it is valid for s's type
// (hamba leaves the ones it does not know, like timestamp-nanos, as
// properties).
func avroLogical(s avro.Schema) (string, *avro.DecimalLogicalSchema) {
	var l avro.LogicalSchema
	var props interface{ Prop(string) any }
	switch t := s.(type) {
	case *avro.PrimitiveSchema:
		l, props = t.Logical(), t
	case *avro.FixedSchema:
		l, props = t.Logical(), t
	default:
		return "", nil
	}
	if l != nil {
		d, _ := l.(*avro.DecimalLogicalSchema)
		return string(l.Type()), d
	}
	name, _ := props.Prop("logicalType").(string)
	switch name {
	case "timestamp-nanos", "local-timestamp-nanos":
		if s.Type() == avro.Long {
			return name, nil
		}
	}
	return "", nil
}

var errAvroUnion = errors.New("unions other than [\"null\", T] have no Arrow type")

func arrowTypeOf(s avro.Schema, path string, visiting map[string]bool) (arrow.DataType, bool, error) {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		var value avro.Schema
		nullable := false
		for _, t := range u.Types() {
			if t.Type() == avro.Null {
				nullable = true
				continue
			}
			if value != nil {
				return nil, false, fmt.Errorf("avro: column %s: %w", path, errAvroUnion)
			}
			value = t
		}
		if value == nil {
			return nil, false, fmt.Errorf("avro: column %s: a union of only null has no Arrow type", path)
		}
		dt, _, err := arrowTypeOf(value, path, visiting)
		return dt, nullable, err
	}
	logical, dec := avroLogical(s)
	switch logical {
	case "decimal":
		if dec.Precision() > 38 {
			return nil, false, fmt.Errorf("avro: column %s: decimal(%d, %d) is wider than decimal128", path, dec.Precision(), dec.Scale())
		}
		return &arrow.Decimal128Type{Precision: int32(dec.Precision()), Scale: int32(dec.Scale())}, false, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, false, nil
	case "time-millis":
		return arrow.FixedWidthTypes.Time32ms, false, nil
	case "time-micros":
		return arrow.FixedWidthTypes.Time64us, false, nil
	case "timestamp-millis":
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, false, nil
	case "timestamp-micros":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, false, nil
	case "timestamp-nanos":
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, false, nil
	case "local-timestamp-millis":
		return &arrow.TimestampType{Unit: arrow.Millisecond}, false, nil
	case "local-timestamp-micros":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, false, nil
	case "local-timestamp-nanos":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, false, nil
	}
	switch t := s.(type) {
	case *avro.NullSchema:
		return nil, false, fmt.Errorf("avro: column %s: null alone has no Arrow type", path)
	case *avro.RecordSchema:
		fields, err := arrowFieldsOf(t, path, visiting)
		if err != nil {
			return nil, false, err
		}
		return arrow.StructOf(fields...), false, nil
	case *avro.EnumSchema:
		return arrow.BinaryTypes.String, false, nil
	case *avro.FixedSchema:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Size()}, false, nil
	case *avro.ArraySchema:
		dt, nullable, err := arrowTypeOf(t.Items(), path+"[]", visiting)
		if err != nil {
			return nil, false, err
		}
		return arrow.ListOfField(arrow.Field{Name: "item", Type: dt, Nullable: nullable}), false, nil
	case *avro.MapSchema:
		dt, nullable, err := arrowTypeOf(t.Values(), path+"{}", visiting)
		if err != nil {
			return nil, false, err
		}
		return arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "value", Type: dt, Nullable: nullable}), false, nil
	case *avro.PrimitiveSchema:
		switch t.Type() {
		case avro.Boolean:
			return arrow.FixedWidthTypes.Boolean, false, nil
		case avro.Int:
			return arrow.PrimitiveTypes.Int32, false, nil
		case avro.Long:
			return arrow.PrimitiveTypes.Int64, false, nil
		case avro.Float:
			return arrow.PrimitiveTypes.Float32, false, nil
		case avro.Double:
			return arrow.PrimitiveTypes.Float64, false, nil
		case avro.String:
			return arrow.BinaryTypes.String, false, nil
		case avro.Bytes:
			return arrow.BinaryTypes.Binary, false, nil
		}
	}
	return nil, false, fmt.Errorf("avro: column %s: type %s is not supported", path, s.Type())
}
