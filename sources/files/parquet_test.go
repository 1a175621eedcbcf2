package files

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/weirflow/weir/arrowflow"
)

// A folder of Parquet files written by pqarrow, with another column order
// and narrower types in one file, subfolders, and names a reader must
// skip, read by a job: exactly the events written, projected to the
// declared columns in their order.
func TestParquetFolderJob(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventSchema, events(0, 300), 64, true)
	narrow := arrow.NewSchema([]arrow.Field{
		{Name: "qty", Type: arrow.PrimitiveTypes.Int16},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	writeParquet(t, filepath.Join(dir, "sub", "b.parquet"), narrow, events(300, 420), 50, false)
	writeParquet(t, filepath.Join(dir, "sub", "deeper", "c.parquet"), eventSchema, events(420, 421), 10, true)
	writeParquet(t, filepath.Join(dir, "empty.parquet"), eventSchema, nil, 10, true)
	// Skipped: hidden, "_"-prefixed files and folders, files being copied.
	// Each would add rows or fail if read.
	writeParquet(t, filepath.Join(dir, ".hidden.parquet"), eventSchema, events(1000, 1010), 10, true)
	writeParquet(t, filepath.Join(dir, "_tmp", "x.parquet"), eventSchema, events(1000, 1010), 10, true)
	writeParquet(t, filepath.Join(dir, "sub", ".staging", "y.parquet"), eventSchema, events(1000, 1010), 10, true)
	writeParquet(t, filepath.Join(dir, "d.parquet._COPYING_"), eventSchema, events(1000, 1010), 10, true)
	writeFile(t, filepath.Join(dir, "_SUCCESS"), "")
	writeFile(t, filepath.Join(dir, "sub", ".b.parquet.crc"), "not parquet")

	declared := arrow.NewSchema([]arrow.Field{
		eventSchema.Field(0), eventSchema.Field(3), eventSchema.Field(1), eventSchema.Field(4),
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	src := mustNew(t, Options{Path: dir, Format: Parquet, Schema: declared, BatchSize: 50})
	if got, want := mustSplits(t, src), []string{"a.parquet", "empty.parquet", "sub/b.parquet", "sub/deeper/c.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("splits %v, want %v", got, want)
	}
	sink, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	want := project(events(0, 421), 0, 3, 1, 4, 2)
	// float32 holds the prices exactly (multiples of 0.25 below 100).
	sameRows(t, "rows", sink.Rows(), want)
	if st := src.Stats(); st.Records != 421 || st.Files != 4 {
		t.Fatalf("stats %+v, want 421 records of 4 files", st)
	}
}

// Each allowed widening reads every value exactly as the declared type;
// each refused conversion fails naming the file and the column. The
// expected arrays are built directly in the declared type.
func TestParquetTypeConversions(t *testing.T) {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	ints := []any{int64(-128), int64(0), nil, int64(127)}
	uints := []any{uint64(0), nil, uint64(255)}
	strs := []any{"a", nil, "", "ünï"}
	for _, tc := range []struct {
		name     string
		from, to arrow.DataType
		vals     []any // nil entries are nulls
		refused  bool
		want     []any // the values in the declared type, when not vals
	}{
		{"int8-int16", arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, ints, false, nil},
		{"int8-float32", arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Float32, ints, false, nil},
		{"int32-int64", arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, ints, false, nil},
		{"int32-float64", arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64, ints, false, nil},
		{"uint8-int16", arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int16, uints, false, nil},
		{"uint32-uint64", arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64, uints, false, nil},
		{"float32-float64", arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, []any{1.5, nil, -0.25}, false, nil},
		{"string-large", arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, strs, false, nil},
		{"large-string", arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String, strs, false, nil},
		{"string-binary", arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, strs, false, nil},
		{"ts-s-ms", ts(arrow.Second, "UTC"), ts(arrow.Millisecond, "UTC"), []any{int64(1), nil, int64(-86400)}, false,
			[]any{int64(1000), nil, int64(-86400000)}},
		{"ts-ms-ns-tz", ts(arrow.Millisecond, ""), ts(arrow.Nanosecond, "UTC"), []any{int64(1700000000123), nil}, false,
			[]any{int64(1700000000123000000), nil}},
		{"ts-tz-label", ts(arrow.Microsecond, "UTC"), ts(arrow.Microsecond, ""), []any{int64(5), nil}, false, nil},
		{"decimal-precision", dec(5, 2), dec(10, 2), []any{int64(12345), nil, int64(-1)}, false, nil},
		{"int64-int32", arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, ints, true, nil},
		{"int64-float64", arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, ints, true, nil},
		{"float64-float32", arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32, []any{1.5}, true, nil},
		{"uint64-int64", arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64, uints, true, nil},
		{"ts-ms-s", ts(arrow.Millisecond, ""), ts(arrow.Second, ""), []any{int64(1)}, true, nil},
		{"binary-string", arrow.BinaryTypes.Binary, arrow.BinaryTypes.String, strs, true, nil},
		{"decimal-scale", dec(10, 2), dec(10, 3), []any{int64(1)}, true, nil},
		{"decimal-narrow", dec(10, 2), dec(5, 2), []any{int64(1)}, true, nil},
		{"string-int", arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, strs, true, nil},
		{"int-string", arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String, ints, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMem(t)
			path := filepath.Join(t.TempDir(), "f.parquet")
			file := buildColumn(t, memory.DefaultAllocator, tc.from, tc.vals)
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: tc.from, Nullable: true}}, nil), []arrow.Array{file}, int64(file.Len()))
			file.Release()
			writeRecord(t, path, rec, 2, true)
			rec.Release()

			declared := arrow.NewSchema([]arrow.Field{{Name: "v", Type: tc.to, Nullable: true}}, nil)
			src := mustNew(t, Options{Path: path, Format: Parquet, Schema: declared})
			rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))
			b, err := rd.Next(ctx)
			if tc.refused {
				wantErr(t, err, path, "column v", tc.from.String(), tc.to.String())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			vals := tc.vals
			if tc.want != nil {
				vals = tc.want
			}
			want := buildColumn(t, mem, tc.to, vals)
			defer want.Release()
			if got := b.Record.Column(0); !array.Equal(got, want) {
				t.Fatalf("read %s, want %s", got, want)
			}
		})
	}
}

// buildColumn builds an array of type dt from vals: int64 for integers,
// timestamps and decimals (the unscaled value), uint64, float64, string.
func buildColumn(t testing.TB, mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(asInt(v)))
		case *array.Int16Builder:
			b.Append(int16(asInt(v)))
		case *array.Int32Builder:
			b.Append(int32(asInt(v)))
		case *array.Int64Builder:
			b.Append(asInt(v))
		case *array.Uint8Builder:
			b.Append(uint8(asInt(v)))
		case *array.Uint16Builder:
			b.Append(uint16(asInt(v)))
		case *array.Uint32Builder:
			b.Append(uint32(asInt(v)))
		case *array.Uint64Builder:
			b.Append(uint64(asInt(v)))
		case *array.Float32Builder:
			b.Append(float32(asFloat(v)))
		case *array.Float64Builder:
			b.Append(asFloat(v))
		case *array.StringBuilder:
			b.Append(v.(string))
		case *array.LargeStringBuilder:
			b.Append(v.(string))
		case *array.BinaryBuilder:
			b.Append([]byte(v.(string)))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v.(int64)))
		case *array.Decimal128Builder:
			b.Append(decimal128.FromI64(v.(int64)))
		default:
			t.Fatalf("buildColumn: %T", b)
		}
	}
	return b.NewArray()
}

func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case uint64:
		return int64(v)
	}
	panic(fmt.Sprintf("asInt(%T)", v))
}

func asFloat(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	panic(fmt.Sprintf("asFloat(%T)", v))
}

// nestedFile writes a Parquet file of 300 rows with a struct, a map and
// a list column (row groups of 64 rows), and returns the declared schema
// that reads it (a struct with fewer fields in another order and wider
// element types) and the expected record, built directly in the declared
// types from the same values.
func nestedFile(t *testing.T, mem memory.Allocator) (path string, declared *arrow.Schema, want arrow.RecordBatch) {
	path = filepath.Join(t.TempDir(), "nested.parquet")
	fileStruct := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "c", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	)
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: fileStruct, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int16), Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	declStruct := arrow.StructOf(
		arrow.Field{Name: "c", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	declared = arrow.NewSchema([]arrow.Field{
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "s", Type: declStruct, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	const rows = 300
	// fill appends row i to a record builder of either schema, with the
	// same values whatever the column types.
	fill := func(b *array.RecordBuilder, i int) {
		for c, f := range b.Schema().Fields() {
			fb := b.Field(c)
			if i%9 == 4 {
				fb.AppendNull()
				continue
			}
			switch f.Name {
			case "s":
				sb := fb.(*array.StructBuilder)
				sb.Append(true)
				for k, sf := range f.Type.(*arrow.StructType).Fields() {
					switch sf.Name {
					case "a":
						appendInt(sb.FieldBuilder(k), int64(i))
					case "b":
						sb.FieldBuilder(k).(*array.StringBuilder).Append(fmt.Sprint("b", i))
					case "c":
						lb := sb.FieldBuilder(k).(*array.ListBuilder)
						lb.Append(true)
						for j := range i % 4 {
							appendInt(lb.ValueBuilder(), int64(i*10+j))
						}
					}
				}
			case "m":
				mb := fb.(*array.MapBuilder)
				mb.Append(true)
				for j := range i % 3 {
					mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", j))
					appendInt(mb.ItemBuilder(), int64(i-j))
				}
			case "l":
				lb := fb.(*array.ListBuilder)
				lb.Append(true)
				for j := range i % 5 {
					if j == 2 {
						lb.ValueBuilder().AppendNull()
						continue
					}
					switch vb := lb.ValueBuilder().(type) {
					case *array.Float32Builder:
						vb.Append(float32(j) / 2)
					case *array.Float64Builder:
						vb.Append(float64(j) / 2)
					}
				}
			}
		}
	}
	fb := array.NewRecordBuilder(memory.DefaultAllocator, fileSchema)
	for i := range rows {
		fill(fb, i)
	}
	rec := fb.NewRecordBatch()
	fb.Release()
	writeRecord(t, path, rec, 64, true)
	rec.Release()

	wb := array.NewRecordBuilder(mem, declared)
	for i := range rows {
		fill(wb, i)
	}
	want = wb.NewRecordBatch()
	wb.Release()
	return path, declared, want
}

// Nested columns are read as declared: a struct with fewer fields in
// another order (only their leaves are read), wider elements of lists
// and maps. Resuming from a position in the middle of a row group, at its
// edges or at the end reads exactly the rows after it.
func TestParquetNestedColumns(t *testing.T) {
	mem := newMem(t)
	path, declared, want := nestedFile(t, mem)
	defer want.Release()
	size := fileSize(t, path)
	for _, start := range []int64{0, 1, 63, 64, 65, 100, 299, 300} {
		t.Run(fmt.Sprint("from=", start), func(t *testing.T) {
			src := mustNew(t, Options{Path: path, Format: Parquet, Schema: declared, BatchSize: 70})
			ids := mustSplits(t, src)
			pos := position{size: size, rows: start}.encode(kindParquet)
			rd := openReader(t, src, mem, 0, 1, []arrowflow.SplitState{{Split: ids[0], Position: pos}})
			read := start
			for {
				b, err := rd.Next(ctx)
				if err != nil {
					if read != want.NumRows() {
						t.Fatalf("read to row %d, want %d (%v)", read, want.NumRows(), err)
					}
					break
				}
				if err := b.Validate(); err != nil {
					t.Fatal(err)
				}
				n := int64(b.NumRows())
				expect := want.NewSlice(read, read+n)
				if !array.RecordEqual(b.Record, expect) {
					t.Fatalf("rows %d..%d:\n got %v\nwant %v", read, read+n, b.Record, expect)
				}
				expect.Release()
				b.Release()
				read += n
			}
		})
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func appendInt(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	default:
		panic(fmt.Sprintf("appendInt(%T)", b))
	}
}

// A declared column missing from a file, a struct field missing from a
// file's struct, and nulls in a NOT NULL column fail, naming the file and
// the column.
func TestParquetColumnErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.parquet")
	writeParquet(t, good, eventSchema, events(0, 20), 10, true)
	bad := filepath.Join(dir, "b.parquet")
	noName := arrow.NewSchema([]arrow.Field{eventSchema.Field(0), eventSchema.Field(3)}, nil)
	writeParquet(t, bad, noName, events(20, 40), 10, true)

	for _, tc := range []struct {
		name     string
		declared *arrow.Schema
		parts    []string
	}{
		{"missing", arrow.NewSchema([]arrow.Field{eventSchema.Field(0), eventSchema.Field(1)}, nil),
			[]string{bad, "no column name", "its columns are id, ts"}},
		{"case-sensitive", arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int64}}, nil),
			[]string{good, "no column ID", "case-sensitive"}},
		{"not-null", arrow.NewSchema([]arrow.Field{{Name: "price", Type: arrow.PrimitiveTypes.Float64}}, nil),
			[]string{good, "column price is declared NOT NULL"}},
		{"struct-field", arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64})}}, nil),
			[]string{good, "column id", "int64", "struct<x: int64>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMem(t)
			src := mustNew(t, Options{Path: dir, Format: Parquet, Schema: tc.declared})
			_, err := runJob(t, src, 1, arrowflow.Options{Allocator: mem})
			wantErr(t, err, tc.parts...)
		})
	}
}

// Resuming flat columns (pqarrow's SeekToRow) in row groups of many
// pages, with and without a page index, reads exactly the rows after the
// position.
func TestParquetResumeFlat(t *testing.T) {
	const rows = 5000
	for _, index := range []bool{false, true} {
		t.Run(fmt.Sprint("page-index=", index), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flat.parquet")
			rec := eventRecord(t, memory.DefaultAllocator, eventSchema, events(0, rows))
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w, err := pqarrow.NewFileWriter(eventSchema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2000),
				parquet.WithDataPageSize(512), parquet.WithPageIndexEnabled(index), parquet.WithDictionaryDefault(false)),
				pqarrow.DefaultWriterProps())
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			size := fileSize(t, path)
			for _, start := range []int64{1, 999, 1999, 2000, 2001, 3333, 4999, 5000} {
				mem := newMem(t)
				src := mustNew(t, Options{Path: path, Format: Parquet, Schema: eventSchema, BatchSize: 300})
				ids := mustSplits(t, src)
				rd := openReader(t, src, mem, 0, 1, []arrowflow.SplitState{{Split: ids[0], Position: position{size: size, rows: start}.encode(kindParquet)}})
				got, _ := readN(t, rd, -1)
				if len(got) != rows-int(start) {
					t.Fatalf("from %d: %d rows, want %d", start, len(got), rows-int(start))
				}
				want := events(int(start), rows)
				for i := range got {
					if rowKey(got[i]) != rowKey(want[i]) {
						t.Fatalf("from %d: row %d is %v, want %v", start, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// A struct of flat fields resumes through SeekToRow too.
func TestParquetResumeFlatStruct(t *testing.T) {
	mem := newMem(t)
	path, _, all := nestedFile(t, mem)
	all.Release()
	st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32})
	declared := arrow.NewSchema([]arrow.Field{{Name: "s", Type: st, Nullable: true}}, nil)
	size := fileSize(t, path)
	for _, start := range []int64{0, 1, 63, 64, 100, 299} {
		src := mustNew(t, Options{Path: path, Format: Parquet, Schema: declared, BatchSize: 50})
		ids := mustSplits(t, src)
		rd := openReader(t, src, mem, 0, 1, []arrowflow.SplitState{{Split: ids[0], Position: position{size: size, rows: start}.encode(kindParquet)}})
		got, _ := readN(t, rd, -1)
		if len(got) != 300-int(start) {
			t.Fatalf("from %d: %d rows", start, len(got))
		}
		for k, r := range got {
			i := int(start) + k
			want := fmt.Sprintf(`{"a":%d}`, i)
			if i%9 == 4 {
				want = "<nil>"
			}
			if fmt.Sprint(r[0]) != want && !(r[0] == nil && want == "<nil>") {
				t.Fatalf("from %d: row %d is %v, want %s", start, i, r[0], want)
			}
		}
	}
}
