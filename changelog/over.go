package changelog

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
	"github.com/weirflow/weir/window"
)

// OverFrame is the frame of an OVER aggregation: the rows of the current
// row's partition, ordered by event time, that end at the current row.
// Build one with OverRows, OverRowsUnbounded, OverRange or
// OverRangeUnbounded.
type OverFrame struct {
	// Range makes rows with equal time peers: each gets the result over
	// the frame that ends after its last peer (SQL's RANGE). Otherwise
	// (ROWS) rows with equal time enter the frame in arrival order, one at
	// a time.
	Range bool
	// Unbounded makes the frame start at the partition's first row
	// (UNBOUNDED PRECEDING).
	Unbounded bool
	// Rows, for a bounded ROWS frame, is n of n PRECEDING: the frame is the
	// current row and the n rows before it.
	Rows int64
	// Interval, for a bounded RANGE frame, is the interval of INTERVAL
	// PRECEDING: the frame is the rows with time in [t - Interval, t] for
	// the current row's time t.
	Interval time.Duration
}

// OverRows is ROWS BETWEEN n PRECEDING AND CURRENT ROW.
func OverRows(n int64) OverFrame { return OverFrame{Rows: n} }

// OverRowsUnbounded is ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
func OverRowsUnbounded() OverFrame { return OverFrame{Unbounded: true} }

// OverRange is RANGE BETWEEN INTERVAL d PRECEDING AND CURRENT ROW.
func OverRange(d time.Duration) OverFrame { return OverFrame{Range: true, Interval: d} }

// OverRangeUnbounded is RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW,
// the default frame of an OVER window with ORDER BY.
func OverRangeUnbounded() OverFrame { return OverFrame{Range: true, Unbounded: true} }

// String is the frame in SQL.
func (f OverFrame) String() string {
	unit, start := "ROWS", ""
	switch {
	case f.Range:
		unit = "RANGE"
	}
	switch {
	case f.Unbounded:
		start = "UNBOUNDED"
	case f.Range:
		start = "INTERVAL '" + f.Interval.String() + "'"
	default:
		start = fmt.Sprint(f.Rows)
	}
	return unit + " BETWEEN " + start + " PRECEDING AND CURRENT ROW"
}

// OverAggregate configures Flink SQL's OVER aggregation over event time
// (or, with ProcessingTime, over processing time):
//
//	SELECT *, <Aggs> OVER (PARTITION BY PartitionBy ORDER BY Time <Frame>) FROM t
//
// Each input row is emitted once, with one column per aggregate over its
// frame, when the watermark reaches its time: rows are held per partition
// until then, and emitted in time order (rows of equal time in arrival
// order). The output is append-only: the input's columns, then the
// aggregates' Name columns. A row whose time is at or behind the
// watermark when it arrives is late: it is dropped and counted
// (arrowflow.LateRowCounter), as is a row with a null time. The input
// must be append-only; a retraction is an error.
//
// Put the operator behind arrowflow.KeyBy on PartitionBy (in that order),
// or run it at parallelism 1 without partitions. The rows waiting for the
// watermark and the rows a bounded frame (or a MIN/MAX) needs are kept in
// state/rowstore Stores; an unbounded frame keeps running counts and sums
// per partition. Everything is snapshotted by key group of PartitionBy,
// with the watermark: a restored subtask starts from the lowest watermark
// of the snapshots it reads, so that no row late before the restore is
// taken after it.
type OverAggregate struct {
	// Input is the schema of the batches the operator receives.
	Input *arrow.Schema
	// PartitionBy names the columns that split the rows into partitions,
	// aggregated separately (none: one partition).
	PartitionBy []string
	// Time names the event-time column (an Arrow timestamp), the OVER
	// window's ORDER BY, ascending.
	Time string
	// ProcessingTime orders by processing time instead (Time empty): every
	// row goes out in the batch it arrives in, in arrival order, and the
	// rows of one batch and partition are peers (they arrive at once).
	// ROWS frames and RANGE UNBOUNDED PRECEDING only.
	ProcessingTime bool
	// Frame is the window frame.
	Frame OverFrame
	// Aggs are the aggregates: kernels.AggCountStar, AggCount, AggSum,
	// AggAvg, AggMin, AggMax, of the result types (and null rules) of
	// kernels.NewAccumulator. Over a sliding frame a decimal SUM is NULL
	// while the frame's sum needs more than 38 digits (over an unbounded
	// frame, from then on, as kernels' SUM).
	Aggs []window.Agg

	// compactMin, when set, compacts the row stores whenever they hold
	// that many deleted rows (tests compact often).
	compactMin int
}

// OverStats are an OverAggregate subtask's counters.
type OverStats struct {
	// InputRows counts the rows received; OutputRows the rows emitted.
	InputRows, OutputRows int64
	// LateRows counts rows dropped because they were at or behind the
	// watermark; NullTimeRows rows dropped for a null time.
	LateRows, NullTimeRows int64
	// PendingRows is the number of rows waiting for the watermark;
	// FrameRows the number of rows held for frames (and MIN/MAX).
	PendingRows, FrameRows int64
	// Partitions is the number of partitions known.
	Partitions int64
	// StateBytes approximates the memory the state takes.
	StateBytes int64
}

// OverStatsReporter is implemented by the operator instances an
// OverAggregate makes.
type OverStatsReporter interface {
	OverStats() OverStats
}

// Validate checks the configuration against its input schema.
func (a OverAggregate) Validate() error {
	_, err := a.compile()
	return err
}

// OutputSchema is the schema of the rows the operator emits: the input's
// columns, then one column per aggregate.
func (a OverAggregate) OutputSchema() (*arrow.Schema, error) {
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (a OverAggregate) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &overOp{cfg: a} }
}

// overCompiled is what Validate derives from the configuration.
type overCompiled struct {
	timeIdx  int // -1 for processing time
	partOff  int // the frame store's first partition column
	timeUnit arrow.TimeUnit
	partIdx  []int
	partType []arrow.DataType
	// frameCols are the input columns the frame store keeps: the time
	// (not for processing time), the partition columns, then the aggregates' arguments (each once).
	frameCols   []int
	frameSchema *arrow.Schema
	aggArg      []int // per aggregate: its argument's frame column, -1 for none
	out         *arrow.Schema
}

// Snapshot tables.
const (
	overPendingTable   = "over_pending"   // rows waiting for the watermark (row store)
	overFrameTable     = "over_frame"     // frame and MIN/MAX rows (row store)
	overAccTable       = "over_acc"       // unbounded frames: _key_group, partition columns, counts and sums
	overWatermarkTable = "over_watermark" // one row: the watermark
)

func (a OverAggregate) compile() (*overCompiled, error) {
	if a.Input == nil {
		return nil, fmt.Errorf("over aggregate: no input schema")
	}
	f := a.Frame
	if !f.Unbounded && (f.Rows < 0 || f.Interval < 0) {
		return nil, fmt.Errorf("over aggregate: frame %s has a negative bound", f)
	}
	if !f.Unbounded && f.Range && f.Rows != 0 || !f.Range && f.Interval != 0 {
		return nil, fmt.Errorf("over aggregate: frame sets both Rows and Interval; a ROWS frame counts rows, a RANGE frame an interval")
	}
	if len(a.Aggs) == 0 {
		return nil, fmt.Errorf("over aggregate: no aggregates")
	}
	col := func(what, name string) (int, error) {
		idx := a.Input.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("over aggregate: %s column %q not found (or ambiguous) in the input (%s)", what, name, a.Input)
		}
		return idx[0], nil
	}
	c := &overCompiled{}
	for _, fl := range a.Input.Fields() {
		if fl.Name == state.KeyGroupColumn || fl.Name == rowstore.HashColumn {
			return nil, fmt.Errorf("over aggregate: input column %q has a name snapshots reserve", fl.Name)
		}
		if !rowstore.Storable(fl.Type) {
			return nil, fmt.Errorf("over aggregate: input column %q has type %s, which the operator cannot hold", fl.Name, fl.Type)
		}
	}
	var err error
	c.timeIdx = -1
	switch {
	case a.ProcessingTime && a.Time != "":
		return nil, fmt.Errorf("over aggregate: a processing-time OVER aggregation has no time column (Time %q)", a.Time)
	case a.ProcessingTime && f.Range && !f.Unbounded:
		return nil, fmt.Errorf("over aggregate: frame %s over processing time is not supported yet (ROWS frames and RANGE UNBOUNDED PRECEDING are)", f)
	case !a.ProcessingTime:
		if c.timeIdx, err = col("time", a.Time); err != nil {
			return nil, err
		}
		ts, ok := a.Input.Field(c.timeIdx).Type.(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("over aggregate: time column %q has type %s; it must be a timestamp (an event-time attribute)", a.Time, a.Input.Field(c.timeIdx).Type)
		}
		c.timeUnit = ts.Unit
		c.frameCols = append(c.frameCols, c.timeIdx)
	}
	c.partOff = len(c.frameCols)
	for _, p := range a.PartitionBy {
		i, err := col("partition", p)
		if err != nil {
			return nil, err
		}
		c.partIdx = append(c.partIdx, i)
		c.partType = append(c.partType, a.Input.Field(i).Type)
		c.frameCols = append(c.frameCols, i)
	}
	if len(c.partType) > 0 {
		if _, err := kernels.NewGroupTable(c.partType); err != nil {
			return nil, fmt.Errorf("over aggregate: partition columns: %w", err)
		}
	}
	fields := slices.Clone(a.Input.Fields())
	for _, ag := range a.Aggs {
		if ag.Name == "" {
			return nil, fmt.Errorf("over aggregate: %s has no output name", ag.Func)
		}
		if slices.ContainsFunc(fields, func(fl arrow.Field) bool { return fl.Name == ag.Name }) {
			return nil, fmt.Errorf("over aggregate: output column %q of %s is already a column", ag.Name, ag.Func)
		}
		if len(ag.Args) != ag.Func.Arity() {
			return nil, fmt.Errorf("over aggregate: %s (%s) takes %d arguments, got %d", ag.Name, ag.Func, ag.Func.Arity(), len(ag.Args))
		}
		var types []arrow.DataType
		arg := -1
		if len(ag.Args) == 1 {
			i, err := col("argument", ag.Args[0])
			if err != nil {
				return nil, err
			}
			types = append(types, a.Input.Field(i).Type)
			if arg = slices.Index(c.frameCols, i); arg < 0 {
				arg = len(c.frameCols)
				c.frameCols = append(c.frameCols, i)
			}
		}
		acc, err := kernels.NewAccumulator(ag.Func, types)
		if err != nil {
			return nil, fmt.Errorf("over aggregate: %s: %w", ag.Name, err)
		}
		var dt arrow.DataType
		if len(types) == 1 {
			dt = types[0]
		}
		if _, err := overNewAccum(ag.Func, ag.Name, arg, dt, f.Unbounded, nil); err != nil {
			return nil, fmt.Errorf("over aggregate: %s: %w", ag.Name, err)
		}
		c.aggArg = append(c.aggArg, arg)
		fields = append(fields, arrow.Field{Name: ag.Name, Type: acc.ResultType(), Nullable: true})
	}
	md := a.Input.Metadata()
	c.out = arrow.NewSchema(fields, &md)
	var ff []arrow.Field
	for _, i := range c.frameCols {
		ff = append(ff, a.Input.Field(i))
	}
	c.frameSchema = arrow.NewSchema(ff, nil)
	return c, nil
}
