package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// Two-phase (local-global) GROUP BY, as Flink's LocalGroupAggregate and
// GlobalGroupAggregate (table.optimizer.agg-phase-strategy TWO_PHASE): a
// keyless or skewed aggregate has to see all rows of a key in one subtask.
// The local phase runs beside the input at any parallelism, folds each
// epoch's rows into one partial state per key (deltas: a retraction
// subtracts) and emits those partial rows, append-only, when the epoch
// closes, keeping no state across epochs. The final phase, keyed on the
// keys, merges the partial rows into the group state and emits the
// changelog exactly as GroupAggregate does.
//
// COUNT DISTINCT, and MIN and MAX over a retracting input, have no
// two-phase form (their state is a multiset of values): Final returns an
// error wrapping window.ErrTwoPhaseUnsupported for them.

// aggPartialRows names the partial state's row-count delta column.
const aggPartialRows = "_rows"

// LocalGroupAggregate is the local phase of a two-phase GroupAggregate
// (see GroupAggregate.Local). Its output is append-only: per epoch, one
// row per key with rows in the epoch at this subtask, of PartialSchema.
type LocalGroupAggregate struct {
	// Agg is the aggregate being split.
	Agg GroupAggregate
}

// FinalGroupAggregate is the final phase of a two-phase GroupAggregate
// (see GroupAggregate.Final): keyed on Agg.Keys, it takes the local
// phase's partial rows and emits Agg's changelog.
type FinalGroupAggregate struct {
	// Agg is the aggregate being split.
	Agg GroupAggregate
}

// Local returns the local phase of the aggregate. Run it at any
// parallelism behind arrowflow.Forward; put Final behind
// arrowflow.KeyBy(local, Keys...) (at parallelism 1 without keys). Call
// Final first: its error says whether the aggregate has a two-phase form.
func (a GroupAggregate) Local() LocalGroupAggregate { return LocalGroupAggregate{Agg: a} }

// Final returns the final phase of the aggregate, or an error wrapping
// window.ErrTwoPhaseUnsupported when an aggregate has no two-phase form
// (COUNT DISTINCT; MIN and MAX when Retracting): compute it in one phase
// then.
func (a GroupAggregate) Final() (FinalGroupAggregate, error) {
	if err := a.checkTwoPhase(); err != nil {
		return FinalGroupAggregate{}, err
	}
	return FinalGroupAggregate{Agg: a}, a.Validate()
}

func (a GroupAggregate) checkTwoPhase() error {
	for _, ag := range a.Aggs {
		if ag.Func == kernels.AggCountDistinct || (a.Retracting && (ag.Func == kernels.AggMin || ag.Func == kernels.AggMax)) {
			return fmt.Errorf("group aggregate: %s (%q) over a changelog: %w", ag.Func, ag.Name, window.ErrTwoPhaseUnsupported)
		}
	}
	return nil
}

// PartialSchema is the schema of the partial rows: the keys, the row
// count delta (_rows), then each aggregate's partial state columns.
func (a GroupAggregate) PartialSchema() (*arrow.Schema, error) {
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	if err := a.checkTwoPhase(); err != nil {
		return nil, err
	}
	return c.partialSchema(a)
}

// partialSchema derives the partial schema from the accumulators' slots.
func (c *aggCompiled) partialSchema(a GroupAggregate) (*arrow.Schema, error) {
	fields := append(c.keys.Fields(), arrow.Field{Name: aggPartialRows, Type: arrow.PrimitiveTypes.Int64})
	for i, ag := range a.Aggs {
		acc, err := c.newAcc(a, i)
		if err != nil {
			return nil, err
		}
		slots := acc.slots(fmt.Sprintf("_%d.%s", i, ag.Name))
		for _, s := range slots[:len(slots)-1] {
			fields = append(fields, s.field())
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// newAcc makes the accumulator of aggregate i.
func (c *aggCompiled) newAcc(a GroupAggregate, i int) (aggAcc, error) {
	types := make([]arrow.DataType, len(c.argIdx[i]))
	for j, x := range c.argIdx[i] {
		types[j] = a.Input.Field(x).Type
	}
	acc, err := newAggAcc(a.Aggs[i].Func, types, c.results[i], a.Retracting)
	if err != nil {
		return nil, fmt.Errorf("group aggregate: aggregate %q: %w", a.Aggs[i].Name, err)
	}
	return acc, nil
}

// Validate checks the configuration and that it has a two-phase form.
func (l LocalGroupAggregate) Validate() error {
	_, err := l.Agg.PartialSchema()
	return err
}

// OutputSchema is the partial schema (GroupAggregate.PartialSchema).
func (l LocalGroupAggregate) OutputSchema() (*arrow.Schema, error) { return l.Agg.PartialSchema() }

// Factory returns the operator factory of the local phase.
func (l LocalGroupAggregate) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &aggLocalOp{cfg: l.Agg} }
}

// Validate checks the configuration and that it has a two-phase form.
func (f FinalGroupAggregate) Validate() error {
	_, err := f.Agg.PartialSchema()
	return err
}

// InputSchema is the schema of the partial rows the final phase takes.
func (f FinalGroupAggregate) InputSchema() (*arrow.Schema, error) { return f.Agg.PartialSchema() }

// OutputSchema is the aggregate's output schema.
func (f FinalGroupAggregate) OutputSchema() (*arrow.Schema, error) { return f.Agg.OutputSchema() }

// Factory returns the operator factory of the final phase. Its instances
// report GroupAggregateStats (InputRows counts partial rows) and snapshot
// the same state as GroupAggregate's.
func (f FinalGroupAggregate) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &aggOp{cfg: f.Agg, final: true} }
}

// processPartial merges a batch of partial rows (the final phase).
func (o *aggOp) processPartial(b arrowflow.Batch, out arrowflow.Emitter) error {
	rec := b.Record
	if s := rec.Schema(); !s.Equal(o.partial) {
		return o.errorf("partial rows of schema %s, want %s (the local phase's output)", s, o.partial)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	o.stats.InputRows += int64(n)
	if cap(o.gids) < n {
		o.gids = make([]uint32, n)
	}
	gids := o.gids[:n]
	if o.table != nil {
		if err := o.findGroups(rec, o.partialKeys, b.Sel, gids); err != nil {
			return err
		}
	} else {
		clear(gids)
	}
	var now int64
	if o.ttl > 0 {
		now = o.clock.Now().UnixNano()
		o.nextExpiry = min(o.nextExpiry, now+o.ttl)
	}
	sel := o.addSel[:0]
	deltas := arrow.GetValues[int64](rec.Column(len(o.partialKeys)).Data(), 1)
	for k, g := range gids {
		r := int32(b.Row(k))
		sel = append(sel, r)
		if !o.held[g] {
			o.held[g] = true
			o.live++
		}
		// A negative total means retractions of rows this group never
		// had (a row-at-a-time aggregate would have ignored them).
		o.rows[g] = max(o.rows[g]+deltas[r], 0)
		if !o.dirty[g] {
			o.dirty[g] = true
			o.dirtyList = append(o.dirtyList, g)
		}
		if o.ttl > 0 {
			o.updated[g] = now
		}
	}
	o.addSel = sel
	col := len(o.partialKeys) + 1
	for i, a := range o.accs {
		w := o.partialWidth[i]
		if err := a.merge(rec.Columns()[col:col+w], sel, gids); err != nil {
			return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
		}
		col += w
	}
	if len(o.dirtyList) > aggMaxDirty {
		if err := o.flush(out); err != nil {
			return err
		}
	}
	return o.reportState()
}

// aggLocalOp is one subtask of the local phase: the state of one epoch,
// emitted as partial rows and dropped when the epoch closes.
type aggLocalOp struct {
	cfg     GroupAggregate
	c       *aggCompiled
	info    *arrowflow.TaskInfo
	mem     memory.Allocator
	partial *arrow.Schema
	table   *kernels.GroupTable // nil without keys
	accs    []aggAcc
	rows    []int64 // row-count delta by group
	ngroups int     // groups of this epoch
	touched bool    // without keys: the one group had rows this epoch
	gids    []uint32
	addSel  []int32
	retSel  []int32
	addG    []uint32
	retG    []uint32
	args    []arrow.Array
	stats   GroupAggregateStats
}

func (o *aggLocalOp) errorf(format string, args ...any) error {
	return fmt.Errorf("group aggregate %s (local phase): "+format, append([]any{o.info.Name}, args...)...)
}

func (o *aggLocalOp) Open(info *arrowflow.TaskInfo) error {
	o.info = info
	if err := o.cfg.checkTwoPhase(); err != nil {
		return o.errorf("%w", err)
	}
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.mem = c, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	if o.partial, err = c.partialSchema(o.cfg); err != nil {
		return err
	}
	if len(c.keyIdx) > 0 {
		if o.table, err = kernels.NewGroupTable(c.keyTypes); err != nil {
			return o.errorf("%w", err)
		}
	}
	for i := range o.cfg.Aggs {
		acc, err := c.newAcc(o.cfg, i)
		if err != nil {
			return err
		}
		if d, ok := acc.(interface{ setDelta() }); ok {
			d.setDelta()
		}
		o.accs = append(o.accs, acc)
	}
	if o.table == nil {
		o.grow(1)
	}
	return nil
}

func (o *aggLocalOp) grow(n int) {
	if n <= len(o.rows) {
		o.ngroups = max(o.ngroups, n)
		return
	}
	o.rows = aggGrow(o.rows, n)
	o.ngroups = n
	for _, a := range o.accs {
		a.grow(n)
	}
}

// GroupAggregateStats reports the local phase's counters (Groups: the
// groups of the open epoch).
func (o *aggLocalOp) GroupAggregateStats() GroupAggregateStats {
	s := o.stats
	s.Groups = int64(o.ngroups)
	return s
}

func (o *aggLocalOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec := b.Record
	if s := rec.Schema(); s != o.cfg.Input && !s.Equal(o.cfg.Input) {
		return o.errorf("batch schema %s differs from the configured input %s", s, o.cfg.Input)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	o.stats.InputRows += int64(n)
	if cap(o.gids) < n {
		o.gids = make([]uint32, n)
	}
	gids := o.gids[:n]
	if o.table != nil {
		cols := make([]arrow.Array, len(o.c.keyIdx))
		for i, x := range o.c.keyIdx {
			cols[i] = rec.Column(x)
		}
		if err := o.table.FindOrInsert(cols, b.Sel, gids); err != nil {
			return o.errorf("%w", err)
		}
		o.grow(o.table.Len())
	} else {
		clear(gids)
		o.touched = true
	}
	addSel, retSel, addG, retG := o.addSel[:0], o.retSel[:0], o.addG[:0], o.retG[:0]
	for k, g := range gids {
		r := int32(b.Row(k))
		if b.Kinds != nil && b.Kinds[r].IsRetraction() {
			if !o.cfg.Retracting {
				return o.errorf("input row %s (a retraction) in an aggregate configured for an append-only input (Retracting false)", b.Kinds[r])
			}
			o.rows[g]--
			retSel, retG = append(retSel, r), append(retG, g)
		} else {
			o.rows[g]++
			addSel, addG = append(addSel, r), append(addG, g)
		}
	}
	o.addSel, o.retSel, o.addG, o.retG = addSel, retSel, addG, retG
	for i, a := range o.accs {
		args := o.args[:0]
		for _, x := range o.c.argIdx[i] {
			args = append(args, rec.Column(x))
		}
		o.args = args
		if len(addSel) > 0 {
			if err := a.update(args, addSel, addG, false); err != nil {
				return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
			}
		}
		if len(retSel) > 0 {
			if err := a.update(args, retSel, retG, true); err != nil {
				return o.errorf("%s: %w", o.cfg.Aggs[i].Name, err)
			}
		}
	}
	if o.ngroups > aggMaxDirty {
		return o.flush(out)
	}
	return nil
}

func (o *aggLocalOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// FlushEpoch emits the epoch's partial rows.
func (o *aggLocalOp) FlushEpoch(_ uint64, out arrowflow.Emitter) error { return o.flush(out) }

// Finish emits the last epoch's partial rows.
func (o *aggLocalOp) Finish(out arrowflow.Emitter) error { return o.flush(out) }

// flush emits one partial row per group of the epoch and forgets them.
func (o *aggLocalOp) flush(out arrowflow.Emitter) error {
	n := o.ngroups
	if o.table == nil && !o.touched {
		return nil
	}
	if n == 0 {
		return nil
	}
	gids := make([]uint32, n)
	for g := range gids {
		gids[g] = uint32(g)
	}
	var cols []arrow.Array
	if o.table != nil {
		cols = o.table.Keys(o.mem)
	}
	cols = append(cols, aggFixedArray(o.mem, arrow.PrimitiveTypes.Int64, o.rows[:n], nil))
	for i, a := range o.accs {
		slots := a.slots(fmt.Sprintf("_%d.%s", i, o.cfg.Aggs[i].Name))
		for _, s := range slots[:len(slots)-1] {
			cols = append(cols, s.export(o.mem, gids))
		}
	}
	rec := array.NewRecordBatch(o.partial, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	// Forget the epoch, keeping the memory.
	for g := 0; g < n; g++ {
		o.rows[g] = 0
		for _, a := range o.accs {
			a.clear(uint32(g))
		}
	}
	if o.table != nil {
		o.table.Reset()
		o.ngroups = 0
	}
	o.touched = false
	o.stats.OutputRows += int64(n)
	o.stats.Flushes++
	return out.Emit(arrowflow.NewBatch(rec))
}

// SnapshotState writes nothing: the runtime flushes the epoch first, and
// the local phase keeps nothing across epochs.
func (o *aggLocalOp) SnapshotState(uint64, state.SnapshotWriter) error {
	if (o.table != nil && o.ngroups > 0) || o.touched {
		return o.errorf("snapshot with %d groups not flushed (FlushEpoch must come first)", o.ngroups)
	}
	return nil
}

// RestoreState reads nothing.
func (o *aggLocalOp) RestoreState(state.SnapshotReader) error { return nil }

func (o *aggLocalOp) Close() error {
	o.table, o.accs = nil, nil
	return nil
}
