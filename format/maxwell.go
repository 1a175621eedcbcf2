package format

import "github.com/weirflow/weir/arrowflow"

// MaxwellJSON is the name of the maxwell-json format (Maxwell's change events).
const MaxwellJSON = "maxwell-json"

// Maxwell event types.
const (
	maxwellNone = iota
	maxwellInsert
	maxwellUpdate
	maxwellDelete
	maxwellOther
)

func newMaxwellDecoderConfig(cfg Config, o *options) (Decoder, error) {
	opts, err := parseChangeJSONOptions(o, MaxwellJSON)
	if err != nil {
		return nil, err
	}
	return newChangeJSONDecoder(cfg, flavorMaxwell, opts)
}

func newMaxwellEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, err := parseChangeJSONOptions(o, MaxwellJSON)
	if err != nil {
		return nil, err
	}
	return newChangeEncoder(cfg, opts, `{"data":`, `,"type":"insert"}`, `{"data":`, `,"type":"delete"}`)
}

// maxwell decodes one Maxwell event, {"database": ..., "table": ...,
// "type": ..., "ts": ..., "data": row, "old": {...}, ...}, as Flink's
// maxwell-json format:
//
//	"insert"   +I data
//	"update"   -U data with the members of "old" in place, +U data
//	           ("old" holds the changed columns' old values)
//	"delete"   -D data
//
// Another type (Maxwell's bootstrap and DDL events) is an error, as in
// Flink, and so are a missing "data" and an update without "old".
func (c *changeBuilder) maxwell() error {
	s := &c.s
	s.ws()
	data, old := noSpan, noSpan
	var hasData, hasOld bool
	typ, typeAt := maxwellNone, -1
	m := members{c: c, s: s, rec: true}
	for {
		key, keyAt, more, err := m.next()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch k := maxwellKey(key); k {
		case "data", "old":
			has, at := &hasOld, &old
			if k == "data" {
				has, at = &hasData, &data
			}
			if *has {
				return c.errf(k, keyAt, "duplicate field")
			}
			*has = true
			if null, err := c.nullAt(s, k); err != nil || null {
				if err != nil {
					return err
				}
				continue
			}
			start := s.pos
			// An insert's or delete's row is decoded on the spot; an
			// update's waits for its old values, which come after it.
			if k == "data" && (typ == maxwellNone || typ == maxwellInsert || typ == maxwellDelete) {
				if err := c.decodeImage(s, k, -1, arrowflow.Insert); err != nil {
					return err
				}
				c.eager = append(c.eager, image{at: span{start, s.pos}})
			} else {
				if s.peek() != '{' {
					return c.errf(k, s.pos, "expected an object (the row), found %s", describe(s.peek()))
				}
				if err := c.skip(s, k); err != nil {
					return err
				}
			}
			*at = span{start, s.pos}
		case "type":
			if typeAt >= 0 {
				return c.errf("type", keyAt, "duplicate field")
			}
			typeAt = s.pos
			str, err := c.stringAt(s, "type")
			if err != nil {
				return err
			}
			switch string(str) {
			case "insert":
				typ = maxwellInsert
			case "update":
				typ = maxwellUpdate
			case "delete":
				typ = maxwellDelete
			default:
				typ = maxwellOther
			}
		default:
			if err := c.skip(s, ""); err != nil {
				return err
			}
		}
	}
	if err := c.end(); err != nil {
		return err
	}
	c.want = c.want[:0]
	switch typ {
	case maxwellNone:
		return c.errf("type", -1, `no "type" field`)
	case maxwellOther:
		return c.errf("type", typeAt, `unknown type %q (Maxwell's are "insert", "update" and "delete")`, c.textAt(typeAt))
	}
	if data.start < 0 {
		return c.errf("data", typeAt, "type %q without a \"data\" row", c.textAt(typeAt))
	}
	switch typ {
	case maxwellInsert:
		c.want = append(c.want, image{at: data, name: "data", idx: -1, kind: arrowflow.Insert})
		return c.settle(nil)
	case maxwellDelete:
		c.want = append(c.want, image{at: data, name: "data", idx: -1, kind: arrowflow.Delete})
		return c.settle(nil)
	}
	if old.start < 0 {
		return c.errf("old", typeAt, `type "update" without "old" values`)
	}
	c.want = append(c.want, image{at: noSpan, name: "old", idx: -1, kind: arrowflow.UpdateBefore},
		image{at: data, name: "data", idx: -1, kind: arrowflow.UpdateAfter})
	return c.settle(func(im image) error {
		return c.decodeMerged(old, data, "old", "data", -1, im.kind)
	})
}

// maxwellKey returns the envelope member key names, "" for another (a
// constant: the key's bytes are not copied).
func maxwellKey(key []byte) string {
	switch string(key) {
	case "data":
		return "data"
	case "old":
		return "old"
	case "type":
		return "type"
	}
	return ""
}
