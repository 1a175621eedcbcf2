package window

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// TemporalJoin configures an event-time temporal join, Flink's
//
//	SELECT ... FROM orders o
//	JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
//	  ON o.currency = r.currency
//
// The left (probe) input is joined with a versioned table, the right
// input: every right row is the new version of its key from its event time
// on (deletes are not supported). Each left row l meets the version valid
// at l's time: among the right rows with keys equal to l's (no key column
// NULL), the one with the largest time <= l.time. With JoinInner a left
// row without such a version is not output; with JoinLeftOuter it is
// output with NULL right columns.
//
// With W the operator's watermark (the minimum over both inputs):
//
//   - A left row waits until W reaches its time, then is joined and
//     emitted: no version at or before its time can still come.
//   - Per key, the right side keeps the latest version with time <= W and
//     every later one; older versions can be valid for no row to come and
//     are dropped when the watermark advances.
//   - A row of either side with time <= W on arrival is late: counted,
//     sent to the side's late output if one is named, and otherwise
//     ignored. For a left row this is Flink's behaviour. For a right row
//     Flink drops it too (its version would change results already
//     emitted); weir does the same, so that every output is final and a
//     restored job emits what an uninterrupted one does.
//   - Two versions of one key with the same time: the one that arrived
//     later wins (it is the later write), for every left row from that
//     time on.
//   - A left row with a NULL key column matches no version: JoinInner
//     drops it (counted in NullKeyRows), JoinLeftOuter emits it padded at
//     once. A right row with a NULL key is dropped (counted). Rows with a
//     NULL event time are dropped (counted).
//
// Output order is not guaranteed; a watermark is forwarded after the rows
// it completes.
//
// The operator has two inputs: input 0 is the left side, input 1 the
// right. Put each behind arrowflow.KeyBy on its join keys
// (arrowflow.KeyBy(left, LeftKeys...), arrowflow.KeyBy(right,
// RightKeys...)) so that equal keys meet in one subtask.
//
// The output has the left output columns (LeftColumns, each named
// LeftPrefix+name), then the right ones (RightColumns, RightPrefix+name),
// named and typed as IntervalJoin names them. Every output name must be
// unique.
//
// State is the waiting left rows and the right versions, each as Arrow
// record batches of the columns the join needs (keys, event time, output
// columns), the right side with an index from key to its versions in time
// order. Snapshots write them as columnar tables with a key-group column,
// so a job can restore into another parallelism.
type TemporalJoin struct {
	// Left and Right are the schemas of the two inputs' batches.
	Left, Right *arrow.Schema
	// LeftTime and RightTime name the event-time columns, of Arrow
	// timestamp types (the units may differ).
	LeftTime, RightTime string
	// LeftKeys and RightKeys name the equi-join key columns: at least one,
	// as many on each side and pairwise of equal types. Floating-point
	// keys compare as in grouping: -0 equals +0 and NaN equals NaN.
	LeftKeys, RightKeys []string
	// Kind is JoinInner (the default) or JoinLeftOuter.
	Kind JoinKind
	// LeftColumns and RightColumns name the input columns to output, in
	// that order; nil outputs every column of that side, an empty non-nil
	// slice none.
	LeftColumns, RightColumns []string
	// LeftPrefix and RightPrefix are prepended to the names of the output
	// columns of that side.
	LeftPrefix, RightPrefix string
	// LeftLateOutput and RightLateOutput, when set, name side outputs that
	// receive the late rows of that input, as they came in and in that
	// input's schema. The two names must differ unless both inputs have
	// the same schema. Late rows are counted either way.
	LeftLateOutput, RightLateOutput string
}

// TemporalJoinStats are a temporal join subtask's counters.
type TemporalJoinStats struct {
	// LeftRows and RightRows count the rows received on each input.
	LeftRows, RightRows int64
	// LateRows counts rows of either input that came at or behind the
	// watermark; NullTimeRows rows dropped for a NULL event time;
	// NullKeyRows rows dropped because a key column is NULL (right rows,
	// and left rows of an inner join).
	LateRows, NullTimeRows, NullKeyRows int64
	// Pairs counts left rows emitted with their version; PaddedRows left
	// rows emitted with NULL right columns (JoinLeftOuter); OutputRows
	// both.
	Pairs, PaddedRows, OutputRows int64
	// LeftStateRows are the left rows waiting for the watermark,
	// RightStateRows the versions held; StateBytes approximates the memory
	// the state retains (buffers shared with input batches count in full).
	LeftStateRows, RightStateRows, StateBytes int64
}

// TemporalJoinStatsReporter is implemented by the operator instances a
// TemporalJoin makes. They also implement StatsReporter.
type TemporalJoinStatsReporter interface {
	TemporalJoinStats() TemporalJoinStats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens, so a bad configuration fails the job naming
// the operator; call Validate to check it earlier.
func (j TemporalJoin) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &temporalOp{cfg: j} }
}

// OutputSchema is the schema of the rows the join emits: the left output
// columns, then the right ones (nullable with JoinLeftOuter).
func (j TemporalJoin) OutputSchema() (*arrow.Schema, error) {
	c, err := j.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Validate checks the configuration against the input schemas. Its errors
// name the field at fault.
func (j TemporalJoin) Validate() error {
	_, err := j.compile()
	return err
}

const (
	// tjPurgeMin is the fewest dead rows worth compacting a side for; a
	// side is compacted when its dead rows also outnumber its live ones.
	tjPurgeMin   = 4096
	tjLeftTable  = "temporal_left"
	tjRightTable = "temporal_right"
)

// tjCompiled is what Validate derives from a TemporalJoin: IntervalJoin's
// compiled sides (columns, stored schemas, key comparisons, output
// schema), and the snapshot tables' schemas.
type tjCompiled struct {
	*ivCompiled
	state [2]*arrow.Schema // _key_group, then the side's stored columns
}

func (j TemporalJoin) compile() (*tjCompiled, error) {
	if j.Kind != JoinInner && j.Kind != JoinLeftOuter {
		return nil, fmt.Errorf("temporal join: Kind %s is not supported; use JoinInner or JoinLeftOuter", j.Kind)
	}
	if len(j.LeftKeys) == 0 || len(j.RightKeys) == 0 {
		return nil, fmt.Errorf("temporal join: LeftKeys and RightKeys are required: a versioned table is looked up by key")
	}
	// The column checks are IntervalJoin's: an interval join of the same
	// inputs with an empty interval has the same columns, stored schemas
	// and output schema. Its errors are renamed; they name the fields,
	// which are the same.
	iv, err := IntervalJoin{
		Left: j.Left, Right: j.Right, LeftTime: j.LeftTime, RightTime: j.RightTime,
		LeftKeys: j.LeftKeys, RightKeys: j.RightKeys, Kind: j.Kind,
		LeftColumns: j.LeftColumns, RightColumns: j.RightColumns,
		LeftPrefix: j.LeftPrefix, RightPrefix: j.RightPrefix,
		LeftLateOutput: j.LeftLateOutput, RightLateOutput: j.RightLateOutput,
	}.compile()
	if err != nil {
		return nil, fmt.Errorf("temporal join: %s", strings.TrimPrefix(err.Error(), "interval join: "))
	}
	c := &tjCompiled{ivCompiled: iv}
	for s := range c.sides {
		c.state[s] = arrow.NewSchema(append([]arrow.Field{
			{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		}, c.sides[s].stored.Fields()...), nil)
	}
	return c, nil
}

// tjRow is the bookkeeping of one held row.
type tjRow struct {
	hash uint64 // kernels.HashColumns over the key columns
	time int64  // event time, ns
	dead bool   // emitted (left) or superseded (right): dropped
}

// tjChunk is a run of held rows: ids [first, first+n) of its side, their
// stored columns in rec (nil once every row is dead).
type tjChunk struct {
	rec      arrow.RecordBatch
	first, n int32
	live     int32
	minTime  int64 // a lower bound of the live rows' times
	bytes    int64
}

// tjStore is one side's rows: chunks in arrival order (so row ids grow
// with arrival) and each row's bookkeeping by id. Dead rows stay until
// they outnumber the live ones; then the store is compacted.
type tjStore struct {
	chunks []tjChunk
	rows   []tjRow
	live   int
	bytes  int64
}

func (s *tjStore) chunkOf(id int32) int {
	i, _ := slices.BinarySearchFunc(s.chunks, id, func(c tjChunk, id int32) int {
		switch {
		case c.first+c.n <= id:
			return -1
		case c.first > id:
			return 1
		}
		return 0
	})
	return i
}

// kill marks row id dead.
func (s *tjStore) kill(id int32) {
	c := &s.chunks[s.chunkOf(id)]
	s.rows[id].dead = true
	c.live--
	s.live--
	if c.live == 0 && c.rec != nil {
		c.rec.Release()
		c.rec = nil
		s.bytes -= c.bytes
		c.bytes = 0
	}
}

func (s *tjStore) release() {
	for _, c := range s.chunks {
		if c.rec != nil {
			c.rec.Release()
		}
	}
	*s = tjStore{rows: s.rows[:0], chunks: s.chunks[:0]}
}

// tjVersions indexes the right store: the keys by hash, and each key's
// versions (row ids) in time order, ties in arrival order.
type tjVersions struct {
	byHash map[uint64][]int32 // key hash -> key ids
	vers   [][]int32          // key id -> row ids
	// multi lists the key ids with more than one version: only they can
	// drop a version when the watermark advances.
	multi   []int32
	inMulti []bool
}

// temporalOp is one subtask of a temporal join.
type temporalOp struct {
	ai, bi [1]int32 // sameKey's row offsets
	cfg    TemporalJoin
	c      *tjCompiled
	info   *arrowflow.TaskInfo
	mem    memory.Allocator

	st    [2]tjStore
	idx   tjVersions
	wm    arrowflow.EventTime // the last watermark processed
	stats TemporalJoinStats
	// hashMask is applied to key hashes before the index groups them: all
	// ones, except in tests that narrow it to force collisions.
	hashMask uint64
	// purgeMin is tjPurgeMin, except in tests that compact more often.
	purgeMin int

	// scratch
	keyCols []arrow.Array
	hashes  []uint64
	late    []int32
	pad     []int32
	acc     []int32
	ok      []bool
}

func (o *temporalOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.wm = arrowflow.MinEventTime
	o.hashMask = ^uint64(0)
	o.purgeMin = tjPurgeMin
	o.idx = tjVersions{byHash: map[uint64][]int32{}}
	return nil
}

// TemporalJoinStats reports the subtask's counters.
func (o *temporalOp) TemporalJoinStats() TemporalJoinStats {
	s := o.stats
	s.LeftStateRows, s.RightStateRows = int64(o.st[joinLeft].live), int64(o.st[joinRight].live)
	s.StateBytes = o.stateBytes()
	return s
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *temporalOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the counters Aggregate's operators report too.
func (o *temporalOp) Stats() Stats {
	s := o.TemporalJoinStats()
	return Stats{LateRows: s.LateRows, NullTimeRows: s.NullTimeRows, StateBytes: s.StateBytes}
}

func (o *temporalOp) stateBytes() int64 {
	n := int64(len(o.idx.vers))*32 + int64(len(o.idx.multi))*4
	for i := range o.st {
		n += o.st[i].bytes + int64(len(o.st[i].rows))*24
	}
	return n
}

func (o *temporalOp) reportState() error {
	return o.info.StateBudget.Set(o.stateBytes(), int64(o.st[0].live+o.st[1].live))
}

// horizon is the watermark as an int64: rows at or before it are late.
func (o *temporalOp) horizon() int64 {
	if o.wm == arrowflow.MinEventTime {
		return math.MinInt64
	}
	return int64(o.wm)
}

// ProcessBatch sorts the batch's rows out (NULL time, late, NULL key) and
// holds the others: left rows until the watermark reaches them, right
// rows as versions.
func (o *temporalOp) ProcessBatch(input int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if input != joinLeft && input != joinRight {
		return fmt.Errorf("temporal join %s: batch on input %d; a join has two inputs, 0 (left) and 1 (right)", o.info.Name, input)
	}
	d := &o.c.sides[input]
	rec := b.Record
	if s := rec.Schema(); s != d.input && !s.Equal(d.input) {
		return fmt.Errorf("temporal join %s: %s batch schema %s differs from the configured %s", o.info.Name, d.name, s, d.input)
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
	if err := kernels.HashColumns(o.keyCols, b.Sel, o.hashes); err != nil {
		return fmt.Errorf("temporal join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	h := o.horizon()
	ts := rec.Column(d.timeIdx).(*array.Timestamp)
	o.late, o.pad, o.acc = o.late[:0], o.pad[:0], o.acc[:0]
	s := &o.st[input]
	from := len(s.rows)
	minTime := int64(math.MaxInt64)
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
				o.pad = append(o.pad, int32(r))
			} else {
				o.stats.NullKeyRows++
			}
			continue
		}
		o.acc = append(o.acc, int32(r))
		s.rows = append(s.rows, tjRow{hash: o.hashes[k], time: t})
		minTime = min(minTime, t)
	}
	if len(o.acc) > 0 {
		if len(s.rows) > math.MaxInt32-1 {
			s.rows = s.rows[:from]
			return fmt.Errorf("temporal join %s: more than %d %s rows held in one subtask; raise the parallelism", o.info.Name, math.MaxInt32, d.name)
		}
		if err := o.addChunk(input, rec, o.acc, from, minTime); err != nil {
			s.rows = s.rows[:from]
			return err
		}
	}
	if len(o.pad) > 0 {
		if err := o.emitInputPadded(rec, o.pad, out); err != nil {
			return err
		}
	}
	if err := emitLate(d.lateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// addChunk adds rows sel of rec (all of them, shared, when sel covers rec)
// as a chunk of side's store, holding row ids [from, len(rows)), and
// indexes right rows as versions. A trailing run of small chunks is then
// concatenated (dead rows included, so ids do not change).
func (o *temporalOp) addChunk(side int, rec arrow.RecordBatch, sel []int32, from int, minTime int64) error {
	d := &o.c.sides[side]
	s := &o.st[side]
	cols := make([]arrow.Array, len(d.storeIdx))
	for k, i := range d.storeIdx {
		cols[k] = rec.Column(i)
	}
	proj := array.NewRecordBatch(d.stored, cols, rec.NumRows())
	if len(sel) != int(rec.NumRows()) { // sel is increasing: equal length means every row
		taken, err := kernels.TakeRecord(o.mem, proj, sel)
		proj.Release()
		if err != nil {
			return fmt.Errorf("temporal join %s: %w", o.info.Name, err)
		}
		proj = taken
	}
	o.appendChunk(side, proj, from, minTime)
	if side == joinRight {
		o.index(from)
	}
	// Concatenate small chunks, joinCompactRun at a time, so that many
	// small batches do not each keep a record.
	run := 0
	for run < len(s.chunks) {
		c := &s.chunks[len(s.chunks)-1-run]
		if c.rec == nil || c.n >= joinSmallChunk {
			break
		}
		run++
	}
	if run >= joinCompactRun {
		return o.mergeChunks(side, len(s.chunks)-run)
	}
	return nil
}

// appendChunk appends rec, holding row ids [from, len(rows)), to side's
// store; it takes over rec.
func (o *temporalOp) appendChunk(side int, rec arrow.RecordBatch, from int, minTime int64) {
	s := &o.st[side]
	n := int32(len(s.rows) - from)
	c := tjChunk{rec: rec, first: int32(from), n: n, live: n, minTime: minTime, bytes: joinRecordBytes(rec)}
	s.chunks = append(s.chunks, c)
	s.live += int(n)
	s.bytes += c.bytes
}

// mergeChunks concatenates the chunks of side from chunk from on (each
// with its record) into one; their row ids are consecutive, so ids do not
// change.
func (o *temporalOp) mergeChunks(side, from int) error {
	s := &o.st[side]
	run := s.chunks[from:]
	recs := make([]arrow.RecordBatch, len(run))
	sels := make([][]int32, len(run))
	for i, c := range run {
		recs[i] = c.rec // never nil: addChunk merges only chunks with rows
	}
	merged, err := kernels.GatherRecords(o.mem, o.c.sides[side].stored, recs, sels)
	if err != nil {
		return fmt.Errorf("temporal join %s: %w", o.info.Name, err)
	}
	m := tjChunk{rec: merged, first: run[0].first, minTime: math.MaxInt64, bytes: joinRecordBytes(merged)}
	for _, c := range run {
		m.n += c.n
		m.live += c.live
		m.minTime = min(m.minTime, c.minTime)
		s.bytes -= c.bytes
		c.rec.Release()
	}
	s.bytes += m.bytes
	clear(s.chunks[from+1:])
	s.chunks = append(s.chunks[:from], m)
	return nil
}

// index adds the right rows from id from on to the version index. A row's
// key is looked up among the keys with its hash, comparing the key columns
// with the key's latest version; its version is inserted after every
// version of the key with a time <= its time (so that, of two with one
// time, the later arrival is found first from above).
func (o *temporalOp) index(from int) {
	s := &o.st[joinRight]
	x := &o.idx
	for id := int32(from); id < int32(len(s.rows)); id++ {
		r := s.rows[id]
		hk := r.hash & o.hashMask
		key := int32(-1)
		for _, k := range x.byHash[hk] {
			if v := x.vers[k]; o.sameKey(joinRight, id, joinRight, v[len(v)-1]) {
				key = k
				break
			}
		}
		if key < 0 {
			key = int32(len(x.vers))
			x.vers = append(x.vers, []int32{id})
			x.inMulti = append(x.inMulti, false)
			x.byHash[hk] = append(x.byHash[hk], key)
			continue
		}
		v := x.vers[key]
		p, _ := slices.BinarySearchFunc(v, r.time, func(e int32, t int64) int {
			if s.rows[e].time <= t {
				return -1
			}
			return 1
		})
		x.vers[key] = slices.Insert(v, p, id)
		if !x.inMulti[key] {
			x.inMulti[key] = true
			x.multi = append(x.multi, key)
		}
	}
}

// sameKey reports whether row a of side sa and row b of side sb have
// equal keys (neither has a NULL key).
func (o *temporalOp) sameKey(sa int, a int32, sb int, b int32) bool {
	ca, cb := &o.st[sa].chunks[o.st[sa].chunkOf(a)], &o.st[sb].chunks[o.st[sb].chunkOf(b)]
	o.ai[0], o.bi[0] = a-ca.first, b-cb.first // scratch: no allocation per comparison
	ai, bi := o.ai[:], o.bi[:]
	o.ok = append(o.ok[:0], true)
	for k, eq := range o.c.keyEq {
		eq(ca.rec.Column(o.c.sides[sa].keyPos[k]), cb.rec.Column(o.c.sides[sb].keyPos[k]), ai, bi, o.ok)
	}
	return o.ok[0]
}

// version returns the right row id of the version valid at left row id's
// time, or -1.
func (o *temporalOp) version(id int32) int32 {
	l := o.st[joinLeft].rows[id]
	x := &o.idx
	for _, k := range x.byHash[l.hash&o.hashMask] {
		v := x.vers[k]
		if !o.sameKey(joinLeft, id, joinRight, v[len(v)-1]) {
			continue
		}
		rows := o.st[joinRight].rows
		p, _ := slices.BinarySearchFunc(v, l.time, func(e int32, t int64) int {
			if rows[e].time <= t {
				return -1
			}
			return 1
		})
		if p == 0 {
			return -1
		}
		return v[p-1]
	}
	return -1
}

func (o *temporalOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	o.wm = wm
	if err := o.fire(int64(wm), out); err != nil {
		return err
	}
	if err := o.dropVersions(int64(wm)); err != nil {
		return err
	}
	if err := o.reportState(); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// fire joins and emits the waiting left rows with time <= h, and drops
// them.
func (o *temporalOp) fire(h int64, out arrowflow.Emitter) error {
	s := &o.st[joinLeft]
	if s.live == 0 {
		return nil
	}
	var pl, pr, pad []int32 // pairs (left id, right id); padded left ids
	for ci := range s.chunks {
		c := &s.chunks[ci]
		if c.live == 0 || c.minTime > h {
			continue
		}
		next := int64(math.MaxInt64)
		for id := c.first; id < c.first+c.n; id++ {
			r := s.rows[id]
			if r.dead {
				continue
			}
			if r.time > h {
				next = min(next, r.time)
				continue
			}
			if v := o.version(id); v >= 0 {
				pl, pr = append(pl, id), append(pr, v)
			} else if o.c.sides[joinLeft].outer {
				pad = append(pad, id)
			}
		}
		c.minTime = next
	}
	for len(pl) > 0 {
		n := min(len(pl), joinOutRows)
		o.stats.Pairs += int64(n)
		if err := o.emitStored(pl[:n], pr[:n], out); err != nil {
			return err
		}
		pl, pr = pl[n:], pr[n:]
	}
	for len(pad) > 0 {
		n := min(len(pad), joinOutRows)
		o.stats.PaddedRows += int64(n)
		if err := o.emitStored(pad[:n], nil, out); err != nil {
			return err
		}
		pad = pad[n:]
	}
	// Drop the fired rows (also those of an inner join without a version).
	for ci := range s.chunks {
		c := &s.chunks[ci]
		if c.live == 0 {
			continue
		}
		for id := c.first; id < c.first+c.n; id++ {
			if r := &s.rows[id]; !r.dead && r.time <= h {
				s.kill(id)
			}
		}
	}
	return o.compact(joinLeft)
}

// dropVersions drops, per key, the versions before the latest one with
// time <= h: no left row still to come (all later than h) can find them.
func (o *temporalOp) dropVersions(h int64) error {
	x := &o.idx
	rows := o.st[joinRight].rows
	keep := x.multi[:0]
	for _, k := range x.multi {
		v := x.vers[k]
		p := 0
		for p+1 < len(v) && rows[v[p+1]].time <= h {
			p++
		}
		for _, id := range v[:p] {
			o.st[joinRight].kill(id)
		}
		v = v[p:]
		x.vers[k] = v
		if len(v) > 1 {
			keep = append(keep, k)
		} else {
			x.inMulti[k] = false
		}
	}
	x.multi = keep
	return o.compact(joinRight)
}

// compact rewrites side's store without its dead rows when they are many
// and outnumber the live ones: the live rows are gathered into one chunk,
// in id order, and renumbered (the version index with them).
func (o *temporalOp) compact(side int) error {
	s := &o.st[side]
	dead := len(s.rows) - s.live
	if s.live == 0 {
		s.release()
		if side == joinRight {
			o.idx = tjVersions{byHash: map[uint64][]int32{}}
		}
		return nil
	}
	if dead < o.purgeMin || dead <= s.live {
		return nil
	}
	var recs []arrow.RecordBatch
	var sels [][]int32
	newID := make([]int32, len(s.rows))
	rows := make([]tjRow, 0, 2*s.live)
	minTime := int64(math.MaxInt64)
	for _, c := range s.chunks {
		if c.live == 0 {
			continue
		}
		sel := make([]int32, 0, c.live)
		for id := c.first; id < c.first+c.n; id++ {
			if r := s.rows[id]; !r.dead {
				newID[id] = int32(len(rows))
				rows = append(rows, r)
				sel = append(sel, id-c.first)
				minTime = min(minTime, r.time)
			}
		}
		recs, sels = append(recs, c.rec), append(sels, sel)
	}
	merged, err := kernels.GatherRecords(o.mem, o.c.sides[side].stored, recs, sels)
	if err != nil {
		return fmt.Errorf("temporal join %s: %w", o.info.Name, err)
	}
	s.release()
	s.rows = rows
	o.appendChunk(side, merged, 0, minTime)
	if side == joinRight {
		for _, v := range o.idx.vers {
			for i, id := range v {
				v[i] = newID[id]
			}
		}
	}
	return nil
}

// emitStored emits left rows lids with right rows rids (NULLs when rids
// is nil).
func (o *temporalOp) emitStored(lids, rids []int32, out arrowflow.Emitter) error {
	n := len(lids)
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for side, ids := range [2][]int32{lids, rids} {
		d := &o.c.sides[side]
		for _, p := range d.outPos {
			f := o.c.out.Field(len(cols))
			var col arrow.Array
			var err error
			if ids == nil {
				col = array.MakeArrayOfNull(o.mem, f.Type, n)
			} else if col, err = o.gather(side, ids, p); err != nil {
				return fmt.Errorf("temporal join %s: output column %q: %w", o.info.Name, f.Name, err)
			}
			cols = append(cols, col)
		}
	}
	o.stats.OutputRows += int64(n)
	return out.Emit(arrowflow.NewBatch(array.NewRecordBatch(o.c.out, cols, int64(n))))
}

// gather gathers stored column p of side's rows ids (any order, repeats
// allowed): in id order, chunk by chunk, then permuted into ids' order
// unless ids was increasing.
func (o *temporalOp) gather(side int, ids []int32, p int) (arrow.Array, error) {
	s := &o.st[side]
	order := ids
	var perm []int32
	if !slices.IsSorted(ids) {
		perm = make([]int32, len(ids))
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(a, b int32) int { return int(ids[a]) - int(ids[b]) })
		order = make([]int32, len(ids))
		for i, q := range perm {
			order[i] = ids[q]
		}
	}
	var parts []arrow.Array
	var idx [][]int32
	for i := 0; i < len(order); {
		c := &s.chunks[s.chunkOf(order[i])]
		j := i
		local := make([]int32, 0, 16)
		for j < len(order) && order[j] < c.first+c.n {
			local = append(local, order[j]-c.first)
			j++
		}
		parts, idx = append(parts, c.rec.Column(p)), append(idx, local)
		i = j
	}
	a, err := kernels.Gather(o.mem, parts, idx)
	if err != nil || perm == nil {
		return a, err
	}
	defer a.Release()
	inv := make([]int32, len(perm))
	for k, q := range perm {
		inv[q] = int32(k)
	}
	return kernels.Take(o.mem, a, inv)
}

// emitInputPadded emits rows of a left input batch with NULL right
// columns.
func (o *temporalOp) emitInputPadded(rec arrow.RecordBatch, rows []int32, out arrowflow.Emitter) error {
	d := &o.c.sides[joinLeft]
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, i := range d.outIdx {
		col, err := kernels.Take(o.mem, rec.Column(i), rows)
		if err != nil {
			return fmt.Errorf("temporal join %s: output column %q: %w", o.info.Name, o.c.out.Field(len(cols)).Name, err)
		}
		cols = append(cols, col)
	}
	for len(cols) < o.c.out.NumFields() {
		cols = append(cols, array.MakeArrayOfNull(o.mem, o.c.out.Field(len(cols)).Type, len(rows)))
	}
	o.stats.PaddedRows += int64(len(rows))
	o.stats.OutputRows += int64(len(rows))
	return out.Emit(arrowflow.NewBatch(array.NewRecordBatch(o.c.out, cols, int64(len(rows)))))
}

// Finish joins and emits every waiting left row (the inputs have ended:
// no version will come) and drops the state.
func (o *temporalOp) Finish(out arrowflow.Emitter) error {
	o.wm = arrowflow.MaxEventTime
	if err := o.fire(math.MaxInt64, out); err != nil {
		return err
	}
	o.st[joinRight].release()
	o.idx = tjVersions{byHash: map[uint64][]int32{}}
	return o.reportState()
}

// SnapshotState writes each side's live rows, in id order, as one table
// (temporal_left, temporal_right): the key group, then the stored
// columns; and the watermark as a second table. Writing the versions in
// id order keeps their arrival order, which breaks ties of time.
func (o *temporalOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	for side := range o.st {
		s := &o.st[side]
		table := []string{tjLeftTable, tjRightTable}[side]
		for _, c := range s.chunks {
			if c.live == 0 {
				continue
			}
			if err := o.writeChunk(w, side, table, c); err != nil {
				return err
			}
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

func (o *temporalOp) writeChunk(w state.SnapshotWriter, side int, table string, c tjChunk) error {
	rows := o.st[side].rows[c.first : c.first+c.n]
	rec := c.rec
	rec.Retain()
	defer func() { rec.Release() }()
	if c.live < c.n {
		sel := make([]int32, 0, c.live)
		for i, r := range rows {
			if !r.dead {
				sel = append(sel, int32(i))
			}
		}
		taken, err := kernels.TakeRecord(o.mem, c.rec, sel)
		if err != nil {
			return fmt.Errorf("temporal join %s: snapshot: %w", o.info.Name, err)
		}
		rec.Release()
		rec = taken
	}
	kb := array.NewUint16Builder(o.mem)
	defer kb.Release()
	kb.Reserve(int(c.live))
	for _, r := range rows {
		if !r.dead {
			kb.UnsafeAppend(uint16(kernels.KeyGroupOf(r.hash, o.info.MaxParallelism)))
		}
	}
	kcol := kb.NewArray()
	defer kcol.Release()
	snap := array.NewRecordBatch(o.c.state[side], append([]arrow.Array{kcol}, rec.Columns()...), int64(c.live))
	defer snap.Release()
	return w.Write(table, snap)
}

// RestoreState loads the rows of the key groups this subtask owns, from
// one or more old subtasks' snapshots.
func (o *temporalOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	tables := r.Tables()
	for side, table := range []string{tjLeftTable, tjRightTable} {
		if !slices.Contains(tables, table) {
			continue
		}
		if err := r.Read(table, func(rec arrow.RecordBatch) error { return o.restoreChunk(side, rec) }); err != nil {
			return err
		}
	}
	return o.reportState()
}

func (o *temporalOp) restoreChunk(side int, rec arrow.RecordBatch) error {
	d := &o.c.sides[side]
	if !rec.Schema().Equal(o.c.state[side]) {
		return fmt.Errorf("temporal join %s: snapshot %s state schema %s does not match this job's %s", o.info.Name, d.name, rec.Schema(), o.c.state[side])
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	stored := array.NewRecordBatch(d.stored, rec.Columns()[1:], int64(n))
	defer stored.Release()
	kgs := rec.Column(0).(*array.Uint16)
	var sel []int32
	for i := 0; i < n; i++ {
		if o.info.KeyGroups.Contains(int(kgs.Value(i))) {
			sel = append(sel, int32(i))
		}
	}
	if len(sel) == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(d.keyPos))
	for k, p := range d.keyPos {
		keys[k] = stored.Column(p)
	}
	hashes := make([]uint64, len(sel))
	if err := kernels.HashColumns(keys, sel, hashes); err != nil {
		return fmt.Errorf("temporal join %s: restoring %s rows: %w", o.info.Name, d.name, err)
	}
	s := &o.st[side]
	if len(s.rows)+len(sel) > math.MaxInt32-1 {
		return fmt.Errorf("temporal join %s: more than %d %s rows to restore in one subtask; raise the parallelism", o.info.Name, math.MaxInt32, d.name)
	}
	ts := stored.Column(d.timePos).(*array.Timestamp)
	from := len(s.rows)
	minTime := int64(math.MaxInt64)
	for k, i := range sel {
		t := int64(arrowflow.TimestampToEventTime(ts.Value(int(i)), d.timeUnit))
		s.rows = append(s.rows, tjRow{hash: hashes[k], time: t})
		minTime = min(minTime, t)
	}
	stored.Retain()
	keep := stored
	if len(sel) < n {
		taken, err := kernels.TakeRecord(o.mem, stored, sel)
		stored.Release()
		if err != nil {
			s.rows = s.rows[:from]
			return fmt.Errorf("temporal join %s: restoring %s rows: %w", o.info.Name, d.name, err)
		}
		keep = taken
	}
	o.appendChunk(side, keep, from, minTime)
	if side == joinRight {
		o.index(from)
	}
	return nil
}

func (o *temporalOp) Close() error {
	for i := range o.st {
		o.st[i].release()
	}
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
