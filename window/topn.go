package window

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// OrderKey is one column of a window top-N's ORDER BY.
type OrderKey struct {
	// Column names the input column.
	Column string
	// Desc ranks larger values first.
	Desc bool
	// NullsFirst ranks NULLs before every value; by default they rank
	// after every value, in either direction.
	NullsFirst bool
}

// TopN configures a window top-N, Flink SQL's
//
//	ROW_NUMBER() OVER (PARTITION BY window_start, window_end [, PartitionBy]
//	                   ORDER BY OrderBy) <= N
//
// over windowed rows: for every window and partition it keeps the N
// best-ranked rows (with WithTies, also every row tied with the N-th, which
// is RANK() <= N) and emits them once, when the watermark passes the
// window's end plus AllowedLateness.
//
// The input comes in one of two forms:
//
//   - Rows already windowed, e.g. a windowed Aggregate's output: set
//     WindowStart and WindowEnd to the names of the timestamp columns that
//     carry each row's window. The output has the input's columns.
//   - Raw rows: set Time (the event-time column) and Window (tumbling or
//     hopping). The operator assigns each row to its windows and the output
//     has columns window_start and window_end first, then the input's
//     columns.
//
// With RowNumber set, a last int64 column of that name holds each row's
// position in its partition (1..N), or with WithTies its rank (tied rows
// share it, as RANK() does).
//
// State holds only candidates: per window and partition at most N rows
// plus ties, pruned against a running threshold as batches arrive, so a
// top-1 over millions of rows holds a handful of them. They are kept in a
// row store per pane (state/rowstore) with their key hashes, and
// snapshots write them in the row store's tagged layout. Raw rows are kept
// per pane of gcd(size, slide), as Aggregate does: each row is ranked
// once however many hopping windows it belongs to, and a window's top N
// is drawn from its panes' candidates when it fires.
//
// All rows of a window and partition must reach one subtask. Put the
// operator behind arrowflow.KeyBy on some of the window and PartitionBy
// columns and name the same columns in KeyBy, so that snapshots are laid
// out by the key groups the edge routes by; or run it at parallelism 1.
// A top-N over whole windows of raw rows cannot be keyed before windows
// are assigned: use the two-phase form of Local and Final.
type TopN struct {
	// Input is the schema of the batches the operator receives.
	Input *arrow.Schema
	// WindowStart and WindowEnd name the window columns of pre-windowed
	// input (timestamps of one type); a window [start, end) fires when the
	// watermark reaches end minus one tick, as Aggregate's windows do.
	WindowStart, WindowEnd string
	// Time names the event-time column of raw input, Window its windows.
	Time   string
	Window Spec
	// PartitionBy names the columns that split each window into
	// partitions ranked separately (none: the whole window is one).
	PartitionBy []string
	// OrderBy is the ranking, most significant column first. Integers,
	// floats (NaN below every number, -0 equal to +0), strings, binaries,
	// timestamps, dates, times and durations can be ranked.
	OrderBy []OrderKey
	// N is the number of rows kept per window and partition, at least 1.
	N int
	// WithTies keeps, besides the first N rows, every row tied with the
	// N-th on all OrderBy columns. Without it, which of several rows tied
	// on every OrderBy column are kept is unspecified, as for Flink's
	// ROW_NUMBER; end OrderBy with a unique column to make it
	// deterministic.
	WithTies bool
	// RowNumber, when set, names an int64 output column with each row's
	// row number (rank with WithTies) in its partition.
	RowNumber string
	// KeyBy names the columns of the keyed edge in front of the operator
	// (arrowflow.KeyBy(node, KeyBy...)), each a window column of
	// pre-windowed input or a PartitionBy column. Snapshot rows are placed
	// in key groups by these columns, so that after a rescale each
	// subtask restores the state of the rows it will receive. Leave it
	// empty when the edge is not keyed (parallelism 1, or the local phase
	// of a two-phase top-N, whose partial state any subtask may restore).
	KeyBy []string
	// AllowedLateness delays firing past the window's end. Behind a
	// windowed aggregate it must be at least the aggregate's.
	AllowedLateness time.Duration
	// LateOutput, when set, names the side output that receives late rows,
	// as Aggregate's does. Late rows are counted in TopNStats either way.
	LateOutput string

	// compactMin overrides topNCompactMin (tests make panes rank their
	// rows often, to exercise the thresholds).
	compactMin int
}

// TopNStats are a window top-N subtask's counters.
type TopNStats struct {
	// LateRows counts rows dropped because every window they belong to had
	// fired; NullTimeRows rows dropped for a NULL event time or window.
	LateRows, NullTimeRows int64
	// Windows counts windows fired; Panes is the number of panes held
	// (for windowed input, of windows).
	Windows, Panes int64
	// Rows is the number of candidate rows held; Pruned counts rows
	// dropped because they could no longer make their top N.
	Rows, Pruned int64
	// StateBytes approximates the memory the held panes take.
	StateBytes int64
}

// TopNStatsReporter is implemented by the operator instances a TopN
// makes. They implement StatsReporter too.
type TopNStatsReporter interface {
	TopNStats() TopNStats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (t TopN) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &topNOp{cfg: t} }
}

// Validate checks the configuration against its input schema.
func (t TopN) Validate() error {
	_, err := t.compile()
	return err
}

// OutputSchema is the schema of the rows the operator emits: for raw
// input window_start and window_end, then the input's columns, then the
// RowNumber column if any.
func (t TopN) OutputSchema() (*arrow.Schema, error) {
	c, err := t.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Local is the first phase of a two-phase top-N: the same ranking without
// a row-number column and without KeyBy. Run it at any parallelism behind
// a Forward or Rebalance edge; each subtask reduces the rows it sees to
// its own candidates per window and partition, and emits them when the
// window fires. Final ranks those candidates.
//
// Each subtask's snapshot rows carry its watermark, so that after a
// rescale a subtask restoring the candidates of an old subtask whose
// watermark was ahead of the others' sends them only for the windows
// that subtask had not emitted yet.
func (t TopN) Local() TopN {
	l := t
	l.RowNumber = ""
	l.KeyBy = nil
	return l
}

// Final is the second phase of a two-phase top-N: pre-windowed input
// from Local's output, keyed by the window columns and PartitionBy (its
// KeyBy; put it behind arrowflow.KeyBy(local, final.KeyBy...)). Local
// emits a window's candidates before forwarding the watermark that fires
// it, so none of them is late at Final.
func (t TopN) Final() (TopN, error) {
	l := t.Local()
	in, err := l.OutputSchema()
	if err != nil {
		return TopN{}, err
	}
	f := t
	f.Input, f.Time, f.Window, f.LateOutput = in, "", Spec{}, ""
	if t.Time != "" {
		f.WindowStart, f.WindowEnd = "window_start", "window_end"
	}
	f.KeyBy = append([]string{f.WindowStart, f.WindowEnd}, t.PartitionBy...)
	return f, nil
}

// topNCompiled is what Validate derives from the configuration.
type topNCompiled struct {
	raw      bool
	timeIdx  int // raw: the event-time column
	startIdx int // pre-windowed: the window columns
	endIdx   int
	timeType *arrow.TimestampType
	partIdx  []int
	partType []arrow.DataType
	keyIdx   []int
	order    []topNOrder
	out      *arrow.Schema
}

const (
	topNStateTable = "topn_rows"
	// topNCompactMin is the least number of rows a pane gathers on
	// probation before they are ranked with its candidates; a batch is
	// offered to a pane in chunks of at least this many rows, so that a
	// new pane's thresholds are set after its first chunk, not after the
	// whole batch passed unfiltered.
	topNCompactMin = 512
)

func (t TopN) compile() (*topNCompiled, error) {
	if t.Input == nil {
		return nil, fmt.Errorf("window top-n: no input schema")
	}
	if t.N < 1 {
		return nil, fmt.Errorf("window top-n: N must be at least 1, got %d", t.N)
	}
	if len(t.OrderBy) == 0 {
		return nil, fmt.Errorf("window top-n: no ORDER BY column")
	}
	if t.AllowedLateness < 0 {
		return nil, fmt.Errorf("window top-n: allowed lateness %s is negative", t.AllowedLateness)
	}
	col := func(what, name string) (int, error) {
		idx := t.Input.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("window top-n: %s column %q not found (or ambiguous) in the input (%s)", what, name, t.Input)
		}
		return idx[0], nil
	}
	timestamp := func(what, name string) (int, *arrow.TimestampType, error) {
		i, err := col(what, name)
		if err != nil {
			return 0, nil, err
		}
		tt, ok := t.Input.Field(i).Type.(*arrow.TimestampType)
		if !ok {
			return 0, nil, fmt.Errorf("window top-n: %s column %q has type %s, want a timestamp", what, name, t.Input.Field(i).Type)
		}
		return i, tt, nil
	}
	c := &topNCompiled{timeIdx: -1, startIdx: -1, endIdx: -1}
	var err error
	windowed := t.WindowStart != "" || t.WindowEnd != ""
	switch {
	case t.Time != "" && windowed:
		return nil, fmt.Errorf("window top-n: give either Time and Window (raw rows) or WindowStart and WindowEnd (windowed rows), not both")
	case t.Time != "":
		c.raw = true
		if err := t.Window.Validate(); err != nil {
			return nil, err
		}
		switch t.Window.Kind {
		case KindSession:
			return nil, fmt.Errorf("window top-n: %s: session windows are not supported", t.Window)
		case KindCumulate:
			return nil, fmt.Errorf("window top-n: %s: CUMULATE windows are not supported yet; rank the rows of a windowed aggregate (WindowStart and WindowEnd) instead", t.Window)
		}
		if c.timeIdx, c.timeType, err = timestamp("event-time", t.Time); err != nil {
			return nil, err
		}
	case windowed:
		if t.WindowStart == "" || t.WindowEnd == "" {
			return nil, fmt.Errorf("window top-n: windowed input needs both WindowStart and WindowEnd")
		}
		if t.Window != (Spec{}) {
			return nil, fmt.Errorf("window top-n: windowed input takes no Window spec (got %s)", t.Window)
		}
		var et *arrow.TimestampType
		if c.startIdx, c.timeType, err = timestamp("window start", t.WindowStart); err != nil {
			return nil, err
		}
		if c.endIdx, et, err = timestamp("window end", t.WindowEnd); err != nil {
			return nil, err
		}
		if !arrow.TypeEqual(c.timeType, et) {
			return nil, fmt.Errorf("window top-n: window start %q is %s but window end %q is %s", t.WindowStart, c.timeType, t.WindowEnd, et)
		}
	default:
		return nil, fmt.Errorf("window top-n: give Time and Window (raw rows) or WindowStart and WindowEnd (windowed rows)")
	}
	for i, f := range t.Input.Fields() {
		if !rowstore.Storable(f.Type) {
			return nil, fmt.Errorf("window top-n: input column %q has type %s, which the operator cannot hold", f.Name, f.Type)
		}
		if f.Name == state.KeyGroupColumn {
			return nil, fmt.Errorf("window top-n: input column %d is named %q, which snapshots reserve", i, f.Name)
		}
	}
	for _, p := range t.PartitionBy {
		i, err := col("partition", p)
		if err != nil {
			return nil, err
		}
		c.partIdx = append(c.partIdx, i)
		c.partType = append(c.partType, t.Input.Field(i).Type)
	}
	if len(c.partType) > 0 {
		if _, err := kernels.NewGroupTable(c.partType); err != nil {
			return nil, fmt.Errorf("window top-n: partition columns: %w", err)
		}
	}
	for _, o := range t.OrderBy {
		i, err := col("order", o.Column)
		if err != nil {
			return nil, err
		}
		ord, ok := topNOrderFor(t.Input.Field(i).Type)
		if !ok {
			return nil, fmt.Errorf("window top-n: order column %q has type %s, which cannot be ranked", o.Column, t.Input.Field(i).Type)
		}
		ord.col, ord.desc, ord.nullsFirst = i, o.Desc, o.NullsFirst
		c.order = append(c.order, ord)
	}
	for _, k := range t.KeyBy {
		ok := slices.Contains(t.PartitionBy, k) || (!c.raw && (k == t.WindowStart || k == t.WindowEnd))
		if !ok {
			if c.raw {
				return nil, fmt.Errorf("window top-n: key column %q is not a PartitionBy column (raw rows can only be keyed by their partition)", k)
			}
			return nil, fmt.Errorf("window top-n: key column %q is neither a window nor a PartitionBy column", k)
		}
		i, _ := col("key", k)
		c.keyIdx = append(c.keyIdx, i)
	}
	var fields []arrow.Field
	if c.raw {
		for _, name := range []string{"window_start", "window_end"} {
			if len(t.Input.FieldIndices(name)) > 0 {
				return nil, fmt.Errorf("window top-n: the input already has a column %q; the operator adds it to raw rows", name)
			}
			fields = append(fields, arrow.Field{Name: name, Type: c.timeType})
		}
	}
	fields = append(fields, t.Input.Fields()...)
	if t.RowNumber != "" {
		if slices.ContainsFunc(fields, func(f arrow.Field) bool { return f.Name == t.RowNumber }) {
			return nil, fmt.Errorf("window top-n: row number column %q is already an output column", t.RowNumber)
		}
		fields = append(fields, arrow.Field{Name: t.RowNumber, Type: arrow.PrimitiveTypes.Int64})
	}
	c.out = arrow.NewSchema(fields, nil)
	return c, nil
}

// topNBounds are the bounds [start, end) of a pane or window, in
// nanoseconds.
type topNBounds struct{ start, end int64 }

// topNPane holds the candidates of one pane: of raw rows, a pane of
// gcd(size, slide) (for tumbling windows, the window); of windowed rows,
// a window. Rows come in as pending batches after passing each
// partition's threshold, and are periodically ranked with the candidates
// (compact), which trims every partition to its top N plus ties and moves
// the thresholds up. Since the top N of a union of panes is among the
// union of their top Ns (ties included), a window's result can be drawn
// from its panes' candidates.
type topNPane struct {
	key topNBounds
	// parts numbers the pane's partitions (nil without PartitionBy: one
	// partition, 0). Every partition it holds has candidates.
	parts *kernels.GroupTable
	// store holds the pane's rows (in the input schema) with their key
	// hashes: ids [0, cand) are the ranked candidates, sorted by partition
	// id and then rank (ties in arrival order), all in the store's first
	// chunk; the ids after them are the rows that passed the thresholds
	// since the last compaction, in arrival order. pids holds each row's
	// partition id, by row id.
	store *rowstore.Store
	pids  []uint32
	cand  int
	// thr[p] is the id of partition p's N-th candidate, or -1 while the
	// partition has fewer than N candidates. A new row that does not rank
	// before it (or tie with it, WithTies) cannot make the top N.
	thr []int32
}

func (w *topNPane) rows() int { return w.store.Len() }

func (w *topNPane) candRows() int { return w.cand }

func (w *topNPane) pendRows() int { return w.store.IDs() - w.cand }

// candidates returns the store's first chunk, which holds the candidates
// as its first candRows rows (nil without candidates). It stays owned by
// the store.
func (w *topNPane) candidates() arrow.RecordBatch {
	if w.cand == 0 {
		return nil
	}
	rec, _ := w.store.Chunk(0)
	return rec
}

func (w *topNPane) partitions() int {
	if w.parts == nil {
		return 1
	}
	return w.parts.Len()
}

func (w *topNPane) sizeBytes() int64 {
	n := int64(cap(w.pids))*4 + int64(cap(w.thr))*4
	if w.parts != nil {
		n += w.parts.SizeBytes()
	}
	if w.store != nil {
		n += w.store.SizeBytes()
	}
	return n
}

// topNAhead names restored candidates: their pane's bounds and the
// watermark of the subtask that wrote them. As a key of topNOp.ahead, the
// watermark is later than the one the subtask restored.
type topNAhead struct {
	pane topNBounds
	wm   arrowflow.EventTime
}

// topNOp is one subtask of a window top-N.
type topNOp struct {
	cfg  TopN
	c    *topNCompiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	panes map[topNBounds]*topNPane
	// ahead holds candidates of raw rows restored from an old subtask
	// whose watermark was ahead of the restored one and had fired some
	// windows of their pane, by pane and that writer's watermark (see
	// RestoreState). They count only in the pane's windows that had not
	// fired at that watermark: the writer emitted the others. Only the
	// local phase of a two-phase top-N, whose subtasks behind a Forward
	// edge each have their own watermark, gets such rows, after a
	// rescale; a pane leaves when its last window fires.
	ahead map[topNAhead]*topNPane
	wm    arrowflow.EventTime
	stats TopNStats

	size, step, pane, offset, lateness, tick int64
	compactMin                               int

	// freeParts and freeStores hold reset partition tables and row stores
	// of freed panes for reuse.
	freeParts  []*kernels.GroupTable
	freeStores []*rowstore.Store
	// ownHash is the key hash of every row without KeyBy: one of the
	// subtask's first key group.
	ownHash uint64
	// restoreStore receives the rows RestoreState reads, before they go
	// to their panes.
	restoreStore *rowstore.Store

	// scratch, reused across batches
	batchPanes []topNBounds
	batchIdx   map[topNBounds]int
	batchSels  [][]int32
	late       []int32
	keys       []arrow.Array
	pids       []uint32
	res        []int8
	pos        []int32
	brow       []int32
	surv       []int32
	survPids   []uint32
	hashes     []uint64
	hashCols   []arrow.Array
	recs       []arrow.RecordBatch
	idx        []int32
	keep       []int32
	kept       []uint32
	keepHashes []uint64
	binds      []func(i, j int32) int
}

func (o *topNOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.panes, o.ahead = map[topNBounds]*topNPane{}, map[topNAhead]*topNPane{}
	o.batchIdx = map[topNBounds]int{}
	o.wm = arrowflow.MinEventTime
	if c.raw {
		o.size, o.step, o.offset = int64(o.cfg.Window.Size), o.cfg.Window.step(), int64(o.cfg.Window.Offset)
		o.pane = o.cfg.Window.pane()
	}
	o.lateness = int64(o.cfg.AllowedLateness)
	o.tick = int64(c.timeType.Unit.Multiplier())
	o.compactMin = cmp.Or(o.cfg.compactMin, topNCompactMin)
	o.ownHash = topNHashOfKeyGroup(info.KeyGroups.Start, info.MaxParallelism)
	return nil
}

// topNHashOfKeyGroup is a hash that kernels.KeyGroupOf places in key
// group kg out of maxParallelism (0 when maxParallelism is not set).
func topNHashOfKeyGroup(kg, maxParallelism int) uint64 {
	if maxParallelism <= 0 || kg <= 0 {
		return 0
	}
	m := uint64(maxParallelism)
	return ((uint64(kg)<<32 + m - 1) / m) << 32
}

// TopNStats reports the subtask's counters.
func (o *topNOp) TopNStats() TopNStats {
	s := o.stats
	s.Panes = int64(len(o.panes) + len(o.ahead))
	for _, w := range o.panes {
		s.Rows += int64(w.rows())
		s.StateBytes += w.sizeBytes()
	}
	for _, w := range o.ahead {
		s.Rows += int64(w.rows())
		s.StateBytes += w.sizeBytes()
	}
	return s
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *topNOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the counters Aggregate's operators report.
func (o *topNOp) Stats() Stats {
	s := o.TopNStats()
	return Stats{LateRows: s.LateRows, NullTimeRows: s.NullTimeRows, Windows: s.Windows, Panes: s.Panes, StateBytes: s.StateBytes}
}

func (o *topNOp) fired(end int64, wm arrowflow.EventTime) bool {
	return windowFired(end, o.tick, o.lateness, wm)
}

func (o *topNOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec := b.Record
	if s := rec.Schema(); s != o.cfg.Input && !s.Equal(o.cfg.Input) {
		return fmt.Errorf("window top-n %s: batch schema %s differs from the configured input %s", o.info.Name, s, o.cfg.Input)
	}
	o.batchPanes = o.batchPanes[:0]
	clear(o.batchIdx)
	o.late = o.late[:0]
	if o.c.raw {
		o.assignRaw(b)
	} else {
		o.assignWindowed(b)
	}
	for i, key := range o.batchPanes {
		w, err := o.paneOf(key)
		if err != nil {
			return err
		}
		// Ranking sorts the candidates with the pending rows, so it runs
		// once as many rows are pending as candidates are held (and at
		// least compactMin): amortised, O(log n) per offered row.
		for sel := o.batchSels[i]; len(sel) > 0; {
			n := min(len(sel), max(o.compactMin, w.candRows()))
			if err := o.offer(w, rec, sel[:n]); err != nil {
				return err
			}
			sel = sel[n:]
			if w.pendRows() >= max(o.compactMin, w.candRows()) {
				if err := o.compact(w); err != nil {
					return err
				}
			}
		}
	}
	if err := emitLate(o.cfg.LateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// addRow puts row r of the batch into the pane's selection.
func (o *topNOp) addRow(key topNBounds, r int32, last *int) {
	if *last < 0 || o.batchPanes[*last] != key {
		i, ok := o.batchIdx[key]
		if !ok {
			i = len(o.batchPanes)
			o.batchPanes = append(o.batchPanes, key)
			o.batchIdx[key] = i
			if i == len(o.batchSels) {
				o.batchSels = append(o.batchSels, nil)
			}
			o.batchSels[i] = o.batchSels[i][:0]
		}
		*last = i
	}
	o.batchSels[*last] = append(o.batchSels[*last], r)
}

// assignRaw assigns each row to the pane of its event time, unless every
// window containing the pane has fired (the row is late). A row whose
// earlier windows have fired still counts in the later ones: those fire
// after it arrived.
func (o *topNOp) assignRaw(b arrowflow.Batch) {
	ts := b.Record.Column(o.c.timeIdx).(*array.Timestamp)
	unit := o.c.timeType.Unit
	last := -1
	for k, n := 0, b.NumRows(); k < n; k++ {
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
		o.addRow(topNBounds{p, p + o.pane}, int32(r), &last)
	}
}

// assignWindowed reads each row's window from its window columns.
func (o *topNOp) assignWindowed(b arrowflow.Batch) {
	st := b.Record.Column(o.c.startIdx).(*array.Timestamp)
	en := b.Record.Column(o.c.endIdx).(*array.Timestamp)
	unit := o.c.timeType.Unit
	last := -1
	for k, n := 0, b.NumRows(); k < n; k++ {
		r := b.Row(k)
		if st.IsNull(r) || en.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		key := topNBounds{
			int64(arrowflow.TimestampToEventTime(st.Value(r), unit)),
			int64(arrowflow.TimestampToEventTime(en.Value(r), unit)),
		}
		if o.fired(key.end, o.wm) {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		o.addRow(key, int32(r), &last)
	}
}

// paneOf returns the pane with the given bounds, creating it.
func (o *topNOp) paneOf(key topNBounds) (*topNPane, error) {
	if w, ok := o.panes[key]; ok {
		return w, nil
	}
	w, err := o.newPane(key)
	if err != nil {
		return nil, err
	}
	o.panes[key] = w
	return w, nil
}

// newPane makes an empty pane, with a partition table if needed.
func (o *topNOp) newPane(key topNBounds) (*topNPane, error) {
	w := &topNPane{key: key}
	if n := len(o.freeStores); n > 0 {
		w.store = o.freeStores[n-1]
		o.freeStores = o.freeStores[:n-1]
	} else {
		st, err := rowstore.New(o.cfg.Input, o.mem)
		if err != nil {
			return nil, fmt.Errorf("window top-n %s: %w", o.info.Name, err)
		}
		w.store = st
	}
	if len(o.c.partIdx) > 0 {
		if n := len(o.freeParts); n > 0 {
			w.parts = o.freeParts[n-1]
			o.freeParts = o.freeParts[:n-1]
		} else {
			var err error
			if w.parts, err = kernels.NewGroupTable(o.c.partType); err != nil {
				o.freeStore(w)
				return nil, err
			}
		}
	}
	return w, nil
}

// freePane releases a pane that is no longer held, keeping a few of the
// emptied row stores and partition tables for reuse.
func (o *topNOp) freePane(w *topNPane) {
	o.freeStore(w)
	if w.parts != nil && len(o.freeParts) < maxFreePanes {
		w.parts.Reset()
		o.freeParts = append(o.freeParts, w.parts)
	}
	w.parts = nil
}

func (o *topNOp) freeStore(w *topNPane) {
	if w.store == nil {
		return
	}
	if len(o.freeStores) < maxFreePanes {
		w.store.Reset()
		o.freeStores = append(o.freeStores, w.store)
	} else {
		w.store.Release()
	}
	w.store, w.pids, w.cand = nil, nil, 0
}

// hashRows returns the key hashes (the hash the keyed edge routes by, over
// KeyBy) of the rows sel of rec (nil: every row), in scratch space.
// Without KeyBy every row gets o.ownHash, a hash of the subtask's first
// key group, so that the rows of a snapshot land on exactly one subtask
// after a rescale.
func (o *topNOp) hashRows(rec arrow.RecordBatch, sel []int32) ([]uint64, error) {
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	hs := topNGrow(&o.hashes, n)
	if len(o.c.keyIdx) == 0 {
		for i := range hs {
			hs[i] = o.ownHash
		}
		return hs, nil
	}
	cols := o.hashCols[:0]
	for _, i := range o.c.keyIdx {
		cols = append(cols, rec.Column(i))
	}
	o.hashCols = cols
	if err := kernels.HashColumns(cols, sel, hs); err != nil {
		return nil, fmt.Errorf("window top-n %s: hashing key columns: %w", o.info.Name, err)
	}
	return hs, nil
}

// addPending appends the rows sel of rec (nil: every row, whose columns
// the store may share) with their key hashes to the pane's pending rows.
func (o *topNOp) addPending(w *topNPane, rec arrow.RecordBatch, sel []int32, hashes []uint64) error {
	n := len(hashes)
	pids := topNGrow(&o.pids, n)
	if w.parts != nil {
		if err := w.parts.FindOrInsert(o.partKeys(rec), sel, pids); err != nil {
			return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
		}
	} else {
		clear(pids)
	}
	var err error
	if sel == nil {
		_, err = w.store.AppendShared(rec, hashes)
	} else {
		_, err = w.store.Append(rec, sel, hashes)
	}
	if err != nil {
		return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
	}
	w.pids = append(w.pids, pids...)
	return nil
}

// partKeys returns rec's partition columns.
func (o *topNOp) partKeys(rec arrow.RecordBatch) []arrow.Array {
	o.keys = o.keys[:0]
	for _, i := range o.c.partIdx {
		o.keys = append(o.keys, rec.Column(i))
	}
	return o.keys
}

// offer adds the rows sel of rec to the pane's pending rows, except
// those that rank after their partition's threshold row. Comparisons run
// column by column over the rows still tied on earlier columns.
func (o *topNOp) offer(w *topNPane, rec arrow.RecordBatch, sel []int32) error {
	n := len(sel)
	pids := topNGrow(&o.pids, n)
	if w.parts != nil {
		if err := w.parts.FindOrInsert(o.partKeys(rec), sel, pids); err != nil {
			return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
		}
	} else {
		clear(pids)
	}
	res, brow := topNGrow(&o.res, n), topNGrow(&o.brow, n)
	pos := o.pos[:0]
	for k, p := range pids {
		if int(p) >= len(w.thr) || w.thr[p] < 0 {
			res[k] = -1 // fewer than N candidates yet: the row is in
			continue
		}
		res[k], brow[k] = 0, w.thr[p]
		pos = append(pos, int32(k))
	}
	cand := w.candidates()
	for _, ord := range o.c.order {
		if len(pos) == 0 {
			break
		}
		ord.vs(rec.Column(ord.col), cand.Column(ord.col), pos, sel, brow, res, ord.desc, ord.nullsFirst)
		next := pos[:0]
		for _, k := range pos {
			if res[k] == 0 {
				next = append(next, k)
			}
		}
		pos = next
	}
	o.pos = pos
	surv, survPids := o.surv[:0], o.survPids[:0]
	for k, c := range res {
		if c < 0 || (c == 0 && o.cfg.WithTies) {
			surv = append(surv, sel[k])
			survPids = append(survPids, pids[k])
		}
	}
	o.surv, o.survPids = surv, survPids
	o.stats.Pruned += int64(n - len(surv))
	if len(surv) == 0 {
		return nil
	}
	hashes, err := o.hashRows(rec, surv)
	if err != nil {
		return err
	}
	if _, err := w.store.Append(rec, surv, hashes); err != nil {
		return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
	}
	w.pids = append(w.pids, survPids...)
	return nil
}

func topNGrow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return *s
}

// bind returns, for rec, one comparison of two rows per ORDER BY column,
// in rank order.
func (o *topNOp) bind(rec arrow.RecordBatch) []func(i, j int32) int {
	o.binds = o.binds[:0]
	for _, ord := range o.c.order {
		o.binds = append(o.binds, ord.bind(rec.Column(ord.col), ord.desc, ord.nullsFirst))
	}
	return o.binds
}

func topNTied(binds []func(i, j int32) int, i, j int32) bool {
	for _, c := range binds {
		if c(i, j) != 0 {
			return false
		}
	}
	return true
}

// compact ranks the pending rows with the candidates and keeps, per
// partition, the first N plus (WithTies) the rows tied with the N-th,
// as the pane store's new rows (one chunk, candidates only). The sort
// breaks ties by row id, candidates before pending rows, so that among
// tied rows a pane keeps the earliest arrived.
func (o *topNOp) compact(w *topNPane) error {
	if w.pendRows() == 0 {
		return nil
	}
	st := w.store
	var all arrow.RecordBatch
	if st.NumChunks() == 1 {
		all, _ = st.Chunk(0)
		all.Retain()
	} else {
		recs := o.recs[:0]
		for c := range st.NumChunks() {
			rec, _ := st.Chunk(c)
			recs = append(recs, rec)
		}
		o.recs = recs
		var err error
		all, err = topNConcat(o.mem, o.cfg.Input, recs)
		clear(recs)
		if err != nil {
			return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
		}
	}
	defer all.Release()
	pids := w.pids
	n := len(pids)
	idx := topNGrow(&o.idx, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	binds := o.bind(all)
	slices.SortFunc(idx, func(x, y int32) int {
		if c := cmp.Compare(pids[x], pids[y]); c != 0 {
			return c
		}
		for _, c := range binds {
			if r := c(x, y); r != 0 {
				return r
			}
		}
		return cmp.Compare(x, y)
	})
	nparts, limit := w.partitions(), o.cfg.N
	thr := topNGrow(&w.thr, nparts)
	for i := range thr {
		thr[i] = -1
	}
	keep, kept := o.keep[:0], o.kept[:0]
	for start := 0; start < n; {
		pid := pids[idx[start]]
		end := start + 1
		for end < n && pids[idx[end]] == pid {
			end++
		}
		for p := start; p < end; p++ {
			if p-start >= limit && (!o.cfg.WithTies || !topNTied(binds, idx[p], idx[start+limit-1])) {
				break
			}
			keep = append(keep, idx[p])
			kept = append(kept, pid)
			if p-start == limit-1 {
				thr[pid] = int32(len(keep) - 1)
			}
		}
		start = end
	}
	o.keep, o.kept = keep, kept
	o.stats.Pruned += int64(n - len(keep))
	hs := topNGrow(&o.keepHashes, len(keep))
	held := st.Hashes()
	for k, i := range keep {
		hs[k] = held[i]
	}
	st.Reset()
	if _, err := st.Append(all, keep, hs); err != nil {
		w.pids, w.cand = w.pids[:0], 0
		return fmt.Errorf("window top-n %s: %w", o.info.Name, err)
	}
	w.pids = append(w.pids[:0], kept...)
	w.cand = len(keep)
	return nil
}

// topNConcat returns one record batch holding the rows of recs in order
// (a new reference), concatenating each column's buffers.
func topNConcat(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(recs))
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for i := range cols {
		for k, r := range recs {
			parts[k] = r.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("concatenate column %q: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

func (o *topNOp) reportState() error {
	var bytes, keys int64
	for _, w := range o.panes {
		bytes += w.sizeBytes()
		keys += int64(w.partitions())
	}
	for _, w := range o.ahead {
		bytes += w.sizeBytes()
		keys += int64(w.partitions())
	}
	return o.info.StateBudget.Set(bytes, keys)
}

func (o *topNOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
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

func topNByEnd(a, b topNBounds) int {
	return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start))
}

func topNAheadOrder(a, b topNAhead) int {
	return cmp.Or(topNByEnd(a.pane, b.pane), cmp.Compare(a.wm, b.wm))
}

// fire emits every window that completes between watermarks prev and wm,
// in order of end (then start), and frees the panes no later window
// needs.
func (o *topNOp) fire(prev, wm arrowflow.EventTime, out arrowflow.Emitter) error {
	var wins []topNBounds
	if !o.c.raw {
		// Each pane is a window.
		for k := range o.panes {
			if o.fired(k.end, wm) {
				wins = append(wins, k)
			}
		}
		slices.SortFunc(wins, topNByEnd)
		for _, k := range wins {
			w := o.panes[k]
			delete(o.panes, k)
			err := o.emit(w, k, out)
			o.freePane(w)
			if err != nil {
				return err
			}
		}
		return nil
	}
	// The windows of pane p that fire at wm and had not at since: prev,
	// or for a pane restored from a writer ahead, the later of prev and
	// its writer's watermark.
	firing := func(p topNBounds, since arrowflow.EventTime) {
		// Windows containing pane p start at the step boundaries in
		// (p - size, p].
		for s := floorTo(p.start, o.step, o.offset); s > p.start-o.size; s -= o.step {
			if end := s + o.size; o.fired(end, wm) && !o.fired(end, since) {
				wins = append(wins, topNBounds{s, end})
			}
		}
	}
	for p := range o.panes {
		firing(p, prev)
	}
	for a := range o.ahead {
		firing(a.pane, max(prev, a.wm))
	}
	slices.SortFunc(wins, topNByEnd)
	wins = slices.Compact(wins)
	for _, win := range wins {
		if err := o.emitWindow(win, out); err != nil {
			return err
		}
	}
	for k, w := range o.panes {
		if o.fired(o.cfg.Window.lastWindowEnd(k.start), wm) {
			delete(o.panes, k)
			o.freePane(w)
		}
	}
	for a, w := range o.ahead {
		if o.fired(o.cfg.Window.lastWindowEnd(a.pane.start), wm) {
			delete(o.ahead, a)
			o.freePane(w)
		}
	}
	return nil
}

// emitWindow emits the window of raw rows win from its panes (and the
// panes restored from writers ahead that had not emitted it): directly
// from a single pane with rows, else from a pane ranking the union of
// their candidates.
func (o *topNOp) emitWindow(win topNBounds, out arrowflow.Emitter) error {
	var parts []*topNPane
	add := func(w *topNPane) error {
		if err := o.compact(w); err != nil {
			return err
		}
		if w.candRows() > 0 {
			parts = append(parts, w)
		}
		return nil
	}
	for p := win.start; p < win.end; p += o.pane {
		if w, ok := o.panes[topNBounds{p, p + o.pane}]; ok {
			if err := add(w); err != nil {
				return err
			}
		}
	}
	if len(o.ahead) > 0 {
		// In a fixed order: it breaks ties among the candidates.
		var keys []topNAhead
		for a := range o.ahead {
			if a.pane.start >= win.start && a.pane.end <= win.end && !o.fired(win.end, a.wm) {
				keys = append(keys, a)
			}
		}
		slices.SortFunc(keys, topNAheadOrder)
		for _, a := range keys {
			if err := add(o.ahead[a]); err != nil {
				return err
			}
		}
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return o.emit(parts[0], win, out)
	}
	merged, err := o.newPane(win)
	if err != nil {
		return err
	}
	defer o.freePane(merged)
	// Ranking the union drops rows that stay in their panes: not pruned.
	pruned := o.stats.Pruned
	defer func() { o.stats.Pruned = pruned }()
	for _, w := range parts {
		if err := o.addPending(merged, w.candidates(), nil, w.store.Hashes()); err != nil {
			return err
		}
	}
	return o.emit(merged, win, out)
}

// emit emits the top rows of the pane w (compacting it first) as the
// window win, partition by partition in rank order.
func (o *topNOp) emit(w *topNPane, win topNBounds, out arrowflow.Emitter) error {
	if err := o.compact(w); err != nil {
		return err
	}
	rows := w.candRows()
	if rows == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	var made []arrow.Array
	defer func() {
		for _, c := range made {
			c.Release()
		}
	}()
	if o.c.raw {
		unit := int64(o.c.timeType.Unit.Multiplier())
		for _, v := range []int64{win.start, win.end} {
			tb := array.NewTimestampBuilder(o.mem, o.c.timeType)
			tb.Reserve(rows)
			x := arrow.Timestamp(v / unit)
			for i := 0; i < rows; i++ {
				tb.UnsafeAppend(x)
			}
			made = append(made, tb.NewArray())
			tb.Release()
			cols = append(cols, made[len(made)-1])
		}
	}
	cand := w.candidates()
	if int(cand.NumRows()) != rows {
		return fmt.Errorf("window top-n %s: pane [%d, %d) holds %d candidates in a chunk of %d rows", o.info.Name, w.key.start, w.key.end, rows, cand.NumRows())
	}
	cols = append(cols, cand.Columns()...)
	if o.cfg.RowNumber != "" {
		made = append(made, o.rowNumbers(w))
		cols = append(cols, made[len(made)-1])
	}
	o.stats.Windows++
	return out.Emit(arrowflow.NewBatch(array.NewRecordBatch(o.c.out, cols, int64(rows))))
}

// rowNumbers numbers the compacted candidates within their partitions:
// 1, 2, 3, ... or, WithTies, by rank (1 + the number of rows ranked
// strictly before).
func (o *topNOp) rowNumbers(w *topNPane) arrow.Array {
	b := array.NewInt64Builder(o.mem)
	defer b.Release()
	rows := w.candRows()
	b.Reserve(rows)
	binds := o.bind(w.candidates())
	var p, rank int64
	for i := 0; i < rows; i++ {
		switch {
		case i == 0 || w.pids[i] != w.pids[i-1]:
			p, rank = 1, 1
		default:
			p++
			if !o.cfg.WithTies || !topNTied(binds, int32(i), int32(i-1)) {
				rank = p
			}
		}
		b.UnsafeAppend(rank)
	}
	return b.NewArray()
}

// Finish fires every window still held: the input has ended.
func (o *topNOp) Finish(out arrowflow.Emitter) error {
	if o.wm == arrowflow.MaxEventTime {
		return nil
	}
	prev := o.wm
	o.wm = arrowflow.MaxEventTime
	return o.fire(prev, arrowflow.MaxEventTime, out)
}

// SnapshotState compacts every pane and writes the candidates as one
// table in the row stores' tagged layout (rowstore.SnapshotTagged: the
// input columns, the key group, the key hash, and as the tag the
// watermark up to which the pane's windows have had its rows: the
// subtask's, or for a pane restored from a writer ahead, the writer's),
// and the watermark as a second table. A row's pane follows from its
// columns (its event time, or its window columns).
func (o *topNOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	keys := make([]topNBounds, 0, len(o.panes))
	for k := range o.panes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, topNByEnd)
	for _, k := range keys {
		if err := o.writeWindow(o.panes[k], o.wm, w); err != nil {
			return err
		}
	}
	ahead := make([]topNAhead, 0, len(o.ahead))
	for a := range o.ahead {
		ahead = append(ahead, a)
	}
	slices.SortFunc(ahead, topNAheadOrder)
	for _, a := range ahead {
		if err := o.writeWindow(o.ahead[a], a.wm, w); err != nil {
			return err
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// writeWindow compacts the pane win and writes its candidates as rows of
// the state table, tagged with wm: they count only in windows that had
// not fired at wm.
func (o *topNOp) writeWindow(win *topNPane, wm arrowflow.EventTime, w state.SnapshotWriter) error {
	if err := o.compact(win); err != nil {
		return err
	}
	if win.candRows() == 0 {
		return nil
	}
	err := win.store.SnapshotTagged(w, topNStateTable, o.info.MaxParallelism, func(rowstore.RowID) int64 { return int64(wm) })
	if err != nil {
		return fmt.Errorf("window top-n %s: snapshot of pane [%d, %d): %w", o.info.Name, win.key.start, win.key.end, err)
	}
	return nil
}

// rowPane is the pane of row i of rec, a row the operator held: for raw
// rows the pane of its event time, for windowed rows its window.
func (o *topNOp) rowPane(rec arrow.RecordBatch, i int) (topNBounds, bool) {
	unit := o.c.timeType.Unit
	if o.c.raw {
		ts := rec.Column(o.c.timeIdx).(*array.Timestamp)
		if ts.IsNull(i) {
			return topNBounds{}, false
		}
		p := floorTo(int64(arrowflow.TimestampToEventTime(ts.Value(i), unit)), o.pane, o.offset)
		return topNBounds{p, p + o.pane}, true
	}
	st := rec.Column(o.c.startIdx).(*array.Timestamp)
	en := rec.Column(o.c.endIdx).(*array.Timestamp)
	if st.IsNull(i) || en.IsNull(i) {
		return topNBounds{}, false
	}
	return topNBounds{
		int64(arrowflow.TimestampToEventTime(st.Value(i), unit)),
		int64(arrowflow.TimestampToEventTime(en.Value(i), unit)),
	}, true
}

// RestoreState adds the candidates of the key groups this subtask owns,
// from one or more old subtasks' snapshots, to their panes, and ranks
// them. Without KeyBy, rows belong to the key group of the subtask that
// wrote them (the first of its range), so partial state of a two-phase
// top-N's local phase lands on exactly one new subtask. A snapshot of the
// layout weir used before the row stores (a _pane_start column first) is
// refused.
//
// The watermark restored is the smallest of the old subtasks'
// (readMeta). Behind a Forward edge each local subtask has its own
// watermark, so a pane of raw rows written by a subtask whose watermark
// was ahead may belong to hopping windows that subtask already fired and
// emitted, but that have not fired at the restored watermark: restored
// as a pane, its candidates would reach the final phase a second time
// when those windows fire again here, and be ranked twice. Such a pane
// is held apart with its writer's watermark (o.ahead) and counts only in
// its windows that had not fired at that watermark. Panes written at the
// restored watermark (the usual case: no rescale, keyed subtasks, or
// equal watermarks) and panes none of whose windows had fired at their
// writer's watermark are restored as panes.
func (o *topNOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	into := func(int64) (*rowstore.Store, error) {
		if o.restoreStore == nil {
			st, err := rowstore.New(o.cfg.Input, o.mem)
			if err != nil {
				return nil, fmt.Errorf("window top-n %s: %w", o.info.Name, err)
			}
			o.restoreStore = st
		}
		o.restoreStore.Reset()
		return o.restoreStore, nil
	}
	var sels selsBy[topNAhead]
	var hs []uint64
	err = rowstore.RestoreTagged(r, topNStateTable, o.cfg.Input, o.info.KeyGroups, into,
		func(tag int64, s *rowstore.Store, first rowstore.RowID, rec arrow.RecordBatch) error {
			n := int(rec.NumRows())
			hashes := s.Hashes()[first : int(first)+n]
			ww := arrowflow.EventTime(tag)
			// Rows by pane and writer's watermark: o.wm for a pane
			// restored as such, a later one for a pane held apart.
			sels.keys = sels.keys[:0]
			clear(sels.idx)
			for i := range n {
				pane, ok := o.rowPane(rec, i)
				if !ok {
					return fmt.Errorf("window top-n %s: snapshot row without a window (NULL event time or window column)", o.info.Name)
				}
				k := topNAhead{pane, o.wm}
				if o.c.raw && ww > o.wm && o.fired(o.firstWindowEnd(pane.start), ww) {
					k.wm = ww
				}
				sels.add(k, int32(i))
			}
			for j, k := range sels.keys {
				w, err := o.restoredPane(k)
				if err != nil {
					return err
				}
				sel := sels.sels[j]
				hs = slices.Grow(hs[:0], len(sel))
				for _, i := range sel {
					hs = append(hs, hashes[i])
				}
				if err := o.addPending(w, rec, sel, hs); err != nil {
					return err
				}
			}
			return nil
		})
	if o.restoreStore != nil {
		o.restoreStore.Release()
		o.restoreStore = nil
	}
	var se *rowstore.SchemaError
	switch {
	case errors.As(err, &se) && !se.Tagged():
		return fmt.Errorf("window top-n %s: snapshot table %q has the snapshot layout of an older weir version (candidates by pane without key hashes), which this version cannot restore; restart the job without its state: %w", o.info.Name, topNStateTable, err)
	case errors.As(err, &se):
		return fmt.Errorf("window top-n %s: snapshot state does not match this job's input rows (did the query change?): %w", o.info.Name, err)
	case err != nil:
		return fmt.Errorf("window top-n %s: restoring candidates: %w", o.info.Name, err)
	}
	for _, w := range o.panes {
		if err := o.compact(w); err != nil {
			return err
		}
	}
	for _, w := range o.ahead {
		if err := o.compact(w); err != nil {
			return err
		}
	}
	return o.reportState()
}

// firstWindowEnd is the end of the first window containing the pane of
// raw rows that starts at p: windows start at the step boundaries in
// (p - size, p].
func (o *topNOp) firstWindowEnd(p int64) int64 {
	return floorTo(p-o.size, o.step, o.offset) + o.step + o.size
}

// restoredPane returns the pane that restored rows of pane a.pane
// written at watermark a.wm go to, creating it: the pane itself when
// a.wm is the restored watermark, else the one held apart for a.
func (o *topNOp) restoredPane(a topNAhead) (*topNPane, error) {
	if a.wm == o.wm {
		return o.paneOf(a.pane)
	}
	if w, ok := o.ahead[a]; ok {
		return w, nil
	}
	w, err := o.newPane(a.pane)
	if err != nil {
		return nil, err
	}
	o.ahead[a] = w
	return w, nil
}

func (o *topNOp) Close() error {
	for _, w := range o.panes {
		w.store.Release()
	}
	for _, w := range o.ahead {
		w.store.Release()
	}
	for _, st := range o.freeStores {
		st.Release()
	}
	if o.restoreStore != nil {
		o.restoreStore.Release()
	}
	o.panes, o.ahead, o.freeParts, o.freeStores, o.restoreStore = nil, nil, nil, nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}

// topNOrder is one ORDER BY column, compiled for its type.
type topNOrder struct {
	col              int
	desc, nullsFirst bool
	// vs compares, for each position k in pos, row arow[k] of a with row
	// brow[k] of b (arrays of the column's type) and writes the result in
	// rank order to res[k]: -1 when a's row ranks first, 0 when tied.
	vs func(a, b arrow.Array, pos, arow, brow []int32, res []int8, desc, nullsFirst bool)
	// bind returns a comparison, in rank order, of two rows of arr.
	bind func(arr arrow.Array, desc, nullsFirst bool) func(i, j int32) int
}

// topNOrderFor dispatches on the column type, once, when the operator is
// compiled.
func topNOrderFor(dt arrow.DataType) (topNOrder, bool) {
	switch dt.ID() {
	case arrow.INT8:
		return topNOrder{vs: topNVsFixed[int8], bind: topNBindFixed[int8]}, true
	case arrow.INT16:
		return topNOrder{vs: topNVsFixed[int16], bind: topNBindFixed[int16]}, true
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return topNOrder{vs: topNVsFixed[int32], bind: topNBindFixed[int32]}, true
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return topNOrder{vs: topNVsFixed[int64], bind: topNBindFixed[int64]}, true
	case arrow.UINT8:
		return topNOrder{vs: topNVsFixed[uint8], bind: topNBindFixed[uint8]}, true
	case arrow.UINT16:
		return topNOrder{vs: topNVsFixed[uint16], bind: topNBindFixed[uint16]}, true
	case arrow.UINT32:
		return topNOrder{vs: topNVsFixed[uint32], bind: topNBindFixed[uint32]}, true
	case arrow.UINT64:
		return topNOrder{vs: topNVsFixed[uint64], bind: topNBindFixed[uint64]}, true
	case arrow.FLOAT32:
		return topNOrder{vs: topNVsFixed[float32], bind: topNBindFixed[float32]}, true
	case arrow.FLOAT64:
		return topNOrder{vs: topNVsFixed[float64], bind: topNBindFixed[float64]}, true
	case arrow.STRING, arrow.BINARY:
		return topNOrder{vs: topNVsBytes[int32], bind: topNBindBytes[int32]}, true
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return topNOrder{vs: topNVsBytes[int64], bind: topNBindBytes[int64]}, true
	}
	return topNOrder{}, false
}

// topNNumber is the Go type of the values of a fixed-width column that can
// be ranked: both ordered and readable as Arrow values.
type topNNumber interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// topNNulls orders a pair of which at least one value is NULL (ok false
// when neither is): NULLs tie with each other and rank last unless
// nullsFirst.
func topNNulls(aNull, bNull, nullsFirst bool) (c int8, ok bool) {
	switch {
	case aNull && bNull:
		return 0, true
	case aNull == nullsFirst:
		// a is NULL and NULLs come first, or b is NULL and they come last.
		return -1, true
	default:
		return 1, true
	}
}

func topNVsFixed[T topNNumber](a, b arrow.Array, pos, arow, brow []int32, res []int8, desc, nullsFirst bool) {
	av, bv := arrow.GetValues[T](a.Data(), 1), arrow.GetValues[T](b.Data(), 1)
	if a.NullN() == 0 && b.NullN() == 0 {
		if desc {
			for _, k := range pos {
				res[k] = int8(cmp.Compare(bv[brow[k]], av[arow[k]]))
			}
		} else {
			for _, k := range pos {
				res[k] = int8(cmp.Compare(av[arow[k]], bv[brow[k]]))
			}
		}
		return
	}
	for _, k := range pos {
		i, j := int(arow[k]), int(brow[k])
		if an, bn := a.IsNull(i), b.IsNull(j); an || bn {
			res[k], _ = topNNulls(an, bn, nullsFirst)
			continue
		}
		c := cmp.Compare(av[i], bv[j])
		if desc {
			c = -c
		}
		res[k] = int8(c)
	}
}

func topNBindFixed[T topNNumber](arr arrow.Array, desc, nullsFirst bool) func(i, j int32) int {
	v := arrow.GetValues[T](arr.Data(), 1)
	switch {
	case arr.NullN() > 0:
		return func(i, j int32) int {
			if an, bn := arr.IsNull(int(i)), arr.IsNull(int(j)); an || bn {
				c, _ := topNNulls(an, bn, nullsFirst)
				return int(c)
			}
			if desc {
				return cmp.Compare(v[j], v[i])
			}
			return cmp.Compare(v[i], v[j])
		}
	case desc:
		return func(i, j int32) int { return cmp.Compare(v[j], v[i]) }
	}
	return func(i, j int32) int { return cmp.Compare(v[i], v[j]) }
}

func topNBuffer(d arrow.ArrayData, i int) []byte {
	if b := d.Buffers()[i]; b != nil {
		return b.Bytes()
	}
	return nil
}

func topNVsBytes[O int32 | int64](a, b arrow.Array, pos, arow, brow []int32, res []int8, desc, nullsFirst bool) {
	ao, ad := arrow.GetOffsets[O](a.Data(), 1), topNBuffer(a.Data(), 2)
	bo, bd := arrow.GetOffsets[O](b.Data(), 1), topNBuffer(b.Data(), 2)
	nulls := a.NullN() > 0 || b.NullN() > 0
	for _, k := range pos {
		i, j := int(arow[k]), int(brow[k])
		if nulls {
			if an, bn := a.IsNull(i), b.IsNull(j); an || bn {
				res[k], _ = topNNulls(an, bn, nullsFirst)
				continue
			}
		}
		c := bytes.Compare(ad[ao[i]:ao[i+1]], bd[bo[j]:bo[j+1]])
		if desc {
			c = -c
		}
		res[k] = int8(c)
	}
}

func topNBindBytes[O int32 | int64](arr arrow.Array, desc, nullsFirst bool) func(i, j int32) int {
	off, data := arrow.GetOffsets[O](arr.Data(), 1), topNBuffer(arr.Data(), 2)
	nulls := arr.NullN() > 0
	return func(i, j int32) int {
		if nulls {
			if an, bn := arr.IsNull(int(i)), arr.IsNull(int(j)); an || bn {
				c, _ := topNNulls(an, bn, nullsFirst)
				return int(c)
			}
		}
		c := bytes.Compare(data[off[i]:off[i+1]], data[off[j]:off[j+1]])
		if desc {
			return -c
		}
		return c
	}
}
