package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// avroDecoder decodes plain Avro binary (no framing) written with one
// writer schema.
type avroDecoder struct {
	schema *arrow.Schema
	writer avro.Schema
}

func newAvroDecoder(schema *arrow.Schema, writer avro.Schema) (*avroDecoder, error) {
	cols, err := newColumns(schema)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	if _, err := compileAvroProgram(writer, cols); err != nil {
		return nil, fmt.Errorf("avro: the writer schema does not resolve against the schema: %w", err)
	}
	return &avroDecoder{schema: schema, writer: writer}, nil
}

func (d *avroDecoder) Schema() *arrow.Schema { return d.schema }

func (d *avroDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: avro: schema validated by newAvroDecoder: " + err.Error())
	}
	prog, err := compileAvroProgram(d.writer, cols)
	if err != nil {
		panic("BUG: avro: schema validated by newAvroDecoder: " + err.Error())
	}
	return &batchBuilder{format: "avro", mem: mem, cols: cols, dec: &avroRow{prog: prog, r: avroReader{format: "avro"}}}
}

type avroRow struct {
	prog *avroProgram
	r    avroReader
}

func (a *avroRow) decodeRow(value []byte) error {
	a.r.buf, a.r.pos, a.r.depth = value, 0, 0
	err := a.prog.run(&a.r)
	a.r.buf = nil
	return err
}

// confluentHeader is the Confluent wire format's header: magic byte 0 and
// the schema id, 4 bytes big-endian.
const confluentHeader = 5

// confluentDecoder decodes the Confluent wire format: it fetches each
// writer schema from the registry by id once (cached for the decoder's
// life, since registered schemas never change) and compiles one program
// per schema id per builder.
type confluentDecoder struct {
	schema *arrow.Schema
	client *sr.Client

	mu      sync.Mutex
	writers map[uint32]writerSchemaOf
}

// writerSchemaOf is what the registry said of a schema id: its schema, or
// why it cannot be one (a schema that does not parse, is not Avro or has
// references). Both are kept: registered schemas never change.
type writerSchemaOf struct {
	w   avro.Schema
	err error // a *RecordError
}

// registryTimeout bounds a schema fetch made while appending a record.
const registryTimeout = 30 * time.Second

func (d *confluentDecoder) Schema() *arrow.Schema { return d.schema }

func (d *confluentDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: avro-confluent: schema validated by NewDecoder: " + err.Error())
	}
	row := &confluentRow{d: d, cols: cols, progs: make(map[uint32]confluentProgram), r: avroReader{format: "avro-confluent"}}
	return &batchBuilder{format: "avro-confluent", mem: mem, cols: cols, dec: row}
}

type confluentProgram struct {
	prog *avroProgram
	err  error // the writer schema does not resolve against the columns
}

type confluentRow struct {
	d      *confluentDecoder
	cols   *columns
	progs  map[uint32]confluentProgram
	lastID uint32
	last   *avroProgram // the program of lastID: most values share one
	r      avroReader
}

func (c *confluentRow) decodeRow(value []byte) error {
	if len(value) < confluentHeader {
		return &RecordError{Format: "avro-confluent", Offset: 0,
			Err: fmt.Errorf("%d bytes, fewer than the 5-byte Confluent header", len(value))}
	}
	if value[0] != 0 {
		return &RecordError{Format: "avro-confluent", Offset: 0,
			Err: fmt.Errorf("magic byte %#02x, not 0: not the Confluent wire format", value[0])}
	}
	id := binary.BigEndian.Uint32(value[1:5])
	prog := c.last
	if prog == nil || id != c.lastID {
		var err error
		if prog, err = c.program(id); err != nil {
			return err
		}
		c.last, c.lastID = prog, id
	}
	c.r.buf, c.r.pos, c.r.depth = value, confluentHeader, 0
	err := prog.run(&c.r)
	c.r.buf = nil
	return err
}

func (c *confluentRow) program(id uint32) (*avroProgram, error) {
	if p, ok := c.progs[id]; ok {
		return p.prog, p.err
	}
	w, err := c.d.writer(id)
	if err != nil {
		return nil, err
	}
	prog, err := compileAvroProgram(w, c.cols)
	if err != nil {
		err = &RecordError{Format: "avro-confluent", Offset: 1,
			Err: fmt.Errorf("writer schema %d does not resolve against the schema: %w", id, err)}
	}
	c.progs[id] = confluentProgram{prog: prog, err: err}
	return prog, err
}

// writer returns the writer schema of id. A schema the registry does not
// have, or that is not Avro, is the record's fault (a *RecordError); a
// registry that cannot be reached, or replies what is not a schema, is not
// (a plain error). The registry is asked again for the next record with
// the id after a plain error or a 404 (a registry replica may not have
// caught up yet), never after it gave a schema, valid or not.
func (d *confluentDecoder) writer(id uint32) (avro.Schema, error) {
	d.mu.Lock()
	c, ok := d.writers[id]
	d.mu.Unlock()
	if ok {
		return c.w, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	s, err := d.client.SchemaByID(ctx, int(id))
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, &RecordError{Format: "avro-confluent", Offset: 1,
				Err: fmt.Errorf("schema id %d is not in the registry", id)}
		}
		return nil, fmt.Errorf("avro-confluent: fetching schema %d from the registry: %w", id, err)
	}
	c.w, err = writerSchema(s)
	if err != nil {
		c.w, c.err = nil, &RecordError{Format: "avro-confluent", Offset: 1, Err: fmt.Errorf("schema id %d: %w", id, err)}
	}
	d.mu.Lock()
	if d.writers == nil {
		d.writers = make(map[uint32]writerSchemaOf)
	}
	d.writers[id] = c
	d.mu.Unlock()
	return c.w, c.err
}

// writerSchema parses a registry schema that must be a self-contained
// Avro schema.
func writerSchema(s sr.Schema) (avro.Schema, error) {
	if s.Type != sr.TypeAvro {
		return nil, fmt.Errorf("a %s schema, not Avro", s.Type)
	}
	if len(s.References) > 0 {
		return nil, errors.New("schema references are not supported")
	}
	return parseAvroSchema(s.Schema)
}

// registryClient returns cfg's client, or one built from the options.
func registryClient(o *options, given *sr.Client) (*sr.Client, error) {
	url, ok := o.get("avro-confluent.url")
	if alt, okAlt := o.get("avro-confluent.schema-registry.url"); okAlt {
		if ok && alt != url {
			return nil, errors.New("avro-confluent: options url and schema-registry.url disagree")
		}
		url, ok = alt, true
	}
	userInfo, hasUser := o.get("avro-confluent.basic-auth.user-info")
	if src, ok := o.get("avro-confluent.basic-auth.credentials-source"); ok && !strings.EqualFold(src, "USER_INFO") {
		return nil, fmt.Errorf("avro-confluent: option basic-auth.credentials-source: %q is not supported (USER_INFO only)", src)
	}
	token, hasToken := o.get("avro-confluent.bearer-auth.token")
	if src, ok := o.get("avro-confluent.bearer-auth.credentials-source"); ok && !strings.EqualFold(src, "STATIC_TOKEN") {
		return nil, fmt.Errorf("avro-confluent: option bearer-auth.credentials-source: %q is not supported (STATIC_TOKEN only)", src)
	}
	if given != nil {
		return given, nil
	}
	if !ok || strings.TrimSpace(url) == "" {
		return nil, errors.New("avro-confluent: option avro-confluent.url (the schema registry's URL) is required")
	}
	var urls []string
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.UserAgent("weir")}
	if hasUser {
		user, pass, found := strings.Cut(userInfo, ":")
		if !found {
			return nil, errors.New("avro-confluent: option basic-auth.user-info must be user:password")
		}
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if hasToken {
		opts = append(opts, sr.BearerToken(token))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("avro-confluent: schema registry client: %w", err)
	}
	return cl, nil
}

// confluentPrefix is the header of values written with schema id.
func confluentPrefix(id int) []byte {
	p := make([]byte, confluentHeader)
	binary.BigEndian.PutUint32(p[1:], uint32(id))
	return p
}
