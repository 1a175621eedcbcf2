package format

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
)

// The change-event JSON formats (debezium-json, canal-json, maxwell-json)
// share one decoder: the envelope of an event is walked with the json
// format's scanner, and every row image in it (Debezium's "before" and
// "after", Canal's "data" elements, Maxwell's "data") is decoded by the
// json format's compiled row decoder, straight into the batch's columns.
// An image met before the event's kind is known is decoded on the spot
// (Debezium's "op" and Canal's "type" come after the images); when the
// kind then asks for other rows or another order, the rows are cut off
// and the images decoded again from their recorded spans. No event
// allocates in steady state.

// changeFlavor says which envelope a change decoder reads.
type changeFlavor uint8

const (
	flavorDebezium changeFlavor = iota
	flavorCanal
	flavorMaxwell
)

// changeJSONDecoder is the ChangeDecoder of the JSON change formats.
type changeJSONDecoder struct {
	name   string
	flavor changeFlavor
	schema *arrow.Schema // phys, then the metadata columns
	phys   *arrow.Schema // the rows' columns
	opts   jsonOptions
	// meta are the metadata columns (see WithMetadata), read from the
	// envelope's members.
	meta    []metaCol
	members []metaMember
	// debezium-json.schema-include: the envelope is the "payload" of
	// {"schema": ..., "payload": ...}.
	schemaInclude bool
	// canal-json.database.include and canal-json.table.include, anchored.
	database, table *regexp.Regexp
}

var _ ChangeDecoder = (*changeJSONDecoder)(nil)

func newChangeJSONDecoder(cfg Config, flavor changeFlavor, opts jsonOptions) (*changeJSONDecoder, error) {
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	cols, err := newColumns(cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	if _, err := compileJSONRoot(cols, opts); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	return &changeJSONDecoder{name: cfg.Name, flavor: flavor, schema: cfg.Schema, phys: cfg.Schema, opts: opts}, nil
}

// Schema implements Decoder.
func (d *changeJSONDecoder) Schema() *arrow.Schema { return d.schema }

// NewBuilder implements Decoder: a change builder whose NewRecord drops
// the row kinds.
func (d *changeJSONDecoder) NewBuilder(mem memory.Allocator) BatchBuilder {
	return d.NewChangeBuilder(mem)
}

// NewChangeBuilder implements ChangeDecoder.
func (d *changeJSONDecoder) NewChangeBuilder(mem memory.Allocator) ChangeBatchBuilder {
	cols, err := newColumns(d.schema)
	if err != nil {
		panic("BUG: " + d.name + ": schema validated by newChangeJSONDecoder: " + err.Error())
	}
	nphys := d.phys.NumFields()
	body, err := compileJSONStruct(nil, d.phys.Fields(), cols.cols[:nphys], "", d.opts)
	if err != nil {
		panic("BUG: " + d.name + ": schema validated by newChangeJSONDecoder: " + err.Error())
	}
	c := &changeBuilder{batchBuilder: batchBuilder{format: d.name, mem: mem, cols: cols}, d: d, body: body}
	if err := c.compileMeta(); err != nil {
		panic("BUG: " + d.name + ": metadata columns: " + err.Error())
	}
	return c
}

// span is the bytes [start, end) of a JSON value in the event; start < 0
// when the member is absent.
type span struct{ start, end int }

var noSpan = span{-1, -1}

// image is a row image of an event: where it is, its name in errors, and
// the kind of the row it becomes.
type image struct {
	at   span
	name string
	idx  int // the element of the array name, or -1
	kind arrowflow.RowKind
}

// mergeSeg maps bytes of a merged object back to the event.
type mergeSeg struct {
	at, src, n int
	old        bool
}

// changeBuilder is the ChangeBatchBuilder of the JSON change formats. It
// keeps the columns of the batch (the embedded batchBuilder, whose n is
// the number of accepted rows) and one row kind per row.
type changeBuilder struct {
	batchBuilder
	d     *changeJSONDecoder
	body  *jsonStruct // the json row decoder bound to the columns
	s     jsonScanner
	kinds []arrowflow.RowKind
	// eager lists the images decoded on the spot in this event, in order.
	eager []image
	want  []image
	// Canal's "data" and "old" elements; lastUpdate: the last event
	// was an update.
	data, old  []span
	lastUpdate bool
	// Merging an update's old values over its new row.
	merged      []byte
	ms          jsonScanner
	segs        []mergeSeg
	oldF, dataF []span
	// The metadata columns' readers, and per event the spans of the
	// members they read.
	meta     []metaReader
	memberAt []span
}

var _ ChangeBatchBuilder = (*changeBuilder)(nil)

// Append implements BatchBuilder: AppendChange without the count.
func (c *changeBuilder) Append(value []byte) error {
	_, err := c.AppendChange(value)
	return err
}

// AppendChange implements ChangeBatchBuilder. An empty value (a Kafka
// tombstone, which Debezium sends after a delete) is no change.
func (c *changeBuilder) AppendChange(value []byte) (int, error) {
	if len(value) == 0 {
		return 0, nil
	}
	s := &c.s
	s.buf, s.pos = value, 0
	c.eager = c.eager[:0]
	for i := range c.memberAt {
		c.memberAt[i] = noSpan
	}
	var err error
	switch c.d.flavor {
	case flavorDebezium:
		err = c.debezium()
	case flavorCanal:
		err = c.canal()
	case flavorMaxwell:
		err = c.maxwell()
	}
	if err == nil && len(c.meta) > 0 {
		err = c.appendMeta()
	}
	s.buf = nil
	c.ms.buf = nil
	if err == nil && c.cols.tooBig {
		err = &RecordError{Format: c.d.name, Offset: -1, Err: errBatchTooBig}
		c.cols.tooBig = false
	}
	if err != nil {
		c.cut()
		return 0, err
	}
	rows := len(c.kinds) - c.n
	c.n = len(c.kinds)
	return rows, nil
}

// cut drops the rows of the event being decoded.
func (c *changeBuilder) cut() {
	for _, col := range c.cols.cols {
		col.truncate(c.n)
	}
	c.kinds = c.kinds[:c.n]
}

// NewRecord implements BatchBuilder: NewChangeRecord without the kinds.
func (c *changeBuilder) NewRecord() arrow.RecordBatch {
	rec, _ := c.NewChangeRecord()
	return rec
}

// NewChangeRecord implements ChangeBatchBuilder.
func (c *changeBuilder) NewChangeRecord() (arrow.RecordBatch, []arrowflow.RowKind) {
	kinds := make([]arrowflow.RowKind, c.n)
	copy(kinds, c.kinds)
	c.kinds = c.kinds[:0]
	return c.batchBuilder.NewRecord(), kinds
}

// Release implements BatchBuilder.
func (c *changeBuilder) Release() {
	c.batchBuilder.Release()
	c.kinds = c.kinds[:0]
}

// errAt is a RecordError of the builder's format.
func (c *changeBuilder) errAt(field string, off int, err error) error {
	return &RecordError{Format: c.d.name, Field: field, Offset: off, Err: err}
}

func (c *changeBuilder) errf(field string, off int, format string, args ...any) error {
	return c.errAt(field, off, fmt.Errorf(format, args...))
}

// rename makes an error of the json row decoder one of the format, its
// field under the image's name (element idx of an array when idx >= 0).
func (c *changeBuilder) rename(err error, name string, idx int) error {
	var re *RecordError
	if errors.As(err, &re) {
		re.Format = c.d.name
		re.Field = join(indexed(name, idx), re.Field)
	}
	return err
}

// indexed names element idx of the array name, as data[2]; name itself
// when idx < 0.
func indexed(name string, idx int) string {
	if idx < 0 {
		return name
	}
	return name + "[" + strconv.Itoa(idx) + "]"
}

// decodeImage decodes the object at the scanner's position as a new row
// of kind k; name and idx name it in errors (see indexed).
func (c *changeBuilder) decodeImage(s *jsonScanner, name string, idx int, k arrowflow.RowKind) error {
	if s.peek() != '{' {
		return c.errf(indexed(name, idx), s.pos, "expected an object (the row), found %s", describe(s.peek()))
	}
	if err := c.body.decode(s); err != nil {
		return c.rename(err, name, idx)
	}
	c.kinds = append(c.kinds, k)
	return nil
}

// settle makes the event's rows c.want: when the images decoded on the
// spot are those, in that order, only their kinds are set; otherwise the
// rows are cut off and the wanted images decoded from their spans
// (images with a non-nil merge are merged updates, see decodeMerged).
func (c *changeBuilder) settle(merge func(im image) error) error {
	if merge == nil && len(c.eager) == len(c.want) {
		same := true
		for i := range c.want {
			if c.eager[i].at != c.want[i].at {
				same = false
				break
			}
		}
		if same {
			for i, im := range c.want {
				c.kinds[c.n+i] = im.kind
			}
			return nil
		}
	}
	c.cut()
	s := &c.s
	pos := s.pos
	defer func() { s.pos = pos }()
	for _, im := range c.want {
		if merge != nil && im.at.start < 0 {
			if err := merge(im); err != nil {
				return err
			}
			continue
		}
		s.pos = im.at.start
		if err := c.decodeImage(s, im.name, im.idx, im.kind); err != nil {
			return err
		}
	}
	return nil
}

// members walks the members of the object at the scanner's position.
// With rec, it records the spans of the members metadata is read from
// (payload says whether the object is Debezium's payload).
type members struct {
	c       *changeBuilder
	s       *jsonScanner
	path    string
	started bool
	rec     bool
	payload bool
	slot    int // 1 + the metadata slot of the current member, or 0
	vstart  int
}

// next moves to the next member's value and returns its key (valid until
// the scanner reads another string) and the key's offset; more is false
// after the closing brace.
func (m *members) next() (key []byte, keyAt int, more bool, err error) {
	s := m.s
	if m.slot > 0 {
		m.c.memberAt[m.slot-1] = span{m.vstart, s.pos}
		m.slot = 0
	}
	if !m.started {
		m.started = true
		if s.peek() != '{' {
			return nil, 0, false, m.c.errf(m.path, s.pos, "expected a JSON object, found %s", describe(s.peek()))
		}
		s.pos++
		s.ws()
		if s.peek() == '}' {
			s.pos++
			return nil, 0, false, nil
		}
	} else {
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
		case '}':
			s.pos++
			return nil, 0, false, nil
		default:
			return nil, 0, false, m.c.errAt(m.path, s.pos, errJSONExpected("',' or '}'", s.peek()))
		}
	}
	if s.peek() != '"' {
		return nil, 0, false, m.c.errAt(m.path, s.pos, errJSONExpected("a string key", s.peek()))
	}
	keyAt = s.pos
	if key, err = s.rawString(); err != nil {
		return nil, 0, false, m.c.errAt(m.path, s.pos, err)
	}
	s.ws()
	if s.peek() != ':' {
		return nil, 0, false, m.c.errAt(m.path, s.pos, errJSONExpected("':'", s.peek()))
	}
	s.pos++
	s.ws()
	if m.rec && len(m.c.memberAt) > 0 {
		m.slot, m.vstart = m.c.metaSlot(m.payload, key), s.pos
	}
	return key, keyAt, true, nil
}

// skip validates the value at the scanner's position and moves past it.
func (c *changeBuilder) skip(s *jsonScanner, field string) error {
	if err := s.skip(0); err != nil {
		return c.errAt(field, s.pos, err)
	}
	return nil
}

// end checks that nothing but whitespace follows the top-level object.
func (c *changeBuilder) end() error {
	s := &c.s
	s.ws()
	if s.pos != len(s.buf) {
		return c.errAt("", s.pos, errors.New("data after the top-level object"))
	}
	return nil
}

// nullAt reports whether the value at the scanner's position is null,
// moving past it; another literal starting with n is an error.
func (c *changeBuilder) nullAt(s *jsonScanner, field string) (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	if !s.isNull() {
		return false, c.errAt(field, s.pos, errJSONLiteral)
	}
	return true, nil
}

// stringAt reads the string at the scanner's position (valid until the
// scanner reads another string).
func (c *changeBuilder) stringAt(s *jsonScanner, field string) ([]byte, error) {
	if s.peek() != '"' {
		return nil, c.errf(field, s.pos, "expected a string, found %s", describe(s.peek()))
	}
	str, err := s.rawString()
	if err != nil {
		return nil, c.errAt(field, s.pos, err)
	}
	return str, nil
}

// textAt returns the string at off, for error messages.
func (c *changeBuilder) textAt(off int) string {
	sc := jsonScanner{buf: c.s.buf, pos: off}
	str, err := sc.rawString()
	if err != nil {
		return ""
	}
	return string(str)
}

// fieldSpans records, for each column, the span of its member ("key":
// value) in the object at off; members that are no column are skipped.
func (c *changeBuilder) fieldSpans(off int, dst []span, name string, idx int) error {
	for i := range dst {
		dst[i] = noSpan
	}
	s := &c.s
	s.pos = off
	m := members{c: c, s: s, path: name}
	for {
		key, keyAt, more, err := m.next()
		if err != nil {
			var re *RecordError
			if errors.As(err, &re) {
				re.Field = indexed(name, idx)
			}
			return err
		}
		if !more {
			return nil
		}
		j, ok := c.body.index[string(key)]
		if !ok {
			if err := s.skip(0); err != nil {
				return c.errAt(indexed(name, idx), s.pos, err)
			}
			continue
		}
		field := c.body.fields[j].name
		if dst[j].start >= 0 {
			return c.errAt(join(indexed(name, idx), field), keyAt, errors.New("duplicate field"))
		}
		if err := s.skip(0); err != nil {
			return c.errAt(join(indexed(name, idx), field), s.pos, err)
		}
		dst[j] = span{keyAt, s.pos}
	}
}

// decodeMerged decodes, as a new row of kind k, the object at data with
// the members of the object at old in place of data's: the old row of an
// update whose "old" holds only the changed columns (as Flink: a column
// absent from "old" is unchanged, one present, null included, had that
// value).
func (c *changeBuilder) decodeMerged(old, data span, oldName, dataName string, idx int, k arrowflow.RowKind) error {
	nf := len(c.body.fields)
	if cap(c.oldF) < nf {
		c.oldF, c.dataF = make([]span, nf), make([]span, nf)
	}
	c.oldF, c.dataF = c.oldF[:nf], c.dataF[:nf]
	if err := c.fieldSpans(old.start, c.oldF, oldName, idx); err != nil {
		return err
	}
	if err := c.fieldSpans(data.start, c.dataF, dataName, idx); err != nil {
		return err
	}
	value := c.s.buf
	b := append(c.merged[:0], '{')
	c.segs = c.segs[:0]
	for j := range nf {
		sp, fromOld := c.oldF[j], true
		if sp.start < 0 {
			sp, fromOld = c.dataF[j], false
		}
		if sp.start < 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		c.segs = append(c.segs, mergeSeg{at: len(b), src: sp.start, n: sp.end - sp.start, old: fromOld})
		b = append(b, value[sp.start:sp.end]...)
	}
	b = append(b, '}')
	c.merged = b
	ms := &c.ms
	ms.buf, ms.pos = b, 0
	if err := c.body.decode(ms); err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			off := re.Offset
			name, mapped := oldName, old.start
			for _, sg := range c.segs {
				if sg.at <= off && off < sg.at+sg.n {
					mapped = sg.src + off - sg.at
					if !sg.old {
						name = dataName
					}
					break
				}
			}
			re.Format, re.Offset, re.Field = c.d.name, mapped, join(indexed(name, idx), re.Field)
		}
		return err
	}
	c.kinds = append(c.kinds, k)
	return nil
}

// anchored compiles a Java regular expression that must match a whole
// string (Matcher.matches), as Go's RE2 syntax.
func anchored(format, option, expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%s: option %s: %q is not a regular expression weir reads (RE2 syntax: Java's back-references and look-arounds are not supported): %w", format, option, expr, err)
	}
	return re, nil
}

// parseChangeJSONOptions reads the json options of a change format, under
// its prefix (debezium-json, canal-json, maxwell-json), as Flink names
// them.
func parseChangeJSONOptions(o *options, prefix string) (jsonOptions, error) {
	var opts jsonOptions
	opt := prefix + ".timestamp-format.standard"
	switch v := o.str(opt, "RFC-3339"); strings.ToUpper(v) {
	case "RFC-3339", "RFC3339":
		opts.tsStyle = styleRFC3339
	case "SQL":
		opts.tsStyle = styleSQL
	case "ISO-8601", "ISO8601":
		opts.tsStyle = styleISO
	default:
		return opts, fmt.Errorf("%s: option %s: %q is not SQL, ISO-8601 or RFC-3339", prefix, opt, v)
	}
	// As for json: Arrow map keys are never null, so the null-key policy
	// never applies; the options are accepted (and checked) for Flink DDL.
	switch v := o.str(prefix+".map-null-key.mode", "FAIL"); strings.ToUpper(v) {
	case "FAIL", "DROP", "LITERAL":
	default:
		return opts, fmt.Errorf("%s: option %s.map-null-key.mode: %q is not FAIL, DROP or LITERAL", prefix, prefix, v)
	}
	o.str(prefix+".map-null-key.literal", "null")
	// Decimals are always written as plain numbers (never 1E+3), which
	// every reader takes; the option is accepted and checked.
	if _, err := o.boolean(prefix+".encode.decimal-as-plain-number", false); err != nil {
		return opts, err
	}
	if err := o.reject(prefix+".ignore-parse-errors", "bad records are the connector's policy"); err != nil {
		return opts, err
	}
	return opts, nil
}
