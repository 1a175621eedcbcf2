package window

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
)

// SplitWatermarkSpec says how SplitWatermarkSource computes watermarks
// from a source's rows.
type SplitWatermarkSpec struct {
	// Fields are nested ROW fields the expression reads, extracted as
	// columns (ops.ExtractFields) before it is evaluated.
	Fields []ops.FieldPath
	// Expr is the watermark expression, over the source's columns and
	// the extracted fields: it gives a timestamp, typically
	// `ts - INTERVAL '5' SECOND`, where ts may itself be any expression
	// (SQL's computed column, inlined). Rows where it is NULL do not move
	// the watermark.
	Expr kernels.Expr
	// IdleTimeout marks a split idle after it produced no row for this
	// long (0: never), as SplitWatermarks does.
	IdleTimeout time.Duration
}

// SplitWatermarkSource wraps a source so that its watermark is generated
// per split from spec.Expr, whatever the expression: each split's
// watermark is the largest value of the expression over that split's own
// rows, the source's watermark is the minimum over the reader's active
// splits (SplitWatermarks with no bound: the expression carries the
// delay), and idle splits stop holding it back. This is Flink's
// watermark push-down into split-aware sources: when a subtask reads
// several splits whose event times differ, a watermark computed over the
// interleaved rows would run ahead of the slower splits and make their
// rows late; per split it does not, so rows in order within their split
// are never late.
//
// The source's readers must implement arrowflow.SplitReporter (Open
// fails otherwise); the reader's own Watermark is not used. The batches
// pass through unchanged.
func SplitWatermarkSource(src arrowflow.Source, spec SplitWatermarkSpec) arrowflow.Source {
	return &splitWMSource{inner: src, spec: spec}
}

// UnwrapSource returns the source a SplitWatermarkSource wraps, or src
// itself, so that callers can reach the connector's own methods (its
// lag, its rejected-record counts).
func UnwrapSource(src arrowflow.Source) arrowflow.Source {
	if w, ok := src.(*splitWMSource); ok {
		return w.inner
	}
	return src
}

type splitWMSource struct {
	inner arrowflow.Source
	spec  SplitWatermarkSpec
}

var _ arrowflow.CommitObserver = (*splitWMSource)(nil)

func (s *splitWMSource) Schema() *arrow.Schema { return s.inner.Schema() }

func (s *splitWMSource) Splits(ctx context.Context) ([]string, error) { return s.inner.Splits(ctx) }

// EpochCommitted passes the commit on to the wrapped source, if it
// observes commits.
func (s *splitWMSource) EpochCommitted(ctx context.Context, epoch uint64, positions []arrowflow.SplitState) error {
	if o, ok := s.inner.(arrowflow.CommitObserver); ok {
		return o.EpochCommitted(ctx, epoch, positions)
	}
	return nil
}

func (s *splitWMSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r, err := s.inner.Open(info, splits)
	if err != nil {
		return nil, err
	}
	rep, ok := r.(arrowflow.SplitReporter)
	if !ok {
		r.Close()
		return nil, fmt.Errorf("watermark %s: the source's reader (%T) cannot say which split its rows come from, so the watermark cannot be generated per split", s.spec.Expr, r)
	}
	clock := info.Clock
	if clock == nil {
		clock = arrowflow.SystemClock
	}
	rd := &splitWMReader{
		inner: r, rep: rep, spec: &s.spec, info: info, clock: clock,
		wm:    NewSplitWatermarks(0, s.spec.IdleTimeout),
		known: map[string]bool{},
	}
	if len(s.spec.Fields) > 0 {
		rd.fields = ops.ExtractFields(s.spec.Fields)()
		if err := rd.fields.Open(info); err != nil {
			r.Close()
			return nil, err
		}
	}
	rd.syncSplits(clock.Now())
	return rd, nil
}

// splitWMReader is a reader whose watermark SplitWatermarkSource
// generates.
type splitWMReader struct {
	inner  arrowflow.SourceReader
	rep    arrowflow.SplitReporter
	spec   *SplitWatermarkSpec
	info   *arrowflow.TaskInfo
	clock  arrowflow.Clock
	fields arrowflow.Operator // nil without nested fields

	wm     *SplitWatermarks
	known  map[string]bool // splits registered with wm and not ended
	active map[string]bool // scratch for syncSplits
	nAct   int             // active splits at the last sync

	schema *arrow.Schema // the schema prog was compiled for
	prog   *kernels.Program
	toNs   int64
	maxs   []arrowflow.EventTime // per split index, scratch
	seen   []bool
	got    arrowflow.Batch // the fields operator's output
}

var (
	_ arrowflow.SourceReader = (*splitWMReader)(nil)
	_ arrowflow.IdleReporter = (*splitWMReader)(nil)
)

func (rd *splitWMReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	b, err := rd.inner.Next(ctx)
	if err != nil || b.IsZero() {
		if err == nil {
			rd.syncSplits(rd.clock.Now())
		}
		return b, err
	}
	if err := rd.observe(b); err != nil {
		b.Release()
		return arrowflow.Batch{}, err
	}
	rd.syncSplits(rd.clock.Now())
	return b, nil
}

// observe evaluates the expression over b and feeds each split's largest
// value to the watermarks.
func (rd *splitWMReader) observe(b arrowflow.Batch) error {
	eb := b
	if rd.fields != nil {
		b.Record.Retain()
		if err := rd.fields.ProcessBatch(0, b, rd); err != nil {
			return fmt.Errorf("watermark %s: %w", rd.spec.Expr, err)
		}
		eb, rd.got = rd.got, arrowflow.Batch{}
		if eb.IsZero() {
			return nil
		}
		defer eb.Release()
	}
	if s := eb.Schema(); s != rd.schema && (rd.schema == nil || !s.Equal(rd.schema)) {
		prog, err := kernels.Compile(rd.spec.Expr, s)
		if err != nil {
			return fmt.Errorf("watermark %s: %w", rd.spec.Expr, err)
		}
		ts, ok := prog.Type().(*arrow.TimestampType)
		if !ok {
			return fmt.Errorf("watermark %s: the expression gives %s, want a timestamp", rd.spec.Expr, prog.Type())
		}
		rd.schema, rd.prog, rd.toNs = s, prog, int64(ts.Unit.Multiplier())
	}
	vals, err := rd.prog.Eval(rd.info.Allocator, eb.Record, eb.Sel)
	if err != nil {
		return fmt.Errorf("watermark %s: %w", rd.spec.Expr, err)
	}
	defer vals.Release()
	ts := vals.(*array.Timestamp)
	raw := ts.Values()
	ids, rowSplit := rd.rep.BatchSplits()
	if len(ids) == 0 {
		return fmt.Errorf("watermark %s: the source's reader named no split for a batch of %d rows", rd.spec.Expr, b.NumRows())
	}
	if cap(rd.maxs) < len(ids) {
		rd.maxs, rd.seen = make([]arrowflow.EventTime, len(ids)), make([]bool, len(ids))
	}
	maxs, seen := rd.maxs[:len(ids)], rd.seen[:len(ids)]
	clear(seen)
	for i, v := range raw {
		if ts.IsNull(i) {
			continue
		}
		s := 0
		if rowSplit != nil {
			r := i
			if eb.Sel != nil {
				r = int(eb.Sel[i])
			}
			s = int(rowSplit[r])
		}
		if e := arrowflow.EventTime(int64(v) * rd.toNs); !seen[s] || e > maxs[s] {
			maxs[s], seen[s] = e, true
		}
	}
	now := rd.clock.Now()
	for s, ok := range seen {
		if ok {
			if !rd.known[ids[s]] {
				// A split the reader did not list yet (Kafka partition
				// discovery): it holds the watermark from now on.
				rd.known[ids[s]] = true
			}
			rd.wm.Observe(ids[s], maxs[s], now)
		}
	}
	return nil
}

// syncSplits registers the splits the reader lists as active and ends
// those it no longer lists.
func (rd *splitWMReader) syncSplits(now time.Time) {
	act := rd.rep.ActiveSplits()
	rd.nAct = len(act)
	if rd.active == nil {
		rd.active = map[string]bool{}
	}
	clear(rd.active)
	for _, id := range act {
		rd.active[id] = true
		if !rd.known[id] {
			rd.known[id] = true
			rd.wm.AddSplit(id, now)
		}
	}
	for id := range rd.known {
		if !rd.active[id] {
			delete(rd.known, id)
			rd.wm.EndSplit(id)
		}
	}
}

// Emit receives the fields operator's output.
func (rd *splitWMReader) Emit(b arrowflow.Batch) error {
	rd.got = b
	return nil
}

// EmitWatermark is never called by the fields operator.
func (rd *splitWMReader) EmitWatermark(arrowflow.EventTime) error {
	return errors.New("BUG: watermark from a field extraction")
}

// Watermark is the minimum over the active splits of each split's
// largest expression value (see SplitWatermarks).
func (rd *splitWMReader) Watermark() arrowflow.EventTime { return rd.wm.Watermark(rd.clock.Now()) }

// Idle reports whether the reader has no active split, or the wrapped
// reader says it is idle, or every split has been quiet for the idle
// timeout.
func (rd *splitWMReader) Idle() bool {
	if rd.nAct == 0 {
		return true
	}
	if ir, ok := rd.inner.(arrowflow.IdleReporter); ok && ir.Idle() {
		return true
	}
	return rd.wm.Idle(rd.clock.Now())
}

func (rd *splitWMReader) Positions() ([]arrowflow.SplitState, error) { return rd.inner.Positions() }

func (rd *splitWMReader) Close() error {
	err := rd.inner.Close()
	if rd.fields != nil {
		err = errors.Join(err, rd.fields.Close())
		rd.fields = nil
	}
	return err
}
