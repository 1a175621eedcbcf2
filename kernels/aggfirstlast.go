package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// eventTimeType reports whether dt can order first/last: integers whose
// values fit an int64 (so not uint64) and int-backed temporal types.
func eventTimeType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return true
	}
	return false
}

// firstLastAcc is first(x, t) or last(x, t). Per group it keeps the event
// time of the winning row and, separately, its x (of any key type, null
// included).
//
// A batch runs in two passes so that x, which may be a string, is copied
// once per group and batch rather than once per improving row: the first
// pass walks t alone and records the winning row of each touched group in
// win; the second copies those rows' x.
//
// Invariants: times, has, win and vals have one entry per group; between
// calls win is all -1 and touched empty. has[g] is false until group g sees
// a row with non-null t.
type firstLastAcc struct {
	isLast       bool
	xType, tType arrow.DataType
	times        []int64
	has          []bool
	vals         valueColumn

	// Scratch, reused across batches.
	win     []int32
	touched []uint32
	rows    []int32
	valid   validRows
}

func newFirstLastAcc(xType, tType arrow.DataType, isLast bool) *firstLastAcc {
	return &firstLastAcc{isLast: isLast, xType: xType, tType: tType, vals: newValueColumn(xType)}
}

func (a *firstLastAcc) name() string {
	if a.isLast {
		return "last"
	}
	return "first"
}

func (a *firstLastAcc) ResultType() arrow.DataType { return a.xType }

func (a *firstLastAcc) StateFields() []arrow.Field {
	return []arrow.Field{
		{Name: "value", Type: a.xType, Nullable: true},
		{Name: "time", Type: a.tType, Nullable: true},
	}
}

func (a *firstLastAcc) Grow(groups int) {
	a.times = growZero(a.times, groups)
	a.has = growZero(a.has, groups)
	a.win = growFill(a.win, groups, -1)
	a.vals.grow(groups)
}

func (a *firstLastAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(a.name(), []arrow.DataType{a.xType, a.tType}, args, sel, gids); err != nil {
		return err
	}
	a.fold(args[0], args[1], sel, gids)
	return nil
}

// Merge treats each partial state (value, time) as a row: a partial's
// winner is the row it would have contributed, and a later partial counts
// as a later arrival, which is what ties need.
func (a *firstLastAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(a.name()+": merge", []arrow.DataType{a.xType, a.tType}, state, sel, gids); err != nil {
		return err
	}
	a.fold(state[0], state[1], sel, gids)
	return nil
}

func (a *firstLastAcc) fold(x, t arrow.Array, sel []int32, gids []uint32) {
	sel, gids = a.valid.filter(t, sel, gids)
	data := t.Data()
	touched := a.touched[:0]
	switch a.tType.ID() {
	case arrow.INT8:
		touched = pickRows(a, arrow.GetValues[int8](data, 1), sel, gids, touched)
	case arrow.INT16:
		touched = pickRows(a, arrow.GetValues[int16](data, 1), sel, gids, touched)
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		touched = pickRows(a, arrow.GetValues[int32](data, 1), sel, gids, touched)
	case arrow.UINT8:
		touched = pickRows(a, arrow.GetValues[uint8](data, 1), sel, gids, touched)
	case arrow.UINT16:
		touched = pickRows(a, arrow.GetValues[uint16](data, 1), sel, gids, touched)
	case arrow.UINT32:
		touched = pickRows(a, arrow.GetValues[uint32](data, 1), sel, gids, touched)
	default:
		touched = pickRows(a, arrow.GetValues[int64](data, 1), sel, gids, touched)
	}
	rows := a.rows[:0]
	for _, g := range touched {
		rows = append(rows, a.win[g])
		a.win[g] = -1
	}
	a.vals.copyRows(x, touched, rows)
	a.touched, a.rows = touched[:0], rows[:0]
}

// pickRows is the first pass: it moves each group's event time to the
// winning row's and records that row in win, appending newly touched
// groups to touched. first replaces on a strictly smaller time (the
// earliest arrival wins ties), last on a larger or equal one (the latest
// wins).
func pickRows[T integer](a *firstLastAcc, tv []T, sel []int32, gids []uint32, touched []uint32) []uint32 {
	times, has, win := a.times, a.has, a.win
	for k, g := range gids {
		i := selRow(sel, k)
		t := int64(tv[i])
		if has[g] {
			if a.isLast && t < times[g] || !a.isLast && t >= times[g] {
				continue
			}
		}
		if win[g] < 0 {
			touched = append(touched, g)
		}
		win[g] = int32(i)
		times[g] = t
		has[g] = true
	}
	return touched
}

func (a *firstLastAcc) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{
		a.vals.array(mem, a.has),
		newInt64sAsArray(mem, a.tType, a.times, a.has),
	}
}

func (a *firstLastAcc) Finish(mem memory.Allocator) arrow.Array { return a.vals.array(mem, a.has) }

func (a *firstLastAcc) Reset() {
	a.times, a.has, a.win = a.times[:0], a.has[:0], a.win[:0]
	a.vals.reset()
}

func (a *firstLastAcc) SizeBytes() int64 {
	return int64(cap(a.times))*8 + int64(cap(a.has)) + a.vals.sizeBytes() +
		int64(cap(a.win)+cap(a.rows)+cap(a.touched))*4 + a.valid.sizeBytes()
}
