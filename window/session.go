package window

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// Session windows: per key, a row at time t opens the window [t, t+gap);
// windows of the same key that overlap merge into one, so a session lasts
// until a gap without rows. A session fires when the watermark passes its
// end (last row + gap) plus the allowed lateness.
//
// State: a kernels.GroupTable gives each key a dense id; each key id has a
// short list of open sessions (start, end, session id); the aggregates
// live in one kernels.GroupBy keyed by session id. When a row bridges
// sessions they merge at once in the session lists, and the absorbed
// session ids are aliased to the survivor; their accumulator rows are
// combined when the session fires or is snapshotted, which also compacts
// the GroupBy to the sessions still open.

// session is one open session of a key.
type session struct {
	start, end int64 // ns; end = last row's time + gap
	sid        int64 // id of its group in sessionOp.gb
}

type sessionOp struct {
	cfg  Aggregate
	c    *compiled
	info *arrowflow.TaskInfo
	mem  memory.Allocator

	gap, lateness, tick int64
	wm                  arrowflow.EventTime
	stats               Stats

	keyTable *kernels.GroupTable
	sessions [][]session // by key id
	sidKid   []int32     // key id of every session id
	alias    map[int64]int64
	nextSID  int64

	gbSchema *arrow.Schema // _sid, then the input's fields
	gbAggs   []kernels.AggregateSpec
	gb       *kernels.GroupBy // live accumulators, keyed by session id
	spare    *kernels.GroupBy // reused to combine and to compact

	// scratch
	kids    []uint32
	keyCols []arrow.Array
	sids    []int64
	sel     []int32
	late    []int32
}

// Session is the spec of session windows that close after gap without
// rows (Flink's SESSION). For sessions, Spec.Size holds the gap.
func Session(gap time.Duration) Spec { return Spec{Kind: KindSession, Size: gap} }

func (o *sessionOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.gap, o.lateness = int64(o.cfg.Window.Size), int64(o.cfg.AllowedLateness)
	o.tick = int64(c.timeType.Unit.Multiplier())
	o.wm = arrowflow.MinEventTime
	keyTypes := make([]arrow.DataType, len(c.keyIdx))
	for i, k := range c.keyIdx {
		keyTypes[i] = o.cfg.Input.Field(k).Type
	}
	// Without keys (a global session window) every row has key id 0 and
	// there is no key table.
	if len(keyTypes) > 0 {
		if o.keyTable, err = kernels.NewGroupTable(keyTypes); err != nil {
			return err
		}
	}
	o.alias = map[int64]int64{}
	o.gbSchema = arrow.NewSchema(append([]arrow.Field{{Name: "_sid", Type: arrow.PrimitiveTypes.Int64}}, o.cfg.Input.Fields()...), nil)
	for _, a := range c.aggs {
		b := a
		b.Args = make([]int, len(a.Args))
		for i, x := range a.Args {
			b.Args[i] = x + 1
		}
		o.gbAggs = append(o.gbAggs, b)
	}
	if o.gb, err = o.newGB(); err != nil {
		return err
	}
	o.spare, err = o.newGB()
	return err
}

func (o *sessionOp) newGB() (*kernels.GroupBy, error) {
	return kernels.NewGroupBy(o.gbSchema, []int{0}, o.gbAggs)
}

// LateRows implements arrowflow.LateRowCounter: Stats().LateRows, cheaply.
func (o *sessionOp) LateRows() int64 { return o.stats.LateRows }

// Stats reports the subtask's counters.
func (o *sessionOp) Stats() Stats {
	s := o.stats
	for _, l := range o.sessions {
		s.Panes += int64(len(l))
	}
	s.StateBytes = o.gb.SizeBytes() + o.spare.SizeBytes()
	return s
}

func (o *sessionOp) fired(end int64, wm arrowflow.EventTime) bool {
	return windowFired(end, o.tick, o.lateness, wm)
}

func (o *sessionOp) root(sid int64) int64 {
	r := sid
	for {
		next, ok := o.alias[r]
		if !ok {
			break
		}
		r = next
	}
	for sid != r { // path compression
		next := o.alias[sid]
		o.alias[sid] = r
		sid = next
	}
	return r
}

func (o *sessionOp) keyIDs(rec arrow.RecordBatch, sel []int32, n int) error {
	o.kids = slices.Grow(o.kids[:0], n)[:n]
	if o.keyTable == nil {
		clear(o.kids)
		if len(o.sessions) == 0 {
			o.sessions = append(o.sessions, nil)
		}
		return nil
	}
	o.keyCols = o.keyCols[:0]
	for _, k := range o.c.keyIdx {
		o.keyCols = append(o.keyCols, rec.Column(k))
	}
	err := o.keyTable.FindOrInsert(o.keyCols, sel, o.kids)
	clear(o.keyCols) // hold no reference to the batch
	if err != nil {
		return err
	}
	for len(o.sessions) < o.keyTable.Len() {
		o.sessions = append(o.sessions, nil)
	}
	return nil
}

func (o *sessionOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec := b.Record
	if err := checkInput(rec, o.cfg.Input); err != nil {
		return err
	}
	n := b.NumRows()
	if err := o.keyIDs(rec, b.Sel, n); err != nil {
		return err
	}
	rows := int(rec.NumRows())
	o.sids = slices.Grow(o.sids[:0], rows)[:rows]
	o.sel = o.sel[:0]
	o.late = o.late[:0]
	ts := rec.Column(o.c.timeIdx).(*array.Timestamp)
	unit := o.c.timeType.Unit
	for k := 0; k < n; k++ {
		r := b.Row(k)
		if ts.IsNull(r) {
			o.stats.NullTimeRows++
			continue
		}
		t := int64(arrowflow.TimestampToEventTime(ts.Value(r), unit))
		sid, ok := o.assign(o.kids[k], t)
		if !ok {
			o.stats.LateRows++
			o.late = append(o.late, int32(r))
			continue
		}
		o.sids[r] = sid
		o.sel = append(o.sel, int32(r))
	}
	if len(o.sel) > 0 {
		sidCol := array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, rows,
			[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(o.sids))}, nil, 0, 0))
		gbRec := array.NewRecordBatch(o.gbSchema, append([]arrow.Array{sidCol}, rec.Columns()...), int64(rows))
		sidCol.Release()
		err := o.gb.Update(gbRec, o.sel)
		gbRec.Release()
		if err != nil {
			return fmt.Errorf("window aggregate %s: %w", o.info.Name, err)
		}
	}
	if err := emitLate(o.cfg.LateOutput, b, o.late, out); err != nil {
		return err
	}
	return o.reportState()
}

// assign puts a row of key kid at time t into its session, merging the
// sessions it bridges, and returns the session id; false when the row is
// late (it would open a session that has already fired).
func (o *sessionOp) assign(kid uint32, t int64) (int64, bool) {
	list := o.sessions[kid]
	start, end := t, satAdd(t, o.gap)
	// Sessions are sorted by start and disjoint: the overlapping ones are
	// a contiguous run.
	i := 0
	for i < len(list) && list[i].end <= start {
		i++
	}
	j := i
	for j < len(list) && list[j].start < end {
		j++
	}
	if i == j {
		if o.fired(end, o.wm) {
			return 0, false
		}
		sid := o.newSID(kid)
		o.sessions[kid] = slices.Insert(list, i, session{start: start, end: end, sid: sid})
		return sid, true
	}
	keep := list[i]
	keep.start, keep.end = min(keep.start, start), max(keep.end, end)
	for _, s := range list[i+1 : j] {
		keep.start, keep.end = min(keep.start, s.start), max(keep.end, s.end)
		o.alias[s.sid] = keep.sid
	}
	list[i] = keep
	o.sessions[kid] = slices.Delete(list, i+1, j)
	return keep.sid, true
}

func (o *sessionOp) newSID(kid uint32) int64 {
	sid := o.nextSID
	o.nextSID++
	o.sidKid = append(o.sidKid, int32(kid))
	return sid
}

func (o *sessionOp) reportState() error {
	var keys int64
	for _, l := range o.sessions {
		keys += int64(len(l))
	}
	return o.info.StateBudget.Set(o.gb.SizeBytes()+o.spare.SizeBytes(), keys)
}

func (o *sessionOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if wm <= o.wm {
		return out.EmitWatermark(wm)
	}
	o.wm = wm
	if err := o.fire(out); err != nil {
		return err
	}
	if err := o.reportState(); err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// fire emits the sessions the watermark has closed and compacts the
// accumulators to the sessions still open.
func (o *sessionOp) fire(out arrowflow.Emitter) error {
	var firing map[int64]session // made when the first session fires
	for kid, list := range o.sessions {
		kept := list[:0]
		for _, s := range list {
			if o.fired(s.end, o.wm) {
				if firing == nil {
					firing = map[int64]session{}
				}
				firing[s.sid] = s
			} else {
				kept = append(kept, s)
			}
		}
		o.sessions[kid] = kept
	}
	if len(firing) == 0 {
		return nil
	}
	// Accumulator rows under their sessions' current ids.
	st, err := o.rootedState()
	if err != nil {
		return err
	}
	defer st.Release()
	sids := st.Column(0).(*array.Int64)
	var fireSel, keepSel []int32
	for i := 0; i < sids.Len(); i++ {
		if _, ok := firing[sids.Value(i)]; ok {
			fireSel = append(fireSel, int32(i))
		} else {
			keepSel = append(keepSel, int32(i))
		}
	}
	o.spare.Reset()
	if err := o.spare.Merge(st, fireSel); err != nil {
		return err
	}
	res, err := o.spare.Finish(o.mem)
	if err != nil {
		return err
	}
	defer res.Release()
	// The live GroupBy becomes the open sessions only (and loses its
	// aliases).
	o.spare.Reset()
	if err := o.spare.Merge(st, keepSel); err != nil {
		return err
	}
	o.gb, o.spare = o.spare, o.gb
	o.spare.Reset()
	clear(o.alias)
	o.stats.Windows += res.NumRows()
	return o.emit(res, firing, out)
}

// rootedState exports the accumulators with every session id replaced by
// its surviving session's id.
func (o *sessionOp) rootedState() (arrow.RecordBatch, error) {
	st, err := o.gb.ExportState(o.mem)
	if err != nil {
		return nil, err
	}
	defer st.Release()
	old := st.Column(0).(*array.Int64)
	b := array.NewInt64Builder(o.mem)
	defer b.Release()
	b.Reserve(old.Len())
	for i := 0; i < old.Len(); i++ {
		b.UnsafeAppend(o.root(old.Value(i)))
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(st.Schema(), append([]arrow.Array{col}, st.Columns()[1:]...), st.NumRows()), nil
}

// emit writes fired sessions: window_start, window_end, keys, aggregates.
func (o *sessionOp) emit(res arrow.RecordBatch, firing map[int64]session, out arrowflow.Emitter) error {
	rows := int(res.NumRows())
	if rows == 0 {
		return nil
	}
	sids := res.Column(0).(*array.Int64)
	unit := int64(o.c.timeType.Unit.Multiplier())
	sb, eb := array.NewTimestampBuilder(o.mem, o.c.timeType), array.NewTimestampBuilder(o.mem, o.c.timeType)
	defer sb.Release()
	defer eb.Release()
	kidx := make([]int32, rows)
	for i := 0; i < rows; i++ {
		s := firing[sids.Value(i)]
		sb.Append(arrow.Timestamp(s.start / unit))
		eb.Append(arrow.Timestamp(s.end / unit))
		kidx[i] = o.sidKid[s.sid]
	}
	cols := []arrow.Array{sb.NewArray(), eb.NewArray()}
	if o.keyTable != nil {
		keys := o.keyTable.Keys(o.mem)
		for _, k := range keys {
			taken, err := kernels.Take(o.mem, k, kidx)
			k.Release()
			if err != nil {
				return err
			}
			cols = append(cols, taken)
		}
	}
	// The GroupBy's output: _sid, then the aggregates.
	cols = append(cols, res.Columns()[1:]...)
	for _, c := range res.Columns()[1:] {
		c.Retain()
	}
	batch := array.NewRecordBatch(o.c.out, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return out.Emit(arrowflow.NewBatch(batch))
}

func (o *sessionOp) Finish(out arrowflow.Emitter) error {
	if o.wm == arrowflow.MaxEventTime {
		return nil
	}
	o.wm = arrowflow.MaxEventTime
	return o.fire(out)
}

// SnapshotState writes each open session once: start, end, the key, and
// its combined accumulator state.
func (o *sessionOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	st, err := o.rootedState()
	if err != nil {
		return err
	}
	o.spare.Reset()
	err = o.spare.Merge(st, nil)
	st.Release()
	if err != nil {
		return err
	}
	comb, err := o.spare.ExportState(o.mem)
	o.spare.Reset()
	if err != nil {
		return err
	}
	defer comb.Release()
	rows := int(comb.NumRows())
	if rows > 0 {
		bySID := map[int64]session{}
		for _, l := range o.sessions {
			for _, s := range l {
				bySID[s.sid] = s
			}
		}
		sids := comb.Column(0).(*array.Int64)
		sb, eb := array.NewInt64Builder(o.mem), array.NewInt64Builder(o.mem)
		kidx := make([]int32, rows)
		for i := 0; i < rows; i++ {
			s := bySID[sids.Value(i)]
			sb.Append(s.start)
			eb.Append(s.end)
			kidx[i] = o.sidKid[s.sid]
		}
		cols := []arrow.Array{sb.NewArray(), eb.NewArray()}
		sb.Release()
		eb.Release()
		var keyCols []arrow.Array
		if o.keyTable != nil {
			for _, k := range o.keyTable.Keys(o.mem) {
				taken, err := kernels.Take(o.mem, k, kidx)
				k.Release()
				if err != nil {
					return err
				}
				keyCols = append(keyCols, taken)
			}
		}
		kg, err := keyGroupColumn(o.mem, o.info, keyCols, rows)
		if err != nil {
			return err
		}
		cols = append(append(cols, kg), keyCols...)
		for _, c := range comb.Columns()[1:] {
			c.Retain()
			cols = append(cols, c)
		}
		rec := array.NewRecordBatch(o.sessionStateSchema(), cols, int64(rows))
		for _, c := range cols {
			c.Release()
		}
		err = w.Write(stateTable, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return writeMeta(o.mem, o.wm, w)
}

// sessionStateSchema: _start, _end, _key_group, the key fields, the
// accumulators' state fields.
func (o *sessionOp) sessionStateSchema() *arrow.Schema {
	fields := []arrow.Field{
		{Name: "_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_end", Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	}
	for _, k := range o.c.keyIdx {
		fields = append(fields, o.cfg.Input.Field(k))
	}
	fields = append(fields, o.gb.StateSchema().Fields()[1:]...)
	return arrow.NewSchema(fields, nil)
}

// RestoreState reopens the sessions of this subtask's key groups.
func (o *sessionOp) RestoreState(r state.SnapshotReader) error {
	wm, ok, err := readMeta(r)
	if err != nil {
		return err
	}
	if ok {
		o.wm = wm
	}
	nk := len(o.c.keyIdx)
	if !slices.Contains(r.Tables(), stateTable) {
		// A snapshot taken while no window held rows has no pane table.
		return o.reportState()
	}
	err = r.Read(stateTable, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(o.sessionStateSchema()) {
			return fmt.Errorf("window aggregate %s: snapshot schema %s does not match this job's %s", o.info.Name, rec.Schema(), o.sessionStateSchema())
		}
		n := int(rec.NumRows())
		keys := rec.Columns()[3 : 3+nk]
		owned, err := ownedRows(o.info, keys, n)
		if err != nil {
			return err
		}
		if len(owned) == 0 {
			return nil
		}
		// Key ids for the owned rows.
		kids := make([]uint32, len(owned))
		if o.keyTable != nil {
			if err := o.keyTable.FindOrInsert(keys, owned, kids); err != nil {
				return err
			}
			for len(o.sessions) < o.keyTable.Len() {
				o.sessions = append(o.sessions, nil)
			}
		} else if len(o.sessions) == 0 {
			o.sessions = append(o.sessions, nil)
		}
		starts, ends := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		sids := make([]int64, n)
		for k, i := range owned {
			kid := kids[k]
			sid := o.newSID(kid)
			sids[i] = sid
			s := session{start: starts.Value(int(i)), end: ends.Value(int(i)), sid: sid}
			list := o.sessions[kid]
			pos, _ := slices.BinarySearchFunc(list, s.start, func(a session, t int64) int { return cmpInt(a.start, t) })
			o.sessions[kid] = slices.Insert(list, pos, s)
		}
		sidCol := array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, n,
			[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(sids))}, nil, 0, 0))
		st := array.NewRecordBatch(o.gb.StateSchema(), append([]arrow.Array{sidCol}, rec.Columns()[3+nk:]...), int64(n))
		sidCol.Release()
		defer st.Release()
		return o.gb.Merge(st, owned)
	})
	if err != nil {
		return err
	}
	return o.reportState()
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (o *sessionOp) Close() error {
	o.gb, o.spare, o.sessions = nil, nil, nil
	if o.info != nil {
		_ = o.info.StateBudget.Set(0, 0)
	}
	return nil
}
