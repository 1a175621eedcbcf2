package window

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// JoinKind says which rows a window join emits for each window.
type JoinKind int

const (
	// JoinInner emits every pair of a left and a right row of the window
	// with equal keys.
	JoinInner JoinKind = iota
	// JoinLeftOuter emits the inner pairs, and each left row of the window
	// that matched no right row, with NULL right columns.
	JoinLeftOuter
	// JoinRightOuter emits the inner pairs, and each right row of the
	// window that matched no left row, with NULL left columns.
	JoinRightOuter
	// JoinFullOuter emits the inner pairs and the unmatched rows of both
	// sides, padded with NULLs.
	JoinFullOuter
	// JoinSemi emits, once, each left row of the window that has at least
	// one right row with an equal key (SQL's EXISTS / IN). Only left
	// columns are output.
	JoinSemi
	// JoinAnti emits each left row of the window that has no right row
	// with an equal key (SQL's NOT EXISTS), including left rows with a
	// NULL key. Only left columns are output.
	JoinAnti
)

// String names the kind as SQL does.
func (k JoinKind) String() string {
	switch k {
	case JoinInner:
		return "INNER"
	case JoinLeftOuter:
		return "LEFT"
	case JoinRightOuter:
		return "RIGHT"
	case JoinFullOuter:
		return "FULL"
	case JoinSemi:
		return "SEMI"
	case JoinAnti:
		return "ANTI"
	}
	return fmt.Sprintf("JoinKind(%d)", int(k))
}

// Join configures an event-time window join, Flink SQL's window join: a
// left and a right row meet when their keys are equal (no key column
// NULL: NULL never equals anything) and both fall into the same tumbling
// or hopping window. A window's result is emitted once, when the
// watermark (the minimum over both inputs) passes the window's end plus
// AllowedLateness; the window's rows are then dropped. A row of a hopping
// window join meets the other side once in every window both rows belong
// to, so a pair can appear once per common window.
//
// The operator has two inputs: input 0 is the left side, input 1 the
// right. Put each behind arrowflow.KeyBy on its join keys (LeftKeys,
// RightKeys) so that equal keys meet in one subtask.
//
// The output has columns window_start and window_end (of LeftTime's
// type), then the left output columns (LeftColumns, each named
// LeftPrefix+name), then the right ones (RightColumns, RightPrefix+name;
// none for semi and anti joins). Every output name must be unique: when
// both sides have a column of the same name, project it away or set a
// prefix; Validate names the clash.
//
// State is the buffered rows of each side, per pane (the window for
// tumbling windows, gcd(size, slide) for hopping ones, so that a row is
// stored once however many windows it belongs to), in a row store
// (state/rowstore) of the columns the join needs. Snapshots write them in
// the row stores' tagged layout (the key group, the key hash and the pane
// start beside the columns), so a job can restore into another
// parallelism. Snapshots of the layout before the row stores do not
// restore: RestoreState says so.
type Join struct {
	// Left and Right are the schemas of the two inputs' batches.
	Left, Right *arrow.Schema
	// LeftTime and RightTime name the event-time columns, of Arrow
	// timestamp types (the units may differ).
	LeftTime, RightTime string
	// LeftKeys and RightKeys name the join key columns, pairwise of equal
	// types: left row l and right row r match when l[LeftKeys[i]] equals
	// r[RightKeys[i]] for every i. Floating-point keys compare as in
	// grouping: -0 equals +0 and NaN equals NaN.
	LeftKeys, RightKeys []string
	// Window is the window family: tumbling or hopping.
	Window Spec
	// Kind is the join kind (inner by default).
	Kind JoinKind
	// LeftColumns and RightColumns name the input columns to output, in
	// that order; nil outputs every column of that side. RightColumns
	// must be empty for semi and anti joins.
	LeftColumns, RightColumns []string
	// LeftPrefix and RightPrefix are prepended to the names of the output
	// columns of that side (for example "p_" and "a_").
	LeftPrefix, RightPrefix string
	// AllowedLateness delays firing past the window's end, so that rows up
	// to this much behind the watermark still count.
	AllowedLateness time.Duration
	// LeftLateOutput and RightLateOutput, when set, name side outputs that
	// receive the late rows of that input, as they came in and in that
	// input's schema. The two names must differ unless both inputs have
	// the same schema. Late rows are counted in JoinStats.LateRows either
	// way.
	LeftLateOutput, RightLateOutput string
}

// JoinStats are a window join subtask's counters.
type JoinStats struct {
	// LateRows counts rows of either input dropped because every window
	// they belong to had already fired; NullTimeRows rows dropped for a
	// NULL event time; NullKeyRows rows dropped at once because a key
	// column is NULL and the join kind can never output them.
	LateRows, NullTimeRows, NullKeyRows int64
	// Windows counts windows fired; OutputRows the rows emitted.
	Windows, OutputRows int64
	// Panes is the number of panes held, StateRows the rows buffered in
	// them and StateBytes the memory those rows retain (approximately:
	// buffers shared with input batches count in full).
	Panes, StateRows, StateBytes int64
}

// JoinStatsReporter is implemented by the operator instances a Join
// makes. They also implement StatsReporter, with the counters Stats has.
type JoinStatsReporter interface {
	JoinStats() JoinStats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens, so a bad configuration fails the job naming
// the operator; call Validate to check it earlier.
func (j Join) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &joinOp{cfg: j} }
}

// OutputSchema is the schema of the rows the join emits: window_start,
// window_end, the left output columns, then the right ones.
func (j Join) OutputSchema() (*arrow.Schema, error) {
	c, err := j.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Validate checks the configuration against the input schemas.
func (j Join) Validate() error {
	_, err := j.compile()
	return err
}

const (
	joinLeft, joinRight = 0, 1
	// joinOutRows bounds the rows of one output batch.
	joinOutRows = 1 << 16
	// The temporal join concatenates a trailing run of joinCompactRun
	// chunks of fewer than joinSmallChunk rows each into one chunk, so
	// that tiny input batches do not leave thousands of tiny records in
	// state. (The window and interval joins keep their rows in row
	// stores, which merge small chunks themselves; the interval join's
	// tests bound its chunks with these constants.)
	joinCompactRun = 16
	joinSmallChunk = 1024
)

// joinSideSpec is what compile derives for one input.
type joinSideSpec struct {
	name     string // "left" or "right", for errors
	input    *arrow.Schema
	timeIdx  int
	timeUnit arrow.TimeUnit
	keyIdx   []int // key columns in the input
	// storeIdx lists, ascending, the input columns held in state: the
	// keys and the output columns. stored is their schema, the schema of
	// the side's row stores.
	storeIdx []int
	stored   *arrow.Schema
	keyPos   []int // the key columns, by index in stored
	outPos   []int // the output columns, by index in stored
	// table is the snapshot table: the row stores' tagged layout
	// (rowstore.SnapshotTagged), the tag being the pane start.
	table      string
	lateOutput string
	// keepNullKeys: rows with a NULL key are held because the kind emits
	// them unmatched; otherwise they are counted and dropped on arrival.
	keepNullKeys bool
	// unmatched: the kind emits the side's unmatched rows (padded with
	// NULLs for the other side's columns).
	unmatched bool
}

// joinCompiled is what Validate derives from a Join.
type joinCompiled struct {
	sides     [2]joinSideSpec
	keyEq     []joinKeyEq // per key column pair
	timeType  *arrow.TimestampType
	out       *arrow.Schema
	pairs     bool // the kind emits matched pairs
	semi      bool // the kind emits matched left rows once
	rightCols bool // the output has right columns
	tick      int64
}

func (j Join) compile() (*joinCompiled, error) {
	if j.Kind < JoinInner || j.Kind > JoinAnti {
		return nil, fmt.Errorf("window join: unknown kind %d", int(j.Kind))
	}
	if err := j.Window.Validate(); err != nil {
		return nil, err
	}
	switch j.Window.Kind {
	case KindSession:
		return nil, fmt.Errorf("window join: %s: session windows are not supported; use tumbling or hopping windows", j.Window)
	case KindCumulate:
		return nil, fmt.Errorf("window join: %s: CUMULATE windows are not supported yet; use tumbling or hopping windows", j.Window)
	}
	if j.AllowedLateness < 0 {
		return nil, fmt.Errorf("window join: allowed lateness %s is negative", j.AllowedLateness)
	}
	if len(j.LeftKeys) == 0 || len(j.LeftKeys) != len(j.RightKeys) {
		return nil, fmt.Errorf("window join: need one or more key columns on each side, as many on the left (%d) as on the right (%d)", len(j.LeftKeys), len(j.RightKeys))
	}
	semiAnti := j.Kind == JoinSemi || j.Kind == JoinAnti
	if semiAnti && len(j.RightColumns) > 0 {
		return nil, fmt.Errorf("window join: a %s join outputs only left columns; RightColumns must be empty", j.Kind)
	}
	c := &joinCompiled{
		pairs:     j.Kind <= JoinFullOuter,
		semi:      j.Kind == JoinSemi,
		rightCols: !semiAnti,
	}
	specs := [2]struct {
		name, time, prefix, late string
		schema                   *arrow.Schema
		keys, cols               []string
		unmatched, padded        bool
	}{
		{"left", j.LeftTime, j.LeftPrefix, j.LeftLateOutput, j.Left, j.LeftKeys, j.LeftColumns,
			j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter || j.Kind == JoinAnti,
			j.Kind == JoinRightOuter || j.Kind == JoinFullOuter},
		{"right", j.RightTime, j.RightPrefix, j.RightLateOutput, j.Right, j.RightKeys, j.RightColumns,
			j.Kind == JoinRightOuter || j.Kind == JoinFullOuter,
			j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter},
	}
	names := map[string]bool{"window_start": true, "window_end": true}
	var outFields []arrow.Field
	for s, sp := range specs {
		if sp.schema == nil {
			return nil, fmt.Errorf("window join: no %s input schema", sp.name)
		}
		col := func(what, name string) (int, error) {
			idx := sp.schema.FieldIndices(name)
			if len(idx) != 1 {
				return 0, fmt.Errorf("window join: %s %s column %q not found (or ambiguous) in %s", sp.name, what, name, sp.schema)
			}
			return idx[0], nil
		}
		d := joinSideSpec{name: sp.name, input: sp.schema, lateOutput: sp.late, unmatched: sp.unmatched,
			keepNullKeys: sp.unmatched, table: "join_" + sp.name}
		var err error
		if d.timeIdx, err = col("event-time", sp.time); err != nil {
			return nil, err
		}
		tt, ok := sp.schema.Field(d.timeIdx).Type.(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("window join: %s event-time column %q has type %s, want a timestamp", sp.name, sp.time, sp.schema.Field(d.timeIdx).Type)
		}
		d.timeUnit = tt.Unit
		if s == joinLeft {
			c.timeType = &arrow.TimestampType{Unit: tt.Unit, TimeZone: tt.TimeZone}
		}
		for _, k := range sp.keys {
			i, err := col("key", k)
			if err != nil {
				return nil, err
			}
			d.keyIdx = append(d.keyIdx, i)
		}
		var outIdx []int
		switch {
		case s == joinRight && semiAnti:
		case sp.cols == nil:
			for i := range sp.schema.NumFields() {
				outIdx = append(outIdx, i)
			}
		default:
			for _, name := range sp.cols {
				i, err := col("output", name)
				if err != nil {
					return nil, err
				}
				if slices.Contains(outIdx, i) {
					return nil, fmt.Errorf("window join: %s output column %q is listed twice", sp.name, name)
				}
				outIdx = append(outIdx, i)
			}
		}
		d.storeIdx = slices.Sorted(slices.Values(append(slices.Clone(d.keyIdx), outIdx...)))
		d.storeIdx = slices.Compact(d.storeIdx)
		fields := make([]arrow.Field, len(d.storeIdx))
		for p, i := range d.storeIdx {
			fields[p] = sp.schema.Field(i)
		}
		for p, f := range fields {
			if slices.Contains(d.keyIdx, d.storeIdx[p]) {
				continue // checked with the key types below
			}
			if !rowstore.Storable(f.Type) {
				return nil, fmt.Errorf("window join: %s column %q has type %s, which the join cannot buffer (nested types are not supported); leave it out of the %s output columns",
					sp.name, f.Name, f.Type, sp.name)
			}
		}
		d.stored = arrow.NewSchema(fields, nil)
		for _, i := range d.keyIdx {
			d.keyPos = append(d.keyPos, slices.Index(d.storeIdx, i))
		}
		for _, i := range outIdx {
			d.outPos = append(d.outPos, slices.Index(d.storeIdx, i))
			f := sp.schema.Field(i)
			f.Name = sp.prefix + f.Name
			f.Nullable = f.Nullable || sp.padded
			if names[f.Name] {
				return nil, fmt.Errorf("window join: output column %q appears twice; set LeftPrefix or RightPrefix, or leave it out with LeftColumns or RightColumns", f.Name)
			}
			names[f.Name] = true
			outFields = append(outFields, f)
		}
		c.sides[s] = d
	}
	l, r := &c.sides[joinLeft], &c.sides[joinRight]
	for i := range l.keyIdx {
		lt, rt := j.Left.Field(l.keyIdx[i]).Type, j.Right.Field(r.keyIdx[i]).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, fmt.Errorf("window join: key %q (%s) and %q (%s) have different types; cast one side first", j.LeftKeys[i], lt, j.RightKeys[i], rt)
		}
		eq, err := joinKeyEqOf(lt)
		if err != nil {
			return nil, fmt.Errorf("window join: key %q: %w", j.LeftKeys[i], err)
		}
		c.keyEq = append(c.keyEq, eq)
	}
	if l.lateOutput != "" && l.lateOutput == r.lateOutput && !j.Left.Equal(j.Right) {
		return nil, fmt.Errorf("window join: both inputs' late rows go to side output %q, but their schemas differ; name two outputs", l.lateOutput)
	}
	// The last instant of a window is one tick of the finer event-time
	// column before its end.
	c.tick = min(int64(l.timeUnit.Multiplier()), int64(r.timeUnit.Multiplier()))
	c.out = arrow.NewSchema(append([]arrow.Field{
		{Name: "window_start", Type: c.timeType}, {Name: "window_end", Type: c.timeType},
	}, outFields...), nil)
	return c, nil
}

// joinRows is one side's rows of a window being joined: the stored
// columns and each row's key hash (kernels.HashColumns over the key
// columns, the hash the keyed exchange routes by).
type joinRows struct {
	rec    arrow.RecordBatch
	hashes []uint64
}

func (c joinRows) rows() int { return len(c.hashes) }

// joinPane holds the rows of both sides whose event time falls into one
// pane, a row store per side (nil until the side has a row). Panes only
// grow until they are dropped whole, so no row is ever deleted and the
// stores' row ids are dense.
type joinPane struct {
	stores [2]*rowstore.Store
}

// joinOp is one subtask of a window join.
type joinOp struct {
	cfg  Join
	c    *joinCompiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	panes     map[int64]*joinPane // by pane start (ns)
	wm        arrowflow.EventTime // the last watermark processed
	stats     JoinStats
	heldRows  int64
	heldBytes int64

	size, pane, offset, lateness int64
	// hashMask is applied to key hashes before the hash table compares
	// them: all ones, except in tests that narrow it to force collisions.
	hashMask uint64

	table joinTable

	// scratch
	keyCols    []arrow.Array
	hashes     []uint64
	batchPanes []int64
	batchSels  [][]int32
	batchHash  [][]uint64
	late       []int32
	fireEnds   []int64
	// windowHashes holds the key hashes of each side's rows of the window
	// being joined.
	windowHashes [2][]uint64
	nullKey      [2][]bool
	matched      [2][]bool
	candL        []int32
	candR        []int32
	ok           []bool
	unmatched    []int32
}

func (o *joinOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.panes = map[int64]*joinPane{}
	o.wm = arrowflow.MinEventTime
	o.size, o.pane = int64(o.cfg.Window.Size), o.cfg.Window.pane()
	o.offset, o.lateness = int64(o.cfg.Window.Offset), int64(o.cfg.AllowedLateness)
	o.hashMask = ^uint64(0)
	return nil
}

// JoinStats reports the subtask's counters.
func (o *joinOp) JoinStats() JoinStats {
	s := o.stats
	s.Panes, s.StateRows, s.StateBytes = int64(len(o.panes)), o.heldRows, o.heldBytes
	return s
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *joinOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the counters Aggregate's operators report too.
func (o *joinOp) Stats() Stats {
	s := o.JoinStats()
	return Stats{LateRows: s.LateRows, NullTimeRows: s.NullTimeRows, Windows: s.Windows, Panes: s.Panes, StateBytes: s.StateBytes}
}

func (o *joinOp) fired(end int64, wm arrowflow.EventTime) bool {
	return windowFired(end, o.c.tick, o.lateness, wm)
}

func (o *joinOp) reportState() error {
	return o.info.StateBudget.Set(o.heldBytes, o.heldRows)
}

// ProcessBatch assigns the batch's rows to panes and buffers them; rows
// whose windows have all fired are late.
func (o *joinOp) ProcessBatch(input int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if input != joinLeft && input != joinRight {
		return fmt.Errorf("window join %s: batch on input %d; a join has two inputs, 0 (left) and 1 (right)", o.info.Name, input)
	}
	d := &o.c.sides[input]
	rec := b.Record
	if s := rec.Schema(); s != d.input && !s.Equal(d.input) {
		return fmt.Errorf("window join %s: %s batch schema %s differs from the configured %s", o.info.Name, d.name, s, d.input)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	o.keyCols = o.keyCols[:0]
	keyNulls := false
	for _, i := range d.keyIdx {
		o.keyCols = append(o.keyCols, rec.Column(i))
		keyNulls = keyNulls || rec.Column(i).NullN() > 0
	}
	o.hashes = slices.Grow(o.hashes[:0], n)[:n]
	if err := kernels.HashColumns(o.keyCols, b.Sel, o.hashes); err != nil {
		return fmt.Errorf("window join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	dropNulls := keyNulls && !d.keepNullKeys
	ts := rec.Column(d.timeIdx).(*array.Timestamp)
	o.batchPanes, o.late = o.batchPanes[:0], o.late[:0]
	last := -1 // index in batchPanes of the previous row's pane
	for k := 0; k < n; k++ {
		r := b.Row(k)
		if ts.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		t := int64(arrowflow.TimestampToEventTime(ts.Value(r), d.timeUnit))
		p := floorTo(t, o.pane, o.offset)
		if o.fired(o.cfg.Window.lastWindowEnd(p), o.wm) {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		if dropNulls && joinAnyNull(o.keyCols, r) {
			o.stats.NullKeyRows++
			continue
		}
		if last < 0 || o.batchPanes[last] != p {
			last = slices.Index(o.batchPanes, p)
			if last < 0 {
				o.batchPanes = append(o.batchPanes, p)
				last = len(o.batchPanes) - 1
				if last == len(o.batchSels) {
					o.batchSels = append(o.batchSels, nil)
					o.batchHash = append(o.batchHash, nil)
				}
				o.batchSels[last], o.batchHash[last] = o.batchSels[last][:0], o.batchHash[last][:0]
			}
		}
		o.batchSels[last] = append(o.batchSels[last], int32(r))
		o.batchHash[last] = append(o.batchHash[last], o.hashes[k])
	}
	for i, p := range o.batchPanes {
		if err := o.buffer(input, p, rec, o.batchSels[i], o.batchHash[i]); err != nil {
			return err
		}
	}
	if err := emitLate(d.lateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// joinAnyNull reports whether row r is NULL in any of cols.
func joinAnyNull(cols []arrow.Array, r int) bool {
	for _, c := range cols {
		if c.IsNull(r) {
			return true
		}
	}
	return false
}

// buffer appends the rows sel of rec (with their key hashes) to the row
// store of pane p and the given side: the stored columns are shared with
// rec when every row of a large rec goes to the pane, and copied
// otherwise.
func (o *joinOp) buffer(side int, p int64, rec arrow.RecordBatch, sel []int32, hashes []uint64) error {
	d := &o.c.sides[side]
	cols := make([]arrow.Array, len(d.storeIdx))
	for k, i := range d.storeIdx {
		cols[k] = rec.Column(i)
	}
	proj := array.NewRecordBatch(d.stored, cols, rec.NumRows())
	defer proj.Release()
	if len(sel) == int(rec.NumRows()) { // sel is increasing: equal length means every row
		sel = nil
	}
	pn := o.panes[p]
	if pn == nil {
		pn = &joinPane{}
		o.panes[p] = pn
	}
	st, err := o.paneStore(pn, side)
	if err != nil {
		return err
	}
	before := st.SizeBytes()
	if sel == nil {
		// Every row: the store shares rec's columns (a large batch) rather
		// than copying them.
		_, err = st.AppendShared(proj, hashes)
	} else {
		_, err = st.Append(proj, sel, hashes)
	}
	if err != nil {
		return fmt.Errorf("window join %s: buffering %s rows: %w", o.info.Name, d.name, err)
	}
	o.heldRows += int64(len(hashes))
	o.heldBytes += st.SizeBytes() - before
	return nil
}

// paneStore returns the row store of one side of a pane, making it if
// the side has none yet.
func (o *joinOp) paneStore(pn *joinPane, side int) (*rowstore.Store, error) {
	if st := pn.stores[side]; st != nil {
		return st, nil
	}
	st, err := rowstore.New(o.c.sides[side].stored, o.mem)
	if err != nil {
		return nil, fmt.Errorf("window join %s: %w", o.info.Name, err)
	}
	pn.stores[side] = st
	return st, nil
}

// joinRecordBytes approximates the memory rec retains: the length of every
// buffer it references.
func joinRecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += joinDataBytes(c.Data())
	}
	return n
}

func joinDataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += joinDataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += joinDataBytes(d.Dictionary())
	}
	return n
}

func (o *joinOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
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

// fire joins and emits every window that completes between watermarks
// prev and wm, in order of window end, then drops the panes no later
// window needs.
func (o *joinOp) fire(prev, wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if len(o.panes) == 0 {
		return nil
	}
	step := o.cfg.Window.step()
	ends := o.fireEnds[:0]
	for p := range o.panes {
		for s := floorTo(p, step, o.offset); s > p-o.size; s -= step {
			if end := s + o.size; o.fired(end, wm) && !o.fired(end, prev) {
				ends = append(ends, end)
			}
		}
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	o.fireEnds = ends
	for _, end := range ends {
		if err := o.joinWindow(end-o.size, end, out); err != nil {
			return err
		}
	}
	for p, pn := range o.panes {
		if o.fired(o.cfg.Window.lastWindowEnd(p), wm) {
			o.dropPane(pn)
			delete(o.panes, p)
		}
	}
	return nil
}

func (o *joinOp) dropPane(pn *joinPane) {
	for s, st := range pn.stores {
		if st == nil {
			continue
		}
		o.heldRows -= int64(st.Len())
		o.heldBytes -= st.SizeBytes()
		st.Release()
		pn.stores[s] = nil
	}
}

// gather returns one side's rows of the window [start, end) as one
// record (a new reference: release it), or joinRows without record when
// the side has no rows in the window. Row k of the record is, pane after
// pane in time order, the row of id k - (rows of the earlier panes) of the
// pane's row store: with one pane per window (tumbling windows) the
// window's row numbers, which the hash table indexes, are the store's row
// ids. A store of a single chunk is shared, not copied. The hashes may be
// scratch space, valid until the next gather of the side.
func (o *joinOp) gather(side int, start, end int64) (joinRows, error) {
	var (
		recs   []arrow.RecordBatch
		stores []*rowstore.Store
	)
	for p := start; p < end; p += o.pane {
		if pn := o.panes[p]; pn != nil && pn.stores[side] != nil && pn.stores[side].Len() > 0 {
			st := pn.stores[side]
			stores = append(stores, st)
			for c := range st.NumChunks() {
				rec, _ := st.Chunk(c)
				recs = append(recs, rec)
			}
		}
	}
	switch len(recs) {
	case 0:
		return joinRows{}, nil
	case 1:
		recs[0].Retain()
		return joinRows{rec: recs[0], hashes: stores[0].Hashes()}, nil
	}
	hashes := o.windowHashes[side][:0]
	for _, st := range stores {
		hashes = append(hashes, st.Hashes()...)
	}
	o.windowHashes[side] = hashes
	rec, err := kernels.GatherRecords(o.mem, o.c.sides[side].stored, recs, make([][]int32, len(recs)))
	if err != nil {
		return joinRows{}, fmt.Errorf("window join %s: gathering the %s rows of window [%d, %d): %w", o.info.Name, o.c.sides[side].name, start, end, err)
	}
	return joinRows{rec: rec, hashes: hashes}, nil
}

// joinWindow joins the rows of both sides in the window [start, end) and
// emits the result. A hash table is built over the key hashes of the
// smaller side and probed with the other; candidate pairs of equal hash
// have their keys compared column by column (hashes collide), and the
// output columns are gathered with kernels.Take.
func (o *joinOp) joinWindow(start, end int64, out arrowflow.Emitter) error {
	o.stats.Windows++
	var g [2]joinRows
	defer func() {
		for _, c := range g {
			if c.rec != nil {
				c.rec.Release()
			}
		}
	}()
	// A side is gathered only when the window can output something from
	// it: both sides have rows, or the side's unmatched rows are output.
	var rows [2]int
	for p := start; p < end; p += o.pane {
		if pn := o.panes[p]; pn != nil {
			for s, st := range pn.stores {
				if st != nil {
					rows[s] += st.Len()
				}
			}
		}
	}
	for s := range g {
		if rows[s] == 0 || (rows[1-s] == 0 && !o.c.sides[s].unmatched) {
			continue
		}
		var err error
		if g[s], err = o.gather(s, start, end); err != nil {
			return err
		}
	}
	w := joinWindowRows{op: o, start: start, end: end, out: out, left: g[joinLeft].rec, right: g[joinRight].rec}
	for s := range g {
		o.matched[s] = joinResetBools(o.matched[s], g[s].rows())
	}
	if g[joinLeft].rows() > 0 && g[joinRight].rows() > 0 {
		if err := o.matchPairs(&w, g); err != nil {
			return err
		}
	}
	for s := range g {
		d := &o.c.sides[s]
		emit := d.unmatched
		want := false // emit the rows whose matched flag equals want
		if s == joinLeft && o.c.semi {
			emit, want = true, true
		}
		if !emit || g[s].rows() == 0 {
			continue
		}
		sel := o.unmatched[:0]
		for i, m := range o.matched[s] {
			if m != want {
				continue
			}
			sel = append(sel, int32(i))
			if len(sel) == joinOutRows {
				if err := w.emitSide(s, sel); err != nil {
					return err
				}
				sel = sel[:0]
			}
		}
		o.unmatched = sel
		if len(sel) > 0 {
			if err := w.emitSide(s, sel); err != nil {
				return err
			}
		}
	}
	return nil
}

// matchPairs finds the matching pairs of the window, marks the matched
// rows, and emits the pairs if the kind outputs them.
func (o *joinOp) matchPairs(w *joinWindowRows, g [2]joinRows) error {
	build := joinLeft
	if g[joinRight].rows() < g[joinLeft].rows() {
		build = joinRight
	}
	probe := 1 - build
	for s := range g {
		o.nullKey[s] = joinNullKeys(o.nullKey[s], g[s].rec, o.c.sides[s].keyPos)
	}
	mask := o.hashMask
	o.table.build(g[build].hashes, o.nullKey[build], mask)
	// cand[build] and cand[probe] are the candidate pairs' row numbers.
	cand := [2]*[]int32{&o.candL, &o.candR}
	o.candL, o.candR = o.candL[:0], o.candR[:0]
	bh, head, next, tmask := g[build].hashes, o.table.head, o.table.next, o.table.mask
	pskip := o.nullKey[probe]
	for p, h := range g[probe].hashes {
		if pskip != nil && pskip[p] {
			continue
		}
		h &= mask
		for j := head[h&tmask]; j != 0; j = next[j-1] {
			if bh[j-1]&mask != h {
				continue
			}
			*cand[build] = append(*cand[build], j-1)
			*cand[probe] = append(*cand[probe], int32(p))
			if len(o.candL) >= joinOutRows {
				if err := o.verifyPairs(w); err != nil {
					return err
				}
			}
		}
	}
	return o.verifyPairs(w)
}

// verifyPairs keeps the candidate pairs whose keys are equal, marks their
// rows matched, emits them if the kind outputs pairs, and empties the
// candidate lists.
func (o *joinOp) verifyPairs(w *joinWindowRows) error {
	li, ri := o.candL, o.candR
	if len(li) == 0 {
		return nil
	}
	o.ok = joinResetBools(o.ok, len(li))
	for k := range o.ok {
		o.ok[k] = true
	}
	l, r := &o.c.sides[joinLeft], &o.c.sides[joinRight]
	for c, eq := range o.c.keyEq {
		eq(w.left.Column(l.keyPos[c]), w.right.Column(r.keyPos[c]), li, ri, o.ok)
	}
	n := 0
	for k, ok := range o.ok {
		if ok {
			li[n], ri[n] = li[k], ri[k]
			n++
		}
	}
	li, ri = li[:n], ri[:n]
	for _, i := range li {
		o.matched[joinLeft][i] = true
	}
	for _, i := range ri {
		o.matched[joinRight][i] = true
	}
	var err error
	if o.c.pairs && n > 0 {
		err = w.emit(li, ri, n)
	}
	o.candL, o.candR = o.candL[:0], o.candR[:0]
	return err
}

// joinNullKeys returns, for each row of rec, whether a key column is NULL
// there, or nil when no key column has NULLs.
func joinNullKeys(buf []bool, rec arrow.RecordBatch, keyPos []int) []bool {
	nulls := false
	for _, p := range keyPos {
		nulls = nulls || rec.Column(p).NullN() > 0
	}
	if !nulls {
		return nil
	}
	buf = joinResetBools(buf, int(rec.NumRows()))
	for _, p := range keyPos {
		col := rec.Column(p)
		if col.NullN() == 0 {
			continue
		}
		for i := range buf {
			buf[i] = buf[i] || col.IsNull(i)
		}
	}
	return buf
}

// joinResetBools returns buf resized to n, all false.
func joinResetBools(buf []bool, n int) []bool {
	buf = slices.Grow(buf[:0], n)[:n]
	clear(buf)
	return buf
}

// joinTable is a chained hash table over one side's key hashes: head maps
// a bucket (the low bits of a hash) to its first row + 1 (0: empty), next
// maps a row to the next row + 1 of its bucket. Rows of a bucket are
// chained in increasing order.
type joinTable struct {
	head, next []int32
	mask       uint64
}

// build indexes rows by hash&hashMask, leaving out the rows skip marks.
func (t *joinTable) build(hashes []uint64, skip []bool, hashMask uint64) {
	n := len(hashes)
	size := 1
	for size < 2*n {
		size <<= 1
	}
	t.head = slices.Grow(t.head[:0], size)[:size]
	clear(t.head)
	t.next = slices.Grow(t.next[:0], n)[:n]
	t.mask = uint64(size - 1)
	for i := n - 1; i >= 0; i-- {
		if skip != nil && skip[i] {
			continue
		}
		b := hashes[i] & hashMask & t.mask
		t.next[i] = t.head[b]
		t.head[b] = int32(i + 1)
	}
}

// joinWindowRows assembles the output batches of one fired window.
type joinWindowRows struct {
	op          *joinOp
	start, end  int64
	out         arrowflow.Emitter
	left, right arrow.RecordBatch // the window's rows of each side, or nil
}

// emitSide emits rows sel of one side, padding the other side's columns
// with NULLs.
func (w *joinWindowRows) emitSide(side int, sel []int32) error {
	if side == joinLeft {
		return w.emit(sel, nil, len(sel))
	}
	return w.emit(nil, sel, len(sel))
}

// emit emits n output rows: left rows li and right rows ri, pairwise; a
// nil side is all NULL.
func (w *joinWindowRows) emit(li, ri []int32, n int) error {
	o := w.op
	c := o.c
	cols := make([]arrow.Array, 0, c.out.NumFields())
	defer func() {
		for _, col := range cols {
			col.Release()
		}
	}()
	mult := int64(c.timeType.Unit.Multiplier())
	for _, v := range []int64{w.start, w.end} {
		cols = append(cols, joinConstTimestamps(o.mem, c.timeType, arrow.Timestamp(v/mult), n))
	}
	sides := []struct {
		rec arrow.RecordBatch
		idx []int32
	}{{w.left, li}, {w.right, ri}}
	for s, sd := range sides {
		if s == joinRight && !c.rightCols {
			break
		}
		for _, p := range c.sides[s].outPos {
			if sd.idx == nil {
				cols = append(cols, array.MakeArrayOfNull(o.mem, c.out.Field(len(cols)).Type, n))
				continue
			}
			col, err := kernels.Take(o.mem, sd.rec.Column(p), sd.idx)
			if err != nil {
				return fmt.Errorf("window join %s: output column %q: %w", o.info.Name, c.out.Field(len(cols)).Name, err)
			}
			cols = append(cols, col)
		}
	}
	rec := array.NewRecordBatch(c.out, cols, int64(n))
	o.stats.OutputRows += int64(n)
	return w.out.Emit(arrowflow.NewBatch(rec))
}

// joinConstTimestamps is an array of n copies of v.
func joinConstTimestamps(mem memory.Allocator, tt *arrow.TimestampType, v arrow.Timestamp, n int) arrow.Array {
	b := array.NewTimestampBuilder(mem, tt)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}

// Finish fires every window still held: the inputs have ended.
func (o *joinOp) Finish(out arrowflow.Emitter) error {
	if o.wm == arrowflow.MaxEventTime {
		return nil
	}
	prev := o.wm
	o.wm = arrowflow.MaxEventTime
	if err := o.fire(prev, arrowflow.MaxEventTime, out); err != nil {
		return err
	}
	return o.reportState()
}

// SnapshotState writes each side's buffered rows as one table (join_left,
// join_right) in the row stores' tagged layout (rowstore.SnapshotTagged:
// the stored columns, the key group, the key hash and the pane start as
// the tag), and the watermark as a second table.
func (o *joinOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	starts := slices.Sorted(maps.Keys(o.panes))
	for side := range o.c.sides {
		d := &o.c.sides[side]
		for _, p := range starts {
			st := o.panes[p].stores[side]
			if st == nil {
				continue
			}
			err := st.SnapshotTagged(w, d.table, o.info.MaxParallelism, func(rowstore.RowID) int64 { return p })
			if err != nil {
				return fmt.Errorf("window join %s: snapshot of the %s rows of pane %d: %w", o.info.Name, d.name, p, err)
			}
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// RestoreState loads the buffered rows of the key groups this subtask
// owns, from one or more old subtasks' snapshots, each into the row store
// of its pane. A snapshot of the layout weir used before the row stores
// (per-pane chunks with a _pane column first) is refused.
func (o *joinOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	for side := range o.c.sides {
		d := &o.c.sides[side]
		into := func(p int64) (*rowstore.Store, error) {
			pn := o.panes[p]
			if pn == nil {
				pn = &joinPane{}
				o.panes[p] = pn
			}
			return o.paneStore(pn, side)
		}
		err := rowstore.RestoreTagged(r, d.table, d.stored, o.info.KeyGroups, into, nil)
		var se *rowstore.SchemaError
		switch {
		case errors.As(err, &se) && !se.Tagged():
			return fmt.Errorf("window join %s: snapshot table %q has the snapshot layout of an older weir version (rows by pane without key hashes), which this version cannot restore; restart the job without its state: %w", o.info.Name, d.table, err)
		case errors.As(err, &se):
			return fmt.Errorf("window join %s: snapshot %s state does not match this job's %s rows (did the query change?): %w", o.info.Name, d.name, d.name, err)
		case err != nil:
			return fmt.Errorf("window join %s: restoring %s rows: %w", o.info.Name, d.name, err)
		}
	}
	o.heldRows, o.heldBytes = 0, 0
	for _, pn := range o.panes {
		for _, st := range pn.stores {
			if st != nil {
				o.heldRows += int64(st.Len())
				o.heldBytes += st.SizeBytes()
			}
		}
	}
	return o.reportState()
}

func (o *joinOp) Close() error {
	for _, pn := range o.panes {
		o.dropPane(pn)
	}
	o.panes = nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}

// joinKeyEq clears ok[k] where key value a[ai[k]] differs from b[bi[k]].
// Both arrays have the same type; the rows compared are not NULL.
type joinKeyEq func(a, b arrow.Array, ai, bi []int32, ok []bool)

// joinKeyEqOf returns the comparison for keys of type dt: every type
// kernels.HashColumns hashes.
func joinKeyEqOf(dt arrow.DataType) (joinKeyEq, error) {
	switch dt.ID() {
	case arrow.INT8:
		return joinEqValues[int8], nil
	case arrow.UINT8:
		return joinEqValues[uint8], nil
	case arrow.INT16:
		return joinEqValues[int16], nil
	case arrow.UINT16:
		return joinEqValues[uint16], nil
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return joinEqValues[int32], nil
	case arrow.UINT32:
		return joinEqValues[uint32], nil
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return joinEqValues[int64], nil
	case arrow.UINT64:
		return joinEqValues[uint64], nil
	case arrow.FLOAT32:
		return joinEqFloats[float32], nil
	case arrow.FLOAT64:
		return joinEqFloats[float64], nil
	case arrow.BOOL:
		return joinEqBools, nil
	case arrow.STRING, arrow.BINARY:
		return joinEqBytes[int32], nil
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return joinEqBytes[int64], nil
	case arrow.FIXED_SIZE_BINARY, arrow.DECIMAL128, arrow.DECIMAL256:
		width := dt.(arrow.FixedWidthDataType).BitWidth() / 8
		return func(a, b arrow.Array, ai, bi []int32, ok []bool) {
			x, y := joinFixedBytes(a, width), joinFixedBytes(b, width)
			for k := range ok {
				i, j := int(ai[k])*width, int(bi[k])*width
				if string(x[i:i+width]) != string(y[j:j+width]) {
					ok[k] = false
				}
			}
		}, nil
	}
	return nil, fmt.Errorf("unsupported key type %s", dt)
}

func joinEqValues[T arrow.IntType | arrow.UintType](a, b arrow.Array, ai, bi []int32, ok []bool) {
	x, y := arrow.GetValues[T](a.Data(), 1), arrow.GetValues[T](b.Data(), 1)
	for k := range ok {
		if x[ai[k]] != y[bi[k]] {
			ok[k] = false
		}
	}
}

// joinEqFloats compares as grouping and kernels.HashColumns do: -0 equals
// +0 (== does that) and NaN equals NaN.
func joinEqFloats[T float32 | float64](a, b arrow.Array, ai, bi []int32, ok []bool) {
	x, y := arrow.GetValues[T](a.Data(), 1), arrow.GetValues[T](b.Data(), 1)
	for k := range ok {
		if u, v := x[ai[k]], y[bi[k]]; u != v && (u == u || v == v) {
			ok[k] = false
		}
	}
}

func joinEqBools(a, b arrow.Array, ai, bi []int32, ok []bool) {
	x, y := a.Data().Buffers()[1].Bytes(), b.Data().Buffers()[1].Bytes()
	xo, yo := a.Data().Offset(), b.Data().Offset()
	for k := range ok {
		if bitutil.BitIsSet(x, xo+int(ai[k])) != bitutil.BitIsSet(y, yo+int(bi[k])) {
			ok[k] = false
		}
	}
}

func joinEqBytes[O int32 | int64](a, b arrow.Array, ai, bi []int32, ok []bool) {
	xo, yo := arrow.GetOffsets[O](a.Data(), 1), arrow.GetOffsets[O](b.Data(), 1)
	x, y := joinValueBytes(a), joinValueBytes(b)
	for k := range ok {
		i, j := ai[k], bi[k]
		if string(x[xo[i]:xo[i+1]]) != string(y[yo[j]:yo[j+1]]) {
			ok[k] = false
		}
	}
}

func joinValueBytes(a arrow.Array) []byte {
	if buf := a.Data().Buffers()[2]; buf != nil {
		return buf.Bytes()
	}
	return nil
}

func joinFixedBytes(a arrow.Array, width int) []byte {
	return a.Data().Buffers()[1].Bytes()[a.Data().Offset()*width:]
}
