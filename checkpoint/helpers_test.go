package checkpoint

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/state"
)

type arrowRecord = arrow.RecordBatch

// testRecord is a three-row table with a key-group column, as operator
// snapshots have.
func testRecord() arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Uint16Builder).AppendValues([]uint16{1, 2, 3}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{10, 20, 30}, nil)
	return b.NewRecordBatch()
}
