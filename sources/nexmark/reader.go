package nexmark

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// cursor is a reader's progress in one split.
type cursor struct {
	id    string // split id
	split int    // split number i
	next  int64  // next event position: i + j*Splits
}

// reader reads one subtask's splits, one batch from one split at a time,
// rotating round-robin over the unfinished ones. It is used from one
// goroutine.
type reader struct {
	src     *Source
	cursors []cursor
	turn    int // index in cursors where the round-robin search starts
	b       *builder
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
	rd := &reader{src: src, cursors: cursors, b: newBuilder(src.gen, mem)}
	if rate := src.gen.cfg.RateLimit; rate > 0 {
		rd.pace = newPacer(rate * float64(len(cursors)) / float64(src.gen.cfg.Splits))
	}
	return rd
}

// done reports whether c has generated all its events.
func (rd *reader) done(c *cursor) bool {
	return rd.src.gen.cfg.Events > 0 && c.next >= rd.src.gen.cfg.Events
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
		return arrowflow.Batch{}, errors.New("nexmark: Next on a closed reader")
	}
	k := rd.pick()
	if k < 0 {
		return arrowflow.Batch{}, io.EOF
	}
	cfg := &rd.src.gen.cfg
	n := cfg.BatchSize
	if rd.pace.limited() {
		var err error
		if n, err = rd.pace.admit(ctx, n); n == 0 || err != nil {
			return arrowflow.Batch{}, err
		}
	}
	c := &rd.cursors[k]
	step := int64(cfg.Splits)
	if cfg.Events > 0 {
		n = int(min(int64(n), (cfg.Events-c.next+step-1)/step))
	}
	rec := rd.b.build(c.next, step, n)
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

// Watermark returns the minimum over the unfinished splits of each
// split's watermark: the event time of the first event of the
// out-of-order group holding the split's next position (no later event of
// the split is earlier: this is the reference's watermark), minus
// WatermarkHoldback, minus 1ns (an event at the watermark would be late).
// Finished splits do not count, so it is MaxEventTime when every split is
// done.
func (rd *reader) Watermark() arrowflow.EventTime {
	g := rd.src.gen
	wm := arrowflow.MaxEventTime
	for i := range rd.cursors {
		c := &rd.cursors[i]
		if rd.done(c) {
			continue
		}
		ms := g.tl.timestampMs(g.tl.groupStart(c.next))
		et := arrowflow.TimestampToEventTime(arrow.Timestamp(ms), arrow.Millisecond)
		back := arrowflow.EventTime(g.cfg.WatermarkHoldback) + 1
		if et < arrowflow.MinEventTime+back {
			return arrowflow.MinEventTime
		}
		wm = min(wm, et-back)
	}
	return wm
}

// Positions returns each split's next event position.
func (rd *reader) Positions() ([]arrowflow.SplitState, error) {
	out := make([]arrowflow.SplitState, len(rd.cursors))
	for i, c := range rd.cursors {
		out[i] = arrowflow.SplitState{Split: c.id, Position: encodePosition(c.next)}
	}
	return out, nil
}

// Close releases the reader. It may be called more than once.
func (rd *reader) Close() error {
	if rd.closed {
		return nil
	}
	rd.closed = true
	rd.b.pool.close()
	rd.b = nil
	return nil
}

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
