package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// aggValueSet is the multiset of values of one input column per group,
// shared by the aggregates that need it (MIN, MAX and COUNT DISTINCT of
// the same column over a retracting input): the rows go into the pairs
// once, and each user follows the changes.
type aggValueSet struct {
	col   int // the input column
	pairs *aggPairs
	users []aggValueUser
	valid aggValid
	trans []int8 // scratch
}

// apply adds (or retracts) the selected non-null values of vals.
func (s *aggValueSet) apply(vals arrow.Array, sel []int32, gids []uint32, retract bool) error {
	sel, gids = s.valid.filter(vals, sel, gids)
	if len(sel) == 0 {
		return nil
	}
	pids, err := s.pairs.find(vals, sel, gids, !retract)
	if err != nil {
		return err
	}
	d := int64(1)
	if retract {
		d = -1
	}
	trans := s.trans[:0]
	for _, id := range pids {
		t := 0
		if id != kernels.NoGroup {
			t = s.pairs.add(id, d)
		}
		trans = append(trans, int8(t))
	}
	s.trans = trans
	for _, u := range s.users {
		u.updateValues(vals, sel, gids, pids, trans, retract)
	}
	return nil
}

// load adds snapshot triples: values with their counts.
func (s *aggValueSet) load(vals, counts arrow.Array, sel []int32, gids []uint32) error {
	pids, err := s.pairs.find(vals, sel, gids, true)
	if err != nil {
		return err
	}
	cs := counts.(*array.Int64)
	trans := s.trans[:0]
	for k, id := range pids {
		trans = append(trans, int8(s.pairs.add(id, cs.Value(int(sel[k])))))
	}
	s.trans = trans
	for _, u := range s.users {
		u.updateValues(vals, sel, gids, pids, trans, false)
	}
	return nil
}

// settle rebuilds the pairs when dead ones outnumber the live.
func (s *aggValueSet) settle() error {
	if !s.pairs.needsCompact() {
		return nil
	}
	remap, err := s.pairs.compact()
	if err != nil {
		return fmt.Errorf("compacting the values of column %d: %w", s.col, err)
	}
	for _, u := range s.users {
		u.remapValues(remap, s.pairs.live)
	}
	return nil
}

// export returns the live (group, value, count) triples.
func (s *aggValueSet) export(mem memory.Allocator) ([]uint32, arrow.Array, arrow.Array, error) {
	ids := s.pairs.liveIDs()
	gids, counts := s.pairs.exportCounts(mem, ids)
	keys := s.pairs.table.Keys(mem)
	keys[0].Release()
	vals, err := kernels.Take(mem, keys[1], ids)
	keys[1].Release()
	if err != nil {
		counts.Release()
		return nil, nil, nil, err
	}
	return gids, vals, counts, nil
}

func (s *aggValueSet) sizeBytes() int64 {
	return s.pairs.sizeBytes() + int64(cap(s.trans)) + s.valid.sizeBytes()
}

func (f *aggValid) sizeBytes() int64 { return int64(cap(f.sel))*4 + int64(cap(f.gids))*4 }
