package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// countDistinctAcc is count(distinct x). Its state is columnar: a second
// hash table keyed on (group id, x) holds every distinct pair once, and
// counts[g] is the number of pairs of group g. A pair new to the table
// adds one to its group; a pair seen before adds nothing. Null x is not
// counted.
//
// The exported state is one List<x> per group: its distinct values.
// Merging inserts the listed values as pairs, so values already counted in
// the target group are not counted twice.
//
// Invariants: len(counts) is the number of groups; counts[g] is the number
// of pairs whose gidStore entry is g.
type countDistinctAcc struct {
	xType    arrow.DataType
	listType *arrow.ListType
	counts   []int64
	pairs    *generalTable
	pairGids *gidStore
	pairVals keyStore

	// Scratch, reused across batches.
	valid  validRows
	xcol   []arrow.Array // one element: x, for HashColumns without allocating
	hashes []uint64
	pids   []uint32
	iota   []int32
	csel   []int32 // Merge: the list elements of the selected rows
	cgids  []uint32
	order  []int32
}

func newCountDistinctAcc(xType arrow.DataType) *countDistinctAcc {
	gs, vs := &gidStore{}, newKeyStore(xType)
	return &countDistinctAcc{
		xType:    xType,
		listType: arrow.ListOf(xType),
		pairs:    newGeneralTable([]keyStore{gs, vs}),
		pairGids: gs,
		pairVals: vs,
		xcol:     make([]arrow.Array, 1),
	}
}

func (a *countDistinctAcc) ResultType() arrow.DataType { return aggInt64 }

func (a *countDistinctAcc) StateFields() []arrow.Field {
	return []arrow.Field{{Name: "distinct", Type: a.listType}}
}

func (a *countDistinctAcc) Grow(groups int) { a.counts = growZero(a.counts, groups) }

func (a *countDistinctAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("count(distinct)", []arrow.DataType{a.xType}, args, sel, gids); err != nil {
		return err
	}
	return a.insert(args[0], sel, gids)
}

// insert adds the pairs (gids[k], x[row k]) for the non-null x.
func (a *countDistinctAcc) insert(x arrow.Array, sel []int32, gids []uint32) error {
	sel, gids = a.valid.filter(x, sel, gids)
	m := len(gids)
	if m == 0 {
		return nil
	}
	a.hashes = growUint64(a.hashes, m)
	a.xcol[0] = x
	err := HashColumns(a.xcol, sel, a.hashes)
	a.xcol[0] = nil
	if err != nil {
		return err
	}
	for k, g := range gids {
		a.hashes[k] = CombineHash(HashUint64(uint64(g)), a.hashes[k])
	}
	rows := sel
	if rows == nil {
		a.iota = iotaInt32(a.iota, m)
		rows = a.iota[:m]
	}
	a.pids = growUint32(a.pids, m)
	a.pairGids.bindGids(gids)
	a.pairVals.bind(x)
	n0 := a.pairs.n
	a.pairs.find(a.hashes, rows, a.pids, true)
	a.pairGids.unbind()
	a.pairVals.unbind()
	for _, g := range a.pairGids.vals[n0:a.pairs.n] {
		a.counts[g]++
	}
	return nil
}

func (a *countDistinctAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("count(distinct): merge", []arrow.DataType{a.listType}, state, sel, gids); err != nil {
		return err
	}
	list := state[0].(*array.List)
	offs := list.Offsets()[list.Data().Offset():]
	csel, cgids := a.csel[:0], a.cgids[:0]
	for k, g := range gids {
		r := selRow(sel, k)
		if list.IsNull(r) {
			continue
		}
		for j := offs[r]; j < offs[r+1]; j++ {
			csel = append(csel, j)
			cgids = append(cgids, g)
		}
	}
	a.csel, a.cgids = csel, cgids
	if csel == nil {
		return nil
	}
	return a.insert(list.ListValues(), csel, cgids)
}

// ExportState lists each group's distinct values: the pairs' values
// reordered by group with a counting sort, then cut by counts.
func (a *countDistinctAcc) ExportState(mem memory.Allocator) []arrow.Array {
	n := len(a.counts)
	offs := make([]int32, n+1)
	for g, c := range a.counts {
		offs[g+1] = offs[g] + int32(c)
	}
	a.order = growInt32(a.order, a.pairs.n)
	next := append([]int32(nil), offs[:n]...)
	for p, g := range a.pairGids.vals[:a.pairs.n] {
		a.order[next[g]] = int32(p)
		next[g]++
	}
	vals := a.pairVals.array(mem, a.pairs.n)
	defer vals.Release()
	child, err := Take(mem, vals, a.order[:a.pairs.n])
	if err != nil {
		panic("BUG: count(distinct) state: " + err.Error())
	}
	defer child.Release()
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize(len(offs) * 4)
	copy(offBuf.Bytes(), bytesOf(offs))
	data := array.NewData(a.listType, n, []*memory.Buffer{nil, offBuf}, []arrow.ArrayData{child.Data()}, 0, 0)
	offBuf.Release()
	defer data.Release()
	return []arrow.Array{array.MakeFromData(data)}
}

func (a *countDistinctAcc) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, aggInt64, a.counts, nil)
}

func (a *countDistinctAcc) Reset() {
	a.counts = a.counts[:0]
	a.pairs.reset()
}

func (a *countDistinctAcc) SizeBytes() int64 {
	return int64(cap(a.counts))*8 + a.pairs.sizeBytes() + a.valid.sizeBytes() +
		int64(cap(a.hashes))*8 + int64(cap(a.pids)+cap(a.iota)+cap(a.csel)+cap(a.cgids)+cap(a.order))*4
}
