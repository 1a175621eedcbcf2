package format

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weirflow/weir/arrowflow"
)

// DebeziumJSON is the name of the debezium-json format: a sink format
// writing each change row as a Debezium change event, as Flink's
// debezium-json serializer does (see debeziumEncoder).
const DebeziumJSON = "debezium-json"

// The envelope's pieces around the row: an added row (Insert,
// UpdateAfter) is a create event, a removed one (UpdateBefore, Delete) a
// delete event. Flink writes an update as a delete of the old row and a
// create of the new one, never as op "u".
const (
	debeziumCreateHead = `{"before":null,"after":`
	debeziumCreateTail = `,"op":"c"}`
	debeziumDeleteHead = `{"before":`
	debeziumDeleteTail = `,"after":null,"op":"d"}`
)

// debeziumEncoder writes each row as one JSON object
// {"before": ..., "after": ..., "op": ...}:
//
//	Insert, UpdateAfter       {"before":null,"after":{row},"op":"c"}
//	UpdateBefore, Delete      {"before":{row},"after":null,"op":"d"}
//
// The row is the json format's object of the row (the same column
// encoders and options), so a consumer reads "before" and "after" with
// the json format's rules. Encode, without row kinds, writes every row as
// an insert.
type debeziumEncoder struct {
	row *jsonEncoder
}

var _ ChangeEncoder = (*debeziumEncoder)(nil)

func newDebeziumEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, err := parseDebeziumOptions(o)
	if err != nil {
		return nil, err
	}
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	fields, err := compileJSONFields(cfg.Schema.Fields(), "", opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DebeziumJSON, err)
	}
	return &debeziumEncoder{row: &jsonEncoder{schema: cfg.Schema, opts: opts, fields: fields}}, nil
}

// parseDebeziumOptions reads Flink's debezium-json options into the json
// options the rows are written with. debezium-json.schema-include (a
// "schema" and "payload" envelope) is refused when true.
func parseDebeziumOptions(o *options) (jsonOptions, error) {
	var opts jsonOptions
	include, err := o.boolean("debezium-json.schema-include", false)
	if err != nil {
		return opts, err
	}
	if include {
		return opts, errors.New("debezium-json: option debezium-json.schema-include = true is not supported yet: weir writes the plain envelope {before, after, op} only")
	}
	opt := "debezium-json.timestamp-format.standard"
	switch v := o.str(opt, "RFC-3339"); strings.ToUpper(v) {
	case "RFC-3339", "RFC3339":
		opts.tsStyle = styleRFC3339
	case "SQL":
		opts.tsStyle = styleSQL
	case "ISO-8601", "ISO8601":
		opts.tsStyle = styleISO
	default:
		return opts, fmt.Errorf("debezium-json: option %s: %q is not SQL, ISO-8601 or RFC-3339", opt, v)
	}
	// As for json: Arrow map keys are never null, so the null-key policy
	// never applies; the options are accepted (and checked) for Flink DDL.
	switch v := o.str("debezium-json.map-null-key.mode", "FAIL"); strings.ToUpper(v) {
	case "FAIL", "DROP", "LITERAL":
	default:
		return opts, fmt.Errorf("debezium-json: option debezium-json.map-null-key.mode: %q is not FAIL, DROP or LITERAL", v)
	}
	o.str("debezium-json.map-null-key.literal", "null")
	if err := o.reject("debezium-json.ignore-parse-errors", "bad records are the connector's policy"); err != nil {
		return opts, err
	}
	return opts, nil
}

// Encode implements Encoder: every row of rec as an insert (op "c").
func (e *debeziumEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	return e.EncodeChanges(rec, nil, emit)
}

// EncodeChanges implements ChangeEncoder: one change event per row of
// rec, a create event for Insert and UpdateAfter, a delete event for
// UpdateBefore and Delete.
func (e *debeziumEncoder) EncodeChanges(rec arrow.RecordBatch, kinds []arrowflow.RowKind, emit func(row int, value []byte) error) error {
	if err := checkSchema(DebeziumJSON, e.row.schema, rec); err != nil {
		return err
	}
	rows := int(rec.NumRows())
	if kinds != nil && len(kinds) != rows {
		return fmt.Errorf("BUG: %s: %d row kinds for a record of %d rows", DebeziumJSON, len(kinds), rows)
	}
	obj := e.row.bindObject(rec)
	bp, _ := e.row.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer e.row.bufs.Put(bp)
	for i := range rows {
		k := arrowflow.Insert
		if kinds != nil {
			k = kinds[i]
		}
		b := (*bp)[:0]
		switch k {
		case arrowflow.Insert, arrowflow.UpdateAfter:
			b = append(b, debeziumCreateHead...)
			b = obj.write(b, i)
			b = append(b, debeziumCreateTail...)
		case arrowflow.UpdateBefore, arrowflow.Delete:
			b = append(b, debeziumDeleteHead...)
			b = obj.write(b, i)
			b = append(b, debeziumDeleteTail...)
		default:
			return fmt.Errorf("BUG: %s: row %d has row kind %v", DebeziumJSON, i, k)
		}
		*bp = b
		if err := emit(i, b); err != nil {
			return err
		}
	}
	return nil
}

// bindObject binds the encoder's compiled fields to rec's columns: the
// writer of one row's JSON object.
func (e *jsonEncoder) bindObject(rec arrow.RecordBatch) *jsonObjectW {
	obj := &jsonObjectW{ignoreNull: e.opts.ignoreNullFields, fields: make([]jsonFieldW, len(e.fields))}
	for j, f := range e.fields {
		col := rec.Column(j)
		obj.fields[j] = jsonFieldW{key: f.key, mask: maskOf(col), w: f.bind(col)}
	}
	return obj
}
