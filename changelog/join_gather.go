package changelog

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/state/rowstore"
)

// joinBucketShift groups row ids into buckets of 1<<joinBucketShift
// consecutive ids for ordering a gather (the default of
// joinOp.bucketShift).
const joinBucketShift = 10

// gather returns the rows ids of a side's store and where each landed:
// row perm[k] of the record is ids[k] (perm nil: row k). A row store
// gathers each run of ids of one chunk in one step, and ids in random
// order make a run of every id, so unordered ids are first grouped by
// chunk (by bucket of consecutive ids: a counting sort, or a sort when
// the ids are few against the store's size). The caller releases the
// record; perm is scratch, valid until the next gather.
func (o *joinOp) gather(side int, ids []rowstore.RowID) (arrow.RecordBatch, []int32, error) {
	st := o.sides[side].store
	sc := &o.sc
	shift := o.bucketShift
	ordered := true
	for k := 1; k < len(ids); k++ {
		if ids[k]>>shift != ids[k-1]>>shift && ids[k] < ids[k-1] {
			ordered = false
			break
		}
	}
	if ordered {
		rec, err := st.Gather(ids)
		return rec, nil, err
	}
	n := len(ids)
	sc.sorted = slices.Grow(sc.sorted[:0], n)[:n]
	sc.perm = slices.Grow(sc.perm[:0], n)[:n]
	buckets := st.IDs()>>shift + 1
	if buckets <= 4*n {
		// Counting sort by bucket; perm[k] is the sorted position of ids[k].
		sc.buckets = slices.Grow(sc.buckets[:0], buckets+1)[:buckets+1]
		clear(sc.buckets)
		for _, id := range ids {
			sc.buckets[id>>shift+1]++
		}
		for b := 1; b <= buckets; b++ {
			sc.buckets[b] += sc.buckets[b-1]
		}
		for k, id := range ids {
			q := sc.buckets[id>>shift]
			sc.buckets[id>>shift]++
			sc.sorted[q] = id
			sc.perm[k] = q
		}
	} else {
		keys := slices.Grow(sc.sortKeys[:0], n)[:n]
		for k, id := range ids {
			keys[k] = uint64(id)<<32 | uint64(k)
		}
		slices.Sort(keys)
		for q, key := range keys {
			sc.sorted[q] = rowstore.RowID(key >> 32)
			sc.perm[uint32(key)] = int32(q)
		}
		sc.sortKeys = keys
	}
	rec, err := st.Gather(sc.sorted)
	return rec, sc.perm, err
}
