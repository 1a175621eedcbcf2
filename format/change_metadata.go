package format

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// MetadataDecoder is a ChangeDecoder that also reads its events' metadata,
// as Flink's change formats expose it (the metadata keys of a Kafka table
// after "value.": value.source.table is the debezium-json key
// source.table). The decoders of debezium-json, canal-json and
// maxwell-json are MetadataDecoders.
type MetadataDecoder interface {
	ChangeDecoder
	// ReadableMetadata lists the keys the format reads, each as a
	// nullable field named by the key, of the type its column has.
	ReadableMetadata() []arrow.Field
	// WithMetadata returns a decoder like this one whose batches have,
	// after the value columns (Schema's fields, then these), one column
	// per key, in order, named by the key; every row of an event has the
	// event's values, null when the event lacks the member. An unknown
	// key is an error naming the known ones.
	WithMetadata(keys ...string) (ChangeDecoder, error)
}

var _ MetadataDecoder = (*changeJSONDecoder)(nil)

// timestampLTZ is TIMESTAMP_LTZ(3), the type of Flink's metadata
// timestamps.
var timestampLTZ = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// metaSpec is a metadata key of a change format: where its value is.
type metaSpec struct {
	key string
	typ arrow.DataType
	// payload: a member of Debezium's payload (with
	// debezium-json.schema-include; else of the top-level object).
	payload bool
	member  string
	// sub: the member inside member to take, the first present of them;
	// none: member itself.
	sub []string
	// mult: a timestamp read from an integer, milliseconds = value * mult.
	mult int64
}

// changeMetadata lists the metadata of each change format, as Flink's
// DebeziumJsonDecodingFormat, CanalJsonDecodingFormat and
// MaxwellJsonDecodingFormat read it.
func changeMetadata(flavor changeFlavor) []metaSpec {
	str := arrow.BinaryTypes.String
	switch flavor {
	case flavorDebezium:
		return []metaSpec{
			{key: "schema", typ: str, member: "schema"},
			{key: "ingestion-timestamp", typ: timestampLTZ, payload: true, member: "ts_ms", mult: 1},
			{key: "source.timestamp", typ: timestampLTZ, payload: true, member: "source", sub: []string{"ts_ms"}, mult: 1},
			{key: "source.database", typ: str, payload: true, member: "source", sub: []string{"db"}},
			{key: "source.schema", typ: str, payload: true, member: "source", sub: []string{"schema"}},
			{key: "source.table", typ: str, payload: true, member: "source", sub: []string{"table", "collection"}},
			{key: "source.properties", typ: arrow.MapOf(str, str), payload: true, member: "source"},
		}
	case flavorCanal:
		return []metaSpec{
			{key: "database", typ: str, member: "database"},
			{key: "table", typ: str, member: "table"},
			{key: "sql-type", typ: arrow.MapOf(str, arrow.PrimitiveTypes.Int32), member: "sqlType"},
			{key: "pk-names", typ: arrow.ListOf(str), member: "pkNames"},
			{key: "ingestion-timestamp", typ: timestampLTZ, member: "ts", mult: 1},
			{key: "event-timestamp", typ: timestampLTZ, member: "es", mult: 1},
		}
	case flavorMaxwell:
		return []metaSpec{
			{key: "database", typ: str, member: "database"},
			{key: "table", typ: str, member: "table"},
			{key: "primary-key-columns", typ: arrow.ListOf(str), member: "primary_key_columns"},
			// Maxwell's ts is in seconds.
			{key: "ingestion-timestamp", typ: timestampLTZ, member: "ts", mult: 1000},
		}
	}
	return nil
}

// metaMember is a member of the envelope some metadata is read from.
type metaMember struct {
	payload bool
	name    string
}

// ReadableMetadata implements MetadataDecoder.
func (d *changeJSONDecoder) ReadableMetadata() []arrow.Field {
	var fields []arrow.Field
	for _, m := range changeMetadata(d.flavor) {
		fields = append(fields, arrow.Field{Name: m.key, Type: m.typ, Nullable: true})
	}
	return fields
}

// WithMetadata implements MetadataDecoder.
func (d *changeJSONDecoder) WithMetadata(keys ...string) (ChangeDecoder, error) {
	all := changeMetadata(d.flavor)
	nd := *d
	nd.meta, nd.members = nil, nil
	fields := append([]arrow.Field(nil), d.phys.Fields()...)
	for _, k := range keys {
		i := -1
		for j := range all {
			if all[j].key == k {
				i = j
			}
		}
		if i < 0 {
			var known []string
			for _, m := range all {
				known = append(known, m.key)
			}
			return nil, fmt.Errorf("%s: unknown metadata key %q (the format reads %s)", d.name, k, strings.Join(known, ", "))
		}
		m := all[i]
		if d.flavor == flavorDebezium && !d.schemaInclude {
			m.payload = false // the payload is the top-level object
		}
		slot := -1
		for j, mm := range nd.members {
			if mm == (metaMember{m.payload, m.member}) {
				slot = j
			}
		}
		if slot < 0 {
			slot = len(nd.members)
			nd.members = append(nd.members, metaMember{m.payload, m.member})
		}
		nd.meta = append(nd.meta, metaCol{spec: m, slot: slot})
		fields = append(fields, arrow.Field{Name: m.key, Type: m.typ, Nullable: true})
	}
	nd.schema = arrow.NewSchema(fields, nil)
	return &nd, nil
}

// metaCol is a metadata column of a decoder: its key and the member
// slot its value is read from.
type metaCol struct {
	spec metaSpec
	slot int
}

// metaReader reads one metadata column of a builder.
type metaReader struct {
	spec  *metaSpec
	slot  int
	path  string
	field jsonField           // the value's decoder (not timestamps)
	ts    *fixedColumn[int64] // timestamps
}

// compileMeta binds the builder's metadata columns (the columns after the
// physical ones) to their readers.
func (c *changeBuilder) compileMeta() error {
	nphys := len(c.body.fields)
	for i := range c.d.meta {
		mc := &c.d.meta[i]
		col := c.cols.cols[nphys+i]
		path := mc.spec.member
		if mc.spec.payload {
			path = "payload." + path
		}
		if len(mc.spec.sub) > 0 {
			path += "." + mc.spec.sub[0]
		}
		r := metaReader{spec: &mc.spec, slot: mc.slot, path: path}
		if mc.spec.mult != 0 {
			r.ts = col.(*fixedColumn[int64])
		} else {
			node, err := compileJSONNode(col, path, c.d.opts)
			if err != nil {
				return err
			}
			r.field = jsonField{name: mc.spec.key, path: path, nullable: true, col: col, node: node}
		}
		c.meta = append(c.meta, r)
	}
	c.memberAt = make([]span, len(c.d.members))
	return nil
}

// metaSlot returns 1 + the slot of the member key of an object at the
// given level (payload or not), 0 when no metadata is read from it.
func (c *changeBuilder) metaSlot(payload bool, key []byte) int {
	for i, m := range c.d.members {
		if m.payload == payload && m.name == string(key) {
			return i + 1
		}
	}
	return 0
}

// appendMeta appends the event's metadata to each of its rows.
func (c *changeBuilder) appendMeta() error {
	rows := len(c.kinds) - c.n
	if rows == 0 {
		return nil
	}
	s := &c.s
	for i := range c.meta {
		r := &c.meta[i]
		at := c.memberAt[r.slot]
		if at.start >= 0 && len(r.spec.sub) > 0 {
			var err error
			if at, err = c.subMember(at, r.spec.sub, r.path); err != nil {
				return err
			}
		}
		if at.start >= 0 {
			s.pos = at.start
			if null, err := c.nullAt(s, r.path); err != nil {
				return err
			} else if null {
				at = noSpan
			}
		}
		for range rows {
			switch {
			case at.start < 0:
				if r.ts != nil {
					r.ts.appendNull()
				} else {
					r.field.col.appendNull()
				}
			case r.ts != nil:
				s.pos = at.start
				if ch := s.peek(); ch != '-' && (ch < '0' || ch > '9') {
					return c.errf(r.path, s.pos, "expected a number (an epoch timestamp), found %s", describe(ch))
				}
				v, err := jsonInteger(s, r.path, r.ts.dtype, math.MinInt64/r.spec.mult, math.MaxInt64/r.spec.mult)
				if err != nil {
					return c.rename(err, "", -1)
				}
				r.ts.append(v * r.spec.mult)
			default:
				s.pos = at.start
				if err := r.field.decode(s); err != nil {
					return c.rename(err, "", -1)
				}
			}
		}
	}
	return nil
}

// subMember returns the span of the first of the members names present in
// the object at at, noSpan when none is.
func (c *changeBuilder) subMember(at span, names []string, path string) (span, error) {
	s := &c.s
	s.pos = at.start
	if null, err := c.nullAt(s, path); err != nil || null {
		return noSpan, err
	}
	if s.peek() != '{' {
		return noSpan, c.errf(path, s.pos, "expected an object, found %s", describe(s.peek()))
	}
	best, found := len(names), noSpan
	m := members{c: c, s: s, path: path}
	for {
		key, _, more, err := m.next()
		if err != nil {
			return noSpan, err
		}
		if !more {
			return found, nil
		}
		rank := -1
		for i, n := range names[:best] {
			if string(key) == n {
				rank = i
				break
			}
		}
		start := s.pos
		if err := c.skip(s, path); err != nil {
			return noSpan, err
		}
		if rank >= 0 {
			best, found = rank, span{start, s.pos}
		}
	}
}
