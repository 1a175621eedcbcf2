package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/window"
)

// split is a reader's progress in one file.
type split struct {
	entry *fileEntry
	pos   position
	file  splitFile // open while the file is being read
}

// splitFile reads one open file.
type splitFile interface {
	// next returns the file's next batch, in the declared schema, and
	// records its progress in the split's position. The batch is nil when
	// the call consumed input without producing rows (rejected or blank
	// lines); eof reports that the file ends after it.
	next(ctx context.Context) (rec arrow.RecordBatch, eof bool, err error)
	// close releases the file.
	close() error
}

// reader reads one subtask's files, one after the other in split order.
// It is used from one goroutine.
type reader struct {
	src    *Source
	l      *listing
	mem    memory.Allocator
	splits []*split
	cur    int // index of the split being read; len(splits) when all are done

	vb   format.BatchBuilder     // text formats: the lines' decoder
	wm   *window.SplitWatermarks // nil without event time
	dlq  *deadLetters            // nil unless OnError is dlq
	arrs []arrow.Array           // scratch for a batch's columns
	// last is the split of the last batch, active scratch for
	// ActiveSplits (see arrowflow.SplitReporter).
	last   [1]string
	active []string

	closed bool
}

var (
	_ arrowflow.SourceReader  = (*reader)(nil)
	_ arrowflow.SplitReporter = (*reader)(nil)
)

func newReader(src *Source, l *listing, info *arrowflow.TaskInfo, splits []*split) *reader {
	rd := &reader{src: src, l: l, mem: info.Allocator, splits: splits,
		arrs: make([]arrow.Array, src.schema.NumFields())}
	if l.dec != nil {
		rd.vb = l.dec.NewBuilder(rd.mem)
	}
	if src.opts.OnError == DeadLetterOnError && src.opts.Format != Parquet {
		rd.dlq = newDeadLetters(src.opts.DeadLetterPath, info, &src.stats)
	}
	if src.etCol >= 0 {
		rd.wm = window.NewSplitWatermarks(src.opts.MaxOutOfOrderness, 0)
		for _, sp := range splits {
			if sp.pos.done {
				continue
			}
			rd.wm.AddSplit(sp.entry.id, time.Time{})
			if src.opts.FilesInEventTimeOrder {
				break // only the file being read holds the watermark
			}
		}
	}
	rd.skipDone()
	return rd
}

// skipDone moves cur past the splits already read to their end.
func (rd *reader) skipDone() {
	for rd.cur < len(rd.splits) && rd.splits[rd.cur].pos.done {
		rd.cur++
	}
}

// Next returns the next batch of the file being read: up to BatchSize
// rows, never rows of two files. It returns a zero Batch when it consumed
// lines without producing a row (all rejected or blank), and io.EOF once
// every file is read (at once when the reader has no file).
func (rd *reader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if rd.closed {
		return arrowflow.Batch{}, errors.New("files source: Next on a closed reader")
	}
	for rd.cur < len(rd.splits) {
		if err := ctx.Err(); err != nil {
			return arrowflow.Batch{}, err
		}
		sp := rd.splits[rd.cur]
		if sp.file == nil {
			if err := rd.openSplit(sp); err != nil {
				return arrowflow.Batch{}, err
			}
		}
		rec, eof, err := sp.file.next(ctx)
		if err != nil {
			return arrowflow.Batch{}, err
		}
		if rec != nil && rd.wm != nil {
			rd.observe(sp, rec)
		}
		if eof {
			if err := rd.finish(sp); err != nil {
				if rec != nil {
					rec.Release()
				}
				return arrowflow.Batch{}, err
			}
		}
		if rec != nil {
			rd.last[0] = sp.entry.id
			rd.src.stats.records.Add(rec.NumRows())
			return arrowflow.NewBatch(rec), nil
		}
		if !eof {
			return arrowflow.Batch{}, nil
		}
	}
	return arrowflow.Batch{}, io.EOF
}

// openSplit opens a split's file, checking that it is the file listed
// (or checkpointed): still there, and of the same size.
func (rd *reader) openSplit(sp *split) error {
	e := sp.entry
	f, err := os.Open(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("files source: file %s disappeared since it was listed (or since the checkpoint the job restored)", e.path)
	}
	if err != nil {
		return fmt.Errorf("files source: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() != sp.pos.size {
		err = fmt.Errorf("files source: file %s changed since it was listed (or since the checkpoint the job restored): it had %d bytes, now %d",
			e.path, sp.pos.size, st.Size())
	}
	if err == nil {
		if rd.src.opts.Format == Parquet {
			sp.file, err = openParquet(rd, sp, f)
		} else {
			sp.file, err = openText(rd, sp, f)
		}
	}
	if err != nil {
		f.Close()
		return err
	}
	if rd.wm != nil {
		rd.wm.AddSplit(e.id, time.Time{})
	}
	return nil
}

// finish closes a file read to its end and moves to the next.
func (rd *reader) finish(sp *split) error {
	err := sp.file.close()
	sp.file = nil
	sp.pos.done = true
	rd.src.stats.files.Add(1)
	rd.skipDone()
	if rd.wm != nil {
		if rd.src.opts.FilesInEventTimeOrder && rd.cur < len(rd.splits) {
			// The next file holds the watermark from now on; registered
			// before this one ends so that it never jumps to the end.
			rd.wm.AddSplit(rd.splits[rd.cur].entry.id, time.Time{})
		}
		rd.wm.EndSplit(sp.entry.id)
	}
	if err != nil {
		return fmt.Errorf("files source: closing %s: %w", sp.entry.path, err)
	}
	return nil
}

// assemble builds a batch of the declared schema from the columns read
// from the file (in fileCols order) and the file's partition constants
// (at least n rows long). It takes over fileCols' references.
func (rd *reader) assemble(fileCols []arrow.Array, consts []arrow.Array, n int) arrow.RecordBatch {
	for i, c := range rd.l.fileCols {
		rd.arrs[c] = fileCols[i]
	}
	for k, c := range rd.l.partCols {
		rd.arrs[c] = array.NewSlice(consts[k], 0, int64(n))
	}
	rec := array.NewRecordBatch(rd.src.schema, rd.arrs, int64(n))
	for i, a := range rd.arrs {
		a.Release()
		rd.arrs[i] = nil
	}
	return rec
}

// newConstants returns a file's partition columns as constant arrays of
// BatchSize rows, which batches slice.
func (rd *reader) newConstants(e *fileEntry) ([]arrow.Array, error) {
	consts := make([]arrow.Array, len(rd.l.partCols))
	for k, p := range rd.l.parsers {
		a, err := p.constant(e.parts[k], rd.src.opts.BatchSize, rd.mem)
		if err != nil {
			releaseArrays(consts)
			return nil, fmt.Errorf("files source: file %s: %w", e.path, err)
		}
		consts[k] = a
	}
	return consts, nil
}

func releaseArrays(as []arrow.Array) {
	for i, a := range as {
		if a != nil {
			a.Release()
			as[i] = nil
		}
	}
}

// observe feeds the largest event time of a batch to the file's
// watermark. A null event time counts as the earliest.
func (rd *reader) observe(sp *split, rec arrow.RecordBatch) {
	col := rec.Column(rd.src.etCol).(*array.Timestamp)
	maxET := arrowflow.MinEventTime
	vals := col.TimestampValues()
	for i, v := range vals {
		if col.IsValid(i) {
			maxET = max(maxET, arrowflow.TimestampToEventTime(v, rd.src.etUnit))
		}
	}
	rd.wm.Observe(sp.entry.id, maxET, time.Time{})
}

// Watermark is the minimum over the files still holding it back (see
// Options.FilesInEventTimeOrder) of each file's largest event time minus
// MaxOutOfOrderness; MaxEventTime once every file is read, MinEventTime
// without an event-time column.
func (rd *reader) Watermark() arrowflow.EventTime {
	if rd.wm == nil {
		return arrowflow.MinEventTime
	}
	return rd.wm.Watermark(time.Time{})
}

// Positions returns each file's position after the last batch Next
// returned. Under DeadLetterOnError it first makes the dead letters
// written so far durable, so that a checkpoint never covers a rejected
// line whose dead letter could still be lost.
func (rd *reader) Positions() ([]arrowflow.SplitState, error) {
	if rd.dlq != nil {
		if err := rd.dlq.flush(); err != nil {
			return nil, err
		}
	}
	kind := rd.src.kind()
	out := make([]arrowflow.SplitState, len(rd.splits))
	for i, sp := range rd.splits {
		out[i] = arrowflow.SplitState{Split: sp.entry.id, Position: sp.pos.encode(kind)}
	}
	return out, nil
}

// Close closes the open file and releases the builders. It may be called
// more than once.
func (rd *reader) Close() error {
	if rd.closed {
		return nil
	}
	rd.closed = true
	var errs []error
	for _, sp := range rd.splits {
		if sp.file != nil {
			errs = append(errs, sp.file.close())
			sp.file = nil
		}
	}
	if rd.vb != nil {
		rd.vb.Release()
	}
	if rd.dlq != nil {
		errs = append(errs, rd.dlq.close())
	}
	return errors.Join(errs...)
}

// BatchSplits names the file of the last batch: a batch never holds rows
// of two files.
func (rd *reader) BatchSplits() ([]string, []int32) { return rd.last[:], nil }

// ActiveSplits lists the files not read to their end, or with
// FilesInEventTimeOrder only the one being read (the later ones hold
// nothing back until it is their turn).
func (rd *reader) ActiveSplits() []string {
	rd.active = rd.active[:0]
	for i := rd.cur; i < len(rd.splits); i++ {
		if rd.splits[i].pos.done {
			continue
		}
		rd.active = append(rd.active, rd.splits[i].entry.id)
		if rd.src.opts.FilesInEventTimeOrder {
			break
		}
	}
	return rd.active
}
