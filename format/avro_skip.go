package format

import (
	"fmt"

	"github.com/hamba/avro/v2"
)

// compileAvroSkip returns a node that reads a value of w, checking its
// encoding, and keeps nothing: writer fields without a column.
func compileAvroSkip(w avro.Schema, visiting map[string]bool) avroNode {
	w = deref(w)
	switch t := w.(type) {
	case *avro.NullSchema:
		return avroSkipNull{}
	case *avro.UnionSchema:
		n := &avroSkipUnion{}
		for _, b := range t.Types() {
			n.branches = append(n.branches, compileAvroSkip(b, visiting))
		}
		return n
	case *avro.RecordSchema:
		if visiting[t.FullName()] {
			// A recursive record: skipped by a node that compiles its
			// fields on first use.
			return &avroSkipLazy{w: t}
		}
		visiting[t.FullName()] = true
		defer delete(visiting, t.FullName())
		n := &avroSkipRecord{}
		for _, f := range t.Fields() {
			n.fields = append(n.fields, compileAvroSkip(f.Type(), visiting))
		}
		return n
	case *avro.ArraySchema:
		return &avroSkipBlocks{items: []avroNode{compileAvroSkip(t.Items(), visiting)}, minSize: avroMinSize(t.Items(), map[string]bool{})}
	case *avro.MapSchema:
		return &avroSkipBlocks{items: []avroNode{avroSkipBytes{}, compileAvroSkip(t.Values(), visiting)},
			minSize: 1 + avroMinSize(t.Values(), map[string]bool{})}
	case *avro.FixedSchema:
		return avroSkipFixed(t.Size())
	case *avro.EnumSchema:
		return avroSkipEnum(len(t.Symbols()))
	}
	switch w.Type() {
	case avro.Boolean:
		return avroSkipBool{}
	case avro.Int, avro.Long:
		return avroSkipVarint{}
	case avro.Float:
		return avroSkipFixed(4)
	case avro.Double:
		return avroSkipFixed(8)
	}
	return avroSkipBytes{} // string, bytes
}

type avroSkipNull struct{}

func (avroSkipNull) decode(*avroReader) error { return nil }

type avroSkipBool struct{}

func (avroSkipBool) decode(r *avroReader) error {
	start := r.pos
	if _, err := r.boolean(); err != nil {
		return avroErr(r, "", start, err)
	}
	return nil
}

type avroSkipVarint struct{}

func (avroSkipVarint) decode(r *avroReader) error {
	start := r.pos
	if _, err := r.long(); err != nil {
		return avroErr(r, "", start, err)
	}
	return nil
}

type avroSkipFixed int

func (n avroSkipFixed) decode(r *avroReader) error {
	start := r.pos
	if _, err := r.fixed(int(n)); err != nil {
		return avroErr(r, "", start, err)
	}
	return nil
}

type avroSkipBytes struct{}

func (avroSkipBytes) decode(r *avroReader) error {
	start := r.pos
	if _, err := r.bytes(); err != nil {
		return avroErr(r, "", start, err)
	}
	return nil
}

type avroSkipEnum int

func (n avroSkipEnum) decode(r *avroReader) error {
	start := r.pos
	i, err := r.int()
	if err == nil && (i < 0 || int(i) >= int(n)) {
		err = fmt.Errorf("enum index %d out of %d symbols", i, int(n))
	}
	if err != nil {
		return avroErr(r, "", start, err)
	}
	return nil
}

type avroSkipUnion struct{ branches []avroNode }

func (n *avroSkipUnion) decode(r *avroReader) error {
	start := r.pos
	i, err := r.long()
	if err == nil && (i < 0 || i >= int64(len(n.branches))) {
		err = fmt.Errorf("union branch %d out of %d", i, len(n.branches))
	}
	if err != nil {
		return avroErr(r, "", start, err)
	}
	return n.branches[i].decode(r)
}

type avroSkipRecord struct{ fields []avroNode }

func (n *avroSkipRecord) decode(r *avroReader) error {
	for _, f := range n.fields {
		if err := f.decode(r); err != nil {
			return err
		}
	}
	return nil
}

// avroSkipLazy skips a recursive record, to a bounded depth.
type avroSkipLazy struct {
	w    *avro.RecordSchema
	node avroNode
}

func (n *avroSkipLazy) decode(r *avroReader) error {
	if n.node == nil {
		n.node = compileAvroSkip(n.w, map[string]bool{})
	}
	if r.depth >= avroMaxDepth {
		return avroErr(r, "", r.pos, errAvroDepth)
	}
	r.depth++
	err := n.node.decode(r)
	r.depth--
	return err
}

// avroSkipBlocks skips array (one item node) or map (key and value)
// blocks, using a negative count's byte size to jump.
type avroSkipBlocks struct {
	items   []avroNode
	minSize int
}

func (n *avroSkipBlocks) decode(r *avroReader) error {
	for {
		start := r.pos
		count, err := r.long()
		if err != nil {
			return avroErr(r, "", start, err)
		}
		if count == 0 {
			return nil
		}
		if count < 0 {
			size, err := r.long()
			if err != nil {
				return avroErr(r, "", start, err)
			}
			if size < 0 || size > int64(len(r.buf)-r.pos) {
				return avroErr(r, "", start, errAvroEOF)
			}
			r.pos += int(size)
			continue
		}
		r.pos = start
		if count, err = r.blockCount(n.minSize); err != nil {
			return avroErr(r, "", start, err)
		}
		for range count {
			for _, it := range n.items {
				if err := it.decode(r); err != nil {
					return err
				}
			}
		}
	}
}
