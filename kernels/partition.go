package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// KeyGroupOf maps a 64-bit key hash (from HashColumns) to its key group in
// [0, maxParallelism).
//
// It uses the hash's high 32 bits (multiply-shift range reduction), so
// that hash tables inside a subtask, which index by the low bits of the
// same hash, do not see every key of a subtask share a few low-bit
// patterns. Like the hash, this mapping is part of weir's persistent
// format: state snapshots are organised by key group.
func KeyGroupOf(hash uint64, maxParallelism int) int {
	return int(((hash >> 32) * uint64(maxParallelism)) >> 32)
}

// SubtaskOfKeyGroup returns the subtask, out of parallelism, that owns key
// group kg. Key groups are assigned to subtasks in contiguous ranges.
func SubtaskOfKeyGroup(kg, maxParallelism, parallelism int) int {
	return kg * parallelism / maxParallelism
}

// Partitioner splits the rows of batches among Parallelism outputs by the
// key group of their key columns: the kernel behind a keyed exchange. It
// keeps scratch space between calls, so it serves one goroutine at a time.
type Partitioner struct {
	maxParallelism, parallelism int

	hashes []uint64
	dest   []int32 // capacity reused; last holds the last Assign's outputs
	last   []int32
	counts []int
}

// NewPartitioner returns a partitioner over maxParallelism key groups and
// parallelism outputs.
func NewPartitioner(maxParallelism, parallelism int) (*Partitioner, error) {
	if maxParallelism < 1 || parallelism < 1 || parallelism > maxParallelism {
		return nil, fmt.Errorf("partition: need 1 <= parallelism (%d) <= max parallelism (%d)", parallelism, maxParallelism)
	}
	return &Partitioner{maxParallelism: maxParallelism, parallelism: parallelism, counts: make([]int, parallelism)}, nil
}

// Assign computes the output of every selected row (every row when sel is
// nil): dest[k] is the output of row sel[k] (or row k). It returns dest
// and the number of rows per output; both slices belong to the
// Partitioner and are valid until the next call.
func (p *Partitioner) Assign(keys []arrow.Array, sel []int32) (dest []int32, counts []int, err error) {
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("partition: no key columns")
	}
	n := keys[0].Len()
	if sel != nil {
		n = len(sel)
	}
	if cap(p.hashes) < n {
		p.hashes = make([]uint64, n)
		p.dest = make([]int32, n)
	}
	hashes, dest := p.hashes[:n], p.dest[:n]
	if err := HashColumns(keys, sel, hashes); err != nil {
		return nil, nil, fmt.Errorf("partition: %w", err)
	}
	clear(p.counts)
	// SubtaskOfKeyGroup(KeyGroupOf(h)) written out so the loop has no calls.
	maxPar, par := uint64(p.maxParallelism), p.parallelism
	for k, h := range hashes {
		kg := int(((h >> 32) * maxPar) >> 32)
		d := kg * par / p.maxParallelism
		dest[k] = int32(d)
		p.counts[d]++
	}
	p.last = dest
	return dest, p.counts, nil
}

// Split appends each selected row index to outs[output], using the
// outputs computed by the last Assign over the same sel. len(outs) must be
// the parallelism.
func (p *Partitioner) Split(sel []int32, outs [][]int32) {
	dest := p.last
	if sel == nil {
		for k, d := range dest {
			outs[d] = append(outs[d], int32(k))
		}
		return
	}
	for k, d := range dest {
		outs[d] = append(outs[d], sel[k])
	}
}
