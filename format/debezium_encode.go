package format

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weirflow/weir/arrowflow"
)

// DebeziumJSON is the name of the debezium-json format: Debezium change
// events in JSON. Its decoder is a ChangeDecoder reading the events as
// Flink's debezium-json format does (op c and r an insert, u an update,
// d a delete); its encoder a ChangeEncoder writing each change row as an
// event, as Flink's debezium-json serializer does (see changeEncoder).
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

// changeEncoder writes each row as one change event: the json format's
// object of the row (the same column encoders and options, so that a
// consumer reads the row with the json format's rules) between the
// format's head and tail for its kind. Encode, without row kinds, writes
// every row as an insert.
//
//	debezium-json   Insert, UpdateAfter    {"before":null,"after":{row},"op":"c"}
//	                UpdateBefore, Delete   {"before":{row},"after":null,"op":"d"}
//	canal-json      Insert, UpdateAfter    {"data":[{row}],"type":"INSERT"}
//	                UpdateBefore, Delete   {"data":[{row}],"type":"DELETE"}
//	maxwell-json    Insert, UpdateAfter    {"data":{row},"type":"insert"}
//	                UpdateBefore, Delete   {"data":{row},"type":"delete"}
//
// As Flink's serializers, an update is written as a delete of the old
// row and an insert of the new one.
type changeEncoder struct {
	name                   string
	row                    *jsonEncoder
	addHead, addTail       string
	removeHead, removeTail string
}

var _ ChangeEncoder = (*changeEncoder)(nil)

func newChangeEncoder(cfg Config, opts jsonOptions, addHead, addTail, removeHead, removeTail string) (*changeEncoder, error) {
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	fields, err := compileJSONFields(cfg.Schema.Fields(), "", opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	return &changeEncoder{name: cfg.Name, row: &jsonEncoder{schema: cfg.Schema, opts: opts, fields: fields},
		addHead: addHead, addTail: addTail, removeHead: removeHead, removeTail: removeTail}, nil
}

func newDebeziumEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, include, err := parseDebeziumOptions(o)
	if err != nil {
		return nil, err
	}
	if include {
		// Flink refuses it too: its Debezium JSON serialization writes no schema.
		return nil, errors.New("debezium-json: option debezium-json.schema-include = true is not supported yet for writing (nor by Flink's debezium-json serialization): weir writes the plain envelope {before, after, op}; it is supported for reading")
	}
	return newChangeEncoder(cfg, opts, debeziumCreateHead, debeziumCreateTail, debeziumDeleteHead, debeziumDeleteTail)
}

// parseDebeziumOptions reads Flink's debezium-json options: the json
// options the rows are read and written with, and
// debezium-json.schema-include.
func parseDebeziumOptions(o *options) (jsonOptions, bool, error) {
	include, err := o.boolean("debezium-json.schema-include", false)
	if err != nil {
		return jsonOptions{}, false, err
	}
	opts, err := parseChangeJSONOptions(o, DebeziumJSON)
	return opts, include, err
}

// Encode implements Encoder: every row of rec as an insert.
func (e *changeEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	return e.EncodeChanges(rec, nil, emit)
}

// EncodeChanges implements ChangeEncoder: one change event per row of
// rec, an insert event for Insert and UpdateAfter, a delete event for
// UpdateBefore and Delete.
func (e *changeEncoder) EncodeChanges(rec arrow.RecordBatch, kinds []arrowflow.RowKind, emit func(row int, value []byte) error) error {
	if err := checkSchema(e.name, e.row.schema, rec); err != nil {
		return err
	}
	rows := int(rec.NumRows())
	if kinds != nil && len(kinds) != rows {
		return fmt.Errorf("BUG: %s: %d row kinds for a record of %d rows", e.name, len(kinds), rows)
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
			b = append(b, e.addHead...)
			b = obj.write(b, i)
			b = append(b, e.addTail...)
		case arrowflow.UpdateBefore, arrowflow.Delete:
			b = append(b, e.removeHead...)
			b = obj.write(b, i)
			b = append(b, e.removeTail...)
		default:
			return fmt.Errorf("BUG: %s: row %d has row kind %v", e.name, i, k)
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
