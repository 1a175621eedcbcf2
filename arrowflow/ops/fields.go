package ops

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// FieldPath names a field nested in struct columns: Path[0] is a
// top-level column, each later part a field of the struct before it. As
// is the name of the column it becomes.
type FieldPath struct {
	Path []string
	As   string
}

// String renders the path as a.b.c.
func (f FieldPath) String() string { return strings.Join(f.Path, ".") }

// ExtractFields returns an operator that appends, for each path, the
// nested field as a top-level column (SQL's `bid.price` on a ROW column),
// so that expressions can refer to it by its As name. The field's values
// are shared, not copied; a row is NULL where the field or any struct on
// the way to it is NULL (the validity bitmaps are combined when a parent
// has nulls). The input's columns and selection vector pass through.
//
// Paths are resolved against the first batch's schema (and again when it
// changes); a missing field or a part that is not a struct fails the job
// naming the path.
func ExtractFields(paths []FieldPath) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &fieldsOp{paths: paths} }
}

type fieldsOp struct {
	arrowflow.BaseOperator
	paths  []FieldPath
	mem    memory.Allocator
	schema *arrow.Schema // input
	out    *arrow.Schema
	idx    [][]int // per path, the field index at each level
}

func (f *fieldsOp) Open(info *arrowflow.TaskInfo) error {
	f.mem = info.Allocator
	return nil
}

// resolve finds each path's field indexes in s and builds the output
// schema.
func (f *fieldsOp) resolve(s *arrow.Schema) error {
	fields := append([]arrow.Field(nil), s.Fields()...)
	idx := make([][]int, len(f.paths))
	for p, fp := range f.paths {
		if len(fp.Path) < 2 {
			return fmt.Errorf("field %s: want a column and at least one nested field", fp)
		}
		is := s.FieldIndices(fp.Path[0])
		if len(is) != 1 {
			return fmt.Errorf("field %s: no column %q", fp, fp.Path[0])
		}
		field := s.Field(is[0])
		nullable := field.Nullable
		levels := []int{is[0]}
		for _, name := range fp.Path[1:] {
			st, ok := field.Type.(*arrow.StructType)
			if !ok {
				return fmt.Errorf("field %s: %q is %s, not a ROW (struct)", fp, field.Name, field.Type)
			}
			i, ok := st.FieldIdx(name)
			if !ok {
				return fmt.Errorf("field %s: ROW %q has no field %q", fp, field.Name, name)
			}
			field = st.Field(i)
			nullable = nullable || field.Nullable
			levels = append(levels, i)
		}
		idx[p] = levels
		fields = append(fields, arrow.Field{Name: fp.As, Type: field.Type, Nullable: nullable})
	}
	md := s.Metadata()
	f.schema, f.idx, f.out = s, idx, arrow.NewSchema(fields, &md)
	return nil
}

func (f *fieldsOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	if s := b.Schema(); s != f.schema && (f.schema == nil || !s.Equal(f.schema)) {
		if err := f.resolve(s); err != nil {
			b.Release()
			return fmt.Errorf("extract fields: %w", err)
		}
	}
	rec := b.Record
	cols := make([]arrow.Array, 0, len(f.out.Fields()))
	cols = append(cols, rec.Columns()...)
	var made []arrow.Array
	for _, levels := range f.idx {
		a := f.extract(rec.Column(levels[0]), levels[1:])
		made = append(made, a)
		cols = append(cols, a)
	}
	res := array.NewRecordBatch(f.out, cols, rec.NumRows())
	for _, a := range made {
		a.Release()
	}
	sel, kinds := b.Sel, b.Kinds
	rec.Release()
	return out.Emit(arrowflow.Batch{Record: res, Sel: sel, Kinds: kinds})
}

// extract walks a column down through struct fields and returns the leaf
// with the combined validity of the leaf and every struct above it (a new
// reference the caller releases).
func (f *fieldsOp) extract(col arrow.Array, levels []int) arrow.Array {
	var parents []arrow.Array // structs with nulls on the way down
	a := col
	for _, i := range levels {
		if a.NullN() > 0 {
			parents = append(parents, a)
		}
		a = a.(*array.Struct).Field(i)
	}
	if len(parents) == 0 {
		a.Retain()
		return a
	}
	// The combined bitmap is written at the leaf's offset, so that the
	// leaf's other buffers are shared as they are.
	n, off := a.Len(), a.Data().Offset()
	size := int(bitutil.BytesForBits(int64(off + n)))
	bm := memory.NewResizableBuffer(f.mem)
	bm.Resize(size)
	out := bm.Bytes()
	first := parents[0]
	if a.NullN() > 0 {
		bitutil.BitmapAnd(a.NullBitmapBytes(), first.NullBitmapBytes(), int64(off), int64(first.Data().Offset()), out, int64(off), int64(n))
	} else {
		bitutil.CopyBitmap(first.NullBitmapBytes(), first.Data().Offset(), n, out, off)
	}
	if len(parents) > 1 {
		tmp := make([]byte, size)
		for _, p := range parents[1:] {
			copy(tmp, out)
			bitutil.BitmapAnd(tmp, p.NullBitmapBytes(), int64(off), int64(p.Data().Offset()), out, int64(off), int64(n))
		}
	}
	nulls := n - bitutil.CountSetBits(out, off, n)
	bufs := append([]*memory.Buffer{bm}, a.Data().Buffers()[1:]...)
	d := array.NewData(a.DataType(), n, bufs, a.Data().Children(), nulls, off)
	bm.Release()
	defer d.Release()
	return array.MakeFromData(d)
}
