package parquet

import (
	"bufio"
	"context"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weirflow/weir/format"
)

// File formats of Options.Format. Parquet is the sink's own (columnar,
// read back by ReadCommitted and the files source); CSV and JSON are row
// formats written with the encoders of package format that the Kafka
// sink uses, one row per line, as Flink's filesystem connector writes
// them. Every format goes through the same staging, commit log and
// recovery: only the bytes inside a data file differ.
const (
	FormatParquet = "parquet"
	FormatCSV     = "csv"
	FormatJSON    = "json"
)

// formatExtensions are the data files' extensions, by format. Recovery
// recognises a job's files by any of them.
var formatExtensions = map[string]string{
	FormatParquet: ".parquet",
	FormatCSV:     ".csv",
	FormatJSON:    ".json",
}

// fileEncoder writes the content of one data file into a buffered writer.
type fileEncoder interface {
	// write appends the rows of rec (the data columns only).
	write(rec arrow.RecordBatch) error
	// size estimates the file's size so far.
	size() int64
	// close completes the file's content in the buffered writer and
	// returns its size; the caller flushes and syncs.
	close() (int64, error)
	// discard releases what the encoder holds without completing the file.
	discard()
}

// fileFormat starts the data files of one writer, bound to the files'
// schema.
type fileFormat interface {
	open(bw *bufio.Writer) (fileEncoder, error)
}

// newFileFormat binds the sink's format to the files' schema (the
// batches' columns without the partition columns).
func (s *Sink) newFileFormat(dataSchema *arrow.Schema, mem memory.Allocator) (fileFormat, error) {
	switch s.opts.Format {
	case FormatParquet:
		opts := []parquet.WriterProperty{
			parquet.WithCompression(codecs[s.opts.Compression]),
			parquet.WithMaxRowGroupLength(s.opts.RowGroupSize),
			parquet.WithAllocator(mem),
			// Dictionary encoding only where it pays: on strings and
			// binaries (see the measurements in sink.go; on numbers zstd
			// does better).
			parquet.WithDictionaryDefault(false),
		}
		for _, f := range dataSchema.Fields() {
			switch f.Type.ID() {
			case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.DICTIONARY:
				opts = append(opts, parquet.WithDictionaryFor(f.Name, true))
			}
		}
		return &parquetFormat{schema: dataSchema, props: parquet.NewWriterProperties(opts...),
			arrowProps: pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem))}, nil
	default:
		enc, err := NewRowEncoder(s.opts.Format, dataSchema, s.opts.FormatOptions)
		if err != nil {
			return nil, err
		}
		return rowFormat{enc: enc}, nil
	}
}

// NewRowEncoder makes the encoder of a row format's data files: format's
// csv or json encoder with the given options (csv.*, json.*). The json
// format writes timestamps as Flink's does by default,
// 'yyyy-MM-dd HH:mm:ss.SSS' (json.timestamp-format.standard SQL), unless
// the options say otherwise. The sink calls it with the files' schema;
// callers may call it to check options before the job runs.
func NewRowEncoder(name string, schema *arrow.Schema, options map[string]string) (format.Encoder, error) {
	switch name {
	case FormatCSV, FormatJSON:
	default:
		return nil, fmt.Errorf("format %q is not one of parquet, csv, json", name)
	}
	opts := maps.Clone(options)
	if opts == nil {
		opts = map[string]string{}
	}
	if _, ok := opts["json.timestamp-format.standard"]; !ok && name == FormatJSON {
		opts["json.timestamp-format.standard"] = "SQL"
	}
	return format.NewEncoder(context.Background(), format.Config{Name: name, Schema: schema, Options: opts})
}

// parquetFormat writes Parquet files with pqarrow.
type parquetFormat struct {
	schema     *arrow.Schema
	props      *parquet.WriterProperties
	arrowProps pqarrow.ArrowWriterProperties
}

func (f *parquetFormat) open(bw *bufio.Writer) (fileEncoder, error) {
	fw, err := pqarrow.NewFileWriter(f.schema, bw, f.props, f.arrowProps)
	if err != nil {
		return nil, err
	}
	return parquetFile{fw}, nil
}

type parquetFile struct{ fw *pqarrow.FileWriter }

func (p parquetFile) write(rec arrow.RecordBatch) error { return p.fw.WriteBuffered(rec) }

// size is the bytes already written plus the compressed pages of the row
// group being buffered. Values not yet encoded into a page (at most one
// page, 1 MiB, per column) are missing, so a file ends up to that much
// above the target.
func (p parquetFile) size() int64 {
	return p.fw.TotalBytesWritten() + p.fw.RowGroupTotalCompressedBytes()
}

func (p parquetFile) close() (int64, error) {
	err := p.fw.Close()
	return p.fw.TotalBytesWritten(), err
}

func (p parquetFile) discard() { _ = p.fw.Close() }

// rowFormat writes one encoded row per line, each ended by "\n" (CSV
// without a header, RFC 4180 quoting; JSON one object per line).
type rowFormat struct{ enc format.Encoder }

func (f rowFormat) open(bw *bufio.Writer) (fileEncoder, error) {
	return &rowFile{enc: f.enc, bw: bw}, nil
}

type rowFile struct {
	enc format.Encoder
	bw  *bufio.Writer
	n   int64
}

func (r *rowFile) write(rec arrow.RecordBatch) error {
	return r.enc.Encode(rec, func(_ int, value []byte) error {
		if _, err := r.bw.Write(value); err != nil {
			return err
		}
		if err := r.bw.WriteByte('\n'); err != nil {
			return err
		}
		r.n += int64(len(value)) + 1
		return nil
	})
}

func (r *rowFile) size() int64           { return r.n }
func (r *rowFile) close() (int64, error) { return r.n, nil }
func (r *rowFile) discard()              {}
