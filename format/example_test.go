package format_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/format"
)

// Decoding JSON values (say, Kafka record values) into an Arrow batch,
// with a bad record rejected and the rest kept.
func Example_jsonDecode() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	dec, err := format.NewDecoder(context.Background(), format.Config{Name: "json", Schema: schema})
	if err != nil {
		panic(err)
	}
	b := dec.NewBuilder(memory.NewGoAllocator())
	defer b.Release()
	for _, v := range []string{
		`{"auction": 1001, "price": 12.5, "date_time": "2015-07-15 00:00:01.5", "channel": "web"}`,
		`{"auction": "1002", "price": "7", "date_time": "2015-07-15T00:00:02Z"}`,
		`{"auction": 1003.5, "price": 1, "date_time": 0}`,
	} {
		if err := b.Append([]byte(v)); err != nil {
			var re *format.RecordError
			if errors.As(err, &re) {
				fmt.Printf("rejected: field %s, byte %d: %v\n", re.Field, re.Offset, re.Err)
			}
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	for i, col := range rec.Columns() {
		fmt.Printf("%s: %v\n", rec.ColumnName(i), col)
	}
	// Output:
	// rejected: field auction, byte 12: "1003.5" is not an integer
	// auction: [1001 1002]
	// price: [12.5 7]
	// date_time: [1436918401500 1436918402000]
	// channel: ["web" (null)]
}
