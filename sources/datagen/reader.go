package datagen

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// cursor is a reader's progress in one split.
type cursor struct {
	id    string // split id
	split int    // split number s
	next  int64  // next row to generate: s + k*Splits
	// maxET is the largest event time generated in this reader (valid
	// when seen).
	maxET arrowflow.EventTime
	seen  bool
}

// reader reads one subtask's splits. It is used from one goroutine.
type reader struct {
	src     *Source
	cursors []cursor
	turn    int // index in cursors where the round-robin search starts
	cols    []column
	et      *sliceColumn[arrow.Timestamp] // the event-time column, or nil
	arrs    []arrow.Array                 // scratch for a batch's columns
	pace    pacer
	closed  bool
	// last is the split of the last batch, active scratch for
	// ActiveSplits (see arrowflow.SplitReporter).
	last   [1]string
	active []string
}

var (
	_ arrowflow.SourceReader  = (*reader)(nil)
	_ arrowflow.SplitReporter = (*reader)(nil)
)

func newReader(src *Source, mem memory.Allocator, cursors []cursor) *reader {
	rd := &reader{src: src, cursors: cursors, arrs: make([]arrow.Array, len(src.gens))}
	for i, g := range src.gens {
		col := g.newColumn(mem)
		rd.cols = append(rd.cols, col)
		if i == src.etCol {
			rd.et = col.(*sliceColumn[arrow.Timestamp])
		}
	}
	if rate := src.cfg.RowsPerSecond; rate > 0 {
		share := rate * float64(len(cursors)) / float64(src.cfg.Splits)
		rd.pace = newPacer(share)
	}
	return rd
}

// done reports whether c has generated all its rows.
func (rd *reader) done(c *cursor) bool {
	return rd.src.cfg.Rows > 0 && c.next >= rd.src.cfg.Rows
}

// Next generates one batch from the next unfinished split in round-robin
// order. When rate-limited it may return a zero Batch (nothing due yet)
// after sleeping at most about 50ms. It returns io.EOF once every split is
// done, at once when the reader has no split.
func (rd *reader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if err := ctx.Err(); err != nil {
		return arrowflow.Batch{}, err
	}
	if rd.closed {
		return arrowflow.Batch{}, errors.New("datagen: Next on a closed reader")
	}
	k := rd.pick()
	if k < 0 {
		return arrowflow.Batch{}, io.EOF
	}
	n := rd.src.cfg.BatchSize
	if rd.pace.limited() {
		var err error
		if n, err = rd.pace.admit(ctx, n); n == 0 || err != nil {
			return arrowflow.Batch{}, err
		}
	}
	c := &rd.cursors[k]
	step := int64(rd.src.cfg.Splits)
	if rows := rd.src.cfg.Rows; rows > 0 {
		n = int(min(int64(n), (rows-c.next+step-1)/step))
	}
	rec := rd.build(c.next, step, n)
	if rd.et != nil {
		maxET := arrowflow.EventTime(int64(slices.Max(rd.et.vals)) * rd.src.etMult)
		if !c.seen || maxET > c.maxET {
			c.maxET, c.seen = maxET, true
		}
	}
	c.next += int64(n) * step
	rd.turn = k + 1
	rd.last[0] = c.id
	rd.pace.emitted += int64(n)
	return arrowflow.NewBatch(rec), nil
}

// pick returns the index of the next unfinished cursor from rd.turn on,
// or -1 when all are done.
func (rd *reader) pick() int {
	for i := range rd.cursors {
		k := (rd.turn + i) % len(rd.cursors)
		if !rd.done(&rd.cursors[k]) {
			return k
		}
	}
	return -1
}

// build generates rows first, first+step, ... (n rows) as a record batch.
func (rd *reader) build(first, step int64, n int) arrow.RecordBatch {
	for i, col := range rd.cols {
		col.appendRows(first, step, n)
		rd.arrs[i] = col.newArray()
	}
	rec := array.NewRecordBatch(rd.src.schema, rd.arrs, int64(n))
	for i, a := range rd.arrs {
		a.Release()
		rd.arrs[i] = nil
	}
	return rec
}

// Watermark returns the minimum over the unfinished splits of each split's
// largest generated event time minus MaxOutOfOrderness (rounded up to the
// column's unit) minus 1ns. A split that generated nothing yet holds it at
// MinEventTime; finished splits do not count, so it is MaxEventTime when
// every split is done. Without an event-time column it is MinEventTime.
func (rd *reader) Watermark() arrowflow.EventTime {
	if rd.et == nil {
		return arrowflow.MinEventTime
	}
	wm := arrowflow.MaxEventTime
	for i := range rd.cursors {
		c := &rd.cursors[i]
		if rd.done(c) {
			continue
		}
		if !c.seen {
			return arrowflow.MinEventTime
		}
		back := arrowflow.EventTime(rd.src.etMargin + 1)
		if c.maxET < arrowflow.MinEventTime+back {
			return arrowflow.MinEventTime
		}
		wm = min(wm, c.maxET-back)
	}
	return wm
}

// Positions returns each split's next row number.
func (rd *reader) Positions() ([]arrowflow.SplitState, error) {
	out := make([]arrowflow.SplitState, len(rd.cursors))
	for i, c := range rd.cursors {
		out[i] = arrowflow.SplitState{Split: c.id, Position: encodePosition(c.next)}
	}
	return out, nil
}

// Close releases the column builders. It may be called more than once.
func (rd *reader) Close() error {
	if rd.closed {
		return nil
	}
	rd.closed = true
	for _, col := range rd.cols {
		col.release()
	}
	return nil
}

// maxWait bounds how long Next sleeps for the rate limit.
const maxWait = 50 * time.Millisecond

// BatchSplits names the split of the last batch: every batch comes from
// one split.
func (rd *reader) BatchSplits() ([]string, []int32) { return rd.last[:], nil }

// ActiveSplits lists the splits not yet generated to their end.
func (rd *reader) ActiveSplits() []string {
	rd.active = rd.active[:0]
	for i := range rd.cursors {
		if !rd.done(&rd.cursors[i]) {
			rd.active = append(rd.active, rd.cursors[i].id)
		}
	}
	return rd.active
}
