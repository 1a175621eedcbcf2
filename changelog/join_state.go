package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
)

const (
	// A side's row store is compacted when it holds at least
	// joinCompactGarbage deleted rows and more deleted than live ones.
	joinCompactGarbage = 1024
	// The key table is rebuilt when it has at least joinRebuildGroups
	// groups and more than four times as many as hold rows: groups are
	// never deleted from a GroupTable, and keys come and go.
	joinRebuildGroups = 4096
	// joinRestoreRows bounds the rows gathered at a time when keys are
	// re-indexed.
	joinRestoreRows = 4096
)

// growRows extends the side's per-row slices to the store's ids.
func (o *joinOp) growRows(side int) {
	sd := &o.sides[side]
	n := sd.store.IDs()
	if len(sd.gid) >= n {
		return
	}
	sd.next = joinGrow(sd.next, n)
	sd.prev = joinGrow(sd.prev, n)
	sd.gid = joinGrow(sd.gid, n)
	sd.rowHash = joinGrow(sd.rowHash, n)
	if o.c.sides[side].outer {
		sd.matches = joinGrow(sd.matches, n)
	}
	if sd.ident != nil {
		sd.inext = joinGrow(sd.inext, n)
		sd.iprev = joinGrow(sd.iprev, n)
	}
}

// joinGrow extends s to n elements (new ones zero), at least doubling its
// capacity when it must reallocate: append grows large slices by a
// quarter, which copies a growing state several times over.
func joinGrow[T any](s []T, n int) []T {
	if n <= cap(s) {
		old := len(s)
		s = s[:n]
		clear(s[old:])
		return s
	}
	t := make([]T, n, max(n, 2*cap(s)))
	copy(t, s)
	return t
}

// link puts stored row id, of group g and identity hash h, at the head of
// its group's chain.
func (o *joinOp) link(side int, id rowstore.RowID, g uint32, h uint64) {
	sd := &o.sides[side]
	sd.gid[id], sd.rowHash[id] = g, h
	sd.prev[id], sd.next[id] = -1, sd.head[g]
	if first := sd.head[g]; first >= 0 {
		sd.prev[first] = id
	}
	sd.head[g] = id
	if sd.ident != nil {
		sd.identLink(id)
	}
	if o.groupRows[g] == 0 {
		o.liveGroups++
	}
	o.groupRows[g]++
}

// pushExpiry records when row id was stored, for StateTTL. Times are kept
// non-decreasing (a clock that steps back delays expiry a little).
func (sd *joinSide) pushExpiry(id rowstore.RowID, at int64) {
	if n := len(sd.expiry); n > sd.expHead && sd.expiry[n-1].at > at {
		at = sd.expiry[n-1].at
	}
	sd.expiry = append(sd.expiry, joinExpiry{at: at, id: id})
}

// remove unlinks stored row id and deletes it from the store.
func (o *joinOp) remove(side int, id rowstore.RowID) {
	sd := &o.sides[side]
	g := sd.gid[id]
	p, n := sd.prev[id], sd.next[id]
	if p >= 0 {
		sd.next[p] = n
	} else {
		sd.head[g] = n
	}
	if n >= 0 {
		sd.prev[n] = p
	}
	if sd.ident != nil {
		sd.identUnlink(id)
	}
	sd.store.Delete(id)
	o.groupRows[g]--
	if o.groupRows[g] == 0 {
		o.liveGroups--
	}
}

// expire drops the rows stored StateTTL ago or earlier, without output,
// and reports whether it dropped any.
func (o *joinOp) expire() bool {
	if o.c.ttl == 0 {
		return false
	}
	limit := o.clock.Now().UnixNano() - o.c.ttl
	dropped := false
	for s := range o.sides {
		sd := &o.sides[s]
		h := sd.expHead
		for ; h < len(sd.expiry) && sd.expiry[h].at <= limit; h++ {
			if id := sd.expiry[h].id; sd.store.Live(id) {
				o.remove(s, id)
				o.stats.ExpiredRows++
				dropped = true
			}
		}
		sd.expHead = h
		if h >= 1024 && h > len(sd.expiry)/2 {
			sd.expiry = append(sd.expiry[:0], sd.expiry[h:]...)
			sd.expHead = 0
		}
	}
	return dropped
}

// maintain compacts row stores holding many deleted rows and rebuilds the
// key table when most of its groups are empty.
func (o *joinOp) maintain() error {
	for s := range o.sides {
		st := o.sides[s].store
		if g := st.Garbage(); g >= joinCompactGarbage && g > st.Len() {
			if err := o.compact(s); err != nil {
				return err
			}
		}
	}
	if n := o.keys.Len(); n >= joinRebuildGroups && n > 4*o.liveGroups {
		return o.rebuildGroups()
	}
	return nil
}

// compact compacts a side's store and renumbers the ids the side holds.
func (o *joinOp) compact(side int) error {
	sd := &o.sides[side]
	remap, err := sd.store.Compact()
	if err != nil {
		return fmt.Errorf("join %s: compacting %s rows: %w", o.info.Name, o.c.sides[side].name, err)
	}
	if remap == nil {
		return nil
	}
	o.compactions++
	mp := func(id rowstore.RowID) rowstore.RowID {
		if id < 0 {
			return -1
		}
		return remap[id]
	}
	n := sd.store.IDs()
	next, prev := make([]rowstore.RowID, n), make([]rowstore.RowID, n)
	gid, hash := make([]uint32, n), make([]uint64, n)
	var matches []int32
	if sd.matches != nil {
		matches = make([]int32, n)
	}
	for old, nw := range remap {
		if nw < 0 {
			continue
		}
		next[nw], prev[nw] = mp(sd.next[old]), mp(sd.prev[old])
		gid[nw], hash[nw] = sd.gid[old], sd.rowHash[old]
		if matches != nil {
			matches[nw] = sd.matches[old]
		}
	}
	if sd.ident != nil {
		inext, iprev := make([]rowstore.RowID, n), make([]rowstore.RowID, n)
		for old, nw := range remap {
			if nw >= 0 {
				inext[nw], iprev[nw] = mp(sd.inext[old]), mp(sd.iprev[old])
			}
		}
		for h, id := range sd.ident {
			sd.ident[h] = mp(id)
		}
		sd.inext, sd.iprev = inext, iprev
	}
	sd.next, sd.prev, sd.gid, sd.rowHash, sd.matches = next, prev, gid, hash, matches
	for g, id := range sd.head {
		sd.head[g] = mp(id)
	}
	exp := sd.expiry[:0]
	for _, e := range sd.expiry[sd.expHead:] {
		if id := remap[e.id]; id >= 0 {
			exp = append(exp, joinExpiry{at: e.at, id: id})
		}
	}
	sd.expiry, sd.expHead = exp, 0
	return nil
}

// rebuildGroups replaces the key table by one holding only the keys of
// live rows, and relinks every chain.
func (o *joinOp) rebuildGroups() error {
	keys, err := kernels.NewGroupTable(o.c.keyTypes)
	if err != nil {
		return fmt.Errorf("join %s: %w", o.info.Name, err)
	}
	o.keys = keys
	o.rebuilds++
	o.groupNull, o.groupRows, o.liveGroups = o.groupNull[:0], o.groupRows[:0], 0
	for s := range o.sides {
		// Relinking rebuilds the identity index too, if it is used.
		sd := &o.sides[s]
		sd.head = sd.head[:0]
		if sd.ident != nil {
			clear(sd.ident)
		}
	}
	for s := range o.sides {
		sd := &o.sides[s]
		err := o.liveChunks(s, func(ids []rowstore.RowID, rec arrow.RecordBatch) error {
			gids, err := o.indexStored(s, rec)
			if err != nil {
				return err
			}
			for k, id := range ids {
				sd.gid[id] = gids[k]
			}
			return nil
		})
		if err != nil {
			return err
		}
		for id := range sd.gid {
			if sd.store.Live(rowstore.RowID(id)) {
				o.link(s, rowstore.RowID(id), sd.gid[id], sd.rowHash[id])
			}
		}
	}
	return nil
}

// indexStored finds or inserts the groups of the stored rows rec (of the
// side's store schema) and returns them (scratch: valid until the next
// call).
func (o *joinOp) indexStored(side int, rec arrow.RecordBatch) ([]uint32, error) {
	d := &o.c.sides[side]
	sc := &o.sc
	n := int(rec.NumRows())
	sc.keyCols = sc.keyCols[:0]
	for _, p := range d.keyPos {
		sc.keyCols = append(sc.keyCols, rec.Column(p))
	}
	sc.gids = slices.Grow(sc.gids[:0], n)[:n]
	if err := o.keys.FindOrInsert(sc.keyCols, nil, sc.gids); err != nil {
		return nil, fmt.Errorf("join %s: %s keys: %w", o.info.Name, d.name, err)
	}
	o.growGroups()
	for _, col := range sc.keyCols {
		if col.NullN() == 0 {
			continue
		}
		for i, g := range sc.gids {
			if col.IsNull(i) {
				o.groupNull[g] = true
			}
		}
	}
	return sc.gids, nil
}

// liveChunks calls fn with the side's live rows, gathered in chunks of up
// to joinRestoreRows rows, and their ids.
func (o *joinOp) liveChunks(side int, fn func(ids []rowstore.RowID, rec arrow.RecordBatch) error) error {
	sd := &o.sides[side]
	ids := make([]rowstore.RowID, 0, joinRestoreRows)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		rec, err := sd.store.Gather(ids)
		if err != nil {
			return fmt.Errorf("join %s: %w", o.info.Name, err)
		}
		defer rec.Release()
		err = fn(ids, rec)
		ids = ids[:0]
		return err
	}
	for id := range rowstore.RowID(sd.store.IDs()) {
		if !sd.store.Live(id) {
			continue
		}
		ids = append(ids, id)
		if len(ids) == joinRestoreRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// joinTakeNulls gathers col[idx[k]] into a new array, NULL where idx[k]
// is -1. tmp is scratch.
func joinTakeNulls(mem memory.Allocator, col arrow.Array, idx []int32, tmp *[]int32) (arrow.Array, error) {
	nulls := 0
	for _, i := range idx {
		if i < 0 {
			nulls++
		}
	}
	switch nulls {
	case 0:
		return kernels.Take(mem, col, idx)
	case len(idx):
		return array.MakeArrayOfNull(mem, col.DataType(), len(idx)), nil
	}
	t := (*tmp)[:0]
	for _, i := range idx {
		t = append(t, max(i, 0))
	}
	*tmp = t
	taken, err := kernels.Take(mem, col, t)
	if err != nil {
		return nil, err
	}
	defer taken.Release()
	return joinMaskNulls(mem, taken, idx)
}

// joinMaskNulls returns col (a new reference) with the rows k where
// idx[k] is -1 set to NULL; the value buffers are shared.
func joinMaskNulls(mem memory.Allocator, col arrow.Array, idx []int32) (arrow.Array, error) {
	n := col.Len()
	if len(idx) != n {
		return nil, fmt.Errorf("BUG: %d indices for %d rows", len(idx), n)
	}
	data := col.Data()
	if !slices.ContainsFunc(idx, func(i int32) bool { return i < 0 }) || data.DataType().ID() == arrow.NULL {
		col.Retain()
		return col, nil
	}
	off := data.Offset()
	buf := memory.NewResizableBuffer(mem)
	defer buf.Release()
	buf.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := buf.Bytes()
	if v := data.Buffers()[0]; v != nil && data.NullN() > 0 {
		bitutil.CopyBitmap(v.Bytes(), off, n, bits, off)
	} else {
		bitutil.SetBitsTo(bits, int64(off), int64(n), true)
	}
	for k, i := range idx {
		if i < 0 {
			bitutil.ClearBit(bits, off+k)
		}
	}
	nulls := n - bitutil.CountSetBits(bits, off, n)
	bufs := slices.Clone(data.Buffers())
	bufs[0] = buf
	nd := array.NewData(data.DataType(), n, bufs, data.Children(), nulls, off)
	defer nd.Release()
	return array.MakeFromData(nd), nil
}
