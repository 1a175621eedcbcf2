package sql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// arrowType maps a SQL type to the Arrow type weir's batches carry:
// BOOLEAN bool; TINYINT..BIGINT int8..int64; FLOAT float32; DOUBLE
// float64; DECIMAL(p, s) decimal128 (Flink's default DECIMAL(10, 0));
// CHAR, VARCHAR, STRING utf8; BINARY, VARBINARY, BYTES binary; DATE
// date32; TIME(p) time32[ms] or time64[us|ns]; TIMESTAMP(p) timestamp
// without a time zone and TIMESTAMP_LTZ(p) timestamp in UTC, in
// milliseconds for p <= 3 (Flink's TIMESTAMP(3)), microseconds for p <= 6
// (the default precision is 6, as in Flink) and nanoseconds above; ROW
// struct; ARRAY list; MAP map. MULTISET has no Arrow counterpart.
func arrowType(dt *DataType) (arrow.DataType, error) {
	param := func(i, def int) int {
		if i < len(dt.Params) {
			return dt.Params[i]
		}
		return def
	}
	switch dt.Name {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean, nil
	case "TINYINT":
		return arrow.PrimitiveTypes.Int8, nil
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16, nil
	case "INT":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, nil
	case "FLOAT":
		return arrow.PrimitiveTypes.Float32, nil
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, nil
	case "DECIMAL":
		p, s := param(0, 10), param(1, 0)
		if p < 1 || p > 38 || s < 0 || s > p {
			return nil, semErrorf(dt.Pos, "DECIMAL(%d, %d): precision must be 1..38 and scale 0..precision", p, s)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
	case "CHAR", "VARCHAR", "STRING":
		return arrow.BinaryTypes.String, nil
	case "BINARY", "VARBINARY", "BYTES":
		return arrow.BinaryTypes.Binary, nil
	case "DATE":
		return arrow.FixedWidthTypes.Date32, nil
	case "TIME":
		switch p := param(0, 0); {
		case p <= 3:
			return arrow.FixedWidthTypes.Time32ms, nil
		case p <= 6:
			return arrow.FixedWidthTypes.Time64us, nil
		default:
			return arrow.FixedWidthTypes.Time64ns, nil
		}
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		p := param(0, 6)
		if p < 0 || p > 9 {
			return nil, semErrorf(dt.Pos, "%s(%d): precision must be 0..9", dt.Name, p)
		}
		unit := arrow.Nanosecond
		switch {
		case p <= 3:
			unit = arrow.Millisecond
		case p <= 6:
			unit = arrow.Microsecond
		}
		tz := ""
		if dt.Name == "TIMESTAMP_LTZ" {
			tz = "UTC"
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case "ROW":
		fields := make([]arrow.Field, len(dt.Fields))
		for i, f := range dt.Fields {
			t, err := arrowType(f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: f.Name.Name, Type: t, Nullable: !f.Type.NotNull}
		}
		return arrow.StructOf(fields...), nil
	case "ARRAY":
		t, err := arrowType(dt.Elems[0])
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(t), nil
	case "MAP":
		k, err := arrowType(dt.Elems[0])
		if err != nil {
			return nil, err
		}
		v, err := arrowType(dt.Elems[1])
		if err != nil {
			return nil, err
		}
		return arrow.MapOf(k, v), nil
	}
	return nil, semErrorf(dt.Pos, "type %s is not supported", dt.Name)
}

// compatible reports whether a connector's actual type act can stand for
// the declared type decl: equal types, timestamps of the same unit (time
// zones aside: both are instants in UTC), strings for any string type,
// and ROWs whose declared fields all exist, by name, with compatible
// types (a ROW may declare fewer fields than the connector has).
func compatible(decl, act arrow.DataType) error {
	if arrow.TypeEqual(decl, act) {
		return nil
	}
	switch d := decl.(type) {
	case *arrow.TimestampType:
		if a, ok := act.(*arrow.TimestampType); ok && a.Unit == d.Unit {
			return nil
		}
	case *arrow.StructType:
		a, ok := act.(*arrow.StructType)
		if !ok {
			break
		}
		for _, f := range d.Fields() {
			i, ok := a.FieldIdx(f.Name)
			if !ok {
				return fmt.Errorf("ROW field %s: the connector has no such field (it has %s)", f.Name, act)
			}
			if err := compatible(f.Type, a.Field(i).Type); err != nil {
				return fmt.Errorf("ROW field %s: %w", f.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("declared %s, the connector gives %s", decl, act)
}
