package window

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// Two-phase (local-global) window aggregation, as Flink's
// LocalSlicingWindowAggOperator and GlobalSlicingWindowAggOperator: a
// window aggregate without keys (or with few) has to see every row of the
// stream in one subtask, which caps the job at one core. Its local phase
// runs beside the source, at any parallelism, and reduces the rows each
// subtask sees to one partial state per window and key; the final phase
// merges those few rows per window and emits the results.

// ErrTwoPhaseUnsupported is wrapped by the errors Final (and the local
// phase's Validate) return for an aggregate that has no two-phase form,
// such as one over session windows: compute it in one phase instead.
var ErrTwoPhaseUnsupported = errors.New("no two-phase form")

// Local is the first phase of a two-phase window aggregate: the same
// aggregate with Partial set. Run it at any parallelism behind
// arrowflow.Forward (no exchange). Each subtask aggregates the rows it
// sees into panes exactly as Aggregate does, with the same lateness
// rules (late rows are counted and go to LateOutput, in the input
// schema), and when a window fires it emits the window's partial state
// instead of its results: one row per key with rows in the window at
// this subtask, or one row without keys. Its watermark then follows, so
// the final phase has every subtask's partials of a window before its
// watermark fires the window.
//
// Local returns an Aggregate rather than a type of its own because it is
// one: the configuration, panes, late-row rules, state and rescaling are
// Aggregate's, and only what a fired window emits differs (Partial).
// Its snapshot rows belong to the writing subtask's first key group, so
// that after a rescale exactly one new subtask takes each old subtask's
// panes, as TopN's local phase does: partial state may go anywhere.
//
// Call Final first: its error says whether the aggregate has a two-phase
// form (errors.Is(err, ErrTwoPhaseUnsupported) means: run it in one
// phase). Wiring, with src the input node at parallelism par:
//
//	final, err := agg.Final()
//	if err != nil {
//		return err // or, for ErrTwoPhaseUnsupported, the one-phase plan
//	}
//	local := g.Operator("agg-local", agg.Local().Factory(), par, arrowflow.Forward(src))
//	finalPar := par
//	if len(agg.Keys) == 0 {
//		finalPar = 1
//	}
//	out := g.Operator("agg", final.Factory(), finalPar, final.Edge(local))
func (a Aggregate) Local() Aggregate {
	a.Partial = true
	return a
}

// Final is the second phase of a two-phase window aggregate, whose first
// phase is a.Local(). It checks that the aggregate has a two-phase form
// (session windows, processing time and aggregate functions without a
// mergeable partial state have none: the error wraps
// ErrTwoPhaseUnsupported) and that its configuration is valid.
func (a Aggregate) Final() (FinalAggregate, error) {
	a.Partial = false
	f := FinalAggregate{Aggregate: a}
	if err := f.Validate(); err != nil {
		return FinalAggregate{}, err
	}
	return f, nil
}

// FinalAggregate configures the final phase of a two-phase window
// aggregate (see Aggregate.Local and Aggregate.Final). Its input is the
// local phase's output: window_start, window_end, then the partial state
// of each key (InputSchema). It merges the partial rows of a window and
// key from every local subtask, and emits each window's results, in
// Aggregate's output schema, once its watermark passes the window's end
// plus Aggregate.AllowedLateness: the minimum of the local subtasks'
// watermarks, each forwarded after the partials of the windows it fired,
// so that every partial of a window is in by then.
//
// With keys it is keyed: put it behind arrowflow.KeyBy(local,
// Aggregate.Keys...) (Edge does), at any parallelism; its state is
// snapshotted by the key groups of the keys. Without keys it runs at
// parallelism 1 (Open refuses more) behind a Rebalance or, at the same
// parallelism, Forward edge.
//
// It is a type of its own, not an Aggregate, because its input is not
// rows but partial states, whose schema derives from the aggregate's.
//
// A partial that arrives for a window already fired cannot happen when
// the local phase is upstream of this one and their watermarks flow as
// described, but can when a local subtask's input was idle (and so did
// not hold the watermark back) and then resumed behind it: like a late
// row, such a partial is not merged (its window's result is out), it is
// counted in Stats.LateRows and sent to LateOutput if set.
type FinalAggregate struct {
	// Aggregate is the aggregate computed in two phases; its Partial is
	// ignored. Its LateOutput names the local phase's side output.
	Aggregate Aggregate
	// LateOutput, when set, names the side output that receives partial
	// rows arriving for windows that have fired, in the input schema.
	LateOutput string
}

// Validate checks the configuration, and that the aggregate has a
// two-phase form.
func (f FinalAggregate) Validate() error {
	_, err := f.compile()
	return err
}

// InputSchema is the schema of the rows the final phase takes: the local
// phase's output.
func (f FinalAggregate) InputSchema() (*arrow.Schema, error) {
	c, err := f.compile()
	if err != nil {
		return nil, err
	}
	return c.partial, nil
}

// OutputSchema is the schema of the rows the final phase emits, the
// one-phase aggregate's: window_start, window_end, the keys, then the
// aggregates.
func (f FinalAggregate) OutputSchema() (*arrow.Schema, error) {
	c, err := f.compile()
	if err != nil {
		return nil, err
	}
	return c.result, nil
}

// Edge is the input edge from the local phase's node to the final
// phase: keyed by the keys, or without keys a Forward edge from a local
// phase at parallelism 1 (the two chain into one task) and a Rebalance
// edge otherwise; the final phase then runs at parallelism 1.
func (f FinalAggregate) Edge(local *arrowflow.Node) arrowflow.Input {
	switch {
	case len(f.Aggregate.Keys) > 0:
		return arrowflow.KeyBy(local, f.Aggregate.Keys...)
	case local.Parallelism() == 1:
		return arrowflow.Forward(local)
	}
	return arrowflow.Rebalance(local)
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (f FinalAggregate) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &finalOp{cfg: f} }
}

func (f FinalAggregate) compile() (*compiled, error) {
	a := f.Aggregate
	a.Partial = true // the local phase's checks and schemas
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	c.out = c.result
	return c, nil
}

// checkTwoPhase reports why the aggregate has no two-phase form, if so.
func (a Aggregate) checkTwoPhase() error {
	if a.ProcessingTime {
		return fmt.Errorf("window aggregate: %w: over processing time each local subtask fires a window by its own clock, so the final phase could not tell when it has every partial", ErrTwoPhaseUnsupported)
	}
	if a.Window.Kind == KindSession {
		return fmt.Errorf("window aggregate: %w: %s windows are merged per key across all of the key's rows, which no local subtask sees", ErrTwoPhaseUnsupported, a.Window)
	}
	for _, ag := range a.Aggs {
		switch ag.Func {
		case kernels.AggCountStar, kernels.AggCount, kernels.AggSum, kernels.AggMin, kernels.AggMax, kernels.AggAvg,
			kernels.AggCountDistinct, kernels.AggFirst, kernels.AggLast:
			// Each exports its partial state and merges it exactly
			// (kernels.Accumulator.Merge). count(distinct)'s partial
			// lists the distinct values, so it shrinks nothing; first
			// and last pick by event time, so only the choice among
			// rows tied on it depends on how rows were spread.
		default:
			return fmt.Errorf("window aggregate: %w: aggregate %q (%s) has no mergeable partial state", ErrTwoPhaseUnsupported, ag.Name, ag.Func)
		}
	}
	return nil
}

// checkPartialNames refuses keys that the local phase's window columns
// would shadow in its output, where the final phase's keyed edge finds
// them by name.
func (c *compiled) checkPartialNames(keys []string) error {
	for _, k := range keys {
		if len(c.partial.FieldIndices(k)) != 1 {
			return fmt.Errorf("window aggregate: %w: key column %q is ambiguous in the local phase's output %s; rename it", ErrTwoPhaseUnsupported, k, c.partial)
		}
	}
	return nil
}

// localPaneSchema is the local phase's pane table: the one-phase table
// with the writer's watermark on every row (see restoreLocal).
func localPaneSchema(gbState *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{
		{Name: paneColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: watermarkColumn, Type: arrow.PrimitiveTypes.Int64},
	}, gbState.Fields()...), nil)
}

const (
	watermarkColumn = "_watermark"
	// localWindowsTable holds the local phase's restored window states
	// (aggOp.restored); its schema is compiled.winState. The final
	// phase's pending windows go to stateTable with that schema, so that
	// a snapshot of another kind of aggregate fails to restore on the
	// schema instead of being skipped.
	localWindowsTable = "window_partials"
)

// snapshotLocal writes the local phase's state: its panes, each row with
// the writing subtask's first key group and its watermark, the restored
// windows, and the meta table.
func (o *aggOp) snapshotLocal(w state.SnapshotWriter) error {
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
		kcol, err := keyGroupColumn(o.mem, o.info, nil, rows)
		if err != nil {
			st.Release()
			return err
		}
		pcol, wcol := constInt64(o.mem, p, rows), constInt64(o.mem, int64(o.wm), rows)
		rec := array.NewRecordBatch(o.c.state, append([]arrow.Array{pcol, kcol, wcol}, st.Columns()...), int64(rows))
		for _, c := range []arrow.Array{pcol, kcol, wcol} {
			c.Release()
		}
		st.Release()
		err = w.Write(stateTable, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := writeWindows(o.mem, o.info, o.c, 0, o.restored, localWindowsTable, w); err != nil {
		return err
	}
	return writeMeta(o.mem, o.wm, w)
}

// restoreLocal takes over the panes and restored windows that the old
// subtasks wrote into this subtask's key groups.
//
// The watermark restored is the smallest of the old subtasks' (readMeta).
// Behind a Forward edge each local subtask has its own watermark, so a
// pane written by a subtask whose watermark was ahead may belong to
// windows that subtask already fired and emitted, but that have not fired
// at the restored watermark: restored as a pane, it would count in them a
// second time when they fire again here. Such a pane is restored instead
// as the partial state of each of its windows that had not fired at its
// writer's watermark (o.restored), so that it counts in exactly the
// windows its writer had not emitted. Panes written at the restored
// watermark, the usual case (no rescale, or equal watermarks), are
// restored as panes.
func (o *aggOp) restoreLocal(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	tables := r.Tables()
	if slices.Contains(tables, stateTable) {
		err := r.Read(stateTable, func(rec arrow.RecordBatch) error {
			if !rec.Schema().Equal(o.c.state) {
				return fmt.Errorf("window aggregate %s: snapshot state schema %s does not match this job's %s", o.info.Name, rec.Schema(), o.c.state)
			}
			n := int(rec.NumRows())
			st := array.NewRecordBatch(o.c.gbState, rec.Columns()[3:], int64(n))
			defer st.Release()
			panes, kgs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Uint16)
			wms := rec.Column(2).(*array.Int64)
			var paneSels selsBy[int64]
			var winSels selsBy[bounds]
			for i := 0; i < n; i++ {
				if !o.info.KeyGroups.Contains(int(kgs.Value(i))) {
					continue
				}
				p, ww := panes.Value(i), arrowflow.EventTime(wms.Value(i))
				if ww <= o.wm {
					paneSels.add(p, int32(i))
					continue
				}
				o.paneWins = o.cfg.Window.appendWindows(o.paneWins[:0], p)
				for _, win := range o.paneWins {
					if !o.fired(win.end, ww) {
						winSels.add(win, int32(i))
					}
				}
			}
			for k, p := range paneSels.keys {
				g, err := o.paneState(p)
				if err != nil {
					return err
				}
				if err := g.Merge(st, paneSels.sels[k]); err != nil {
					return fmt.Errorf("window aggregate %s: restoring pane %d: %w", o.info.Name, p, err)
				}
			}
			return o.mergeRestoredWindows(st, &winSels)
		})
		if err != nil {
			return err
		}
	}
	if slices.Contains(tables, localWindowsTable) {
		err := readWindows(o.info, o.c, localWindowsTable, r, func(st arrow.RecordBatch, wins *selsBy[bounds]) error {
			return o.mergeRestoredWindows(st, wins)
		})
		if err != nil {
			return err
		}
	}
	return o.reportState()
}

// mergeRestoredWindows merges the selected rows of st into the restored
// windows.
func (o *aggOp) mergeRestoredWindows(st arrow.RecordBatch, wins *selsBy[bounds]) error {
	for k, win := range wins.keys {
		if o.restored == nil {
			o.restored = map[bounds]*kernels.GroupBy{}
		}
		g, ok := o.restored[win]
		if !ok {
			var err error
			if g, err = o.newState(); err != nil {
				return err
			}
			o.restored[win] = g
		}
		if err := g.Merge(st, wins.sels[k]); err != nil {
			return fmt.Errorf("window aggregate %s: restoring window [%d, %d): %w", o.info.Name, win.start, win.end, err)
		}
	}
	return nil
}

// mergeRestored builds the window [start, end) from its panes and its
// restored state r into o.merged, and drops r: the window is firing.
// The cumulating accumulator does not hold restored states, so it is
// dropped; the period's next window is built afresh.
func (o *aggOp) mergeRestored(start, end int64, r *kernels.GroupBy) (*kernels.GroupBy, error) {
	if err := o.newMerged(); err != nil {
		return nil, err
	}
	if o.accLive {
		o.accLive = false
		o.accDrops++
	}
	o.merged.Reset()
	for p := start; p < end; p += o.pane {
		if g, ok := o.panes[p]; ok && g.Groups() > 0 {
			if err := o.mergePane(o.merged, g); err != nil {
				return nil, err
			}
		}
	}
	if err := o.mergePane(o.merged, r); err != nil {
		return nil, err
	}
	delete(o.restored, bounds{start, end})
	if len(o.free) < maxFreePanes {
		r.Reset()
		o.free = append(o.free, r)
	}
	return o.merged, nil
}

// selsBy gathers row selections by key, in order of first appearance:
// sels[i] holds the rows of keys[i]. Reset keeps the selections'
// memory for the next batch.
type selsBy[K comparable] struct {
	keys []K
	sels [][]int32
	idx  map[K]int
}

func (s *selsBy[K]) add(k K, row int32) {
	i, ok := s.idx[k]
	if !ok {
		if s.idx == nil {
			s.idx = map[K]int{}
		}
		i = len(s.keys)
		s.idx[k] = i
		s.keys = append(s.keys, k)
		if i == len(s.sels) {
			s.sels = append(s.sels, nil)
		}
		s.sels[i] = s.sels[i][:0]
	}
	s.sels[i] = append(s.sels[i], row)
}

func (s *selsBy[K]) reset() {
	s.keys = s.keys[:0]
	clear(s.idx)
}

// constInt64 is a column of rows copies of v.
func constInt64(mem memory.Allocator, v int64, rows int) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(rows)
	for i := 0; i < rows; i++ {
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}

// writeWindows writes the partial states of wins, in order of end, as
// rows of c.winState into table: the window bounds, the key group (of
// the first nkeys state columns, or without keys the writer's first),
// then the state.
func writeWindows(mem memory.Allocator, info *arrowflow.TaskInfo, c *compiled, nkeys int, wins map[bounds]*kernels.GroupBy, table string, w state.SnapshotWriter) error {
	order := make([]bounds, 0, len(wins))
	for b := range wins {
		order = append(order, b)
	}
	slices.SortFunc(order, byEnd)
	for _, win := range order {
		st, err := wins[win].ExportState(mem)
		if err != nil {
			return err
		}
		rows := int(st.NumRows())
		kcol, err := keyGroupColumn(mem, info, st.Columns()[:nkeys], rows)
		if err != nil {
			st.Release()
			return err
		}
		scol, ecol := constInt64(mem, win.start, rows), constInt64(mem, win.end, rows)
		rec := array.NewRecordBatch(c.winState, append([]arrow.Array{scol, ecol, kcol}, st.Columns()...), int64(rows))
		for _, col := range []arrow.Array{scol, ecol, kcol} {
			col.Release()
		}
		st.Release()
		err = w.Write(table, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// readWindows reads a table of c.winState rows and passes fn, batch by
// batch, the state columns and the selections of the rows in this
// subtask's key groups by window.
func readWindows(info *arrowflow.TaskInfo, c *compiled, table string, r state.SnapshotReader, fn func(st arrow.RecordBatch, wins *selsBy[bounds]) error) error {
	return r.Read(table, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(c.winState) {
			return fmt.Errorf("window aggregate %s: snapshot state schema %s does not match this job's %s", info.Name, rec.Schema(), c.winState)
		}
		n := int(rec.NumRows())
		st := array.NewRecordBatch(c.gbState, rec.Columns()[3:], int64(n))
		defer st.Release()
		starts, ends := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		kgs := rec.Column(2).(*array.Uint16)
		var wins selsBy[bounds]
		for i := 0; i < n; i++ {
			if info.KeyGroups.Contains(int(kgs.Value(i))) {
				wins.add(bounds{starts.Value(i), ends.Value(i)}, int32(i))
			}
		}
		return fn(st, &wins)
	})
}

func byEnd(a, b bounds) int {
	return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start))
}

// finalOp is one subtask of a two-phase aggregate's final phase. Its
// state is one GroupBy per window with partials, merged from them.
type finalOp struct {
	cfg  FinalAggregate
	c    *compiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	wins  map[bounds]*kernels.GroupBy
	wm    arrowflow.EventTime
	stats Stats

	tick, lateness int64
	free           []*kernels.GroupBy // reset GroupBys of fired windows

	// scratch
	batchWins selsBy[bounds]
	late      []int32
	fireWins  []bounds
}

func (o *finalOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	if len(o.cfg.Aggregate.Keys) == 0 && info.Parallelism > 1 {
		return fmt.Errorf("window aggregate %s: the final phase of an aggregate without keys must see every partial: run it at parallelism 1, not %d", info.Name, info.Parallelism)
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.wins = map[bounds]*kernels.GroupBy{}
	o.wm = arrowflow.MinEventTime
	o.tick = int64(c.timeType.Unit.Multiplier())
	o.lateness = int64(o.cfg.Aggregate.AllowedLateness)
	return nil
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *finalOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the subtask's counters: LateRows counts partial rows that
// came after their window fired; Panes is the number of windows held.
func (o *finalOp) Stats() Stats {
	s := o.stats
	s.Panes = int64(len(o.wins))
	for _, g := range o.wins {
		s.StateBytes += g.SizeBytes()
	}
	return s
}

func (o *finalOp) fired(end int64, wm arrowflow.EventTime) bool {
	return windowFired(end, o.tick, o.lateness, wm)
}

func (o *finalOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec := b.Record
	if s := rec.Schema(); s != o.c.partial && !s.Equal(o.c.partial) {
		return fmt.Errorf("window aggregate %s: batch schema %s differs from the local phase's output %s", o.info.Name, s, o.c.partial)
	}
	st, en := rec.Column(0).(*array.Timestamp), rec.Column(1).(*array.Timestamp)
	unit := o.c.timeType.Unit
	wins := &o.batchWins
	wins.reset()
	o.late = o.late[:0]
	for k, n := 0, b.NumRows(); k < n; k++ {
		r := b.Row(k)
		if st.IsNull(r) || en.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		win := bounds{
			int64(arrowflow.TimestampToEventTime(st.Value(r), unit)),
			int64(arrowflow.TimestampToEventTime(en.Value(r), unit)),
		}
		if o.fired(win.end, o.wm) {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		wins.add(win, int32(r))
	}
	if len(wins.keys) > 0 {
		partials := array.NewRecordBatch(o.c.gbState, rec.Columns()[2:], rec.NumRows())
		defer partials.Release()
		for k, win := range wins.keys {
			g, err := o.window(win)
			if err != nil {
				return err
			}
			if err := g.Merge(partials, wins.sels[k]); err != nil {
				return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
			}
		}
	}
	if err := emitLate(o.cfg.LateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// window returns the state of the window win, creating it (from a
// freed GroupBy if any).
func (o *finalOp) window(win bounds) (*kernels.GroupBy, error) {
	if g, ok := o.wins[win]; ok {
		return g, nil
	}
	var g *kernels.GroupBy
	if n := len(o.free); n > 0 {
		g, o.free = o.free[n-1], o.free[:n-1]
	} else {
		var err error
		if g, err = kernels.NewGroupBy(o.cfg.Aggregate.Input, o.c.keyIdx, o.c.aggs); err != nil {
			return nil, err
		}
	}
	o.wins[win] = g
	return g, nil
}

func (o *finalOp) reportState() error {
	var bytes, keys int64
	for _, g := range o.wins {
		bytes += g.SizeBytes()
		keys += int64(g.Groups())
	}
	for _, g := range o.free {
		bytes += g.SizeBytes()
	}
	return o.info.StateBudget.Set(bytes, keys)
}

func (o *finalOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	o.wm = wm
	if err := o.fire(wm, out); err != nil {
		return err
	}
	if err := o.reportState(); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// fire emits, in order of end, every window held that has fired at wm.
func (o *finalOp) fire(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	wins := o.fireWins[:0]
	for win := range o.wins {
		if o.fired(win.end, wm) {
			wins = append(wins, win)
		}
	}
	slices.SortFunc(wins, byEnd)
	o.fireWins = wins
	for _, win := range wins {
		g := o.wins[win]
		delete(o.wins, win)
		err := o.emit(win, g, out)
		if len(o.free) < maxFreePanes {
			g.Reset()
			o.free = append(o.free, g)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *finalOp) emit(win bounds, g *kernels.GroupBy, out arrowflow.Emitter) error {
	if g.Groups() == 0 {
		return nil
	}
	res, err := g.Finish(o.mem)
	if err != nil {
		return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
	}
	o.stats.Windows++
	return out.Emit(arrowflow.NewBatch(windowRows(o.mem, o.c.timeType, o.c.result, win.start, win.end, res)))
}

// Finish fires every window still held: the input has ended.
func (o *finalOp) Finish(out arrowflow.Emitter) error {
	if o.wm == arrowflow.MaxEventTime {
		return nil
	}
	o.wm = arrowflow.MaxEventTime
	return o.fire(arrowflow.MaxEventTime, out)
}

// SnapshotState writes every held window's merged state, each row in the
// key group of its keys (without keys, of the writer's first), and the
// watermark.
func (o *finalOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if err := writeWindows(o.mem, o.info, o.c, len(o.c.keyIdx), o.wins, stateTable, w); err != nil {
		return err
	}
	return writeMeta(o.mem, o.wm, w)
}

// RestoreState merges the windows of this subtask's key groups from one
// or more old subtasks' snapshots. All final subtasks see the same
// watermarks (every local subtask sends its own to each), so the old
// subtasks' watermarks agree.
func (o *finalOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	if slices.Contains(r.Tables(), stateTable) {
		err := readWindows(o.info, o.c, stateTable, r, func(st arrow.RecordBatch, wins *selsBy[bounds]) error {
			for k, win := range wins.keys {
				g, err := o.window(win)
				if err != nil {
					return err
				}
				if err := g.Merge(st, wins.sels[k]); err != nil {
					return fmt.Errorf("window aggregate %s: restoring window [%d, %d): %w", o.info.Name, win.start, win.end, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return o.reportState()
}

func (o *finalOp) Close() error {
	o.wins, o.free = nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
