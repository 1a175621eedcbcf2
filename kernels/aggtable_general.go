package kernels

import "math"

// This file is the GroupTable general path: any key tuple (strings,
// several columns, decimals), with keys stored columnar in keyStores.

// generalTable is an open-addressing hash table with linear probing whose
// slots hold (hash tag, group id) and whose keys live columnar in stores.
// A probe runs in vectorised rounds over the batch: each round walks every
// pending row to the first slot with an equal tag (or an empty slot, where
// it inserts at once, so a repeat of the key later in the batch finds it),
// then compares the candidates' keys column by column; rows whose keys
// differ continue at the next slot in the next round.
//
// Invariants: len(slots) is a power of two, mask == len(slots)-1; n <= growAt
// < len(slots) so every probe ends at an empty slot; hashes[g] is the full
// hash of group g (needed to rehash, since slots keep only the tag); every
// store holds exactly n keys.
type generalTable struct {
	stores []keyStore
	slots  []uint64 // tag (high 32 bits of the hash) | group id + 1; 0 = empty
	mask   uint64
	growAt int
	hashes []uint64
	n      int

	// Scratch, reused across batches.
	cand    []int32  // positions whose tag matched the slot of gids[k]
	newKs   []int32  // positions that created a group this round, in group order
	neq     []bool   // neq[j]: cand[j]'s key differs from its candidate group
	todo    []int32  // positions still to probe after a mismatch
	todoPos []uint64 // and the slot each continues from
	candPos []uint64 // after the first round: the slot of each candidate
	remap   []uint32
	order   []int32
}

const (
	tagMask       = ^uint64(math.MaxUint32)
	generalMinCap = 64
)

func newGeneralTable(stores []keyStore) *generalTable {
	t := &generalTable{stores: stores}
	t.alloc(generalMinCap)
	return t
}

func (t *generalTable) alloc(n int) {
	t.slots = make([]uint64, n)
	t.mask = uint64(n - 1)
	t.growAt = growAt(n)
}

// find assigns gids[k] for each position k of the batch; hs[k] is the hash
// of its key tuple and rows[k] its row in the columns the stores are bound
// to. With insert false, absent keys get NoGroup.
//
// The first round walks every position from its home slot. Positions
// whose tag matched a group with another key (rare with 32-bit tags) go
// round again from the slot after it, or from home if the table was
// rehashed meanwhile, since the rehash reorders probe chains.
func (t *generalTable) find(hs []uint64, rows []int32, gids []uint32, insert bool) {
	if len(t.stores) == 1 && t.n <= inlineCompareGroups {
		// One string key column without nulls in this batch, and a table
		// small enough to stay in cache: compare in the probe loop itself.
		// The rounds below pay off for several columns, and for large
		// tables, where comparing many candidates in one pass overlaps
		// their cache misses (measured: inline is 12% faster at 1e3 groups,
		// 8% slower at 1e5).
		switch st := t.stores[0].(type) {
		case *bytesStore[int32]:
			if st.bm == nil {
				findBytes(t, st, hs, rows, gids, insert)
				return
			}
		case *bytesStore[int64]:
			if st.bm == nil {
				findBytes(t, st, hs, rows, gids, insert)
				return
			}
		}
	}
	hs = hs[:len(gids)]
	n0 := t.n
	cand, newKs := t.cand[:0], t.newKs[:0]
	grown := false
	slots, mask := t.slots, t.mask
	for k, h := range hs {
		tag := h & tagMask
		p := h & mask
		for {
			s := slots[p]
			if s&tagMask == tag && s != 0 {
				gids[k] = uint32(s) - 1
				cand = append(cand, int32(k))
				break
			}
			if s == 0 {
				if !insert {
					gids[k] = NoGroup
					break
				}
				if t.n >= t.growAt {
					t.rehash(2 * len(t.slots))
					slots, mask, grown = t.slots, t.mask, true
					p = h & mask
					continue
				}
				gids[k] = t.newGroup(p, h)
				newKs = append(newKs, int32(k))
				break
			}
			p = (p + 1) & mask
		}
	}
	deferred, later := false, false
	candPos := t.candPos[:0]
	for {
		if len(newKs) > 0 {
			for _, st := range t.stores {
				st.appendRows(rows, newKs)
			}
		}
		if len(cand) == 0 {
			break
		}
		if cap(t.neq) < len(cand) {
			t.neq = make([]bool, len(cand))
		}
		neq := t.neq[:len(cand)]
		clear(neq)
		for _, st := range t.stores {
			st.compare(rows, cand, gids, neq)
		}
		todo, todoPos := t.todo[:0], t.todoPos[:0]
		for j, k := range cand {
			if neq[j] {
				h := hs[k]
				var p uint64
				switch {
				case grown:
					p = h & t.mask
				case later:
					p = (candPos[j] + 1) & t.mask
				default: // the first round saves no positions: find it again
					p = (t.slotOf(h, gids[k]) + 1) & t.mask
				}
				todo, todoPos = append(todo, k), append(todoPos, p)
			}
		}
		t.todo, t.todoPos = todo, todoPos
		if len(todo) == 0 {
			break
		}
		cand, newKs, candPos = cand[:0], newKs[:0], candPos[:0]
		grown, later = false, true
		for j, k := range todo {
			h := hs[k]
			tag := h & tagMask
			p := todoPos[j]
			if grown {
				p = h & t.mask
			}
			for {
				s := t.slots[p]
				if s&tagMask == tag && s != 0 {
					gids[k] = uint32(s) - 1
					cand, candPos = append(cand, k), append(candPos, p)
					break
				}
				if s == 0 {
					if !insert {
						gids[k] = NoGroup
						break
					}
					if t.n >= t.growAt {
						t.rehash(2 * len(t.slots))
						grown = true
						p = h & t.mask
						continue
					}
					gids[k] = t.newGroup(p, h)
					newKs = append(newKs, k)
					deferred = true
					break
				}
				p = (p + 1) & t.mask
			}
		}
	}
	t.cand, t.newKs, t.candPos = cand[:0], newKs[:0], candPos[:0]
	if deferred {
		t.renumber(n0, gids)
	}
}

// inlineCompareGroups is the largest table (in groups) for which
// findBytes compares keys inline: 16Ki groups keep views and slots within
// a core's L2 cache.
const inlineCompareGroups = 1 << 14

// findBytes is find for a single string or binary key column whose batch
// has no nulls. A new key is stored at once, so a repeat of it later in the
// batch compares against it; groups are created in row order.
func findBytes[O int32 | int64](t *generalTable, s *bytesStore[O], hs []uint64, rows []int32, gids []uint32, insert bool) {
	hs = hs[:len(gids)]
	one := t.newKs[:0]
	for k, h := range hs {
		i := rows[k]
		a := s.inData[s.inOffs[i]:s.inOffs[i+1]]
		tag := h & tagMask
		p := h & t.mask
		for {
			sl := t.slots[p]
			if sl == 0 {
				if !insert {
					gids[k] = NoGroup
					break
				}
				if t.n >= t.growAt {
					t.rehash(2 * len(t.slots))
					p = h & t.mask
					continue
				}
				gids[k] = t.newGroup(p, h)
				s.appendRows(rows, append(one[:0], int32(k)))
				break
			}
			if sl&tagMask == tag {
				g := uint32(sl) - 1
				// The null group's view is empty: an empty key must not
				// match it.
				if s.viewEqual(a, &s.views[g]) && (len(a) != 0 || s.valid[g]) {
					gids[k] = g
					break
				}
			}
			p = (p + 1) & t.mask
		}
	}
	t.newKs = one[:0]
}

// newGroup creates a group for hash h in the empty slot p.
func (t *generalTable) newGroup(p, h uint64) uint32 {
	gid := uint32(t.n)
	t.n++
	t.slots[p] = h&tagMask | uint64(gid+1)
	t.hashes = append(t.hashes, h)
	return gid
}

// slotOf returns the slot holding group gid, whose hash is h.
func (t *generalTable) slotOf(h uint64, gid uint32) uint64 {
	want := h&tagMask | uint64(gid+1)
	p := h & t.mask
	for t.slots[p] != want {
		p = (p + 1) & t.mask
	}
	return p
}

// renumber restores first-appearance order among the groups created by the
// last batch (ids n0 and up). Order can only break when a row whose tag
// matched a group with a different key inserted its own group in a later
// round, after rows behind it had inserted theirs; with 32-bit tags that is
// rare, so this path favours simplicity over speed.
func (t *generalTable) renumber(n0 int, gids []uint32) {
	cnt := t.n - n0
	t.remap = growUint32(t.remap, cnt)
	remap := t.remap
	for j := range remap {
		remap[j] = NoGroup
	}
	next := uint32(n0)
	identity := true
	for _, g := range gids {
		if int(g) >= n0 && g != NoGroup && remap[int(g)-n0] == NoGroup {
			remap[int(g)-n0] = next
			identity = identity && g == next
			next++
		}
	}
	if int(next) != t.n {
		panic("BUG: group created without a row")
	}
	if identity {
		return
	}
	for k, g := range gids {
		if int(g) >= n0 && g != NoGroup {
			gids[k] = remap[int(g)-n0]
		}
	}
	for i, s := range t.slots {
		if s != 0 && int(uint32(s)-1) >= n0 {
			t.slots[i] = s&tagMask | uint64(remap[int(uint32(s)-1)-n0]+1)
		}
	}
	t.order = growInt32(t.order, cnt)
	for old, nw := range remap {
		t.order[int(nw)-n0] = int32(old)
	}
	tail := append([]uint64(nil), t.hashes[n0:]...)
	for j, old := range t.order {
		t.hashes[n0+j] = tail[old]
	}
	for _, st := range t.stores {
		st.permuteTail(n0, t.order)
	}
}

func (t *generalTable) rehash(n int) {
	t.alloc(n)
	for g, h := range t.hashes {
		p := h & t.mask
		for t.slots[p] != 0 {
			p = (p + 1) & t.mask
		}
		t.slots[p] = h&tagMask | uint64(g+1)
	}
}

func (t *generalTable) reset() {
	clear(t.slots)
	t.hashes = t.hashes[:0]
	t.n = 0
	for _, st := range t.stores {
		st.reset()
	}
}

func (t *generalTable) sizeBytes() int64 {
	n := int64(len(t.slots))*8 + int64(cap(t.hashes))*8 + int64(cap(t.todoPos)+cap(t.candPos))*8 +
		int64(cap(t.todo)+cap(t.cand)+cap(t.newKs)+cap(t.remap)+cap(t.order))*4 + int64(cap(t.neq))
	for _, st := range t.stores {
		n += st.sizeBytes()
	}
	return n
}
