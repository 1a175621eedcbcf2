package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirflow/weir/arrowflow"
)

// DebeziumAvroConfluent is the name of the debezium-avro-confluent format:
// Debezium change events in Avro through a Confluent schema registry.
//
// A value is the Confluent wire format (magic byte 0, the writer schema's
// id in 4 bytes big-endian, Avro binary) of Debezium's envelope: a record
// with the fields before and after (each a union of null and the row's
// record), op (a string) and others (source, ts_ms, transaction, ...),
// which are skipped. Its decoder is a ChangeDecoder reading the events as
// Flink's debezium-avro-confluent format does:
//
//	op "c" (create), "r" (snapshot read)   +I after
//	op "u" (update)                        -U before, +U after
//	op "d" (delete)                        -D before
//
// An empty value (Debezium's tombstone after a delete) is skipped. An
// update or delete without before (Postgres without REPLICA IDENTITY
// FULL), an insert or update without after and an unknown op are record
// errors. The rows are read with the avro-confluent format's schema
// resolution (the writer schema's row record against the columns), so a
// later writer schema, with fields added or numbers widened, decodes.
//
// Its encoder is a ChangeEncoder writing each row as an event, as Flink's
// serializer does: Insert and UpdateAfter as op "c" with after,
// UpdateBefore and Delete as op "d" with before; an update is a delete of
// the old row and a create of the new one. It registers the envelope
// schema under the subject: by default the schema Flink derives,
// {before: [null, row], after: [null, row], op: [null, string]} with
// Flink's record names.
//
// Options, as Flink's (debezium-avro-confluent.<name>):
//
//	url                  the registry's URL (also schema-registry.url); several separated by commas
//	subject              the subject encoders register under (required for encoders), and that
//	                     decoders without a schema take the latest envelope of (also
//	                     schema-registry.subject)
//	schema               the envelope schema (Avro JSON) to register, or, for a decoder
//	                     without a schema, to take the columns from (its after record)
//	basic-auth.user-info, basic-auth.credentials-source (USER_INFO)
//	bearer-auth.token, bearer-auth.credentials-source (STATIC_TOKEN)
const DebeziumAvroConfluent = "debezium-avro-confluent"

const debeziumAvroPrefix = DebeziumAvroConfluent + "."

// The registry options of debezium-avro-confluent that are those of
// avro-confluent under another prefix.
var debeziumAvroRegistryOptions = []string{
	"url", "schema-registry.url",
	"basic-auth.user-info", "basic-auth.credentials-source",
	"bearer-auth.token", "bearer-auth.credentials-source",
}

// renamedError is an error of the avro-confluent code paths told as
// debezium-avro-confluent's: its text names this format and its options.
type renamedError struct {
	err  error
	text string
}

func (e *renamedError) Error() string { return e.text }
func (e *renamedError) Unwrap() error { return e.err }

// asDebeziumAvro renames an error of the avro-confluent code paths. A
// *RecordError keeps its type, with this format's name.
func asDebeziumAvro(err error) error {
	if err == nil {
		return nil
	}
	var re *RecordError
	if errors.As(err, &re) && re.Format != DebeziumAvroConfluent {
		c := *re
		c.Format = DebeziumAvroConfluent
		return &c
	}
	text := err.Error()
	if strings.Contains(text, "avro-confluent") && !strings.Contains(text, DebeziumAvroConfluent) {
		text = strings.ReplaceAll(text, "avro-confluent.", debeziumAvroPrefix)
		text = strings.Replace(text, "avro-confluent: ", DebeziumAvroConfluent+": ", 1)
		return &renamedError{err: err, text: text}
	}
	return err
}

// debeziumAvroRegistry returns cfg's registry client, or one built from
// the format's options, read through the avro-confluent code path.
func debeziumAvroRegistry(o *options, given *sr.Client) (*sr.Client, error) {
	sub := make(map[string]string)
	for _, k := range debeziumAvroRegistryOptions {
		if v, ok := o.get(debeziumAvroPrefix + k); ok {
			sub["avro-confluent."+k] = v
		}
	}
	cl, err := registryClient(newOptions("avro-confluent", sub), given)
	return cl, asDebeziumAvro(err)
}

// debeziumAvroSubject reads the subject option (or its fallback key).
func debeziumAvroSubject(o *options) (string, bool, error) {
	s, ok := o.get(debeziumAvroPrefix + "subject")
	if alt, okAlt := o.get(debeziumAvroPrefix + "schema-registry.subject"); okAlt {
		if ok && alt != s {
			return "", false, errors.New("debezium-avro-confluent: options subject and schema-registry.subject disagree")
		}
		s, ok = alt, true
	}
	return s, ok, nil
}

// debeziumAvroEnvelope returns the Arrow form of a Debezium envelope's
// columns: {before, after: struct of the row's columns (nullable),
// op: string (nullable)}, whose AvroSchema is the envelope schema Flink
// derives for a table of schema.
func debeziumAvroEnvelope(schema *arrow.Schema) *arrow.Schema {
	row := arrow.StructOf(schema.Fields()...)
	return arrow.NewSchema([]arrow.Field{
		{Name: "before", Type: row, Nullable: true},
		{Name: "after", Type: row, Nullable: true},
		{Name: "op", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// debeziumAvroImage is where an envelope has one of its row images.
type debeziumAvroImage struct {
	field     int // index of the envelope's field, or -1 when it has none
	nullIdx   int // union branch of null, or -1
	recordIdx int // union branch of the record, or -1 when not a union
	record    *avro.RecordSchema
}

// debeziumAvroLayout is the shape of an envelope schema: its before,
// after and op fields.
type debeziumAvroLayout struct {
	rec           *avro.RecordSchema
	before, after debeziumAvroImage
	op            int // index of op
	opStringIdx   int // union branch of op's string, or -1 when not a union
	opNullIdx     int // union branch of op's null, or -1
}

// envelopeLayout checks that w is a Debezium envelope: a record with a
// string (or nullable string) op and before and after records (or
// nullable records); either image may be missing.
func envelopeLayout(w avro.Schema) (*debeziumAvroLayout, error) {
	rec, ok := deref(w).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the envelope schema is a %s, not a record", w.Type())
	}
	l := &debeziumAvroLayout{rec: rec, op: -1, opStringIdx: -1, opNullIdx: -1,
		before: debeziumAvroImage{field: -1}, after: debeziumAvroImage{field: -1}}
	for i, f := range rec.Fields() {
		switch f.Name() {
		case "before", "after":
			img := debeziumAvroImage{field: i, nullIdx: -1, recordIdx: -1}
			t := deref(f.Type())
			if u, ok := t.(*avro.UnionSchema); ok {
				for j, b := range u.Types() {
					switch bt := deref(b).(type) {
					case *avro.NullSchema:
						img.nullIdx = j
					case *avro.RecordSchema:
						if img.record != nil {
							return nil, fmt.Errorf("envelope field %s: a union of two records", f.Name())
						}
						img.recordIdx, img.record = j, bt
					default:
						return nil, fmt.Errorf("envelope field %s: a union with a %s, not of null and the row's record", f.Name(), b.Type())
					}
				}
			} else if r, ok := t.(*avro.RecordSchema); ok {
				img.record = r
			}
			if img.record == nil {
				return nil, fmt.Errorf("envelope field %s is a %s, not the row's record", f.Name(), f.Type().Type())
			}
			if f.Name() == "before" {
				l.before = img
			} else {
				l.after = img
			}
		case "op":
			l.op = i
			t := deref(f.Type())
			if u, ok := t.(*avro.UnionSchema); ok {
				for j, b := range u.Types() {
					switch deref(b).Type() {
					case avro.Null:
						l.opNullIdx = j
					case avro.String:
						l.opStringIdx = j
					default:
						return nil, fmt.Errorf("envelope field op: a union with a %s, not of null and string", b.Type())
					}
				}
				if l.opStringIdx < 0 {
					return nil, errors.New("envelope field op: a union without a string")
				}
			} else if t.Type() != avro.String {
				return nil, fmt.Errorf("envelope field op is a %s, not a string", t.Type())
			}
		}
	}
	if l.op < 0 {
		return nil, errors.New("the envelope schema has no field op")
	}
	if l.before.record == nil && l.after.record == nil {
		return nil, errors.New("the envelope schema has neither a before nor an after field")
	}
	return l, nil
}

// rowRecord is the envelope's row record: after's, or before's.
func (l *debeziumAvroLayout) rowRecord() *avro.RecordSchema {
	if l.after.record != nil {
		return l.after.record
	}
	return l.before.record
}

// envelopeSchemas reads the schema option: the envelope's Avro schema and
// its text, or, when the option is not set, the one Flink derives from
// cfg.Schema. The Arrow schema is cfg.Schema or that of the envelope's
// row record.
func envelopeSchemas(cfg Config, o *options) (*arrow.Schema, avro.Schema, string, error) {
	name := debeziumAvroPrefix + "schema"
	text, hasText := o.get(name)
	schema := cfg.Schema
	if hasText {
		w, err := parseAvroSchema(text)
		if err != nil {
			return nil, nil, "", fmt.Errorf("debezium-avro-confluent: option %s: %w", name, err)
		}
		l, err := envelopeLayout(w)
		if err != nil {
			return nil, nil, "", fmt.Errorf("debezium-avro-confluent: option %s: %w", name, err)
		}
		if schema == nil {
			if schema, err = arrowSchemaOf(l.rowRecord()); err != nil {
				return nil, nil, "", fmt.Errorf("debezium-avro-confluent: option %s: %w", name, err)
			}
		}
		return schema, w, text, nil
	}
	if schema == nil {
		return nil, nil, "", nil
	}
	text, err := AvroSchema(debeziumAvroEnvelope(schema))
	if err != nil {
		return nil, nil, "", fmt.Errorf("debezium-avro-confluent: %w", err)
	}
	w, err := parseAvroSchema(text)
	if err != nil {
		return nil, nil, "", fmt.Errorf("BUG: debezium-avro-confluent: %w", err)
	}
	return schema, w, text, nil
}

func newDebeziumAvroDecoderConfig(ctx context.Context, cfg Config, o *options) (Decoder, error) {
	client, err := debeziumAvroRegistry(o, cfg.Registry)
	if err != nil {
		return nil, err
	}
	subject, hasSubject, err := debeziumAvroSubject(o)
	if err != nil {
		return nil, err
	}
	schema, w, _, err := envelopeSchemas(cfg, o)
	if err != nil {
		return nil, err
	}
	if err := o.unknown(); err != nil { // before asking the registry anything
		return nil, err
	}
	if schema == nil {
		if !hasSubject {
			return nil, errors.New("debezium-avro-confluent: without a schema, the option debezium-avro-confluent.subject (or debezium-avro-confluent.schema) is required")
		}
		ss, err := client.SchemaByVersion(ctx, subject, -1)
		if err != nil {
			return nil, fmt.Errorf("debezium-avro-confluent: the latest schema of subject %q: %w", subject, err)
		}
		if w, err = writerSchema(ss.Schema); err == nil {
			var l *debeziumAvroLayout
			if l, err = envelopeLayout(w); err == nil {
				schema, err = arrowSchemaOf(l.rowRecord())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("debezium-avro-confluent: subject %q version %d: %w", subject, ss.Version, err)
		}
	}
	cols, err := newColumns(schema)
	if err != nil {
		return nil, fmt.Errorf("debezium-avro-confluent: %w", err)
	}
	if w != nil {
		// The envelope given (or derived) must decode into the columns, as
		// Flink checks the schema option against the table.
		if _, err := compileDebeziumAvro(w, cols); err != nil {
			return nil, fmt.Errorf("debezium-avro-confluent: the envelope schema does not resolve against the schema: %w", err)
		}
	}
	return &debeziumAvroDecoder{conf: &confluentDecoder{schema: schema, client: client}}, nil
}

// debeziumAvroDecoder decodes Debezium envelopes in the Confluent wire
// format. Writer schemas are fetched and cached by the avro-confluent
// decoder's code; each builder compiles one program per schema id.
type debeziumAvroDecoder struct {
	conf *confluentDecoder
}

var _ ChangeDecoder = (*debeziumAvroDecoder)(nil)

// Schema implements Decoder: the row's columns.
func (d *debeziumAvroDecoder) Schema() *arrow.Schema { return d.conf.schema }

// NewBuilder implements Decoder: a change builder whose NewRecord drops
// the row kinds.
func (d *debeziumAvroDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	return d.NewChangeBuilder(mem)
}

// NewChangeBuilder implements ChangeDecoder.
func (d *debeziumAvroDecoder) NewChangeBuilder(mem memory.Allocator) ChangeBatchBuilder {
	cols, err := newColumns(d.conf.schema)
	if err != nil {
		panic("BUG: debezium-avro-confluent: schema validated by NewDecoder: " + err.Error())
	}
	return &debeziumAvroBuilder{d: d, mem: mem, cols: cols, progs: make(map[uint32]debeziumAvroCompiled),
		r: avroReader{format: DebeziumAvroConfluent}}
}

// debeziumAvroProgram decodes envelopes of one writer schema: it walks the
// envelope once, skipping the images and reading op, then decodes the
// images the op calls for, in order, with the row programs.
type debeziumAvroProgram struct {
	layout        *debeziumAvroLayout
	steps         []avroNode // one per envelope field but before, after and op: skips
	skipBefore    avroNode
	skipAfter     avroNode
	before, after *avroProgram // nil when the envelope has no such field
}

type debeziumAvroCompiled struct {
	prog *debeziumAvroProgram
	err  error // the writer schema is not an envelope that resolves against the columns
}

func compileDebeziumAvro(w avro.Schema, cols *columns) (*debeziumAvroProgram, error) {
	l, err := envelopeLayout(w)
	if err != nil {
		return nil, err
	}
	p := &debeziumAvroProgram{layout: l}
	for i, f := range l.rec.Fields() {
		if i == l.before.field || i == l.after.field || i == l.op {
			p.steps = append(p.steps, nil)
			continue
		}
		p.steps = append(p.steps, compileAvroSkip(f.Type(), map[string]bool{}))
	}
	if l.before.record != nil {
		p.skipBefore = compileAvroSkip(l.before.record, map[string]bool{})
		if p.before, err = compileAvroProgram(l.before.record, cols); err != nil {
			return nil, fmt.Errorf("before: %w", err)
		}
	}
	if l.after.record != nil {
		p.skipAfter = compileAvroSkip(l.after.record, map[string]bool{})
		if p.after, err = compileAvroProgram(l.after.record, cols); err != nil {
			return nil, fmt.Errorf("after: %w", err)
		}
	}
	return p, nil
}

// imageSpan is where a row image is in a value: [start, end), or start < 0
// for null or absent; at is the offset of the field.
type imageSpan struct{ at, start, end int }

// debeziumAvroBuilder is the ChangeBatchBuilder of debezium-avro-confluent.
type debeziumAvroBuilder struct {
	d      *debeziumAvroDecoder
	mem    memory.Allocator
	cols   *columns
	n      int
	kinds  []arrowflow.RowKind
	progs  map[uint32]debeziumAvroCompiled
	lastID uint32
	last   *debeziumAvroProgram // the program of lastID: most values share one
	r      avroReader
}

// Append implements BatchBuilder: AppendChange without the count.
func (b *debeziumAvroBuilder) Append(value []byte) error {
	_, err := b.AppendChange(value)
	return err
}

// Len implements BatchBuilder.
func (b *debeziumAvroBuilder) Len() int { return b.n }

// AppendChange implements ChangeBatchBuilder.
func (b *debeziumAvroBuilder) AppendChange(value []byte) (int, error) {
	if len(value) == 0 {
		return 0, nil // a tombstone
	}
	added, err := b.decode(value)
	if err == nil && b.cols.tooBig {
		err = &RecordError{Format: DebeziumAvroConfluent, Offset: -1, Err: errBatchTooBig}
		b.cols.tooBig = false
	}
	b.r.buf = nil
	if err != nil {
		for _, c := range b.cols.cols {
			c.truncate(b.n)
		}
		b.kinds = b.kinds[:b.n]
		return 0, err
	}
	b.n += added
	return added, nil
}

func (b *debeziumAvroBuilder) decode(value []byte) (int, error) {
	if len(value) < confluentHeader {
		return 0, &RecordError{Format: DebeziumAvroConfluent, Offset: 0,
			Err: fmt.Errorf("%d bytes, fewer than the 5-byte Confluent header", len(value))}
	}
	if value[0] != 0 {
		return 0, &RecordError{Format: DebeziumAvroConfluent, Offset: 0,
			Err: fmt.Errorf("magic byte %#02x, not 0: not the Confluent wire format", value[0])}
	}
	id := binary.BigEndian.Uint32(value[1:5])
	p := b.last
	if p == nil || id != b.lastID {
		var err error
		if p, err = b.program(id); err != nil {
			return 0, err
		}
		b.last, b.lastID = p, id
	}

	// The envelope, images skipped.
	r := &b.r
	r.buf, r.pos, r.depth = value, confluentHeader, 0
	l := p.layout
	before, after := imageSpan{-1, -1, -1}, imageSpan{-1, -1, -1}
	var op []byte
	opAt := -1
	for i, step := range p.steps {
		var err error
		switch i {
		case l.before.field:
			before, err = p.image(r, &l.before, p.skipBefore, p.before, "before")
		case l.after.field:
			after, err = p.image(r, &l.after, p.skipAfter, p.after, "after")
		case l.op:
			opAt = r.pos
			op, err = p.readOp(r)
		default:
			err = step.decode(r)
		}
		if err != nil {
			return 0, err
		}
	}
	if r.pos != len(value) {
		return 0, avroErr(r, "", r.pos, errAvroTrailing)
	}

	// The rows the op calls for.
	switch string(op) {
	case "c", "r":
		if after.start < 0 {
			return 0, imageMissing(after, "after", `op "`+string(op)+`" (insert) has no "after" row`)
		}
		return 1, b.row(p.after, value, after, "after", arrowflow.Insert)
	case "u":
		if before.start < 0 {
			return 0, imageMissing(before, "before", replicaIdentity("UPDATE"))
		}
		if after.start < 0 {
			return 0, imageMissing(after, "after", `op "u" (update) has no "after" row`)
		}
		if err := b.row(p.before, value, before, "before", arrowflow.UpdateBefore); err != nil {
			return 0, err
		}
		return 2, b.row(p.after, value, after, "after", arrowflow.UpdateAfter)
	case "d":
		if before.start < 0 {
			return 0, imageMissing(before, "before", replicaIdentity("DELETE"))
		}
		return 1, b.row(p.before, value, before, "before", arrowflow.Delete)
	}
	return 0, &RecordError{Format: DebeziumAvroConfluent, Field: "op", Offset: opAt, Err: fmt.Errorf("unknown op %q", op)}
}

func replicaIdentity(kind string) string {
	return `the "before" row of the ` + kind + ` event is null: with Debezium's Postgres connector, set the table's REPLICA IDENTITY FULL`
}

func imageMissing(s imageSpan, field, msg string) error {
	return &RecordError{Format: DebeziumAvroConfluent, Field: field, Offset: s.at, Err: errors.New(msg)}
}

// image reads the union branch of a row image and skips the image,
// returning where it is.
func (p *debeziumAvroProgram) image(r *avroReader, img *debeziumAvroImage, skip avroNode, prog *avroProgram, field string) (imageSpan, error) {
	s := imageSpan{at: r.pos, start: -1, end: -1}
	if img.recordIdx >= 0 {
		i, err := r.long()
		if err == nil && (i < 0 || i > math.MaxInt32 || int(i) != img.nullIdx && int(i) != img.recordIdx) {
			err = fmt.Errorf("union branch %d out of 2", i)
		}
		if err != nil {
			return s, avroErr(r, field, s.at, err)
		}
		if int(i) == img.nullIdx {
			return s, nil
		}
	}
	s.start = r.pos
	if err := skip.decode(r); err != nil {
		// The skip knows no field names: decoding the image meets the
		// same bytes and names the field (the columns are truncated
		// after any error).
		r.pos, r.depth = s.start, 0
		if derr := prog.run(r); derr != nil {
			err = derr
		}
		return s, inImage(err, field)
	}
	s.end = r.pos
	return s, nil
}

func (p *debeziumAvroProgram) readOp(r *avroReader) ([]byte, error) {
	start := r.pos
	l := p.layout
	if l.opStringIdx >= 0 {
		i, err := r.long()
		if err == nil && i != int64(l.opStringIdx) {
			if i >= 0 && i == int64(l.opNullIdx) {
				err = errors.New("op is null")
			} else {
				err = fmt.Errorf("union branch %d out of 2", i)
			}
		}
		if err != nil {
			return nil, avroErr(r, "op", start, err)
		}
	}
	at := r.pos
	op, err := r.bytes()
	if err != nil {
		return nil, avroErr(r, "op", at, err)
	}
	return op, nil
}

// inImage names the image in an error about a field of it.
func inImage(err error, field string) error {
	var re *RecordError
	if errors.As(err, &re) {
		c := *re
		c.Field = field
		if re.Field != "" {
			c.Field = field + "." + re.Field
		}
		return &c
	}
	return err
}

// row decodes one image into the columns with its kind.
func (b *debeziumAvroBuilder) row(prog *avroProgram, value []byte, s imageSpan, field string, kind arrowflow.RowKind) error {
	r := &b.r
	r.buf, r.pos, r.depth = value[:s.end], s.start, 0
	if err := prog.run(r); err != nil {
		return inImage(err, field)
	}
	b.kinds = append(b.kinds, kind)
	return nil
}

func (b *debeziumAvroBuilder) program(id uint32) (*debeziumAvroProgram, error) {
	if p, ok := b.progs[id]; ok {
		return p.prog, p.err
	}
	w, err := b.d.conf.writer(id)
	if err != nil {
		return nil, asDebeziumAvro(err)
	}
	prog, err := compileDebeziumAvro(w, b.cols)
	if err != nil {
		err = &RecordError{Format: DebeziumAvroConfluent, Offset: 1,
			Err: fmt.Errorf("writer schema %d does not resolve against the schema: %w", id, err)}
	}
	b.progs[id] = debeziumAvroCompiled{prog: prog, err: err}
	return prog, err
}

// NewRecord implements BatchBuilder: the rows without their kinds.
func (b *debeziumAvroBuilder) NewRecord() arrow.RecordBatch {
	rec, _ := b.NewChangeRecord()
	return rec
}

// NewChangeRecord implements ChangeBatchBuilder.
func (b *debeziumAvroBuilder) NewChangeRecord() (arrow.RecordBatch, []arrowflow.RowKind) {
	kinds := b.kinds
	b.kinds = nil
	bb := batchBuilder{format: DebeziumAvroConfluent, mem: b.mem, cols: b.cols, n: b.n}
	rec := bb.NewRecord()
	b.n = 0
	return rec, kinds
}

// Release implements BatchBuilder.
func (b *debeziumAvroBuilder) Release() {
	for _, c := range b.cols.cols {
		c.truncate(0)
	}
	b.n = 0
	b.kinds = nil
}

func newDebeziumAvroEncoderConfig(ctx context.Context, cfg Config, o *options) (Encoder, error) {
	client, err := debeziumAvroRegistry(o, cfg.Registry)
	if err != nil {
		return nil, err
	}
	subject, hasSubject, err := debeziumAvroSubject(o)
	if err != nil {
		return nil, err
	}
	schema, w, text, err := envelopeSchemas(cfg, o)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, errors.New("debezium-avro-confluent: a schema or the option debezium-avro-confluent.schema is required")
	}
	if !hasSubject || subject == "" {
		return nil, errors.New("debezium-avro-confluent: the option debezium-avro-confluent.subject is required to register the schema")
	}
	if err := o.unknown(); err != nil { // before registering anything
		return nil, err
	}
	// Compile before registering, so that a schema that cannot encode the
	// columns is not registered.
	e, err := newDebeziumAvroEncoder(w, schema)
	if err != nil {
		return nil, err
	}
	id, err := client.RegisterSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return nil, fmt.Errorf("debezium-avro-confluent: registering the schema under subject %q: %w", subject, err)
	}
	if id < 1 || id > math.MaxInt32 {
		return nil, fmt.Errorf("debezium-avro-confluent: registering the schema under subject %q: the registry replied schema id %d, not a schema id (1 to 2^31-1)", subject, id)
	}
	e.prefix = confluentPrefix(id)
	return e, nil
}

// debeziumAvroEncoder writes each row as a Debezium envelope: the row
// through the avro encoder's compiled plans of the envelope's before or
// after record, the other image null, op "c" or "d", and every other
// envelope field null.
type debeziumAvroEncoder struct {
	schema        *arrow.Schema
	prefix        []byte
	layout        *debeziumAvroLayout
	before, after []avroFieldPlan
	others        []int     // per envelope field: the null branch of a field weir writes null, or -1
	bufs          sync.Pool // *[]byte
}

var _ ChangeEncoder = (*debeziumAvroEncoder)(nil)

func newDebeziumAvroEncoder(w avro.Schema, schema *arrow.Schema) (*debeziumAvroEncoder, error) {
	l, err := envelopeLayout(w)
	if err != nil {
		return nil, fmt.Errorf("debezium-avro-confluent: %w", err)
	}
	e := &debeziumAvroEncoder{schema: schema, layout: l}
	for _, img := range []*debeziumAvroImage{&l.before, &l.after} {
		if img.record == nil {
			return nil, errors.New("debezium-avro-confluent: the envelope schema needs both before and after to write")
		}
		if img.nullIdx < 0 {
			return nil, errors.New("debezium-avro-confluent: the envelope's before and after must be unions with null to write")
		}
	}
	if e.before, err = compileAvroFields(l.before.record, schema.Fields(), "before"); err != nil {
		return nil, fmt.Errorf("debezium-avro-confluent: %w", err)
	}
	if e.after, err = compileAvroFields(l.after.record, schema.Fields(), "after"); err != nil {
		return nil, fmt.Errorf("debezium-avro-confluent: %w", err)
	}
	for i, f := range l.rec.Fields() {
		e.others = append(e.others, -1)
		if i == l.before.field || i == l.after.field || i == l.op {
			continue
		}
		if e.others[i] = avroNullBranch(f.Type()); e.others[i] < 0 {
			return nil, fmt.Errorf("debezium-avro-confluent: envelope field %s is not nullable and weir writes no value for it", f.Name())
		}
	}
	return e, nil
}

// Encode implements Encoder: every row of rec as an insert.
func (e *debeziumAvroEncoder) Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error {
	return e.EncodeChanges(rec, nil, emit)
}

// EncodeChanges implements ChangeEncoder: op "c" with after for Insert
// and UpdateAfter, op "d" with before for UpdateBefore and Delete.
func (e *debeziumAvroEncoder) EncodeChanges(rec arrow.RecordBatch, kinds []arrowflow.RowKind, emit func(row int, value []byte) error) error {
	if err := checkSchema(DebeziumAvroConfluent, e.schema, rec); err != nil {
		return err
	}
	rows := int(rec.NumRows())
	if kinds != nil && len(kinds) != rows {
		return fmt.Errorf("BUG: debezium-avro-confluent: %d row kinds for a record of %d rows", len(kinds), rows)
	}
	before := bindAvroRecord(e.before, rec.Column)
	after := bindAvroRecord(e.after, rec.Column)
	l := e.layout
	bp, _ := e.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer e.bufs.Put(bp)
	for i := range rows {
		k := arrowflow.Insert
		if kinds != nil {
			k = kinds[i]
		}
		var add bool
		switch k {
		case arrowflow.Insert, arrowflow.UpdateAfter:
			add = true
		case arrowflow.UpdateBefore, arrowflow.Delete:
		default:
			return fmt.Errorf("BUG: debezium-avro-confluent: row %d has row kind %v", i, k)
		}
		buf := append((*bp)[:0], e.prefix...)
		var err error
		for j, null := range e.others {
			switch j {
			case l.before.field:
				if add {
					buf = appendAvroLong(buf, int64(l.before.nullIdx))
				} else {
					buf = appendAvroLong(buf, int64(l.before.recordIdx))
					buf, err = before.write(buf, i)
				}
			case l.after.field:
				if add {
					buf = appendAvroLong(buf, int64(l.after.recordIdx))
					buf, err = after.write(buf, i)
				} else {
					buf = appendAvroLong(buf, int64(l.after.nullIdx))
				}
			case l.op:
				if l.opStringIdx >= 0 {
					buf = appendAvroLong(buf, int64(l.opStringIdx))
				}
				op := byte('d')
				if add {
					op = 'c'
				}
				buf = append(appendAvroLong(buf, 1), op)
			default:
				buf = appendAvroLong(buf, int64(null))
			}
			if err != nil {
				break
			}
		}
		*bp = buf
		if err != nil {
			return fmt.Errorf("debezium-avro-confluent: row %d: %w", i, err)
		}
		if err := emit(i, buf); err != nil {
			return err
		}
	}
	return nil
}
