package files

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
)

// rawSchema is the declared schema of the raw format when Options.Schema
// is nil, as package format defaults it.
var rawSchema = arrow.NewSchema([]arrow.Field{{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true}}, nil)

// Source reads a folder or a file once, to its end: a bounded
// arrowflow.Source whose splits are the files. It is safe for concurrent
// use, but serves one running job at a time: Splits remembers the files it
// listed for the readers that Open starts next.
type Source struct {
	opts   Options       // defaults applied
	schema *arrow.Schema // the declared columns, with the event-time metadata
	etCol  int           // index of the event-time column, -1 without one
	etUnit arrow.TimeUnit

	stats stats

	mu     sync.Mutex
	listed *listing // from the last Splits call
}

var _ arrowflow.Source = (*Source)(nil)

// stats are a source's counters, shared by its readers.
type stats struct {
	records, skipped, deadLettered, files atomic.Int64
}

// Stats is a snapshot of a source's counters, summed over its readers
// (subtasks) since the Source was created.
type Stats struct {
	// Records is the number of rows the source produced.
	Records int64
	// Skipped is the number of lines the format rejected and SkipOnError
	// dropped.
	Skipped int64
	// DeadLettered is the number of rejected lines written to the
	// dead-letter folder (DeadLetterOnError).
	DeadLettered int64
	// Files is the number of files read to their end.
	Files int64
}

// New checks opts and returns a source. It checks that Path exists and,
// for the text formats, that the format accepts FormatOptions; it lists
// no files (Splits does, when a job starts).
func New(opts Options) (*Source, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(o.Path); err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	schema := o.Schema
	if schema == nil {
		schema = rawSchema
	}
	s := &Source{opts: o, schema: schema, etCol: -1}
	if o.EventTime != "" {
		sch, err := arrowflow.WithEventTimeColumn(schema, o.EventTime)
		if err != nil {
			return nil, fmt.Errorf("files source: %w", err)
		}
		s.schema = sch
		s.etCol, _ = arrowflow.EventTimeColumn(sch)
		s.etUnit = sch.Field(s.etCol).Type.(*arrow.TimestampType).Unit
	}
	for _, c := range o.PartitionBy {
		if _, err := newPartitionParser(schema.Field(schema.FieldIndices(c)[0])); err != nil {
			return nil, fmt.Errorf("files source: %w", err)
		}
	}
	if o.Format != Parquet {
		// Check the format's options and the columns it is given now;
		// partition columns found by listing change only which columns.
		// raw takes one column, so with partition columns still to be
		// found the check waits for the listing.
		cols := s.fileSchema(s.withoutColumns(o.PartitionBy))
		if o.Format != "raw" || len(o.PartitionBy) > 0 || cols.NumFields() == 1 {
			if _, err := s.newDecoder(cols); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// withoutColumns returns the indices of the declared columns not named.
func (s *Source) withoutColumns(names []string) []int {
	var out []int
	for i, f := range s.schema.Fields() {
		if !slices.Contains(names, f.Name) {
			out = append(out, i)
		}
	}
	return out
}

// fileSchema is the schema of the declared columns read from the files.
func (s *Source) fileSchema(cols []int) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = s.schema.Field(c)
	}
	return arrow.NewSchema(fields, nil)
}

// newDecoder returns the text format's decoder of the given columns.
func (s *Source) newDecoder(cols *arrow.Schema) (format.Decoder, error) {
	dec, err := format.NewDecoder(context.Background(), format.Config{Name: s.opts.Format, Schema: cols, Options: s.opts.FormatOptions})
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	return dec, nil
}

// Options returns the source's options with defaults applied.
func (s *Source) Options() Options { return s.opts.withDefaults() }

// Schema returns the declared columns; its metadata names the event-time
// column when Options.EventTime is set.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// Stats returns the source's counters.
func (s *Source) Stats() Stats {
	return Stats{
		Records:      s.stats.records.Load(),
		Skipped:      s.stats.skipped.Load(),
		DeadLettered: s.stats.deadLettered.Load(),
		Files:        s.stats.files.Load(),
	}
}

// Splits lists the files to read, one split per file, ordered by split
// id: the file's path relative to Path, slash-separated (the base name
// when Path is a file). An empty folder has no splits. It also resolves
// the partition columns and checks every file's partition values.
func (s *Source) Splits(ctx context.Context) ([]string, error) {
	l, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.prepare(l); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.listed = l
	s.mu.Unlock()
	ids := make([]string, len(l.files))
	for i, f := range l.files {
		ids[i] = f.id
	}
	return ids, nil
}

// prepare compiles what every reader of a listing shares: for text, the
// decoder of the columns read from the lines.
func (s *Source) prepare(l *listing) error {
	if s.opts.Format != Parquet {
		dec, err := s.newDecoder(s.fileSchema(l.fileCols))
		if err != nil {
			return err
		}
		l.dec = dec
	}
	return nil
}

// Open starts a reader over the given splits, which it reads one after
// the other, each resuming from its Position (nil: the file's start). It
// fails, naming the file, when a split is not a file of the listing, when
// a restored file's size changed since the checkpoint, or when a file
// next to it in the listing of the run that first read it is gone. The
// reader allocates from info.Allocator (memory.DefaultAllocator when info
// or it is nil).
func (s *Source) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	ti := arrowflow.TaskInfo{Parallelism: 1}
	if info != nil {
		ti = *info
	}
	if ti.Allocator == nil {
		ti.Allocator = memory.DefaultAllocator
	}
	if ti.Logger == nil {
		ti.Logger = slog.New(slog.DiscardHandler)
	}
	s.mu.Lock()
	l := s.listed
	s.mu.Unlock()
	if l == nil {
		// Open without Splits (a reader driven by hand): list now.
		var err error
		if l, err = s.list(context.Background()); err != nil {
			return nil, err
		}
		if err := s.prepare(l); err != nil {
			return nil, err
		}
	}
	kind := s.kind()
	sps := make([]*split, 0, len(splits))
	seen := make(map[string]bool, len(splits))
	for _, st := range splits {
		e, ok := l.byID[st.Split]
		if !ok {
			return nil, fmt.Errorf("files source: split %s is not a file under %s any more; was it deleted or moved since the checkpoint?",
				st.Split, s.opts.Path)
		}
		if seen[st.Split] {
			return nil, fmt.Errorf("files source: split %s given twice", st.Split)
		}
		seen[st.Split] = true
		sp := &split{entry: e, pos: position{size: e.size, prev: e.prev, next: e.next}}
		if st.Position != nil {
			p, err := decodePosition(st.Split, kind, st.Position)
			if err != nil {
				return nil, err
			}
			if p.size != e.size {
				return nil, fmt.Errorf("files source: file %s changed since the checkpoint (it had %d bytes, now %d): "+
					"a restored job must find the files it read before unchanged; put the file back or start the job afresh", e.path, p.size, e.size)
			}
			for _, n := range []string{p.prev, p.next} {
				if n != "" && l.byID[n] == nil {
					return nil, fmt.Errorf("files source: file %s disappeared since the checkpoint "+
						"(it was listed next to %s when the job first read %s): a restored job must find the files it read before; "+
						"put the file back or start the job afresh", s.filePath(n), st.Split, s.opts.Path)
				}
			}
			sp.pos = p
		}
		sps = append(sps, sp)
	}
	return newReader(s, l, &ti, sps), nil
}

// kind is the position kind of the source's format.
func (s *Source) kind() byte {
	if s.opts.Format == Parquet {
		return kindParquet
	}
	return kindText
}

// filePath is the path on disk of a split id of a folder listing.
func (s *Source) filePath(id string) string {
	return filepath.Join(s.opts.Path, filepath.FromSlash(id))
}
