package kafka

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/kernels"
)

// colSource says where a physical column of a source with a key decoder
// comes from: the index of the value column and of the key column of its
// name, -1 where it has none.
type colSource struct{ val, key int }

// keyedColumns returns the physical columns of a source with a key
// decoder (Options.Columns) and where each comes from.
func keyedColumns(o *Options) ([]arrow.Field, []colSource, error) {
	vs, ks := o.Decoder.Schema(), o.KeyDecoder.Schema()
	byName := map[string]*colSource{}
	var order []string
	fields := map[string]arrow.Field{}
	for i, f := range vs.Fields() {
		byName[f.Name] = &colSource{val: i, key: -1}
		order = append(order, f.Name)
		fields[f.Name] = f
	}
	for i, f := range ks.Fields() {
		name := o.KeyFieldsPrefix + f.Name
		if cs, ok := byName[name]; ok {
			if vf := vs.Field(cs.val); !arrow.TypeEqual(vf.Type, f.Type) {
				return nil, nil, fmt.Errorf("kafka source: column %s is %s in the value and %s in the key", name, vf.Type, f.Type)
			}
			cs.key = i
			continue
		}
		byName[name] = &colSource{val: -1, key: i}
		order = append(order, name)
		f.Name = name
		fields[name] = f
	}
	cols := o.Columns
	if cols == nil {
		cols = order
	}
	if len(cols) != len(order) {
		return nil, nil, fmt.Errorf("kafka source: Options.Columns lists %d columns; the key and the value have %d: %v", len(cols), len(order), order)
	}
	out := make([]arrow.Field, len(cols))
	srcs := make([]colSource, len(cols))
	seen := map[string]bool{}
	for i, c := range cols {
		cs, ok := byName[c]
		if !ok || seen[c] {
			return nil, nil, fmt.Errorf("kafka source: Options.Columns: %q is not a column of the key or the value (%v), or is listed twice", c, order)
		}
		seen[c] = true
		out[i], srcs[i] = fields[c], *cs
		// NULL: key columns of a record without a key, value columns of
		// an upsert tombstone.
		if cs.key >= 0 && cs.val < 0 && !o.Upsert || o.Upsert && cs.key < 0 {
			out[i].Nullable = true
		}
	}
	return out, srcs, nil
}

// keyRows is the key side of a reader with a key decoder: the key
// builder and, per row of the batch being built, the row of the key and
// of the value it takes (-1: none, NULL columns), and the row kinds of an
// upsert source.
type keyRows struct {
	kb         format.BatchBuilder
	kRows      int // rows in kb
	vRows      int // rows in the value builder
	kIdx, vIdx []int32
	kinds      []arrowflow.RowKind
}

// errNoKey is the reason for an upsert record without a key.
var errNoKey = errors.New("the record has no key; an upsert-kafka record's key is the table's PRIMARY KEY")

// takeKeyed decodes one record's key and value into the batch being built
// and returns how many rows it added. A record the key or the value
// decoder rejects adds none.
func (rd *reader) takeKeyed(rec *kgo.Record) (int, error) {
	k := rd.keys
	krow := int32(-1)
	if rec.Key != nil {
		if err := k.kb.Append(rec.Key); err != nil {
			return 0, fmt.Errorf("record key: %w", err)
		}
		krow = int32(k.kRows)
		k.kRows++
	} else if rd.src.opts.Upsert {
		return 0, &format.RecordError{Format: "upsert-kafka", Offset: -1, Err: errNoKey}
	}
	if rec.Value == nil { // an upsert tombstone (others are skipped before)
		k.kIdx = append(k.kIdx, krow)
		k.vIdx = append(k.vIdx, -1)
		k.kinds = append(k.kinds, arrowflow.Delete)
		return 1, nil
	}
	// A value the decoder rejects leaves the key row unused: the batch
	// skips it.
	n, err := rd.appendValue(rec.Value)
	if err != nil {
		return 0, err
	}
	for j := range n {
		k.kIdx = append(k.kIdx, krow)
		k.vIdx = append(k.vIdx, int32(k.vRows+j))
		if rd.src.opts.Upsert {
			k.kinds = append(k.kinds, arrowflow.Insert)
		}
	}
	k.vRows += n
	return n, nil
}

// assemble fills rd.arrs[:len(cols)] with the physical columns of the n
// rows built, from the key record keys and the value record vals, and
// returns the row kinds: the upsert kinds, or those of a change decoder's
// rows (vkinds) in row order. Every array it sets is the caller's to
// release.
func (rd *reader) assemble(mem memory.Allocator, keys, vals arrow.RecordBatch, vkinds []arrowflow.RowKind, n int) ([]arrowflow.RowKind, error) {
	k := rd.keys
	kIdent := identity(k.kIdx, int(keys.NumRows()))
	vIdent := identity(k.vIdx, int(vals.NumRows()))
	for i, cs := range rd.src.cols {
		var (
			a   arrow.Array
			err error
		)
		switch {
		case cs.val >= 0 && vIdent:
			a = vals.Column(cs.val)
			a.Retain()
		case cs.val < 0 && kIdent:
			a = keys.Column(cs.key)
			a.Retain()
		default:
			a, err = rd.pick(mem, cs, keys, vals, rd.src.schema.Field(i).Type)
		}
		if err != nil {
			for j := range i {
				rd.arrs[j].Release()
				rd.arrs[j] = nil
			}
			return nil, fmt.Errorf("kafka source: column %s: %w", rd.src.schema.Field(i).Name, err)
		}
		rd.arrs[i] = a
	}
	var kinds []arrowflow.RowKind
	switch {
	case rd.src.opts.Upsert:
		kinds, k.kinds = k.kinds, nil // the batch owns them
	case vkinds != nil:
		kinds = make([]arrowflow.RowKind, n)
		for r, v := range k.vIdx {
			kinds[r] = vkinds[v]
		}
	}
	k.kIdx, k.vIdx = k.kIdx[:0], k.vIdx[:0]
	k.kRows, k.vRows = 0, 0
	return kinds, nil
}

// pick gathers a column row by row from the value (where the row has
// one), else the key (where the column is a key column and the row has a
// key), else NULL: it concatenates the candidates and a NULL and takes
// from them.
func (rd *reader) pick(mem memory.Allocator, cs colSource, keys, vals arrow.RecordBatch, dt arrow.DataType) (arrow.Array, error) {
	k := rd.keys
	var parts []arrow.Array
	vBase, kBase := -1, -1
	base := 0
	if cs.val >= 0 {
		parts, vBase = append(parts, vals.Column(cs.val)), base
		base += int(vals.NumRows())
	}
	if cs.key >= 0 {
		parts, kBase = append(parts, keys.Column(cs.key)), base
		base += int(keys.NumRows())
	}
	null := array.MakeArrayOfNull(mem, dt, 1)
	defer null.Release()
	parts = append(parts, null)
	idx := rd.pickIdx[:0]
	for r := range k.kIdx {
		switch v, kr := k.vIdx[r], k.kIdx[r]; {
		case vBase >= 0 && v >= 0:
			idx = append(idx, int32(vBase)+v)
		case kBase >= 0 && kr >= 0:
			idx = append(idx, int32(kBase)+kr)
		default:
			idx = append(idx, int32(base))
		}
	}
	rd.pickIdx = idx
	all, err := kernels.Gather(mem, parts, make([][]int32, len(parts)))
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return kernels.Take(mem, all, idx)
}

// identity reports whether idx is 0, 1, ..., n-1.
func identity(idx []int32, n int) bool {
	if len(idx) != n {
		return false
	}
	for i, v := range idx {
		if v != int32(i) {
			return false
		}
	}
	return true
}
