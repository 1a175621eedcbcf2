package format

import (
	"github.com/weirflow/weir/arrowflow"
)

// CanalJSON is the name of the canal-json format (Alibaba Canal's change events).
const CanalJSON = "canal-json"

// Canal event types.
const (
	canalNone = iota
	canalInsert
	canalUpdate
	canalDelete
	canalCreate
	canalOther
)

func newCanalDecoderConfig(cfg Config, o *options) (Decoder, error) {
	opts, err := parseChangeJSONOptions(o, CanalJSON)
	if err != nil {
		return nil, err
	}
	d, err := newChangeJSONDecoder(cfg, flavorCanal, opts)
	if err != nil {
		return nil, err
	}
	if v, ok := o.get("canal-json.database.include"); ok {
		if d.database, err = anchored(CanalJSON, "canal-json.database.include", v); err != nil {
			return nil, err
		}
	}
	if v, ok := o.get("canal-json.table.include"); ok {
		if d.table, err = anchored(CanalJSON, "canal-json.table.include", v); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func newCanalEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, err := parseChangeJSONOptions(o, CanalJSON)
	if err != nil {
		return nil, err
	}
	// Read-side options, accepted (as Flink, whose factory takes them for
	// both) and unused when writing.
	o.get("canal-json.database.include")
	o.get("canal-json.table.include")
	return newChangeEncoder(cfg, opts, `{"data":[`, `],"type":"INSERT"}`, `{"data":[`, `],"type":"DELETE"}`)
}

// canal decodes one Canal event, {"data": [row, ...], "old": [row, ...],
// "type": ..., "database": ..., "table": ..., "isDdl": ..., ...}, as
// Flink's canal-json format:
//
//	"INSERT"   +I data[i] for each i
//	"UPDATE"   -U data[i] with the members of old[i] in place, +U data[i],
//	           for each i ("old" holds the changed columns' old values)
//	"DELETE"   -D data[i] for each i
//	"CREATE", or any type with "isDdl": true: a DDL event, no rows
//
// With canal-json.database.include or canal-json.table.include, an event
// of another database or table is no rows (its rows are not decoded).
// Another type is an error, as are a missing "data", a null row and an
// update with fewer "old" rows than "data" rows.
func (c *changeBuilder) canal() error {
	s := &c.s
	s.ws()
	c.data, c.old = c.data[:0], c.old[:0]
	filtered := c.d.database != nil || c.d.table != nil
	var hasData, hasOld, dataNull, oldNull, isDdl bool
	typ, typeAt := canalNone, -1
	dbAt, tableAt := -1, -1
	dbOK, tableOK := c.d.database == nil, c.d.table == nil
	m := members{c: c, s: s, rec: true}
	for {
		key, keyAt, more, err := m.next()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch k := canalKey(key); k {
		case "data", "old":
			isData := k == "data"
			has, null, spans := &hasOld, &oldNull, &c.old
			if isData {
				has, null, spans = &hasData, &dataNull, &c.data
			}
			if *has {
				return c.errf(k, keyAt, "duplicate field")
			}
			*has = true
			// The rows of an insert or delete are decoded on the spot.
			// The type usually comes after them: unknown yet, it is
			// guessed to be the previous event's (an update's rows
			// are decoded after its old rows, in another order).
			decode := isData && !filtered && (typ == canalInsert || typ == canalDelete || typ == canalNone && !c.lastUpdate)
			if *null, err = c.canalRows(k, spans, decode); err != nil {
				return err
			}
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
			case "INSERT":
				typ = canalInsert
			case "UPDATE":
				typ = canalUpdate
			case "DELETE":
				typ = canalDelete
			case "CREATE":
				typ = canalCreate
			default:
				typ = canalOther
			}
		case "isDdl":
			switch s.peek() {
			case 't':
				isDdl = true
				err = s.literal("true")
			case 'f':
				err = s.literal("false")
			case 'n':
				err = s.literal("null")
			default:
				return c.errf("isDdl", s.pos, "expected a boolean, found %s", describe(s.peek()))
			}
			if err != nil {
				return c.errAt("isDdl", s.pos, err)
			}
		case "database", "table":
			re, at, ok := c.d.database, &dbAt, &dbOK
			if k == "table" {
				re, at, ok = c.d.table, &tableAt, &tableOK
			}
			if re == nil {
				if err := c.skip(s, k); err != nil {
					return err
				}
				continue
			}
			if *at >= 0 {
				return c.errf(k, keyAt, "duplicate field")
			}
			*at = s.pos
			str, err := c.stringAt(s, k)
			if err != nil {
				return err
			}
			*ok = re.Match(str)
		default:
			if err := c.skip(s, ""); err != nil {
				return err
			}
		}
	}
	if err := c.end(); err != nil {
		return err
	}
	if c.d.database != nil && dbAt < 0 {
		return c.errf("database", -1, `no "database" field, which canal-json.database.include needs`)
	}
	if c.d.table != nil && tableAt < 0 {
		return c.errf("table", -1, `no "table" field, which canal-json.table.include needs`)
	}
	c.lastUpdate = typ == canalUpdate
	if !dbOK || !tableOK || isDdl || typ == canalCreate {
		c.cut()
		return nil
	}
	c.want = c.want[:0]
	var kind arrowflow.RowKind
	switch typ {
	case canalNone:
		return c.errf("type", -1, `no "type" field`)
	case canalOther:
		return c.errf("type", typeAt, `unknown type %q (Canal's are "INSERT", "UPDATE", "DELETE" and "CREATE")`, c.textAt(typeAt))
	case canalInsert:
		kind = arrowflow.Insert
	case canalDelete:
		kind = arrowflow.Delete
	}
	if !hasData || dataNull {
		return c.errf("data", typeAt, "type %q without \"data\" rows", c.textAt(typeAt))
	}
	for i, sp := range c.data {
		if sp.start < 0 {
			return c.errf(indexed("data", i), sp.end, "a null row")
		}
	}
	if typ != canalUpdate {
		for i, sp := range c.data {
			c.want = append(c.want, image{at: sp, name: "data", idx: i, kind: kind})
		}
		return c.settle(nil)
	}
	if !hasOld || oldNull || len(c.old) < len(c.data) {
		return c.errf("old", typeAt, "type \"UPDATE\" with %d \"data\" rows and %d \"old\" rows", len(c.data), len(c.old))
	}
	for i, sp := range c.data {
		if c.old[i].start < 0 {
			return c.errf(indexed("old", i), c.old[i].end, "a null row")
		}
		c.want = append(c.want, image{at: noSpan, name: "old", idx: i, kind: arrowflow.UpdateBefore},
			image{at: sp, name: "data", idx: i, kind: arrowflow.UpdateAfter})
	}
	return c.settle(func(im image) error {
		return c.decodeMerged(c.old[im.idx], c.data[im.idx], "old", "data", im.idx, im.kind)
	})
}

// canalKey returns the envelope member key names, "" for another (a
// constant: the key's bytes are not copied).
func canalKey(key []byte) string {
	switch string(key) {
	case "data":
		return "data"
	case "old":
		return "old"
	case "type":
		return "type"
	case "isDdl":
		return "isDdl"
	case "database":
		return "database"
	case "table":
		return "table"
	}
	return ""
}

// canalRows records the spans of the rows of the array at the scanner's
// position (a null row as start -1, end its offset), decoding them on the
// spot when decode is set. It reports whether the array is null.
func (c *changeBuilder) canalRows(name string, spans *[]span, decode bool) (bool, error) {
	s := &c.s
	if null, err := c.nullAt(s, name); err != nil || null {
		return null, err
	}
	if s.peek() != '[' {
		return false, c.errf(name, s.pos, "expected an array of rows, found %s", describe(s.peek()))
	}
	s.pos++
	s.ws()
	if s.peek() == ']' {
		s.pos++
		return false, nil
	}
	for {
		i := len(*spans)
		start := s.pos
		if null, err := c.nullAt(s, name); err != nil {
			return false, c.errAt(indexed(name, i), s.pos, errJSONLiteral)
		} else if null {
			*spans = append(*spans, span{-1, start})
		} else {
			if decode {
				if err := c.decodeImage(s, name, i, arrowflow.Insert); err != nil {
					return false, err
				}
				c.eager = append(c.eager, image{at: span{start, s.pos}})
			} else if err := s.skip(0); err != nil {
				return false, c.errAt(indexed(name, i), s.pos, err)
			}
			*spans = append(*spans, span{start, s.pos})
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
			continue
		case ']':
			s.pos++
			return false, nil
		}
		return false, c.errAt(name, s.pos, errJSONExpected("',' or ']'", s.peek()))
	}
}
