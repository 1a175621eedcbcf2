package window

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// Agg is one aggregate of a windowed aggregation: a kernels aggregate
// function over input columns named by Args (none for count(*); value and
// event time for first/last), written to the output column Name.
type Agg struct {
	Func kernels.AggFunc
	Args []string
	Name string
}

// Aggregate configures a windowed aggregate over event time: rows are
// grouped by Keys and by window, each group's Aggs are computed, and a
// window's results are emitted once, when the watermark passes the
// window's end plus AllowedLateness. The output has columns window_start,
// window_end (of the event-time column's type), the keys, then the
// aggregates.
//
// The operator is keyed: put it behind arrowflow.KeyBy on the same Keys
// (all of them, in order: snapshots assign state to key groups by the hash
// of all the keys, so behind a KeyBy on fewer columns restored state and
// incoming rows would meet on different subtasks) so that each subtask
// sees all rows of its keys.
// Its state is columnar (one kernels.GroupBy per pane) and is snapshotted
// by key group, so a job can restore it into another parallelism.
//
// Without keys (or with few) one subtask would see every row: Local and
// Final split the aggregate into a local phase at any parallelism and a
// final phase merging its partial states.
type Aggregate struct {
	// Input is the schema of the batches the operator receives.
	Input *arrow.Schema
	// Time names the event-time column, of an Arrow timestamp type.
	Time string
	// Window is the window family.
	Window Spec
	// Keys names the grouping columns (none: one group per window).
	Keys []string
	// Aggs are the aggregates.
	Aggs []Agg
	// AllowedLateness delays firing past the window's end, so that rows up
	// to this much behind the watermark still count.
	AllowedLateness time.Duration
	// LateOutput, when set, names the side output that receives late rows
	// (as they came in, in the input schema); consume it with
	// arrowflow.Forward(node).FromSide(LateOutput) or another edge kind.
	// Late rows are counted in Stats.LateRows either way.
	LateOutput string
	// ProcessingTime makes the windows tumble, hop or cumulate over
	// processing time instead of event time: each row belongs to the
	// windows of the moment the operator receives it (by TaskInfo.Clock),
	// and a window fires when the clock passes its end, whether or not
	// rows or watermarks arrive. Time must then be empty; window_start
	// and window_end are UTC millisecond timestamps; watermarks pass
	// through unchanged; sessions are not supported; at the end of a
	// bounded input every open window fires. Results depend on arrival
	// times and are not deterministic on replay (see
	// arrowflow.ProcessingTimeOperator).
	ProcessingTime bool
	// Partial makes the operator the local phase of a two-phase
	// aggregate (see Local, which sets it): a fired window emits the
	// window's partial state (window_start, window_end, then the columns
	// of kernels.GroupBy.StateSchema) instead of its results, for a
	// FinalAggregate to merge.
	Partial bool
}

// Stats are a windowed aggregate subtask's counters. In the final phase
// of a two-phase aggregate (FinalAggregate), LateRows counts partial rows
// that came after their window fired and Panes is the number of windows
// held.
type Stats struct {
	// LateRows counts rows dropped because every window they belong to had
	// already fired; NullTimeRows rows dropped for a NULL event time.
	LateRows, NullTimeRows int64
	// Windows counts windows fired; Panes is the number of panes held.
	Windows, Panes int64
	// StateBytes approximates the memory the held panes retain.
	StateBytes int64
}

// StatsReporter is implemented by the operator instances an Aggregate
// makes.
type StatsReporter interface {
	Stats() Stats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens, so a bad configuration fails the job naming
// the operator; call Validate to check it earlier.
func (a Aggregate) Factory() arrowflow.OperatorFactory {
	if a.Window.Kind == KindSession {
		return func() arrowflow.Operator { return &sessionOp{cfg: a} }
	}
	if a.ProcessingTime {
		return func() arrowflow.Operator { return &procOp{aggOp: aggOp{cfg: a}} }
	}
	return func() arrowflow.Operator { return &aggOp{cfg: a} }
}

// OutputSchema is the schema of the rows the aggregate emits:
// window_start, window_end, the keys, then the aggregates; with Partial,
// window_start, window_end, then the partial state (the keys, then each
// aggregate's state columns).
func (a Aggregate) OutputSchema() (*arrow.Schema, error) {
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Validate checks the configuration against its input schema.
func (a Aggregate) Validate() error {
	_, err := a.compile()
	return err
}

// compiled is what Validate derives from the configuration.
type compiled struct {
	timeIdx  int
	timeType *arrow.TimestampType
	keyIdx   []int
	aggs     []kernels.AggregateSpec
	out      *arrow.Schema // what the operator emits: result, or partial with Partial
	result   *arrow.Schema // window_start, window_end, GroupBy output
	partial  *arrow.Schema // window_start, window_end, GroupBy state
	groupOut *arrow.Schema
	state    *arrow.Schema // _pane, _key_group (with Partial, _watermark), GroupBy state
	winState *arrow.Schema // _window_start, _window_end, _key_group, GroupBy state
	gbState  *arrow.Schema
}

const (
	stateTable = "window_panes"
	metaTable  = "window_meta"
	paneColumn = "_pane"
)

func (a Aggregate) compile() (*compiled, error) {
	if a.Input == nil {
		return nil, fmt.Errorf("window aggregate: no input schema")
	}
	if err := a.Window.Validate(); err != nil {
		return nil, err
	}
	if a.AllowedLateness < 0 {
		return nil, fmt.Errorf("window aggregate: allowed lateness %s is negative", a.AllowedLateness)
	}
	if a.Partial {
		if err := a.checkTwoPhase(); err != nil {
			return nil, err
		}
	}
	col := func(what, name string) (int, error) {
		idx := a.Input.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("window aggregate: %s column %q not found (or ambiguous) in the input (%s)", what, name, a.Input)
		}
		return idx[0], nil
	}
	c := &compiled{timeIdx: -1}
	var err error
	if a.ProcessingTime {
		if a.Window.Kind == KindSession {
			return nil, fmt.Errorf("window aggregate: %s: session windows over processing time are not supported", a.Window)
		}
		if a.Time != "" {
			return nil, fmt.Errorf("window aggregate: processing-time windows take no event-time column (Time is %q)", a.Time)
		}
		if a.AllowedLateness != 0 {
			return nil, fmt.Errorf("window aggregate: processing-time windows have no late rows, so no allowed lateness")
		}
		c.timeType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	} else {
		if c.timeIdx, err = col("event-time", a.Time); err != nil {
			return nil, err
		}
		tt, ok := a.Input.Field(c.timeIdx).Type.(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("window aggregate: event-time column %q has type %s, want a timestamp", a.Time, a.Input.Field(c.timeIdx).Type)
		}
		c.timeType = tt
	}
	tt := c.timeType
	for _, k := range a.Keys {
		i, err := col("key", k)
		if err != nil {
			return nil, err
		}
		c.keyIdx = append(c.keyIdx, i)
	}
	for _, ag := range a.Aggs {
		spec := kernels.AggregateSpec{Func: ag.Func, Name: ag.Name}
		for _, arg := range ag.Args {
			i, err := col("aggregate argument", arg)
			if err != nil {
				return nil, err
			}
			spec.Args = append(spec.Args, i)
		}
		c.aggs = append(c.aggs, spec)
	}
	g, err := kernels.NewGroupBy(a.Input, c.keyIdx, c.aggs)
	if err != nil {
		return nil, fmt.Errorf("window aggregate: %w", err)
	}
	c.groupOut, c.gbState = g.OutputSchema(), g.StateSchema()
	windowed := func(rest []arrow.Field) *arrow.Schema {
		fields := []arrow.Field{{Name: "window_start", Type: tt}, {Name: "window_end", Type: tt}}
		return arrow.NewSchema(append(fields, rest...), nil)
	}
	c.result, c.partial = windowed(c.groupOut.Fields()), windowed(c.gbState.Fields())
	c.out = c.result
	c.state = arrow.NewSchema(append([]arrow.Field{
		{Name: paneColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	}, c.gbState.Fields()...), nil)
	c.winState = arrow.NewSchema(append([]arrow.Field{
		{Name: "_window_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_window_end", Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	}, c.gbState.Fields()...), nil)
	if a.Partial {
		if err := c.checkPartialNames(a.Keys); err != nil {
			return nil, err
		}
		c.out, c.state = c.partial, localPaneSchema(c.gbState)
	}
	return c, nil
}

// aggOp is one subtask of a windowed aggregate.
type aggOp struct {
	cfg  Aggregate
	c    *compiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	// panes holds the state of every pane with rows, by pane start (ns).
	panes map[int64]*kernels.GroupBy
	wm    arrowflow.EventTime // the last watermark processed
	stats Stats

	size, pane, offset, lateness int64
	tick                         int64 // one unit of the event-time column, in ns

	// merged is reused to build each hopping window from its panes
	// (Reset keeps its table's capacity, so firing does not regrow it).
	// For cumulating windows it is the accumulator of the period being
	// fired (see accumulate): while accLive, it holds the merge of the
	// panes [accStart, accEnd), in order and each as it is now, which is
	// the period's last window fired. Windows fire in order of end and a
	// period's ends all come before the next period's, so one accumulator
	// serves every period in turn. It is derived state: not snapshotted,
	// rebuilt from the panes after a restore.
	merged               *kernels.GroupBy
	accStart, accEnd     int64
	accLive              bool
	paneMerges, accDrops int64 // panes merged into windows; accumulators dropped (test hooks)
	// free holds GroupBys of freed panes, reset, for the next panes: a
	// table keeps its grown capacity instead of regrowing for every pane.
	free []*kernels.GroupBy
	// restored holds, in the local phase of a two-phase aggregate only,
	// partial states of whole windows taken over from a snapshot whose
	// writer had fired some of the windows of their panes (see
	// restoreLocal). A window's result is its panes merged with its
	// restored state; the entry goes when the window fires.
	restored map[bounds]*kernels.GroupBy

	// scratch
	batchPanes []int64
	batchSels  [][]int32
	late       []int32
	fireWins   []bounds // the windows a watermark fires
	paneWins   []bounds // the windows containing one pane
}

func (o *aggOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.panes = map[int64]*kernels.GroupBy{}
	o.wm = arrowflow.MinEventTime
	o.size, o.pane = int64(o.cfg.Window.Size), o.cfg.Window.pane()
	o.offset, o.lateness = int64(o.cfg.Window.Offset), int64(o.cfg.AllowedLateness)
	o.tick = int64(c.timeType.Unit.Multiplier())
	return nil
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *aggOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the subtask's counters.
func (o *aggOp) Stats() Stats {
	s := o.stats
	s.Panes = int64(len(o.panes) + len(o.restored))
	for _, g := range o.panes {
		s.StateBytes += g.SizeBytes()
	}
	for _, g := range o.restored {
		s.StateBytes += g.SizeBytes()
	}
	return s
}

// fired reports whether the window ending at end has fired at watermark wm.
func (o *aggOp) fired(end int64, wm arrowflow.EventTime) bool {
	return windowFired(end, o.tick, o.lateness, wm)
}

// windowFired reports whether a window (or session) ending at end has
// fired at watermark wm. A window [start, end) is complete when the
// watermark reaches its last instant (a watermark t promises no more rows
// at or before t), plus the allowed lateness. The last instant is one tick
// of the event-time column before the end (end - 1 ms for milliseconds, as
// in Flink).
func windowFired(end, tick, lateness int64, wm arrowflow.EventTime) bool {
	return int64(wm) >= satAdd(end-tick, lateness)
}

// checkInput verifies a batch has the schema the operator was configured
// for (a pointer comparison first: the schema object rarely changes).
func checkInput(rec arrow.RecordBatch, input *arrow.Schema) error {
	if s := rec.Schema(); s != input && !s.Equal(input) {
		return fmt.Errorf("window aggregate: batch schema %s differs from the configured input %s", s, input)
	}
	return nil
}

// maxFreePanes bounds how many emptied pane tables a subtask keeps for
// reuse (their memory counts as state until reused).
const maxFreePanes = 2

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (o *aggOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec := b.Record
	if err := checkInput(rec, o.cfg.Input); err != nil {
		return err
	}
	ts := rec.Column(o.c.timeIdx).(*array.Timestamp)
	unit := o.c.timeType.Unit
	o.batchPanes = o.batchPanes[:0]
	for i := range o.batchSels {
		o.batchSels[i] = o.batchSels[i][:0]
	}
	n := b.NumRows()
	o.late = o.late[:0]
	last := -1 // index in batchPanes of the previous row's pane
	for k := 0; k < n; k++ {
		r := b.Row(k)
		if ts.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		t := int64(arrowflow.TimestampToEventTime(ts.Value(r), unit))
		p := floorTo(t, o.pane, o.offset)
		if o.fired(o.cfg.Window.lastWindowEnd(p), o.wm) {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		if last < 0 || o.batchPanes[last] != p {
			last = slices.Index(o.batchPanes, p)
			if last < 0 {
				o.batchPanes = append(o.batchPanes, p)
				last = len(o.batchPanes) - 1
				if last == len(o.batchSels) {
					o.batchSels = append(o.batchSels, nil)
				}
			}
		}
		o.batchSels[last] = append(o.batchSels[last], int32(r))
	}
	for i, p := range o.batchPanes {
		g, err := o.paneState(p)
		if err != nil {
			return err
		}
		if err := g.Update(rec, o.batchSels[i]); err != nil {
			return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
		}
	}
	if err := emitLate(o.cfg.LateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// emitLate sends the late rows of b to the late-data side output, sharing
// b's record (no copy).
func emitLate(output string, b arrowflow.Batch, late []int32, out arrowflow.Emitter) error {
	if output == "" || len(late) == 0 {
		return nil
	}
	side, ok := out.(arrowflow.SideEmitter)
	if !ok {
		return nil
	}
	lb := arrowflow.Batch{Record: b.Record, Sel: slices.Clone(late)}
	b.Record.Retain()
	return side.EmitSide(output, lb)
}

// reportState tells the job's state memory budget how much this subtask
// holds; it fails when the budget is exceeded.
func (o *aggOp) reportState() error {
	var bytes, keys int64
	for _, g := range o.panes {
		bytes += g.SizeBytes()
		keys += int64(g.Groups())
	}
	for _, g := range o.restored {
		bytes += g.SizeBytes()
		keys += int64(g.Groups())
	}
	for _, g := range append(o.free, o.merged) {
		if g != nil {
			bytes += g.SizeBytes()
		}
	}
	return o.info.StateBudget.Set(bytes, keys)
}

// paneState returns the state of the pane starting at p, to take rows.
func (o *aggOp) paneState(p int64) (*kernels.GroupBy, error) {
	// A row is accepted until the last window of its period has fired, so
	// a row at least the allowed lateness behind the watermark (too late
	// for the period's windows that have fired, in time for the later
	// ones) can land in a pane the cumulating accumulator already holds.
	// It must count in the period's windows still to fire, so the
	// accumulator is dropped and the next window rebuilt from its panes,
	// which hold the row. Adding the rows to the accumulator as well would
	// save that rebuild, but the windows would then depend on the order
	// rows arrived in, not only on the panes (float sums rounded
	// otherwise, groups in another order, and so other results after a
	// restore, which rebuilds from the panes). Such rows are rare in a
	// stream whose watermark fits it; at worst every window is rebuilt, as
	// every window was before accumulators.
	o.dropAccumulator(p)
	if g, ok := o.panes[p]; ok {
		return g, nil
	}
	g, err := o.newState()
	if err != nil {
		return nil, err
	}
	o.panes[p] = g
	return g, nil
}

// newState returns an empty GroupBy of the aggregate, reusing a freed
// one.
func (o *aggOp) newState() (*kernels.GroupBy, error) {
	if n := len(o.free); n > 0 {
		g := o.free[n-1]
		o.free = o.free[:n-1]
		return g, nil
	}
	return kernels.NewGroupBy(o.cfg.Input, o.c.keyIdx, o.c.aggs)
}

func (o *aggOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	prev := o.wm
	o.wm = wm
	if err := o.fire(prev, wm, out); err != nil {
		return err
	}
	if err := o.reportState(); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// fire emits every window that completes between watermarks prev and wm,
// in order of window end, then frees the panes no later window needs.
func (o *aggOp) fire(prev, wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if len(o.panes) == 0 && len(o.restored) == 0 {
		return nil
	}
	// The windows to fire are those containing a held pane whose end
	// crosses the watermark now (several panes name the same window).
	wins := o.fireWins[:0]
	for p := range o.panes {
		o.paneWins = o.cfg.Window.appendWindows(o.paneWins[:0], p)
		for _, w := range o.paneWins {
			if o.fired(w.end, wm) && !o.fired(w.end, prev) {
				wins = append(wins, w)
			}
		}
	}
	for w := range o.restored {
		// Restored windows had not fired at the restored watermark, and
		// leave when they fire.
		if o.fired(w.end, wm) {
			wins = append(wins, w)
		}
	}
	// An end names one window (a cumulating period's windows have
	// distinct ends), so ordering by end orders the windows.
	slices.SortFunc(wins, func(a, b bounds) int { return cmp.Compare(a.end, b.end) })
	wins = slices.Compact(wins)
	o.fireWins = wins
	for _, w := range wins {
		if err := o.emitWindow(w.start, w.end, out); err != nil {
			return err
		}
	}
	for p, g := range o.panes {
		if o.fired(o.cfg.Window.lastWindowEnd(p), wm) {
			// The period's last window has fired, so accumulate has
			// already dropped the accumulator; this keeps the invariant
			// (it holds only held panes) whatever the path.
			o.dropAccumulator(p)
			delete(o.panes, p) // a GroupBy holds Go memory only
			if len(o.free) < maxFreePanes {
				g.Reset()
				o.free = append(o.free, g)
			}
		}
	}
	return nil
}

// emitWindow computes the window [start, end) from its panes and emits
// its results, or with Partial its partial state.
func (o *aggOp) emitWindow(start, end int64, out arrowflow.Emitter) error {
	var src *kernels.GroupBy
	var err error
	if r, ok := o.restored[bounds{start, end}]; ok {
		src, err = o.mergeRestored(start, end, r)
	} else {
		switch o.cfg.Window.Kind {
		case KindTumbling:
			src = o.panes[start]
		case KindCumulate:
			src, err = o.accumulate(start, end)
		default:
			src, err = o.mergePanes(start, end)
		}
	}
	if err != nil {
		return err
	}
	if src == nil || src.Groups() == 0 {
		return nil
	}
	var res arrow.RecordBatch
	if o.cfg.Partial {
		res, err = src.ExportState(o.mem)
	} else {
		res, err = src.Finish(o.mem)
	}
	if err != nil {
		return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
	}
	o.stats.Windows++
	return out.Emit(arrowflow.NewBatch(windowRows(o.mem, o.c.timeType, o.c.out, start, end, res)))
}

// windowRows prepends to res (taking over the caller's reference) the
// columns window_start and window_end, constant start and end (ns) in the
// event-time type tt, as a batch of schema.
func windowRows(mem memory.Allocator, tt *arrow.TimestampType, schema *arrow.Schema, start, end int64, res arrow.RecordBatch) arrow.RecordBatch {
	defer res.Release()
	rows := int(res.NumRows())
	cols := make([]arrow.Array, 0, 2+int(res.NumCols()))
	unit := int64(tt.Unit.Multiplier())
	for _, v := range []int64{start, end} {
		tb := array.NewTimestampBuilder(mem, tt)
		tb.Reserve(rows)
		x := arrow.Timestamp(v / unit)
		for i := 0; i < rows; i++ {
			tb.UnsafeAppend(x)
		}
		cols = append(cols, tb.NewArray())
		tb.Release()
	}
	cols = append(cols, res.Columns()...)
	batch := array.NewRecordBatch(schema, cols, int64(rows))
	cols[0].Release()
	cols[1].Release()
	return batch
}

// mergePanes merges the panes of the window [start, end) into o.merged
// and returns it, or nil when no pane has a group.
func (o *aggOp) mergePanes(start, end int64) (*kernels.GroupBy, error) {
	var dst *kernels.GroupBy
	for p := start; p < end; p += o.pane {
		g, ok := o.panes[p]
		if !ok || g.Groups() == 0 {
			continue
		}
		if dst == nil {
			if err := o.newMerged(); err != nil {
				return nil, err
			}
			dst = o.merged
			dst.Reset()
		}
		if err := o.mergePane(dst, g); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// accumulate returns the cumulating window [start, end) in o.merged,
// merging only the panes it lacks: after the period's previous window
// [start, accEnd), the panes [accEnd, end); else (the period's first
// window, or the accumulator was dropped) all of them. A period of K
// windows thus costs K pane merges instead of K(K+1)/2; merging the same
// panes in the same order gives the same state as building the window
// afresh (kernels.GroupBy.Merge), and Finish leaves the state intact.
func (o *aggOp) accumulate(start, end int64) (*kernels.GroupBy, error) {
	if err := o.newMerged(); err != nil {
		return nil, err
	}
	from := o.accEnd
	if !o.accLive || o.accStart != start || o.accEnd > end {
		o.merged.Reset()
		from = start
	}
	o.accLive = false // until the merges succeed
	for p := from; p < end; p += o.pane {
		if g, ok := o.panes[p]; ok && g.Groups() > 0 {
			if err := o.mergePane(o.merged, g); err != nil {
				return nil, err
			}
		}
	}
	// The period's last window frees the accumulator along with the
	// panes (which fire then frees); the next period starts afresh.
	o.accStart, o.accEnd, o.accLive = start, end, end < start+o.size
	return o.merged, nil
}

// dropAccumulator drops the cumulating accumulator if it holds the pane
// starting at p: that pane is about to change or go.
func (o *aggOp) dropAccumulator(p int64) {
	if o.accLive && o.accStart <= p && p < o.accEnd {
		o.accLive = false
		o.accDrops++
	}
}

// newMerged allocates o.merged on first use.
func (o *aggOp) newMerged() error {
	if o.merged != nil {
		return nil
	}
	g, err := kernels.NewGroupBy(o.cfg.Input, o.c.keyIdx, o.c.aggs)
	if err != nil {
		return err
	}
	o.merged = g
	return nil
}

// mergePane folds a pane's state into dst.
func (o *aggOp) mergePane(dst, pane *kernels.GroupBy) error {
	st, err := pane.ExportState(o.mem)
	if err != nil {
		return err
	}
	err = dst.Merge(st, nil)
	st.Release()
	if err != nil {
		return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
	}
	o.paneMerges++
	return nil
}

// Finish fires every window still held: the input has ended.
func (o *aggOp) Finish(out arrowflow.Emitter) error {
	if o.wm == arrowflow.MaxEventTime {
		return nil
	}
	prev := o.wm
	o.wm = arrowflow.MaxEventTime
	return o.fire(prev, arrowflow.MaxEventTime, out)
}

// SnapshotState writes every pane's GroupBy state as one table, with the
// pane start as an extra column, and the watermark as a second table.
// The cumulating accumulator is derived from the panes and not written:
// a restored subtask rebuilds it at its first window.
func (o *aggOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if o.cfg.Partial {
		return o.snapshotLocal(w)
	}
	starts := make([]int64, 0, len(o.panes))
	for p := range o.panes {
		starts = append(starts, p)
	}
	slices.Sort(starts)
	for _, p := range starts {
		st, err := o.panes[p].ExportState(o.mem)
		if err != nil {
			return err
		}
		rows := int(st.NumRows())
		pb := array.NewInt64Builder(o.mem)
		pb.Reserve(rows)
		for i := 0; i < rows; i++ {
			pb.UnsafeAppend(p)
		}
		pcol := pb.NewArray()
		pb.Release()
		kcol, err := keyGroupColumn(o.mem, o.info, st.Columns()[:len(o.c.keyIdx)], rows)
		if err != nil {
			pcol.Release()
			st.Release()
			return err
		}
		rec := array.NewRecordBatch(o.c.state, append([]arrow.Array{pcol, kcol}, st.Columns()...), int64(rows))
		pcol.Release()
		kcol.Release()
		st.Release()
		err = w.Write(stateTable, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// keyGroupColumn computes the state.KeyGroupColumn of snapshot rows from
// their key columns, so that a store can lay the table out by key group
// and a restored subtask read only its own. Without keys (a global
// aggregate) the rows belong to the writer's first key group.
func keyGroupColumn(mem memory.Allocator, info *arrowflow.TaskInfo, keys []arrow.Array, rows int) (arrow.Array, error) {
	b := array.NewUint16Builder(mem)
	defer b.Release()
	b.Reserve(rows)
	if len(keys) == 0 {
		for i := 0; i < rows; i++ {
			b.UnsafeAppend(uint16(info.KeyGroups.Start))
		}
		return b.NewArray(), nil
	}
	hashes := make([]uint64, rows)
	if err := kernels.HashColumns(keys, nil, hashes); err != nil {
		return nil, err
	}
	for _, h := range hashes {
		b.UnsafeAppend(uint16(kernels.KeyGroupOf(h, info.MaxParallelism)))
	}
	return b.NewArray(), nil
}

// writeMeta writes the subtask's watermark as the one-row meta table.
func writeMeta(mem memory.Allocator, wm arrowflow.EventTime, w state.SnapshotWriter) error {
	mb := array.NewInt64Builder(mem)
	mb.Append(int64(wm))
	wcol := mb.NewArray()
	mb.Release()
	meta := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "watermark", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{wcol}, 1)
	wcol.Release()
	defer meta.Release()
	return w.Write(metaTable, meta)
}

// readMeta returns the smallest watermark of the old subtasks restored
// from: they passed the same aligned barrier, but their watermarks can
// still differ, and the smallest one is the safe one.
func readMeta(r state.SnapshotReader) (arrowflow.EventTime, bool, error) {
	wm := arrowflow.MaxEventTime
	saw := false
	err := r.Read(metaTable, func(rec arrow.RecordBatch) error {
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			wm = min(wm, arrowflow.EventTime(col.Value(i)))
			saw = true
		}
		return nil
	})
	return wm, saw, err
}

// RestoreState merges the panes of the key groups this subtask owns, from
// one or more old subtasks' snapshots.
func (o *aggOp) RestoreState(r state.SnapshotReader) error {
	if o.cfg.Partial {
		return o.restoreLocal(r)
	}
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	if !slices.Contains(r.Tables(), stateTable) {
		// A snapshot taken while no window held rows has no pane table.
		return o.reportState()
	}
	err = r.Read(stateTable, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(o.c.state) {
			return fmt.Errorf("window aggregate %s: snapshot state schema %s does not match this job's %s", o.info.Name, rec.Schema(), o.c.state)
		}
		n := int(rec.NumRows())
		st := array.NewRecordBatch(o.c.gbState, rec.Columns()[2:], int64(n))
		defer st.Release()
		owned, err := ownedRows(o.info, st.Columns()[:len(o.cfg.Keys)], n)
		if err != nil {
			return err
		}
		panes := rec.Column(0).(*array.Int64)
		bySel := map[int64][]int32{}
		var order []int64
		for _, i := range owned {
			p := panes.Value(int(i))
			if _, ok := bySel[p]; !ok {
				order = append(order, p)
			}
			bySel[p] = append(bySel[p], i)
		}
		for _, p := range order {
			g, err := o.paneState(p)
			if err != nil {
				return err
			}
			if err := g.Merge(st, bySel[p]); err != nil {
				return fmt.Errorf("window aggregate %s: restoring pane %d: %w", o.info.Name, p, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return o.reportState()
}

// ownedRows lists the rows of restored state, keyed by the key columns,
// that belong to this subtask's key groups. Without keys (a global
// aggregate) all state belongs to subtask 0.
func ownedRows(info *arrowflow.TaskInfo, keys []arrow.Array, n int) ([]int32, error) {
	owned := make([]int32, 0, n)
	if len(keys) == 0 {
		if info.Subtask == 0 {
			for i := 0; i < n; i++ {
				owned = append(owned, int32(i))
			}
		}
		return owned, nil
	}
	hashes := make([]uint64, n)
	if err := kernels.HashColumns(keys, nil, hashes); err != nil {
		return nil, err
	}
	for i, h := range hashes {
		if info.KeyGroups.Contains(kernels.KeyGroupOf(h, info.MaxParallelism)) {
			owned = append(owned, int32(i))
		}
	}
	return owned, nil
}

func (o *aggOp) Close() error {
	o.panes, o.restored, o.free, o.merged, o.accLive = nil, nil, nil, nil, false
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
