package ops

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// AssignWatermarks returns an operator that generates watermarks from the
// rows it sees, as Flink SQL's `WATERMARK FOR ts AS expr` does: expr is
// evaluated for every live row (it must give a timestamp, typically
// `ts - INTERVAL '5' SECOND`), and after each batch the operator emits
// the largest value seen so far, when it grew, as the watermark. A row
// whose event time is at or below the watermark is late downstream.
// Rows whose expr is NULL do not move the watermark.
//
// Watermarks from upstream (the source's own) are dropped, except the
// final MaxEventTime at the end of a bounded input, which is forwarded.
// The watermark is not part of the checkpoint: after a restore it starts
// again from the first batch, as Flink's does, which only delays firing.
//
// Batches pass through unchanged. The expression is compiled against the
// first batch's schema (and again if the schema changes); a compile error
// or a non-timestamp result fails the job naming the operator.
func AssignWatermarks(expr kernels.Expr) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &watermarkOp{expr: expr, wm: arrowflow.MinEventTime, col: -1} }
}

type watermarkOp struct {
	arrowflow.BaseOperator
	expr   kernels.Expr
	col    int   // fast path: the column of `col` or `col - delay`; -1 otherwise
	delay  int64 // its delay in nanoseconds
	info   *arrowflow.TaskInfo
	schema *arrow.Schema
	prog   *kernels.Program
	toNs   int64 // nanoseconds per unit of the expression's timestamp type
	wm     arrowflow.EventTime
}

func (w *watermarkOp) Open(info *arrowflow.TaskInfo) error {
	w.info = info
	return nil
}

func (w *watermarkOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	if s := b.Schema(); s != w.schema && (w.schema == nil || !s.Equal(w.schema)) {
		prog, err := kernels.Compile(w.expr, s)
		if err != nil {
			b.Release()
			return fmt.Errorf("watermark %s: %w", w.expr, err)
		}
		ts, ok := prog.Type().(*arrow.TimestampType)
		if !ok {
			b.Release()
			return fmt.Errorf("watermark %s: the expression gives %s, want a timestamp", w.expr, prog.Type())
		}
		w.schema, w.prog, w.toNs = s, prog, int64(ts.Unit.Multiplier())
		w.col = fastColumn(w.expr, s, &w.delay)
	}
	if w.col >= 0 {
		// `ts` or `ts - INTERVAL`: the column's maximum, no evaluation.
		next := w.wm
		ts := b.Record.Column(w.col).(*array.Timestamp)
		raw := ts.Values()
		mx, seen := int64(math.MinInt64), false
		each := func(i int) {
			if ts.IsValid(i) && int64(raw[i]) > mx {
				mx, seen = int64(raw[i]), true
			}
		}
		if b.Sel == nil {
			if ts.NullN() == 0 {
				for _, v := range raw {
					if int64(v) > mx {
						mx, seen = int64(v), true
					}
				}
			} else {
				for i := range raw {
					each(i)
				}
			}
		} else {
			for _, i := range b.Sel {
				each(int(i))
			}
		}
		if seen {
			if e := arrowflow.EventTime(mx*w.toNs - w.delay); e > next {
				next = e
			}
		}
		if err := out.Emit(b); err != nil {
			return err
		}
		if next > w.wm {
			w.wm = next
			return out.EmitWatermark(next)
		}
		return nil
	}
	vals, err := w.prog.Eval(w.info.Allocator, b.Record, b.Sel)
	if err != nil {
		b.Release()
		return fmt.Errorf("watermark %s: %w", w.expr, err)
	}
	next := w.wm
	ts := vals.(*array.Timestamp)
	raw := ts.Values()
	if ts.NullN() == 0 {
		for _, v := range raw {
			if e := arrowflow.EventTime(int64(v) * w.toNs); e > next {
				next = e
			}
		}
	} else {
		for i, v := range raw {
			if ts.IsValid(i) {
				if e := arrowflow.EventTime(int64(v) * w.toNs); e > next {
					next = e
				}
			}
		}
	}
	vals.Release()
	if err := out.Emit(b); err != nil {
		return err
	}
	if next > w.wm {
		w.wm = next
		return out.EmitWatermark(next)
	}
	return nil
}

// ProcessWatermark forwards only the end of input.
func (w *watermarkOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm == arrowflow.MaxEventTime && w.wm != arrowflow.MaxEventTime {
		w.wm = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// fastColumn recognises `col` and `col - <duration literal>` over a
// timestamp column of s: it returns the column's index and sets delay,
// or returns -1.
func fastColumn(e kernels.Expr, s *arrow.Schema, delay *int64) int {
	*delay = 0
	if c, ok := e.(*kernels.CallExpr); ok && c.Func == "sub" && len(c.Args) == 2 {
		lit, ok := c.Args[1].(*kernels.LiteralExpr)
		if !ok {
			return -1
		}
		d, ok := lit.Value.(time.Duration)
		if !ok || d < 0 {
			return -1
		}
		*delay, e = int64(d), c.Args[0]
	}
	col, ok := e.(*kernels.ColumnExpr)
	if !ok {
		return -1
	}
	idx := s.FieldIndices(col.Name)
	if len(idx) != 1 {
		return -1
	}
	if _, ok := s.Field(idx[0]).Type.(*arrow.TimestampType); !ok {
		return -1
	}
	return idx[0]
}
