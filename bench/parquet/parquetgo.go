package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// pqgoSchema is the generated schema in parquet-go's terms, built at run
// time from nodes as a sink with a schema known only at run time must.
// Dictionary encoding on the string column only: parquet-go does not
// fall back from dictionary to plain as cheaply as pqarrow, and a
// dictionary of a million random keys would not pay.
var pqgoSchema = pq.NewSchema("bench", pq.Group{
	"key":      pq.Int(64),
	"price":    pq.Optional(pq.Leaf(pq.DoubleType)),
	"category": pq.Encoded(pq.String(), &pq.RLEDictionary),
	"ts":       pq.Timestamp(pq.Millisecond),
})

// columnIndex returns the leaf index of a column of pqgoSchema (a Group
// orders its fields by name).
func columnIndex(name string) int {
	leaf, ok := pqgoSchema.Lookup(name)
	if !ok {
		panic("BUG: no column " + name)
	}
	return leaf.ColumnIndex
}

// stringBytes views s as bytes without copying; parquet-go copies values
// into its column buffers.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// writePqgoColumns writes d with parquet-go column by column: each Arrow
// column becomes a slice of parquet.Value written with the column
// writer's WriteRowValues, and the row group is flushed every rowGroup
// rows. This is the path a sink with a run-time schema would take.
func writePqgoColumns(d *dataset, path string, rowGroup int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pq.NewWriter(bw, pqgoSchema, pq.Compression(&zstd.Codec{}))
	cols := w.ColumnWriters()
	ki, pi, ci, ti := columnIndex("key"), columnIndex("price"), columnIndex("category"), columnIndex("ts")
	var vals []pq.Value
	var inGroup int64
	for _, rec := range d.batches {
		n := int(rec.NumRows())
		if cap(vals) < n {
			vals = make([]pq.Value, n)
		}
		vals = vals[:n]
		keys := rec.Column(0).(*array.Int64).Int64Values()
		for i, v := range keys {
			vals[i] = pq.Int64Value(v).Level(0, 0, ki)
		}
		if _, err := cols[ki].WriteRowValues(vals); err != nil {
			return err
		}
		prices := rec.Column(1).(*array.Float64)
		for i, v := range prices.Float64Values() {
			if prices.IsNull(i) {
				vals[i] = pq.NullValue().Level(0, 0, pi)
			} else {
				vals[i] = pq.DoubleValue(v).Level(0, 1, pi)
			}
		}
		if _, err := cols[pi].WriteRowValues(vals); err != nil {
			return err
		}
		cats := rec.Column(2).(*array.String)
		for i := range n {
			vals[i] = pq.ByteArrayValue(stringBytes(cats.Value(i))).Level(0, 0, ci)
		}
		if _, err := cols[ci].WriteRowValues(vals); err != nil {
			return err
		}
		for i, v := range rec.Column(3).(*array.Timestamp).TimestampValues() {
			vals[i] = pq.Int64Value(int64(v)).Level(0, 0, ti)
		}
		if _, err := cols[ti].WriteRowValues(vals); err != nil {
			return err
		}
		if inGroup += int64(n); inGroup >= rowGroup {
			if err := w.Flush(); err != nil {
				return err
			}
			inGroup = 0
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// readPqgoColumns reads the file at path with parquet-go page by page,
// column by column, into Arrow arrays (one record per row group), the way
// a reader returning Arrow records would, and returns their fingerprint.
func readPqgoColumns(path string, mem memory.Allocator) (fingerprint, error) {
	var fp fingerprint
	f, err := os.Open(path)
	if err != nil {
		return fp, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fp, err
	}
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		return fp, err
	}
	// Column order is the file's: by name in parquet-go's files, the
	// Arrow schema's in pqarrow's.
	var order []int
	for _, f := range schema.Fields() {
		leaf, ok := pf.Schema().Lookup(f.Name)
		if !ok {
			return fp, fmt.Errorf("file has no column %q", f.Name)
		}
		order = append(order, leaf.ColumnIndex)
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	buf := make([]pq.Value, 8192)
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		for field, col := range order {
			pages := chunks[col].Pages()
			err := readPages(pages, buf, func(vals []pq.Value) {
				switch fb := b.Field(field).(type) {
				case *array.Int64Builder:
					for _, v := range vals {
						fb.Append(v.Int64())
					}
				case *array.Float64Builder:
					for _, v := range vals {
						if v.IsNull() {
							fb.AppendNull()
						} else {
							fb.Append(v.Double())
						}
					}
				case *array.StringBuilder:
					for _, v := range vals {
						fb.BinaryBuilder.Append(v.ByteArray())
					}
				case *array.TimestampBuilder:
					for _, v := range vals {
						fb.Append(arrow.Timestamp(v.Int64()))
					}
				}
			})
			if cerr := pages.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fp, fmt.Errorf("column %d: %w", col, err)
			}
		}
		rec := b.NewRecordBatch()
		fp.addRecord(rec)
		rec.Release()
	}
	return fp, nil
}

// readPages passes every value of every page to fn, len(buf) at a time.
func readPages(pages pq.Pages, buf []pq.Value, fn func([]pq.Value)) error {
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		vr := page.Values()
		for {
			n, err := vr.ReadValues(buf)
			fn(buf[:n])
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				pq.Release(page)
				return err
			}
		}
		pq.Release(page)
	}
}

// benchRow is the generated schema as a Go struct, for parquet-go's
// typed (reflection-compiled) path. A zero price is written as null
// (generated prices are at least 1).
type benchRow struct {
	Key      int64   `parquet:"key"`
	Price    float64 `parquet:"price,optional"`
	Category string  `parquet:"category,dict"`
	TS       int64   `parquet:"ts,timestamp(millisecond)"`
}

// writePqgoStruct writes d with parquet-go's GenericWriter[benchRow],
// converting each Arrow batch into structs first. It shows the fastest
// parquet-go path, which needs the schema at compile time: a sink cannot
// use it.
func writePqgoStruct(d *dataset, path string, rowGroup int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pq.NewGenericWriter[benchRow](bw, pq.Compression(&zstd.Codec{}), pq.MaxRowsPerRowGroup(rowGroup))
	var rows []benchRow
	for _, rec := range d.batches {
		n := int(rec.NumRows())
		if cap(rows) < n {
			rows = make([]benchRow, n)
		}
		rows = rows[:n]
		keys := rec.Column(0).(*array.Int64).Int64Values()
		prices := rec.Column(1).(*array.Float64)
		cats := rec.Column(2).(*array.String)
		tss := rec.Column(3).(*array.Timestamp).TimestampValues()
		for i := range rows {
			price := prices.Value(i)
			if prices.IsNull(i) {
				price = 0
			}
			rows[i] = benchRow{Key: keys[i], Price: price, Category: cats.Value(i), TS: int64(tss[i])}
		}
		if _, err := w.Write(rows); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// readPqgoStruct reads the file at path with GenericReader[benchRow],
// 8192 rows at a time, and returns their fingerprint.
func readPqgoStruct(path string) (fingerprint, error) {
	var fp fingerprint
	f, err := os.Open(path)
	if err != nil {
		return fp, err
	}
	defer f.Close()
	r := pq.NewGenericReader[benchRow](f)
	defer r.Close()
	rows := make([]benchRow, 8192)
	for {
		n, err := r.Read(rows)
		for _, row := range rows[:n] {
			fp.add(row.Key, row.Price, row.Price == 0, row.Category, row.TS)
		}
		if errors.Is(err, io.EOF) {
			return fp, nil
		}
		if err != nil {
			return fp, err
		}
	}
}
