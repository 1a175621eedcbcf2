package changelog

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/state/rowstore"
)

// The identity index of a side maps a row's identity hash to the stored
// rows of that hash (equal rows, and rows whose hashes collide), chained
// through inext and iprev, so that a retraction finds its row without
// walking every row of its key: a key with many rows (a popular customer
// of many orders) would make each retraction cost as much as the key's
// rows. A side builds it on its first retraction, so that append-only
// inputs pay nothing for it.

// identBuild indexes every live row of the side.
func (o *joinOp) identBuild(side int) {
	sd := &o.sides[side]
	sd.ident = make(map[uint64]rowstore.RowID, sd.store.Len())
	n := len(sd.gid)
	sd.inext, sd.iprev = make([]rowstore.RowID, n), make([]rowstore.RowID, n)
	for id := range rowstore.RowID(n) {
		if sd.store.Live(id) {
			sd.identLink(id)
		}
	}
}

// identLink puts row id at the head of its identity chain.
func (sd *joinSide) identLink(id rowstore.RowID) {
	h := sd.rowHash[id]
	sd.iprev[id], sd.inext[id] = -1, -1
	if first, ok := sd.ident[h]; ok {
		sd.inext[id], sd.iprev[first] = first, id
	}
	sd.ident[h] = id
}

// identUnlink takes row id out of its identity chain.
func (sd *joinSide) identUnlink(id rowstore.RowID) {
	p, n := sd.iprev[id], sd.inext[id]
	switch {
	case p >= 0:
		sd.inext[p] = n
	case n >= 0:
		sd.ident[sd.rowHash[id]] = n
	default:
		delete(sd.ident, sd.rowHash[id])
	}
	if n >= 0 {
		sd.iprev[n] = p
	}
}

// find returns a stored row of the side equal to row r of srec (of
// identity hash h) on every stored data column, or -1.
func (o *joinOp) find(side int, srec arrow.RecordBatch, r int, h uint64) rowstore.RowID {
	d := &o.c.sides[side]
	sd := &o.sides[side]
	if sd.ident == nil {
		o.identBuild(side)
	}
	id, ok := sd.ident[h]
	if !ok {
		return -1
	}
	for ; id >= 0; id = sd.inext[id] {
		rec, i := sd.store.Locate(id)
		eq := true
		for p, f := range d.eqs {
			if !f(srec.Column(p), r, rec.Column(p), i) {
				eq = false
				break
			}
		}
		if eq {
			return id
		}
	}
	return -1
}
