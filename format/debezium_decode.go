package format

import (
	"fmt"

	"github.com/weirflow/weir/arrowflow"
)

// newDebeziumDecoderConfig makes a debezium-json decoder: each value is one
// Debezium change event, read as Flink's debezium-json format reads it
// (see debezium).
func newDebeziumDecoderConfig(cfg Config, o *options) (Decoder, error) {
	opts, include, err := parseDebeziumOptions(o)
	if err != nil {
		return nil, err
	}
	d, err := newChangeJSONDecoder(cfg, flavorDebezium, opts)
	if err != nil {
		return nil, err
	}
	d.schemaInclude = include
	return d, nil
}

// debezium decodes one Debezium event, {"before": row, "after": row,
// "op": ..., ...} (with debezium-json.schema-include, the "payload" of
// {"schema": ..., "payload": {...}}):
//
//	op "c" (create), "r" (snapshot read)   +I after
//	op "u" (update)                        -U before, +U after
//	op "d" (delete)                        -D before
//
// Other members ("source", "ts_ms", "transaction", ...) are skipped. An
// update or delete whose "before" is null (Postgres without REPLICA
// IDENTITY FULL) is an error, as in Flink, and so are an unknown op and
// a missing image.
func (c *changeBuilder) debezium() error {
	s := &c.s
	s.ws()
	if !c.d.schemaInclude {
		if err := c.debeziumPayload(""); err != nil {
			return err
		}
		return c.end()
	}
	m := members{c: c, s: s, rec: true}
	found := false
	for {
		key, keyAt, more, err := m.next()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if string(key) != "payload" {
			if err := c.skip(s, ""); err != nil {
				return err
			}
			continue
		}
		if found {
			return c.errf("payload", keyAt, "duplicate field")
		}
		found = true
		if null, err := c.nullAt(s, "payload"); err != nil || null {
			if err == nil {
				err = c.errf("payload", s.pos-4, "the payload is null")
			}
			return err
		}
		if err := c.debeziumPayload("payload"); err != nil {
			return err
		}
	}
	if !found {
		return c.errf("payload", 0, `no "payload" field: with debezium-json.schema-include = true, a message is {"schema": ..., "payload": {"before": ..., "after": ..., "op": ...}}`)
	}
	return c.end()
}

// debeziumPayload decodes the envelope at the scanner's position, its
// fields named under path.
func (c *changeBuilder) debeziumPayload(path string) error {
	s := &c.s
	before, after := noSpan, noSpan
	var hasBefore, hasAfter, afterDecoded, sawPayload bool
	op, opAt := byte(0), -1
	beforeName, afterName, opName := join(path, "before"), join(path, "after"), join(path, "op")
	m := members{c: c, s: s, path: path, rec: true, payload: c.d.schemaInclude}
	for {
		key, keyAt, more, err := m.next()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "before", "after":
			isBefore := key[0] == 'b'
			name, has, at := afterName, &hasAfter, &after
			if isBefore {
				name, has, at = beforeName, &hasBefore, &before
			}
			if *has {
				return c.errf(name, keyAt, "duplicate field")
			}
			*has = true
			if null, err := c.nullAt(s, name); err != nil || null {
				if err != nil {
					return err
				}
				continue
			}
			start := s.pos
			if isBefore && afterDecoded {
				// after, then before: settle decodes them in order.
				if err := c.skip(s, name); err != nil {
					return err
				}
			} else {
				if err := c.decodeImage(s, name, -1, arrowflow.Insert); err != nil {
					return err
				}
				c.eager = append(c.eager, image{at: span{start, s.pos}})
				afterDecoded = afterDecoded || !isBefore
			}
			*at = span{start, s.pos}
		case "op":
			if opAt >= 0 {
				return c.errf(opName, keyAt, "duplicate field")
			}
			opAt = s.pos
			str, err := c.stringAt(s, opName)
			if err != nil {
				return err
			}
			op = '?'
			if len(str) == 1 {
				switch str[0] {
				case 'c', 'r', 'u', 'd':
					op = str[0]
				}
			}
		default:
			sawPayload = sawPayload || string(key) == "payload"
			if err := c.skip(s, path); err != nil {
				return err
			}
		}
	}
	c.want = c.want[:0]
	switch op {
	case 0:
		msg := `no "op" field`
		if sawPayload && !c.d.schemaInclude {
			msg += ` (the message has a "payload": written with schemas, it needs debezium-json.schema-include = true)`
		}
		return c.errf(opName, -1, "%s", msg)
	case 'c', 'r':
		if after.start < 0 {
			return c.errf(afterName, opAt, `op "%c" (insert) has no "after" row`, op)
		}
		c.want = append(c.want, image{at: after, name: afterName, idx: -1, kind: arrowflow.Insert})
	case 'u':
		if before.start < 0 {
			return c.errAt(beforeName, opAt, errReplicaIdentity("u", "update"))
		}
		if after.start < 0 {
			return c.errf(afterName, opAt, `op "u" (update) has no "after" row`)
		}
		c.want = append(c.want,
			image{at: before, name: beforeName, idx: -1, kind: arrowflow.UpdateBefore},
			image{at: after, name: afterName, idx: -1, kind: arrowflow.UpdateAfter})
	case 'd':
		if before.start < 0 {
			return c.errAt(beforeName, opAt, errReplicaIdentity("d", "delete"))
		}
		c.want = append(c.want, image{at: before, name: beforeName, idx: -1, kind: arrowflow.Delete})
	default:
		return c.errf(opName, opAt, `unknown op %q (Debezium's are "c", "r", "u" and "d")`, c.textAt(opAt))
	}
	return c.settle(nil)
}

func errReplicaIdentity(op, what string) error {
	return fmt.Errorf(`op %q (%s) has no "before" row (null): with Debezium's Postgres connector, the table needs REPLICA IDENTITY FULL for %ss to carry the old row`, op, what, what)
}
