package parquet_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// Every partition column type reads back as written, extremes and nulls
// included, and names its folders as Hive does.
func TestPartitionColumnTypes(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64},
	}, nil)
	day := time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) // before the epoch: negative days
	b := array.NewRecordBuilder(mem, sc)
	for i := range 6 {
		if i == 3 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int8Builder).Append([]int8{math.MinInt8, -1, 0, 0, math.MaxInt8, 5}[i])
		}
		b.Field(1).(*array.Int16Builder).Append(int16(-i * 1000))
		b.Field(2).(*array.Int32Builder).Append(math.MinInt32 + int32(i))
		b.Field(3).(*array.Int64Builder).Append(math.MaxInt64 - int64(i%2))
		b.Field(4).(*array.Int64Builder).Append(int64(i))
		b.Field(5).(*array.Uint8Builder).Append(math.MaxUint8)
		b.Field(6).(*array.Uint16Builder).Append(uint16(i))
		b.Field(7).(*array.Uint32Builder).Append(math.MaxUint32)
		if i == 4 {
			b.Field(8).AppendNull()
			b.Field(9).AppendNull()
			b.Field(10).AppendNull()
		} else {
			b.Field(8).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(i))
			b.Field(9).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(10).(*array.LargeStringBuilder).Append([]string{"a/b", "=", "%", "", "x", "ü"}[i])
		}
		b.Field(11).(*array.Date64Builder).Append(arrow.Date64FromTime(day.AddDate(0, 0, i)))
	}
	rec := b.NewRecordBatch()
	b.Release()
	var want [][]any
	in := arrowflow.NewBatch(rec)
	for k := range in.NumRows() {
		want = append(want, in.RowValues(k))
	}

	partitionBy := []string{"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "b", "ls", "d64"}
	s := newSink(t, parquet.Options{PartitionBy: partitionBy})
	ws := openWriters(t, s, mem, 1)
	if err := ws[0].Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	p, err := ws[0].PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
	files, err := parquet.CommittedFiles(s.Options().Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("%d files, want one per row", len(files))
	}
	dirs := make([]string, len(files))
	for i, f := range files {
		dirs[i] = f.Path[:len(f.Path)-len("part-orders-v2-00000000000000000001-00000-00000.parquet")]
	}
	wantDir := "i8=-128/i16=0/i32=-2147483648/i64=9223372036854775807/u8=255/u16=0/u32=4294967295/u64=18446744073709551615/b=true/ls=a%2Fb/d64=1969-12-31/"
	if !slices.Contains(dirs, wantDir) {
		t.Fatalf("no file in %s; folders:\n%v", wantDir, dirs)
	}
	nullDir := "i8=127/i16=-4000/i32=-2147483644/i64=9223372036854775807/u8=255/u16=4/u32=4294967295/u64=__HIVE_DEFAULT_PARTITION__/b=__HIVE_DEFAULT_PARTITION__/ls=__HIVE_DEFAULT_PARTITION__/d64=1970-01-04/"
	if !slices.Contains(dirs, nullDir) {
		t.Fatalf("no file in %s; folders:\n%v", nullDir, dirs)
	}
	// The empty large string reads back as null (Hive's default
	// partition); everything else as written.
	want[3][10] = nil
	sameRows(t, "ReadCommitted", readCommitted(t, s.Options().Path, sc, mem), want)
}
