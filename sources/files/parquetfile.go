package files

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetFile reads the declared columns of one Parquet file in batches,
// from the row its position says. It reads only the leaf columns the
// declared columns need (of a struct, only the declared fields), and
// resumes without decoding the rows before its position: whole row
// groups are skipped by their row counts, and within the first row group
// read, pqarrow's SeekToRow skips pages by the offset index (or page
// headers); when a column read is repeated (in a list or map), where
// SeekToRow fails, the rows before the position in that row group are
// decoded and dropped.
type parquetFile struct {
	rd     *reader
	sp     *split
	pf     *file.Reader
	rr     pqarrow.RecordReader // nil when no column is read from the file
	src    []int                // per fileCols entry: its column in rr's batches
	convs  []converter          // per fileCols entry
	consts []arrow.Array
	total  int64 // the file's rows
	cols   []arrow.Array
	// discard is the number of rows rr reads before the position, which
	// next drops.
	discard int64
}

// repeated reports whether any of the leaf columns is repeated (inside a
// list or map).
func repeated(pf *file.Reader, leaves []int) bool {
	sc := pf.MetaData().Schema
	for _, l := range leaves {
		if sc.Column(l).MaxRepetitionLevel() > 0 {
			return true
		}
	}
	return false
}

func openParquet(rd *reader, sp *split, f *os.File) (_ splitFile, err error) {
	e := sp.entry
	path := e.path
	fail := func(format string, args ...any) error {
		return fmt.Errorf("files source: Parquet file %s: "+format, append([]any{path}, args...)...)
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(rd.mem)))
	if err != nil {
		return nil, fail("%w", err)
	}
	p := &parquetFile{rd: rd, sp: sp, pf: pf, total: pf.NumRows()}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if e.rows >= 0 && e.rows != p.total {
		return nil, fail("it has %d rows, its table's commit log says %d", p.total, e.rows)
	}
	start := sp.pos.rows
	if start > p.total {
		return nil, fail("the position says %d rows were read, but it has %d: it changed since the checkpoint", start, p.total)
	}
	if p.consts, err = rd.newConstants(e); err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(rd.src.opts.BatchSize)}, rd.mem)
	if err != nil {
		return nil, fail("%w", err)
	}

	// The leaves of the declared columns, checked against the file's
	// types before anything is read.
	declared := rd.src.schema
	var leaves []int
	for _, c := range rd.l.fileCols {
		df := declared.Field(c)
		sf, err := topField(fr.Manifest, df.Name)
		if err != nil {
			return nil, fail("%w", err)
		}
		if _, err := compileConverter(df.Name, sf.Field.Type, df.Type); err != nil {
			return nil, fail("%w", err)
		}
		leaves = appendLeaves(leaves, sf, df.Type)
	}
	slices.Sort(leaves)
	p.cols = make([]arrow.Array, len(rd.l.fileCols))
	if start == p.total || len(leaves) == 0 {
		return p, nil // nothing left to read, or only the row count
	}

	// Skip whole row groups, then rows within the first one read.
	rg, skip := 0, start
	for rg < pf.NumRowGroups() {
		n := pf.RowGroup(rg).NumRows()
		if skip < n {
			break
		}
		skip -= n
		rg++
	}
	groups := make([]int, 0, pf.NumRowGroups()-rg)
	for g := rg; g < pf.NumRowGroups(); g++ {
		groups = append(groups, g)
	}
	if p.rr, err = fr.GetRecordReader(context.Background(), leaves, groups); err != nil {
		return nil, fail("%w", err)
	}
	if skip > 0 {
		if repeated(pf, leaves) {
			// pqarrow's SeekToRow loses track of repetition levels
			// (arrow-go v18.9.0: "number of decoded rep/def levels did
			// not match"): read and drop the rows instead, at most one
			// row group's.
			p.discard = skip
		} else if err := p.rr.SeekToRow(skip); err != nil {
			return nil, fail("resuming at row %d: %w", start, err)
		}
	}
	rs := p.rr.Schema()
	for _, c := range rd.l.fileCols {
		df := declared.Field(c)
		idx := rs.FieldIndices(df.Name)
		if len(idx) != 1 {
			return nil, fail("BUG: column %s is not in the projected batches (%s)", df.Name, rs)
		}
		conv, err := compileConverter(df.Name, rs.Field(idx[0]).Type, df.Type)
		if err != nil {
			return nil, fail("%w", err)
		}
		p.src = append(p.src, idx[0])
		p.convs = append(p.convs, conv)
	}
	return p, nil
}

// topField finds the file's top-level column of a declared name.
func topField(m *pqarrow.SchemaManifest, name string) (*pqarrow.SchemaField, error) {
	var found *pqarrow.SchemaField
	var names []string
	for i := range m.Fields {
		f := &m.Fields[i]
		names = append(names, f.Field.Name)
		if f.Field.Name != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("it has two columns named %s", name)
		}
		found = f
	}
	if found == nil {
		return nil, fmt.Errorf("it has no column %s, which the source declares (its columns are %s; names are case-sensitive)", name, joinNames(names))
	}
	return found, nil
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := names[0]
	for _, n := range names[1:] {
		s += ", " + n
	}
	return s
}

// appendLeaves appends the leaf column indices a declared column needs:
// of a struct only its declared fields, of anything else every leaf.
func appendLeaves(dst []int, sf *pqarrow.SchemaField, declared arrow.DataType) []int {
	if sf.IsLeaf() {
		return append(dst, sf.ColIndex)
	}
	ds, ok := declared.(*arrow.StructType)
	if _, isStruct := sf.Field.Type.(*arrow.StructType); ok && isStruct {
		for i := range sf.Children {
			ch := &sf.Children[i]
			if idx := ds.FieldIndices(ch.Field.Name); len(idx) == 1 {
				dst = appendLeaves(dst, ch, ds.Field(idx[0]).Type)
			}
		}
		return dst
	}
	for i := range sf.Children {
		dst = appendLeaves(dst, &sf.Children[i], nil)
	}
	return dst
}

func (p *parquetFile) next(context.Context) (arrow.RecordBatch, bool, error) {
	pos := &p.sp.pos
	left := p.total - pos.rows
	if left == 0 {
		return nil, true, nil
	}
	if p.rr == nil {
		// No column comes from the file: batches of its row count.
		n := int(min(left, int64(p.rd.src.opts.BatchSize)))
		rec := p.rd.assemble(p.cols, p.consts, n)
		pos.rows += int64(n)
		return rec, pos.rows == p.total, nil
	}
	in, err := p.read()
	if err != nil {
		return nil, false, fmt.Errorf("files source: Parquet file %s: %w", p.sp.entry.path, err)
	}
	defer in.Release()
	n := int(in.NumRows())
	if int64(n) > left || n > p.rd.src.opts.BatchSize {
		return nil, false, fmt.Errorf("files source: Parquet file %s: a batch of %d rows after %d, but it has %d (batches of at most %d)",
			p.sp.entry.path, n, pos.rows, p.total, p.rd.src.opts.BatchSize)
	}
	declared := p.rd.src.schema
	for i, c := range p.rd.l.fileCols {
		d, err := p.convs[i](p.rd.mem, in.Column(p.src[i]).Data())
		if err == nil && !declared.Field(c).Nullable && d.NullN() > 0 {
			err = fmt.Errorf("column %s is declared NOT NULL, but %d of rows %d to %d are null",
				declared.Field(c).Name, d.NullN(), pos.rows, pos.rows+int64(n)-1)
			d.Release()
		}
		if err != nil {
			releaseArrays(p.cols[:i])
			return nil, false, fmt.Errorf("files source: Parquet file %s: %w", p.sp.entry.path, err)
		}
		p.cols[i] = array.MakeFromData(d)
		d.Release()
	}
	rec := p.rd.assemble(p.cols, p.consts, n)
	clear(p.cols)
	pos.rows += int64(n)
	return rec, pos.rows == p.total, nil
}

// read returns the next batch of the file's columns after the position
// (the caller releases it).
func (p *parquetFile) read() (arrow.RecordBatch, error) {
	for {
		if !p.rr.Next() {
			err := p.rr.Err()
			if err == nil {
				err = fmt.Errorf("it ended after %d rows, its metadata says %d", p.sp.pos.rows, p.total)
			}
			return nil, err
		}
		in := p.rr.RecordBatch()
		n := in.NumRows()
		switch {
		case p.discard == 0:
			in.Retain()
			return in, nil
		case p.discard < n:
			in = in.NewSlice(p.discard, n)
			p.discard = 0
			return in, nil
		}
		p.discard -= n
	}
}

func (p *parquetFile) close() error {
	if p.rr != nil {
		p.rr.Release()
		p.rr = nil
	}
	releaseArrays(p.consts)
	return p.pf.Close()
}
