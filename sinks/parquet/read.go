package parquet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// CommittedFile is a data file of the table, as its commit log entry
// lists it.
type CommittedFile struct {
	// Job and Epoch name the commit that added the file; Subtask wrote it.
	Job     string
	Epoch   uint64
	Subtask int
	// Path is the file's place, relative to the table's folder and
	// slash-separated.
	Path string
	// Rows and Bytes are the file's rows and size.
	Rows, Bytes int64
	// Format is the file's format: FormatParquet, FormatCSV or
	// FormatJSON (Options.Format).
	Format string
	// Columns are the written batches' columns in order, partition
	// columns included.
	Columns []string
	// PartitionBy describes the partition columns, outermost first.
	PartitionBy []PartitionColumn
	// Partition holds the file's partition values, read from its folder
	// names, in PartitionBy's order.
	Partition []PartitionValue
}

// PartitionValue is a partition column's value for one file.
type PartitionValue struct {
	// Column is the partition column's name.
	Column string
	// Value is the value as the folder name spells it (unescaped); ""
	// when Null.
	Value string
	// Null reports Hive's default partition: the value was null or "".
	Null bool
}

// CommittedFiles lists the files of the table at path that its commit log
// records, of every job, ordered by job and epoch (and within an epoch
// by subtask, in the order each subtask started them). Files in the
// table's folders that the log does not list are not part of the table.
func CommittedFiles(path string) ([]CommittedFile, error) {
	root := filepath.Join(path, weirDir, commitsDir)
	jobs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(path); serr != nil {
			return nil, fmt.Errorf("parquet table %s: %w", path, serr)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("parquet table %s: %w", path, err)
	}
	var out []CommittedFile
	for _, j := range jobs {
		if !j.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, j.Name()))
		if err != nil {
			return nil, fmt.Errorf("parquet table %s: %w", path, err)
		}
		for _, e := range entries {
			epoch, ok := parseEpochName(e.Name())
			if !ok {
				continue
			}
			name := filepath.Join(root, j.Name(), e.Name())
			files, err := readCommitLog(name, epoch)
			if err != nil {
				return nil, fmt.Errorf("parquet table %s: %s: %w", path, name, err)
			}
			out = append(out, files...)
		}
	}
	return out, nil
}

// readCommitLog reads one commit log entry of the given epoch.
func readCommitLog(name string, epoch uint64) ([]CommittedFile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	l, err := decodeCommitLog(data)
	if err != nil {
		return nil, err
	}
	if l.Epoch != epoch {
		return nil, fmt.Errorf("entry of epoch %d under the name of epoch %d", l.Epoch, epoch)
	}
	var out []CommittedFile
	subtasks := slices.Clone(l.Subtasks)
	slices.SortStableFunc(subtasks, func(a, b subtaskFiles) int { return cmp.Compare(a.Subtask, b.Subtask) })
	for _, st := range subtasks {
		for _, f := range st.Files {
			cf := CommittedFile{Job: l.Job, Epoch: l.Epoch, Subtask: st.Subtask, Path: f.Path, Rows: f.Rows, Bytes: f.Bytes,
				Columns: st.Columns, PartitionBy: st.PartitionBy, Format: cmp.Or(st.Format, FormatParquet)}
			if cf.Partition, err = partitionValues(f.Path, st.PartitionBy); err != nil {
				return nil, err
			}
			out = append(out, cf)
		}
	}
	return out, nil
}

// partitionValues reads the partition values of a file from its folders.
func partitionValues(rel string, cols []PartitionColumn) ([]PartitionValue, error) {
	dir := path.Dir(rel)
	var segs []string
	if dir != "." {
		segs = strings.Split(dir, "/")
	}
	if len(segs) != len(cols) {
		return nil, fmt.Errorf("file %s is in %d partition folders, want %d", rel, len(segs), len(cols))
	}
	vals := make([]PartitionValue, len(cols))
	for i, seg := range segs {
		col, v, null, ok := parsePartitionSegment(seg)
		if !ok || col != cols[i].Name {
			return nil, fmt.Errorf("file %s: folder %q is not a partition folder of column %q", rel, seg, cols[i].Name)
		}
		vals[i] = PartitionValue{Column: col, Value: v, Null: null}
	}
	return vals, nil
}

// Table is the committed content of a table the sink wrote.
type Table struct {
	// Path is the table's folder.
	Path string
	// Files are the committed files, as CommittedFiles orders them.
	Files []CommittedFile

	mem memory.Allocator
}

// ReadCommitted opens the table at path for reading its committed rows,
// with Arrow memory from mem (memory.DefaultAllocator when nil).
func ReadCommitted(path string, mem memory.Allocator) (*Table, error) {
	files, err := CommittedFiles(path)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.Format != FormatParquet {
			return nil, fmt.Errorf("parquet table %s: %s is a %s file: ReadCommitted reads Parquet tables (CommittedFiles lists the files of any format)", path, f.Path, f.Format)
		}
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Table{Path: path, Files: files, mem: mem}, nil
}

// Rows is the number of committed rows.
func (t *Table) Rows() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Rows
	}
	return n
}

// readBatchSize is the number of rows per record Records yields at most.
const readBatchSize = 8192

// Records yields the committed rows as Arrow records, file by file in
// t.Files order. Each record has the written batches' columns in their
// order, partition columns rebuilt from the folder names (field metadata
// is not kept). The caller owns each record and must release it. The
// sequence stops after the first error.
func (t *Table) Records(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, f := range t.Files {
			more, err := t.readFile(ctx, f, yield)
			if err != nil {
				yield(nil, fmt.Errorf("parquet table %s: %s: %w", t.Path, f.Path, err))
				return
			}
			if !more {
				return
			}
		}
	}
}

// readFile yields the records of one file; more is false when yield
// asked to stop.
func (t *Table) readFile(ctx context.Context, f CommittedFile, yield func(arrow.RecordBatch, error) bool) (more bool, err error) {
	pf, err := file.OpenParquetFile(filepath.Join(t.Path, filepath.FromSlash(f.Path)), false,
		file.WithReadProps(parquet.NewReaderProperties(t.mem)))
	if err != nil {
		return false, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: readBatchSize}, t.mem)
	if err != nil {
		return false, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return false, err
	}
	defer rr.Release()

	// Where each output column comes from: a file column (>= 0) or a
	// partition column (-1 - its index).
	fileSchema := rr.Schema()
	src := make([]int, len(f.Columns))
	fields := make([]arrow.Field, len(f.Columns))
	partTypes := make([]arrow.DataType, len(f.PartitionBy))
	for i, pc := range f.PartitionBy {
		dt, ok := partitionTypes[pc.Type]
		if !ok {
			return false, fmt.Errorf("partition column %q has unknown type %q", pc.Name, pc.Type)
		}
		partTypes[i] = dt
	}
	for i, name := range f.Columns {
		if pi := slices.IndexFunc(f.PartitionBy, func(pc PartitionColumn) bool { return pc.Name == name }); pi >= 0 {
			src[i] = -1 - pi
			fields[i] = arrow.Field{Name: name, Type: partTypes[pi], Nullable: f.PartitionBy[pi].Nullable}
			continue
		}
		idx := fileSchema.FieldIndices(name)
		if len(idx) != 1 {
			return false, fmt.Errorf("file has %d columns named %q, want 1", len(idx), name)
		}
		ff := fileSchema.Field(idx[0])
		src[i] = idx[0]
		fields[i] = arrow.Field{Name: name, Type: ff.Type, Nullable: ff.Nullable}
	}
	schema := arrow.NewSchema(fields, nil)

	var rows int64
	cols := make([]arrow.Array, len(fields))
	for rr.Next() {
		rec := rr.RecordBatch()
		n := int(rec.NumRows())
		out, err := assemble(t.mem, schema, rec, src, partTypes, f.Partition, n, cols)
		if err != nil {
			return false, err
		}
		rows += int64(n)
		if !yield(out, nil) {
			return false, nil
		}
	}
	if err := rr.Err(); err != nil {
		return false, err
	}
	if rows != f.Rows {
		return false, fmt.Errorf("file has %d rows, the commit log says %d", rows, f.Rows)
	}
	return true, nil
}

// assemble builds an output record from a file's record and the
// partition values.
func assemble(mem memory.Allocator, schema *arrow.Schema, rec arrow.RecordBatch, src []int, partTypes []arrow.DataType,
	vals []PartitionValue, n int, cols []arrow.Array) (arrow.RecordBatch, error) {
	var built []arrow.Array
	defer func() {
		for _, a := range built {
			a.Release()
		}
		clear(cols)
	}()
	for i, s := range src {
		if s >= 0 {
			cols[i] = rec.Column(s)
			continue
		}
		pi := -1 - s
		b := array.NewBuilder(mem, partTypes[pi])
		b.Reserve(n)
		for range n {
			if err := appendPartitionValue(b, vals[pi].Value, vals[pi].Null); err != nil {
				b.Release()
				return nil, err
			}
		}
		a := b.NewArray()
		b.Release()
		built = append(built, a)
		cols[i] = a
	}
	return array.NewRecordBatch(schema, cols, int64(n)), nil
}
