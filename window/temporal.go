package window

import (
	"errors"
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
	"github.com/weirflow/weir/state/rowstore"
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
// State is the waiting left rows and the right versions, each side in a
// row store (state/rowstore) of the columns the join needs (keys, event
// time, output columns), the right side with an index from key to its
// versions in time order. Snapshots write them in the row store's tagged
// layout (the key group and the key hash beside the columns), so a job
// can restore into another parallelism. Snapshots of the layout before
// the row stores do not restore: RestoreState says so.
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
	// tjBlock is the number of consecutive row ids whose earliest live
	// time a tjStore keeps together, so that fire skips the blocks none
	// of whose rows the watermark reaches.
	tjBlock = 1024
	// tjKeepRows bounds the capacity, in rows, that an emptied side keeps
	// for reuse.
	tjKeepRows = 1 << 17
)

// tjCompiled is what Validate derives from a TemporalJoin: IntervalJoin's
// compiled sides (columns, stored schemas, key comparisons, output
// schema).
type tjCompiled struct {
	*ivCompiled
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
	// and output schema (and its checks refuse types a row store cannot
	// hold). Its errors are renamed; they name the fields, which are the
	// same.
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
	return &tjCompiled{ivCompiled: iv}, nil
}

// tjStore is one side's rows: their stored columns in a row store (row
// ids in arrival order; the store also keeps each row's key hash and
// whether it is dead: emitted, for a left row, or superseded, for a right
// one), each row's event time by id, and the earliest time of the live
// rows of each block of tjBlock ids. Dead rows are deleted from the row
// store; once they outnumber the live ones (and are at least purgeMin)
// the store is compacted and the rows renumbered.
type tjStore struct {
	store    *rowstore.Store // nil until the side holds a row
	times    []int64         // event time (ns) by row id: len(times) == store.IDs()
	live     int
	blockMin []int64 // by row id / tjBlock; math.MaxInt64: no live row
}

// noteTime records that live row id has time t.
func (s *tjStore) noteTime(id int, t int64) {
	blk := id / tjBlock
	for len(s.blockMin) <= blk {
		s.blockMin = append(s.blockMin, math.MaxInt64)
	}
	s.blockMin[blk] = min(s.blockMin[blk], t)
}

// kill deletes row id from the row store.
func (s *tjStore) kill(id int32) {
	s.store.Delete(id)
	s.live--
}

// storeBytes approximates the memory of the held rows' columns.
func (s *tjStore) storeBytes() int64 {
	if s.store == nil || s.store.IDs() == 0 {
		return 0
	}
	return s.store.SizeBytes()
}

// release drops every row. The row store and the bookkeeping keep their
// capacity when it is small, so that a side that empties at every
// watermark (the left side, typically) does not regrow them each time.
func (s *tjStore) release() {
	st := s.store
	if st != nil {
		st.Reset()
		if st.SizeBytes() > 16*tjKeepRows {
			st.Release()
			st = nil
		}
	}
	times, blk := s.times[:0], s.blockMin[:0]
	if cap(times) > tjKeepRows {
		times = nil
	}
	*s = tjStore{store: st, times: times, blockMin: blk}
}

// close releases the side's memory for good.
func (s *tjStore) close() {
	if s.store != nil {
		s.store.Release()
	}
	*s = tjStore{}
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
	keyCols  []arrow.Array
	hashes   []uint64
	late     []int32
	pad      []int32
	acc      []int32
	accHash  []uint64
	accTime  []int64
	ok       []bool
	gatherIx []int32
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
		n += o.st[i].storeBytes() + int64(len(o.st[i].times))*8 + int64(len(o.st[i].blockMin))*8
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
	o.accHash, o.accTime = o.accHash[:0], o.accTime[:0]
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
		o.accHash = append(o.accHash, o.hashes[k])
		o.accTime = append(o.accTime, t)
	}
	if len(o.acc) > 0 {
		if err := o.hold(input, rec); err != nil {
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

// sideStore returns side's row store, making it on first use.
func (o *temporalOp) sideStore(side int) (*rowstore.Store, error) {
	s := &o.st[side]
	if s.store == nil {
		st, err := rowstore.New(o.c.sides[side].stored, o.mem)
		if err != nil {
			return nil, fmt.Errorf("temporal join %s: %w", o.info.Name, err)
		}
		s.store = st
	}
	return s.store, nil
}

// hold adds the accepted rows o.acc of rec (with o.accHash and o.accTime)
// to side's store: their stored columns to the row store (shared with rec
// when every row of a large rec is kept, copied otherwise), their
// bookkeeping to rows; right rows are indexed as versions.
func (o *temporalOp) hold(side int, rec arrow.RecordBatch) error {
	d := &o.c.sides[side]
	s := &o.st[side]
	if len(s.times)+len(o.acc) > math.MaxInt32-1 {
		return fmt.Errorf("temporal join %s: more than %d %s rows held in one subtask; raise the parallelism", o.info.Name, math.MaxInt32, d.name)
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
	var first rowstore.RowID
	if len(o.acc) == int(rec.NumRows()) { // o.acc is increasing: equal length means every row
		first, err = st.AppendShared(proj, o.accHash)
	} else {
		first, err = st.Append(proj, o.acc, o.accHash)
	}
	if err != nil {
		return fmt.Errorf("temporal join %s: holding %s rows: %w", o.info.Name, d.name, err)
	}
	from := len(s.times)
	if int(first) != from {
		return fmt.Errorf("temporal join %s: %s row store handed out row id %d, the side holds %d rows", o.info.Name, d.name, first, from)
	}
	s.times = append(s.times, o.accTime...)
	for k, t := range o.accTime {
		s.noteTime(from+k, t)
	}
	s.live += len(o.acc)
	if side == joinRight {
		o.index(from)
	}
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
	for id := int32(from); id < int32(len(s.times)); id++ {
		t := s.times[id]
		hk := s.store.Hash(id) & o.hashMask
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
		p, _ := slices.BinarySearchFunc(v, t, func(e int32, t int64) int {
			if s.times[e] <= t {
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
	ra, ia := o.st[sa].store.Locate(a)
	rb, ib := o.st[sb].store.Locate(b)
	o.ai[0], o.bi[0] = int32(ia), int32(ib) // scratch: no allocation per comparison
	ai, bi := o.ai[:], o.bi[:]
	o.ok = append(o.ok[:0], true)
	for k, eq := range o.c.keyEq {
		eq(ra.Column(o.c.sides[sa].keyPos[k]), rb.Column(o.c.sides[sb].keyPos[k]), ai, bi, o.ok)
	}
	return o.ok[0]
}

// version returns the right row id of the version valid at left row id's
// time, or -1.
func (o *temporalOp) version(id int32) int32 {
	lt := o.st[joinLeft].times[id]
	x := &o.idx
	for _, k := range x.byHash[o.st[joinLeft].store.Hash(id)&o.hashMask] {
		v := x.vers[k]
		if !o.sameKey(joinLeft, id, joinRight, v[len(v)-1]) {
			continue
		}
		times := o.st[joinRight].times
		p, _ := slices.BinarySearchFunc(v, lt, func(e int32, t int64) int {
			if times[e] <= t {
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
	var pl, pr, pad, fired []int32 // pairs (left id, right id); padded left ids; every fired id
	for blk, bm := range s.blockMin {
		if bm > h {
			continue
		}
		next := int64(math.MaxInt64)
		lo := blk * tjBlock
		times := s.times[lo:min(lo+tjBlock, len(s.times))]
		for i, t := range times {
			id := int32(lo + i)
			if !s.store.Live(id) {
				continue
			}
			if t > h {
				next = min(next, t)
				continue
			}
			fired = append(fired, id)
			if v := o.version(id); v >= 0 {
				pl, pr = append(pl, id), append(pr, v)
			} else if o.c.sides[joinLeft].outer {
				pad = append(pad, id)
			}
		}
		s.blockMin[blk] = next
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
	for _, id := range fired {
		s.kill(id)
	}
	return o.compact(joinLeft)
}

// dropVersions drops, per key, the versions before the latest one with
// time <= h: no left row still to come (all later than h) can find them.
func (o *temporalOp) dropVersions(h int64) error {
	x := &o.idx
	times := o.st[joinRight].times
	keep := x.multi[:0]
	for _, k := range x.multi {
		v := x.vers[k]
		p := 0
		for p+1 < len(v) && times[v[p+1]] <= h {
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

// compact drops side's dead rows when they are many and outnumber the
// live ones: the row store keeps its live rows
// (rowstore.Store.CompactChunks, which renumbers them in order, keeps
// chunks that are all live as they are and copies only the live rows of
// partly dead ones), and the bookkeeping and the version index follow the
// new ids. A side without live rows is emptied at once.
func (o *temporalOp) compact(side int) error {
	s := &o.st[side]
	if s.live == 0 {
		s.release()
		if side == joinRight {
			o.idx = tjVersions{byHash: map[uint64][]int32{}}
		}
		return nil
	}
	if dead := len(s.times) - s.live; dead < o.purgeMin || dead <= s.live {
		return nil
	}
	remap, err := s.store.CompactChunks()
	if err != nil {
		return fmt.Errorf("temporal join %s: compacting the %s rows: %w", o.info.Name, o.c.sides[side].name, err)
	}
	if remap == nil {
		return nil
	}
	w := 0
	for id := range s.times {
		if nid := remap[id]; nid >= 0 { // nid <= id: in place
			s.times[nid] = s.times[id]
			w++
		}
	}
	s.times = s.times[:w]
	if cap(s.times) > tjKeepRows && cap(s.times) > 4*w {
		// The side shrank a lot: give the memory back.
		times := make([]int64, w, 2*w)
		copy(times, s.times)
		s.times = times
	}
	s.blockMin = s.blockMin[:0]
	for id, t := range s.times {
		s.noteTime(id, t)
	}
	if side == joinRight {
		for _, v := range o.idx.vers {
			for i, id := range v {
				v[i] = remap[id]
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
// allowed): in id order, chunk by chunk of the row store, then permuted
// into ids' order unless ids was increasing.
func (o *temporalOp) gather(side int, ids []int32, p int) (arrow.Array, error) {
	st := o.st[side].store
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
	local := slices.Grow(o.gatherIx[:0], len(order))[:len(order)]
	o.gatherIx = local
	for i := 0; i < len(order); {
		c := st.ChunkOf(order[i])
		rec, first := st.Chunk(c)
		end := first + int32(rec.NumRows())
		j := i
		for j < len(order) && order[j] < end {
			local[j] = order[j] - first
			j++
		}
		parts, idx = append(parts, rec.Column(p)), append(idx, local[i:j])
		i = j
	}
	if len(parts) == 1 && perm == nil {
		return kernels.Take(o.mem, parts[0], idx[0])
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
// (temporal_left, temporal_right) in the row store's tagged layout
// (rowstore.SnapshotTagged: the stored columns, the key group, the key
// hash and a tag, always 0); and the watermark as a second table. Writing
// the versions in id order keeps their arrival order, which breaks ties
// of time.
func (o *temporalOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	for side := range o.st {
		s := &o.st[side]
		if s.live == 0 {
			continue
		}
		table := []string{tjLeftTable, tjRightTable}[side]
		if err := s.store.SnapshotTagged(w, table, o.info.MaxParallelism, nil); err != nil {
			return fmt.Errorf("temporal join %s: snapshot of the %s rows: %w", o.info.Name, o.c.sides[side].name, err)
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// RestoreState loads the rows of the key groups this subtask owns, from
// one or more old subtasks' snapshots (a key's versions all come from one
// of them, in arrival order). A snapshot of the layout weir used before
// the row stores (_key_group first, then the stored columns) is refused.
func (o *temporalOp) RestoreState(r state.SnapshotReader) error {
	wm, sawMeta, err := readMeta(r)
	if err != nil {
		return err
	}
	if sawMeta {
		o.wm = wm
	}
	for side, table := range []string{tjLeftTable, tjRightTable} {
		d := &o.c.sides[side]
		s := &o.st[side]
		from := len(s.times)
		into := func(int64) (*rowstore.Store, error) { return o.sideStore(side) }
		err := rowstore.RestoreTagged(r, table, d.stored, o.info.KeyGroups, into,
			func(_ int64, _ *rowstore.Store, first rowstore.RowID, rec arrow.RecordBatch) error {
				if int(first) != len(s.times) {
					return fmt.Errorf("%s row store handed out row id %d, the side holds %d rows", d.name, first, len(s.times))
				}
				n := int(rec.NumRows())
				ts := rec.Column(d.timePos).(*array.Timestamp)
				s.times = slices.Grow(s.times, n)
				for i := range n {
					t := int64(arrowflow.TimestampToEventTime(ts.Value(i), d.timeUnit))
					s.times = append(s.times, t)
					s.noteTime(len(s.times)-1, t)
				}
				s.live += n
				return nil
			})
		var se *rowstore.SchemaError
		switch {
		case errors.As(err, &se) && !se.Tagged():
			return fmt.Errorf("temporal join %s: snapshot table %q has the snapshot layout of an older weir version (held rows without key hashes), which this version cannot restore; restart the job without its state: %w", o.info.Name, table, err)
		case errors.As(err, &se):
			return fmt.Errorf("temporal join %s: snapshot %s state does not match this job's %s rows (did the query change?): %w", o.info.Name, d.name, d.name, err)
		case err != nil:
			return fmt.Errorf("temporal join %s: restoring %s rows: %w", o.info.Name, d.name, err)
		}
		if side == joinRight && len(s.times) > from {
			o.index(from)
		}
	}
	return o.reportState()
}

func (o *temporalOp) Close() error {
	for i := range o.st {
		o.st[i].close()
	}
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
