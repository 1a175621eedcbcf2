package window

import (
	"errors"
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
	"github.com/weirflow/weir/state/rowstore"
)

// IntervalJoin configures an event-time interval join, Flink's interval
// join: a left row l and a right row r join when their keys are equal (no
// key column NULL: NULL never equals anything) and
//
//	r.time + Lower <= l.time <= r.time + Upper
//
// (with LowerExclusive or UpperExclusive, < instead of <= on that side).
// This is SQL's
//
//	FROM L JOIN R ON L.k = R.k
//	  AND L.t BETWEEN R.t + Lower AND R.t + Upper
//
// so that
//
//	L.t BETWEEN R.t - INTERVAL '10' SECOND AND R.t + INTERVAL '5' SECOND
//
// is Lower: -10 * time.Second, Upper: 5 * time.Second, and
// L.t > R.t - INTERVAL '10' SECOND AND L.t < R.t is Lower: -10 * time.Second,
// Upper: 0, both exclusive. Flink's DataStream a.intervalJoin(b).between(lo,
// hi) (b.t in [a.t + lo, a.t + hi]) is Left: a, Right: b, Lower: -hi,
// Upper: -lo, with its lowerBoundExclusive as UpperExclusive and
// upperBoundExclusive as LowerExclusive.
//
// Pairs are emitted as soon as the later of the two rows arrives: each
// arriving row is probed against the other side's buffered rows, then
// buffered itself for as long as a row of the other side can still match
// it. With W the watermark (the minimum over both inputs) and L the
// AllowedLateness:
//
//   - A row whose time t <= W - L is late: counted, sent to the side's late
//     output if one is named, and otherwise not joined.
//   - Rows still to come are therefore later than W - L. A buffered left
//     row is dropped once l.time - Lower <= W - L (l.time - Lower - 1 ns
//     with LowerExclusive): no right row to come can match it. A right row
//     is dropped once r.time + Upper <= W - L (r.time + Upper - 1 ns with
//     UpperExclusive). A row that is already past that point when it
//     arrives is probed but not buffered.
//   - With an outer Kind, a preserved row that matched nothing is emitted
//     with NULLs for the other side's columns at that moment (or at once,
//     if a key column is NULL).
//
// So a row that is not late meets every row of the other side it matches
// that is not late either, whatever their order of arrival. The left side
// holds about -Lower + L plus the out-of-orderness of event time, the
// right side about Upper + L plus the out-of-orderness. Output order is
// not guaranteed; a watermark is forwarded after what it completes.
//
// The operator has two inputs: input 0 is the left side, input 1 the
// right. Put each behind arrowflow.KeyBy on its join keys
// (arrowflow.KeyBy(left, LeftKeys...), arrowflow.KeyBy(right,
// RightKeys...)) so that equal keys meet in one subtask. Without keys
// every pair within the interval joins, and the operator must run at
// parallelism 1.
//
// The output has the left output columns (LeftColumns, each named
// LeftPrefix+name), then the right ones (RightColumns, RightPrefix+name);
// there are no window columns, and the time columns are ordinary columns
// when listed. Every output name must be unique.
//
// State is each side's buffered rows in a row store (state/rowstore) of
// the columns the join needs (keys, event time, output columns) with a
// hash index on the key. Snapshots write them in the row store's tagged
// layout (the key group, the key hash and the matched flag beside the
// columns), so a job can restore into another parallelism. Snapshots of
// the layout before the row stores do not restore: RestoreState says so.
type IntervalJoin struct {
	// Left and Right are the schemas of the two inputs' batches.
	Left, Right *arrow.Schema
	// LeftTime and RightTime name the event-time columns, of Arrow
	// timestamp types (the units may differ).
	LeftTime, RightTime string
	// LeftKeys and RightKeys name the equi-join key columns, as many on
	// each side and pairwise of equal types. Floating-point keys compare
	// as in grouping: -0 equals +0 and NaN equals NaN. Both may be empty
	// (every pair within the interval joins; run at parallelism 1).
	LeftKeys, RightKeys []string
	// Lower and Upper bound the left row's time relative to the right
	// row's: r.time + Lower <= l.time <= r.time + Upper. Either may be
	// negative; Lower <= Upper. Both must lie within ±100 years.
	Lower, Upper time.Duration
	// LowerExclusive and UpperExclusive make that bound strict (<).
	LowerExclusive, UpperExclusive bool
	// Kind is the join kind: JoinInner (default), JoinLeftOuter,
	// JoinRightOuter or JoinFullOuter.
	Kind JoinKind
	// LeftColumns and RightColumns name the input columns to output, in
	// that order; nil outputs every column of that side, an empty non-nil
	// slice none.
	LeftColumns, RightColumns []string
	// LeftPrefix and RightPrefix are prepended to the names of the output
	// columns of that side.
	LeftPrefix, RightPrefix string
	// AllowedLateness keeps rows buffered this much longer, so that rows
	// up to this much behind the watermark are still joined in full.
	AllowedLateness time.Duration
	// LeftLateOutput and RightLateOutput, when set, name side outputs that
	// receive the late rows of that input, as they came in and in that
	// input's schema. The two names must differ unless both inputs have
	// the same schema. Late rows are counted either way.
	LeftLateOutput, RightLateOutput string
}

// IntervalJoinStats are an interval join subtask's counters.
type IntervalJoinStats struct {
	// LeftRows and RightRows count the rows received on each input.
	LeftRows, RightRows int64
	// LateRows counts rows of either input that came at or behind the
	// watermark minus the allowed lateness; NullTimeRows rows dropped for
	// a NULL event time; NullKeyRows rows dropped at once because a key
	// column is NULL and the join kind does not output them.
	LateRows, NullTimeRows, NullKeyRows int64
	// Pairs counts matched pairs emitted; PaddedRows rows of a preserved
	// side emitted without a match; OutputRows both.
	Pairs, PaddedRows, OutputRows int64
	// LeftStateRows and RightStateRows are the rows buffered on each side;
	// StateBytes approximates the memory the state retains (buffers shared
	// with input batches count in full).
	LeftStateRows, RightStateRows, StateBytes int64
}

// IntervalJoinStatsReporter is implemented by the operator instances an
// IntervalJoin makes. They also implement StatsReporter.
type IntervalJoinStatsReporter interface {
	IntervalJoinStats() IntervalJoinStats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens, so a bad configuration fails the job naming
// the operator; call Validate to check it earlier.
func (j IntervalJoin) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &intervalOp{cfg: j} }
}

// OutputSchema is the schema of the rows the join emits: the left output
// columns, then the right ones. Columns of a side that an outer join pads
// with NULLs are nullable.
func (j IntervalJoin) OutputSchema() (*arrow.Schema, error) {
	c, err := j.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Validate checks the configuration against the input schemas. Its errors
// name the field at fault.
func (j IntervalJoin) Validate() error {
	_, err := j.compile()
	return err
}

const (
	// ivMaxBound bounds |Lower| and |Upper|, so that the event-time
	// arithmetic on them cannot overflow.
	ivMaxBound = 100 * 365 * 24 * time.Hour
	// ivPurgeMin is the fewest dropped rows worth compacting a side
	// for; a side is compacted when its dropped rows also outnumber its
	// live ones.
	ivPurgeMin = 4096
	// ivKeepRows bounds the capacity, in rows, that an emptied buffer
	// keeps for reuse.
	ivKeepRows = 1 << 17
)

// ivSideSpec is what compile derives for one input.
type ivSideSpec struct {
	name     string // "left" or "right", for errors
	input    *arrow.Schema
	timeIdx  int
	timeUnit arrow.TimeUnit
	keyIdx   []int // key columns in the input
	outIdx   []int // output columns in the input
	// storeIdx lists, ascending, the input columns held in state: keys,
	// event time and output columns. stored is their schema.
	storeIdx []int
	stored   *arrow.Schema
	keyPos   []int // the key columns, by index in stored
	outPos   []int // the output columns, by index in stored
	timePos  int   // the event-time column, by index in stored
	// table is the snapshot table: the row store's tagged layout
	// (rowstore.SnapshotTagged), the tag being the matched flag.
	table      string
	lateOutput string
	// outer: the side is preserved, its unmatched rows are output.
	outer bool
	// A row of this side at time t matches rows of the other side whose
	// time lies in [t+lo, t+hi]; once t+hi <= watermark - lateness no row
	// still to come can match it.
	lo, hi int64
}

// ivCompiled is what Validate derives from an IntervalJoin.
type ivCompiled struct {
	sides    [2]ivSideSpec
	keyEq    []joinKeyEq
	out      *arrow.Schema
	keyless  bool
	lateness int64
}

func (j IntervalJoin) compile() (*ivCompiled, error) {
	if j.Kind < JoinInner || j.Kind > JoinFullOuter {
		return nil, fmt.Errorf("interval join: Kind %s is not supported; use JoinInner, JoinLeftOuter, JoinRightOuter or JoinFullOuter", j.Kind)
	}
	for _, b := range []struct {
		name string
		d    time.Duration
	}{{"Lower", j.Lower}, {"Upper", j.Upper}} {
		if b.d < -ivMaxBound || b.d > ivMaxBound {
			return nil, fmt.Errorf("interval join: %s %s is out of range (at most 100 years either way)", b.name, b.d)
		}
	}
	le, ue := int64(0), int64(0)
	if j.LowerExclusive {
		le = 1
	}
	if j.UpperExclusive {
		ue = 1
	}
	if j.Lower > j.Upper {
		return nil, fmt.Errorf("interval join: Lower (%s) is greater than Upper (%s); the left time must lie in [right time + Lower, right time + Upper]", j.Lower, j.Upper)
	}
	if int64(j.Lower)+le > int64(j.Upper)-ue {
		return nil, fmt.Errorf("interval join: Lower %s and Upper %s with LowerExclusive %t and UpperExclusive %t leave an empty interval: no pair can ever match", j.Lower, j.Upper, j.LowerExclusive, j.UpperExclusive)
	}
	if j.AllowedLateness < 0 {
		return nil, fmt.Errorf("interval join: AllowedLateness %s is negative", j.AllowedLateness)
	}
	if len(j.LeftKeys) != len(j.RightKeys) {
		return nil, fmt.Errorf("interval join: LeftKeys has %d columns and RightKeys %d; they must pair up", len(j.LeftKeys), len(j.RightKeys))
	}
	c := &ivCompiled{keyless: len(j.LeftKeys) == 0, lateness: int64(j.AllowedLateness)}
	specs := [2]struct {
		name, field, time, prefix, late string
		schema                          *arrow.Schema
		keys, cols                      []string
		outer, padded                   bool
		lo, hi                          int64
	}{
		{"left", "Left", j.LeftTime, j.LeftPrefix, j.LeftLateOutput, j.Left, j.LeftKeys, j.LeftColumns,
			j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter, j.Kind == JoinRightOuter || j.Kind == JoinFullOuter,
			-int64(j.Upper) + ue, -int64(j.Lower) - le},
		{"right", "Right", j.RightTime, j.RightPrefix, j.RightLateOutput, j.Right, j.RightKeys, j.RightColumns,
			j.Kind == JoinRightOuter || j.Kind == JoinFullOuter, j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter,
			int64(j.Lower) + le, int64(j.Upper) - ue},
	}
	names := map[string]bool{}
	var outFields []arrow.Field
	for s, sp := range specs {
		if sp.schema == nil {
			return nil, fmt.Errorf("interval join: %s: no %s input schema", sp.field, sp.name)
		}
		col := func(field, what, name string) (int, error) {
			idx := sp.schema.FieldIndices(name)
			if len(idx) != 1 {
				return 0, fmt.Errorf("interval join: %s: %s column %q not found (or ambiguous) in the %s input %s", field, what, name, sp.name, sp.schema)
			}
			return idx[0], nil
		}
		d := ivSideSpec{name: sp.name, input: sp.schema, lateOutput: sp.late, outer: sp.outer,
			table: "interval_" + sp.name, lo: sp.lo, hi: sp.hi}
		var err error
		if d.timeIdx, err = col(sp.field+"Time", "event-time", sp.time); err != nil {
			return nil, err
		}
		tt, ok := sp.schema.Field(d.timeIdx).Type.(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("interval join: %sTime: column %q has type %s, want a timestamp", sp.field, sp.time, sp.schema.Field(d.timeIdx).Type)
		}
		d.timeUnit = tt.Unit
		for _, k := range sp.keys {
			i, err := col(sp.field+"Keys", "key", k)
			if err != nil {
				return nil, err
			}
			d.keyIdx = append(d.keyIdx, i)
		}
		if sp.cols == nil {
			for i := range sp.schema.NumFields() {
				d.outIdx = append(d.outIdx, i)
			}
		}
		for _, name := range sp.cols {
			i, err := col(sp.field+"Columns", "output", name)
			if err != nil {
				return nil, err
			}
			if slices.Contains(d.outIdx, i) {
				return nil, fmt.Errorf("interval join: %sColumns: column %q is listed twice", sp.field, name)
			}
			d.outIdx = append(d.outIdx, i)
		}
		d.storeIdx = append(append(slices.Clone(d.keyIdx), d.timeIdx), d.outIdx...)
		slices.Sort(d.storeIdx)
		d.storeIdx = slices.Compact(d.storeIdx)
		fields := make([]arrow.Field, len(d.storeIdx))
		for p, i := range d.storeIdx {
			fields[p] = sp.schema.Field(i)
			if slices.Contains(d.keyIdx, i) {
				continue // checked with the key types below
			}
			if err := ivCheckTakeable(fields[p].Type); err != nil {
				return nil, fmt.Errorf("interval join: %s input column %q: %w; leave it out of %sColumns", sp.name, fields[p].Name, err, sp.field)
			}
		}
		d.stored = arrow.NewSchema(fields, nil)
		for _, i := range d.keyIdx {
			d.keyPos = append(d.keyPos, slices.Index(d.storeIdx, i))
		}
		d.timePos = slices.Index(d.storeIdx, d.timeIdx)
		for _, i := range d.outIdx {
			d.outPos = append(d.outPos, slices.Index(d.storeIdx, i))
			f := sp.schema.Field(i)
			f.Name = sp.prefix + f.Name
			f.Nullable = f.Nullable || sp.padded
			if names[f.Name] {
				return nil, fmt.Errorf("interval join: output column %q appears twice; set LeftPrefix or RightPrefix, or leave it out with LeftColumns or RightColumns", f.Name)
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
			return nil, fmt.Errorf("interval join: LeftKeys/RightKeys: key %q (%s) and %q (%s) have different types; cast one side first", j.LeftKeys[i], lt, j.RightKeys[i], rt)
		}
		eq, err := joinKeyEqOf(lt)
		if err != nil {
			return nil, fmt.Errorf("interval join: LeftKeys: key %q: %w", j.LeftKeys[i], err)
		}
		c.keyEq = append(c.keyEq, eq)
	}
	if l.lateOutput != "" && l.lateOutput == r.lateOutput && !j.Left.Equal(j.Right) {
		return nil, fmt.Errorf("interval join: LeftLateOutput and RightLateOutput are both %q, but the inputs' schemas differ; name two outputs", l.lateOutput)
	}
	c.out = arrow.NewSchema(outFields, nil)
	return c, nil
}

// ivCheckTakeable reports an error when kernels.Take cannot gather
// columns of type dt (the join emits rows with it) or a row store cannot
// hold them (the join buffers rows in one).
func ivCheckTakeable(dt arrow.DataType) error {
	if !rowstore.Storable(dt) {
		return fmt.Errorf("type %s cannot be buffered", dt)
	}
	empty := array.MakeArrayOfNull(memory.DefaultAllocator, dt, 0)
	defer empty.Release()
	taken, err := kernels.Take(memory.DefaultAllocator, empty, nil)
	if err != nil {
		return fmt.Errorf("type %s cannot be buffered", dt)
	}
	taken.Release()
	return nil
}

// ivAdd is t + d, saturating at the ends of int64.
func ivAdd(t, d int64) int64 {
	s := t + d
	if d > 0 && s < t {
		return math.MaxInt64
	}
	if d < 0 && s > t {
		return math.MinInt64
	}
	return s
}

// Flags of a buffered row.
const (
	ivMatched uint8 = 1 << iota // the row has met a row of the other side
	ivDead                      // no row to come can match it: dropped
)

// ivRow is the bookkeeping of one buffered row, kept together so that a
// probe walking a hash chain touches one cache line per row.
type ivRow struct {
	hash  uint64 // kernels.HashColumns over the key columns (0 without keys)
	time  int64  // event time, ns
	next  int32  // the next row id + 1 in the hash chain (0: end)
	flags uint8
}

// ivBlock is the number of consecutive row ids whose earliest expiry an
// ivBuffer keeps together, so that expire skips the blocks none of whose
// rows expires.
const ivBlock = 1024

// ivBuffer is one side's state: the stored columns in a row store (row
// ids in arrival order), each row's bookkeeping by row id, a chained hash
// index over the key hashes, and the earliest expiry (t+hi) of the live
// rows of each block of ivBlock row ids. Expired rows are flagged and
// deleted from the store; once they outnumber the live ones (and are at
// least purgeMin) the store is compacted and the rows renumbered and
// re-indexed, so each row is copied a bounded number of times.
type ivBuffer struct {
	store    *rowstore.Store // nil until the side buffers a row
	rows     []ivRow         // by row id: len(rows) == store.IDs()
	head     []int32         // bucket -> first row id + 1
	tmask    uint64
	live     int
	blockExp []int64 // by row id / ivBlock; math.MaxInt64: no live row
}

// metaBytes approximates the memory of the rows' bookkeeping and index.
func (b *ivBuffer) metaBytes() int64 {
	return int64(len(b.rows))*24 + int64(len(b.head))*4 + int64(len(b.blockExp))*8
}

// storeBytes approximates the memory of the buffered rows' columns (none
// once the buffer is emptied).
func (b *ivBuffer) storeBytes() int64 {
	if b.store == nil || b.store.IDs() == 0 {
		return 0
	}
	return b.store.SizeBytes()
}

// noteExpiry records that row id expires at e.
func (b *ivBuffer) noteExpiry(id int, e int64) {
	blk := id / ivBlock
	for len(b.blockExp) <= blk {
		b.blockExp = append(b.blockExp, math.MaxInt64)
	}
	b.blockExp[blk] = min(b.blockExp[blk], e)
}

// reindex rebuilds the hash index over the live rows, with room for as
// many again.
func (b *ivBuffer) reindex(hashMask uint64, room int) {
	size := 16
	for size < 2*room {
		size <<= 1
	}
	if cap(b.head) > 4*size && cap(b.head) > 4*ivKeepRows {
		b.head = nil
	}
	b.head = slices.Grow(b.head[:0], size)[:size]
	clear(b.head)
	b.tmask = uint64(size - 1)
	for id := range b.rows {
		r := &b.rows[id]
		if r.flags&ivDead != 0 {
			r.next = 0
			continue
		}
		bk := r.hash & hashMask & b.tmask
		r.next = b.head[bk]
		b.head[bk] = int32(id + 1)
	}
}

// add indexes row ids [from, len(rows)).
func (b *ivBuffer) add(from int, hashMask uint64) {
	if len(b.rows) > len(b.head)/2 {
		b.reindex(hashMask, 2*len(b.rows))
		return
	}
	for id := from; id < len(b.rows); id++ {
		r := &b.rows[id]
		bk := r.hash & hashMask & b.tmask
		r.next = b.head[bk]
		b.head[bk] = int32(id + 1)
	}
}

// grow makes room for n more rows, doubling the capacity (append grows
// large slices by a quarter, which for a buffer of millions of rows means
// many more copies).
func (b *ivBuffer) grow(n int) {
	if len(b.rows)+n <= cap(b.rows) {
		return
	}
	rows := make([]ivRow, len(b.rows), max(2*cap(b.rows), len(b.rows)+n, 64))
	copy(rows, b.rows)
	b.rows = rows
}

// release drops every row. The store and the bookkeeping slices keep
// their capacity when it is small, so that a side that empties at every
// watermark does not regrow them each time.
func (b *ivBuffer) release() {
	st := b.store
	if st != nil {
		st.Reset()
		if st.SizeBytes() > 16*ivKeepRows {
			st.Release()
			st = nil
		}
	}
	rows, head, exp := b.rows[:0], b.head[:0], b.blockExp[:0]
	if cap(rows) > ivKeepRows {
		rows = nil
	}
	if cap(head) > 4*ivKeepRows {
		head = nil
	}
	*b = ivBuffer{store: st, rows: rows, head: head, blockExp: exp}
}

// close releases the buffer's memory for good.
func (b *ivBuffer) close() {
	if b.store != nil {
		b.store.Release()
	}
	*b = ivBuffer{}
}

// intervalOp is one subtask of an interval join.
type intervalOp struct {
	cfg  IntervalJoin
	c    *ivCompiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	bufs  [2]ivBuffer
	wm    arrowflow.EventTime // the last watermark processed
	stats IntervalJoinStats
	// hashMask is applied to key hashes before the index compares them:
	// all ones, except in tests that narrow it to force collisions.
	hashMask uint64
	// purgeMin is ivPurgeMin, except in tests that compact more often.
	purgeMin int

	// scratch
	keyCols  []arrow.Array
	hashes   []uint64
	late     []int32
	acc      []int32 // accepted rows: their row in the batch
	accHash  []uint64
	accTime  []int64
	accFlags []uint8
	padRows  []int32
	keep     []int32
	candP    []int32 // candidate pairs: probe row (index in acc) ...
	candS    []int32 // ... and buffered row id
	chunkIx  []int32
	keepSel  []int32
	keepHash []uint64
	sortP    []int32
	sortS    []int32
	counts   []int32
	ok       []bool
	ids      []int32
	local    []int32
	groups   []ivGroup
}

// ivGroup is a run of positions [start, end) in a list of buffered rows
// sorted by chunk, all in chunk (of the side's row store).
type ivGroup struct {
	chunk      int
	start, end int
}

func (o *intervalOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	if c.keyless && info.Parallelism > 1 {
		return fmt.Errorf("interval join %s: without LeftKeys and RightKeys the join must run at parallelism 1, not %d", info.Name, info.Parallelism)
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.wm = arrowflow.MinEventTime
	o.hashMask = ^uint64(0)
	o.purgeMin = ivPurgeMin
	return nil
}

// IntervalJoinStats reports the subtask's counters.
func (o *intervalOp) IntervalJoinStats() IntervalJoinStats {
	s := o.stats
	s.LeftStateRows, s.RightStateRows = int64(o.bufs[joinLeft].live), int64(o.bufs[joinRight].live)
	s.StateBytes = o.stateBytes()
	return s
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *intervalOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the counters Aggregate's operators report too.
func (o *intervalOp) Stats() Stats {
	s := o.IntervalJoinStats()
	return Stats{LateRows: s.LateRows, NullTimeRows: s.NullTimeRows, StateBytes: s.StateBytes}
}

func (o *intervalOp) stateBytes() int64 {
	var n int64
	for i := range o.bufs {
		n += o.bufs[i].storeBytes() + o.bufs[i].metaBytes()
	}
	return n
}

func (o *intervalOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.bufs[0].live+o.bufs[1].live))
}

// horizon is the watermark minus the allowed lateness: rows at or before
// it are late, and rows to come are later. It is math.MinInt64 before the
// first watermark, when nothing is late.
func (o *intervalOp) horizon() int64 {
	if o.wm == arrowflow.MinEventTime {
		return math.MinInt64
	}
	return ivAdd(int64(o.wm), -o.c.lateness)
}

// ProcessBatch probes the batch's rows against the other side's buffered
// rows, emits the pairs, and buffers the rows that rows still to come can
// match.
func (o *intervalOp) ProcessBatch(input int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if input != joinLeft && input != joinRight {
		return fmt.Errorf("interval join %s: batch on input %d; a join has two inputs, 0 (left) and 1 (right)", o.info.Name, input)
	}
	d := &o.c.sides[input]
	rec := b.Record
	if s := rec.Schema(); s != d.input && !s.Equal(d.input) {
		return fmt.Errorf("interval join %s: %s batch schema %s differs from the configured %s", o.info.Name, d.name, s, d.input)
	}
	n := b.NumRows()
	if input == joinLeft {
		o.stats.LeftRows += int64(n)
	} else {
		o.stats.RightRows += int64(n)
	}
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
	if o.c.keyless {
		clear(o.hashes)
	} else if err := kernels.HashColumns(o.keyCols, b.Sel, o.hashes); err != nil {
		return fmt.Errorf("interval join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	h := o.horizon()
	ts := rec.Column(d.timeIdx).(*array.Timestamp)
	o.late, o.padRows = o.late[:0], o.padRows[:0]
	o.acc, o.accHash, o.accTime = o.acc[:0], o.accHash[:0], o.accTime[:0]
	for k := 0; k < n; k++ {
		r := b.Row(k)
		if ts.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		t := int64(arrowflow.TimestampToEventTime(ts.Value(r), d.timeUnit))
		if t <= h {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		if keyNulls && joinAnyNull(o.keyCols, r) {
			if d.outer {
				o.padRows = append(o.padRows, int32(r))
			} else {
				o.stats.NullKeyRows++
			}
			continue
		}
		o.acc, o.accHash, o.accTime = append(o.acc, int32(r)), append(o.accHash, o.hashes[k]), append(o.accTime, t)
	}
	o.accFlags = ivResetFlags(o.accFlags, len(o.acc))
	if len(o.acc) > 0 && o.bufs[1-input].live > 0 {
		if err := o.probe(input, rec, out); err != nil {
			return err
		}
	}
	// Buffer the rows that a row still to come can match; pad the others
	// that matched nothing, if their side is preserved.
	o.keep = o.keep[:0]
	for k, r := range o.acc {
		if ivAdd(o.accTime[k], d.hi) > h {
			o.keep = append(o.keep, int32(k))
		} else if d.outer && o.accFlags[k]&ivMatched == 0 {
			o.padRows = append(o.padRows, r)
		}
	}
	if len(o.keep) > 0 {
		if err := o.buffer(input, rec); err != nil {
			return err
		}
	}
	if len(o.padRows) > 0 {
		slices.Sort(o.padRows)
		if err := o.emitPaddedInput(input, rec, o.padRows, out); err != nil {
			return err
		}
	}
	if err := emitLate(d.lateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// ivResetFlags returns buf resized to n, all zero.
func ivResetFlags(buf []uint8, n int) []uint8 {
	buf = slices.Grow(buf[:0], n)[:n]
	clear(buf)
	return buf
}

// probe finds, for each accepted row of the batch (o.acc) of side, the
// buffered rows of the other side with an equal key hash and a time in
// the row's interval, verifies their keys, marks both rows matched and
// emits the pairs.
func (o *intervalOp) probe(side int, rec arrow.RecordBatch, out arrowflow.Emitter) error {
	d := &o.c.sides[side]
	ob := &o.bufs[1-side]
	rows, head, tmask, hm := ob.rows, ob.head, ob.tmask, o.hashMask
	o.candP, o.candS = o.candP[:0], o.candS[:0]
	for k, hash := range o.accHash {
		hash &= hm
		t := o.accTime[k]
		lo, hi := ivAdd(t, d.lo), ivAdd(t, d.hi)
		for j := head[hash&tmask]; j != 0; {
			r := &rows[j-1]
			if r.hash&hm == hash && r.flags&ivDead == 0 && r.time >= lo && r.time <= hi {
				o.candP = append(o.candP, int32(k))
				o.candS = append(o.candS, j-1)
			}
			j = r.next
		}
		if len(o.candP) >= joinOutRows {
			if err := o.flushPairs(side, rec, out); err != nil {
				return err
			}
		}
	}
	return o.flushPairs(side, rec, out)
}

// groupByChunk sorts the buffered row ids ids of buffer b by chunk (stably,
// carrying along the parallel slice par when not nil) into o.sortS and
// o.sortP, fills o.local with each row's offset in its chunk and returns
// the chunk groups.
func (o *intervalOp) groupByChunk(b *ivBuffer, ids, par []int32) []ivGroup {
	n := len(ids)
	st := b.store
	o.chunkIx = slices.Grow(o.chunkIx[:0], n)[:n]
	last, lo, hi := -1, int32(0), int32(0)
	for i, id := range ids {
		if last < 0 || id < lo || id >= hi {
			last = st.ChunkOf(id)
			rec, first := st.Chunk(last)
			lo, hi = first, first+int32(rec.NumRows())
		}
		o.chunkIx[i] = int32(last)
	}
	nc := st.NumChunks()
	o.counts = slices.Grow(o.counts[:0], nc+1)[:nc+1]
	clear(o.counts)
	for _, c := range o.chunkIx {
		o.counts[c+1]++
	}
	o.groups = o.groups[:0]
	for c := 0; c < nc; c++ {
		if cnt := o.counts[c+1]; cnt > 0 {
			o.groups = append(o.groups, ivGroup{chunk: c, start: int(o.counts[c]), end: int(o.counts[c] + cnt)})
		}
		o.counts[c+1] += o.counts[c]
	}
	o.sortS = slices.Grow(o.sortS[:0], n)[:n]
	o.local = slices.Grow(o.local[:0], n)[:n]
	if par != nil {
		o.sortP = slices.Grow(o.sortP[:0], n)[:n]
	}
	for i, id := range ids {
		c := o.chunkIx[i]
		p := o.counts[c]
		o.counts[c]++
		_, first := st.Chunk(int(c))
		o.sortS[p] = id
		o.local[p] = id - first
		if par != nil {
			o.sortP[p] = par[i]
		}
	}
	return o.groups
}

// flushPairs verifies the candidate pairs' keys, marks the rows of the
// true pairs matched, emits them, and empties the candidate lists.
func (o *intervalOp) flushPairs(side int, rec arrow.RecordBatch, out arrowflow.Emitter) error {
	if len(o.candP) == 0 {
		return nil
	}
	d, od := &o.c.sides[side], &o.c.sides[1-side]
	ob := &o.bufs[1-side]
	groups := o.groupByChunk(ob, o.candS, o.candP)
	n := len(o.candP)
	// The probe rows' rows in the batch, in the grouped order.
	o.ids = slices.Grow(o.ids[:0], n)[:n]
	for i, k := range o.sortP {
		o.ids[i] = o.acc[k]
	}
	o.ok = joinResetBools(o.ok, n)
	for i := range o.ok {
		o.ok[i] = true
	}
	for _, g := range groups {
		chunk, _ := ob.store.Chunk(g.chunk)
		pi, si, ok := o.ids[g.start:g.end], o.local[g.start:g.end], o.ok[g.start:g.end]
		for c, eq := range o.c.keyEq {
			pc, sc := rec.Column(d.keyIdx[c]), chunk.Column(od.keyPos[c])
			if side == joinLeft {
				eq(pc, sc, pi, si, ok)
			} else {
				eq(sc, pc, si, pi, ok)
			}
		}
	}
	// Keep the true pairs, in place, and the groups that still have any.
	m, ng := 0, 0
	for _, g := range groups {
		start := m
		for i := g.start; i < g.end; i++ {
			if !o.ok[i] {
				continue
			}
			o.ids[m], o.local[m], o.sortS[m], o.sortP[m] = o.ids[i], o.local[i], o.sortS[i], o.sortP[i]
			m++
		}
		if m > start {
			groups[ng] = ivGroup{chunk: g.chunk, start: start, end: m}
			ng++
		}
	}
	groups = groups[:ng]
	o.candP, o.candS = o.candP[:0], o.candS[:0]
	if m == 0 {
		return nil
	}
	for i := 0; i < m; i++ {
		o.accFlags[o.sortP[i]] |= ivMatched
		ob.rows[o.sortS[i]].flags |= ivMatched
	}
	var srcs [2]ivSource
	srcs[side] = ivSource{rec: rec, idx: o.ids[:m], pos: d.outIdx}
	srcs[1-side] = ivSource{buf: ob, groups: groups, local: o.local[:m], pos: od.outPos}
	o.stats.Pairs += int64(m)
	return o.emit(srcs, m, out)
}

// ivSource is where one side's columns of output rows come from: rows
// idx of an input batch rec, rows of a buffer (local offsets, grouped by
// chunk), or nothing (NULLs). pos lists the output columns' indexes in
// rec or in the buffer's stored schema.
type ivSource struct {
	rec    arrow.RecordBatch
	idx    []int32
	buf    *ivBuffer
	groups []ivGroup
	local  []int32
	pos    []int
}

// emit emits n output rows, gathering each side's columns from its
// source.
func (o *intervalOp) emit(srcs [2]ivSource, n int, out arrowflow.Emitter) error {
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for s, src := range srcs {
		for k := range o.c.sides[s].outIdx {
			f := o.c.out.Field(len(cols))
			var col arrow.Array
			var err error
			switch {
			case src.rec != nil:
				col, err = kernels.Take(o.mem, src.rec.Column(src.pos[k]), src.idx)
			case src.buf != nil:
				col, err = o.gatherBuffered(src, src.pos[k])
			default:
				col = array.MakeArrayOfNull(o.mem, f.Type, n)
			}
			if err != nil {
				return fmt.Errorf("interval join %s: output column %q: %w", o.info.Name, f.Name, err)
			}
			cols = append(cols, col)
		}
	}
	o.stats.OutputRows += int64(n)
	return out.Emit(arrowflow.NewBatch(array.NewRecordBatch(o.c.out, cols, int64(n))))
}

// gatherBuffered gathers stored column p of the source's buffered rows:
// one Take per chunk, concatenated when the rows span several chunks.
func (o *intervalOp) gatherBuffered(src ivSource, p int) (arrow.Array, error) {
	st := src.buf.store
	if len(src.groups) == 1 {
		g := src.groups[0]
		rec, _ := st.Chunk(g.chunk)
		return kernels.Take(o.mem, rec.Column(p), src.local[g.start:g.end])
	}
	parts := make([]arrow.Array, 0, len(src.groups))
	defer func() {
		for _, a := range parts {
			a.Release()
		}
	}()
	for _, g := range src.groups {
		rec, _ := st.Chunk(g.chunk)
		a, err := kernels.Take(o.mem, rec.Column(p), src.local[g.start:g.end])
		if err != nil {
			return nil, err
		}
		parts = append(parts, a)
	}
	return array.Concatenate(parts, o.mem)
}

// emitPaddedInput emits rows of an input batch of side with NULLs for the
// other side's columns.
func (o *intervalOp) emitPaddedInput(side int, rec arrow.RecordBatch, rows []int32, out arrowflow.Emitter) error {
	for len(rows) > 0 {
		n := min(len(rows), joinOutRows)
		var srcs [2]ivSource
		srcs[side] = ivSource{rec: rec, idx: rows[:n], pos: o.c.sides[side].outIdx}
		o.stats.PaddedRows += int64(n)
		if err := o.emit(srcs, n, out); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// buffer appends the accepted rows o.keep (indexes in o.acc) of the batch
// rec to side's buffer: their stored columns to the row store (shared
// with rec when every row of a large rec is kept, copied otherwise),
// their bookkeeping to rows, and indexes them.
func (o *intervalOp) buffer(side int, rec arrow.RecordBatch) error {
	d := &o.c.sides[side]
	b := &o.bufs[side]
	if len(b.rows)+len(o.keep) > math.MaxInt32-1 {
		return fmt.Errorf("interval join %s: more than %d %s rows buffered in one subtask; raise the parallelism or narrow the interval", o.info.Name, math.MaxInt32, d.name)
	}
	st, err := o.sideStore(side)
	if err != nil {
		return err
	}
	cols := make([]arrow.Array, len(d.storeIdx))
	for k, i := range d.storeIdx {
		cols[k] = rec.Column(i)
	}
	proj := array.NewRecordBatch(d.stored, cols, rec.NumRows())
	defer proj.Release()
	var sel []int32
	if len(o.keep) != int(rec.NumRows()) { // o.acc is increasing: equal length means every row
		sel = o.keepSel[:0]
		for _, k := range o.keep {
			sel = append(sel, o.acc[k])
		}
		o.keepSel = sel
	}
	hashes := o.keepHash[:0]
	for _, k := range o.keep {
		hashes = append(hashes, o.accHash[k])
	}
	o.keepHash = hashes
	var first rowstore.RowID
	if sel == nil {
		// Every row: the store shares rec's columns (a large batch) rather
		// than copying them.
		first, err = st.AppendShared(proj, hashes)
	} else {
		first, err = st.Append(proj, sel, hashes)
	}
	if err != nil {
		return fmt.Errorf("interval join %s: buffering %s rows: %w", o.info.Name, d.name, err)
	}
	from := len(b.rows)
	if int(first) != from {
		return fmt.Errorf("interval join %s: %s row store handed out row id %d, the buffer holds %d rows", o.info.Name, d.name, first, from)
	}
	b.grow(len(o.keep))
	for _, k := range o.keep {
		b.rows = append(b.rows, ivRow{hash: o.accHash[k], time: o.accTime[k], flags: o.accFlags[k] & ivMatched})
		b.noteExpiry(len(b.rows)-1, ivAdd(o.accTime[k], d.hi))
	}
	b.live += len(o.keep)
	b.add(from, o.hashMask)
	return nil
}

// sideStore returns side's row store, making it on first use.
func (o *intervalOp) sideStore(side int) (*rowstore.Store, error) {
	b := &o.bufs[side]
	if b.store == nil {
		st, err := rowstore.New(o.c.sides[side].stored, o.mem)
		if err != nil {
			return nil, fmt.Errorf("interval join %s: %w", o.info.Name, err)
		}
		b.store = st
	}
	return b.store, nil
}

func (o *intervalOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	o.wm = wm
	h := o.horizon()
	for side := range o.bufs {
		if err := o.expire(side, h, out); err != nil {
			return err
		}
	}
	if err := o.reportState(); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// expire drops side's buffered rows that no row later than h can match
// (t+hi <= h), emitting the unmatched ones padded if the side is
// preserved, and compacts the buffer when dropped rows outnumber live
// ones.
func (o *intervalOp) expire(side int, h int64, out arrowflow.Emitter) error {
	b := &o.bufs[side]
	if b.live == 0 {
		return nil
	}
	d := &o.c.sides[side]
	pad := o.ids[:0]
	for blk, exp := range b.blockExp {
		if exp > h {
			continue
		}
		next := int64(math.MaxInt64)
		lo := blk * ivBlock
		rows := b.rows[lo:min(lo+ivBlock, len(b.rows))]
		for i := range rows {
			r := &rows[i]
			if r.flags&ivDead != 0 {
				continue
			}
			e := ivAdd(r.time, d.hi)
			if e > h {
				next = min(next, e)
				continue
			}
			r.flags |= ivDead
			b.store.Delete(rowstore.RowID(lo + i))
			b.live--
			if d.outer && r.flags&ivMatched == 0 {
				pad = append(pad, int32(lo+i))
			}
		}
		b.blockExp[blk] = next
	}
	o.ids = pad
	for len(pad) > 0 {
		n := min(len(pad), joinOutRows)
		groups := o.groupByChunk(b, pad[:n], nil)
		var srcs [2]ivSource
		srcs[side] = ivSource{buf: b, groups: groups, local: o.local[:n], pos: d.outPos}
		o.stats.PaddedRows += int64(n)
		if err := o.emit(srcs, n, out); err != nil {
			return err
		}
		pad = pad[n:]
	}
	if b.live == 0 {
		b.release()
		return nil
	}
	if dead := len(b.rows) - b.live; dead >= o.purgeMin && dead > b.live {
		return o.compact(side)
	}
	return nil
}

// compact drops side's dead rows: the row store keeps its live rows
// (rowstore.Store.CompactChunks, which renumbers them in order, keeps
// chunks that are all live as they are and copies only the live rows of
// partly dead ones: rows expire about in arrival order), the bookkeeping
// follows the new ids, and the rows are re-indexed.
func (o *intervalOp) compact(side int) error {
	b := &o.bufs[side]
	d := &o.c.sides[side]
	remap, err := b.store.CompactChunks()
	if err != nil {
		return fmt.Errorf("interval join %s: compacting the %s rows: %w", o.info.Name, d.name, err)
	}
	if remap == nil {
		return nil
	}
	w := 0
	for id := range b.rows {
		if nid := remap[id]; nid >= 0 { // nid <= id: in place
			b.rows[nid] = b.rows[id]
			w++
		}
	}
	b.rows = b.rows[:w]
	if cap(b.rows) > ivKeepRows && cap(b.rows) > 4*w {
		// The buffer shrank a lot: give the memory back.
		rows := make([]ivRow, w, 2*w)
		copy(rows, b.rows)
		b.rows = rows
	}
	b.blockExp = b.blockExp[:0]
	for id, r := range b.rows {
		b.noteExpiry(id, ivAdd(r.time, d.hi))
	}
	b.reindex(o.hashMask, 2*w)
	return nil
}

// Finish emits the unmatched rows of the preserved sides still buffered:
// the inputs have ended, no row will come.
func (o *intervalOp) Finish(out arrowflow.Emitter) error {
	o.wm = arrowflow.MaxEventTime
	for side := range o.bufs {
		if err := o.expire(side, math.MaxInt64, out); err != nil {
			return err
		}
	}
	return o.reportState()
}

// SnapshotState writes each side's live buffered rows as one table
// (interval_left, interval_right) in the row store's tagged layout
// (rowstore.SnapshotTagged: the stored columns, the key group, the key
// hash, and the matched flag as the tag, 1 for a matched row); and the
// watermark as a second table. Rows without keys have key hash 0.
func (o *intervalOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	for side := range o.bufs {
		b := &o.bufs[side]
		if b.live == 0 {
			continue
		}
		rows := b.rows
		err := b.store.SnapshotTagged(w, o.c.sides[side].table, o.info.MaxParallelism, func(id rowstore.RowID) int64 {
			return int64(rows[id].flags & ivMatched)
		})
		if err != nil {
			return fmt.Errorf("interval join %s: snapshot of the %s rows: %w", o.info.Name, o.c.sides[side].name, err)
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// RestoreState loads the buffered rows of the key groups this subtask
// owns, from one or more old subtasks' snapshots. A snapshot of the
// layout weir used before the row stores (_key_group and _matched
// columns first) is refused.
func (o *intervalOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	for side := range o.c.sides {
		d := &o.c.sides[side]
		b := &o.bufs[side]
		from := len(b.rows)
		into := func(int64) (*rowstore.Store, error) { return o.sideStore(side) }
		err := rowstore.RestoreTagged(r, d.table, d.stored, o.info.KeyGroups, into,
			func(tag int64, st *rowstore.Store, first rowstore.RowID, rec arrow.RecordBatch) error {
				if int(first) != len(b.rows) {
					return fmt.Errorf("%s row store handed out row id %d, the buffer holds %d rows", d.name, first, len(b.rows))
				}
				var f uint8
				if tag&int64(ivMatched) != 0 {
					f = ivMatched
				}
				n := int(rec.NumRows())
				ts := rec.Column(d.timePos).(*array.Timestamp)
				b.grow(n)
				for i := range n {
					t := int64(arrowflow.TimestampToEventTime(ts.Value(i), d.timeUnit))
					b.rows = append(b.rows, ivRow{hash: st.Hash(first + rowstore.RowID(i)), time: t, flags: f})
					b.noteExpiry(len(b.rows)-1, ivAdd(t, d.hi))
				}
				b.live += n
				return nil
			})
		var se *rowstore.SchemaError
		switch {
		case errors.As(err, &se) && !se.Tagged():
			return fmt.Errorf("interval join %s: snapshot table %q has the snapshot layout of an older weir version (buffered rows without key hashes), which this version cannot restore; restart the job without its state: %w", o.info.Name, d.table, err)
		case errors.As(err, &se):
			return fmt.Errorf("interval join %s: snapshot %s state does not match this job's %s rows (did the query change?): %w", o.info.Name, d.name, d.name, err)
		case err != nil:
			return fmt.Errorf("interval join %s: restoring %s rows: %w", o.info.Name, d.name, err)
		}
		if len(b.rows) > from {
			b.add(from, o.hashMask)
		}
	}
	return o.reportState()
}

func (o *intervalOp) Close() error {
	for i := range o.bufs {
		o.bufs[i].close()
	}
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
