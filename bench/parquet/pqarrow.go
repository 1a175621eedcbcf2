package main

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writePqarrow writes d to path with arrow-go's pqarrow FileWriter the way
// the sink does: WriteBuffered per batch, zstd, dictionary encoding on
// the string column only (the sink's choice) or on every column (the
// library's default, which falls back to plain once a column's
// dictionary grows past 1 MiB).
func writePqarrow(d *dataset, path string, rowGroup int64, dictAll bool, mem memory.Allocator) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroup),
		parquet.WithAllocator(mem),
		parquet.WithDictionaryDefault(dictAll),
	}
	if !dictAll {
		opts = append(opts, parquet.WithDictionaryFor("category", true))
	}
	props := parquet.NewWriterProperties(opts...)
	fw, err := pqarrow.NewFileWriter(schema, bw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		return err
	}
	for _, rec := range d.batches {
		if err := fw.WriteBuffered(rec); err != nil {
			fw.Close()
			return err
		}
	}
	if err := fw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// readPqarrow reads every row of the file at path into Arrow records with
// pqarrow, 8192 rows at a time, and returns their fingerprint.
func readPqarrow(path string, mem memory.Allocator) (fingerprint, error) {
	var fp fingerprint
	pf, err := file.OpenParquetFile(path, false, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return fp, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, mem)
	if err != nil {
		return fp, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return fp, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		if err := sameFields(rec.Schema(), schema); err != nil {
			return fp, err
		}
		fp.addRecord(rec)
	}
	return fp, rr.Err()
}

// sameFields checks that got has want's fields (names, types,
// nullability) in any order, ignoring metadata (pqarrow adds
// PARQUET:field_id).
func sameFields(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("read %d columns, want %d", got.NumFields(), want.NumFields())
	}
	for _, f := range want.Fields() {
		idx := got.FieldIndices(f.Name)
		if len(idx) != 1 {
			return fmt.Errorf("read no column %q", f.Name)
		}
		if g := got.Field(idx[0]); !arrow.TypeEqual(g.Type, f.Type) || g.Nullable != f.Nullable {
			return fmt.Errorf("read column %s, want %s", g, f)
		}
	}
	return nil
}
