package sql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weirflow/weir/arrowflow"
)

// sinkShapeOp gives the rows written into a table the table's column
// nullability (the INSERT's projection already gave them the table's
// types), so that a sink sees the schema it was opened with: a NOT NULL
// column (PRIMARY KEY columns are NOT NULL, as in Flink) is required in
// the batches even when the query's expression could be NULL. A NULL
// arriving in a NOT NULL column stops the job with an error naming the
// table and column, as Flink's 'table.exec.sink.not-null-enforcer' =
// 'ERROR' (its default) does.
type sinkShapeOp struct {
	arrowflow.BaseOperator
	table  string
	fields []arrow.Field // the table's columns
	check  []int         // the NOT NULL columns the query may write NULL into
	schema *arrow.Schema // of the input the output schema was made for
	out    *arrow.Schema
}

// sinkShapeFactory makes sinkShapeOps writing into table's columns
// fields; check are the NOT NULL columns whose values may be NULL.
func sinkShapeFactory(table string, fields []arrow.Field, check []int) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &sinkShapeOp{table: table, fields: fields, check: check} }
}

func (o *sinkShapeOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	rec := b.Record
	for _, c := range o.check {
		col := rec.Column(c)
		if col.NullN() == 0 {
			continue
		}
		for k := 0; k < b.NumRows(); k++ {
			if col.IsNull(b.Row(k)) {
				row := b.RowValues(k)
				b.Release()
				return fmt.Errorf("table %s: column %s is NOT NULL, but the query wrote NULL into it (row %v, %s); "+
					"filter the NULLs out or COALESCE them (Flink's table.exec.sink.not-null-enforcer = 'ERROR')",
					o.table, o.fields[c].Name, row, b.Kind(k))
			}
		}
	}
	if s := rec.Schema(); s != o.schema {
		fields := make([]arrow.Field, len(o.fields))
		for i, f := range o.fields {
			got := s.Field(i)
			fields[i] = arrow.Field{Name: f.Name, Type: got.Type, Nullable: f.Nullable, Metadata: got.Metadata}
			if arrow.TypeEqual(got.Type, f.Type) {
				fields[i].Type = f.Type
			}
		}
		o.schema, o.out = s, arrow.NewSchema(fields, nil)
	}
	shaped := array.NewRecordBatch(o.out, rec.Columns(), rec.NumRows())
	rec.Release()
	b.Record = shaped
	return out.Emit(b)
}
