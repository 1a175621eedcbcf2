package state

import (
	"fmt"

	"github.com/weirflow/weir/kernels"
)

// DefaultMaxParallelism is the number of key groups a job uses when none is
// configured. It bounds the parallelism a keyed operator can ever be
// rescaled to; it cannot change once a job has state.
const DefaultMaxParallelism = 128

// KeyGroupRange is the half-open range [Start, End) of key groups owned by
// one subtask of a keyed operator.
type KeyGroupRange struct {
	Start int // first key group owned
	End   int // one past the last key group owned
}

// Len is the number of key groups in the range.
func (r KeyGroupRange) Len() int { return r.End - r.Start }

// Contains reports whether key group kg is in the range.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.Start && kg < r.End }

// Overlaps reports whether the two ranges share at least one key group.
func (r KeyGroupRange) Overlaps(o KeyGroupRange) bool {
	return r.Start < o.End && o.Start < r.End && r.Len() > 0 && o.Len() > 0
}

// String formats the range as "[start, end)".
func (r KeyGroupRange) String() string { return fmt.Sprintf("[%d, %d)", r.Start, r.End) }

// KeyGroupOf maps a 64-bit key hash to its key group in [0, maxParallelism)
// (the mapping lives in kernels, next to the hash it depends on).
//
// It uses the hash's high 32 bits (multiply-shift range reduction), so that
// hash tables inside a subtask, which index by the low bits of the same
// hash, do not see every key of a subtask share a few low-bit patterns.
func KeyGroupOf(hash uint64, maxParallelism int) int {
	return kernels.KeyGroupOf(hash, maxParallelism)
}

// SubtaskOf returns the subtask, out of parallelism, that owns key group kg.
// Key groups are assigned to subtasks in contiguous ranges.
func SubtaskOf(kg, maxParallelism, parallelism int) int {
	return kernels.SubtaskOfKeyGroup(kg, maxParallelism, parallelism)
}

// RangeOf returns the key groups owned by subtask out of parallelism. The
// ranges of all subtasks partition [0, maxParallelism), and kg is in
// RangeOf(s) exactly when SubtaskOf(kg) == s.
func RangeOf(subtask, maxParallelism, parallelism int) KeyGroupRange {
	return KeyGroupRange{
		Start: ceilDiv(subtask*maxParallelism, parallelism),
		End:   ceilDiv((subtask+1)*maxParallelism, parallelism),
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ValidateParallelism checks that an operator's parallelism fits the job's
// key groups.
func ValidateParallelism(parallelism, maxParallelism int) error {
	if maxParallelism < 1 {
		return fmt.Errorf("max parallelism must be at least 1, got %d", maxParallelism)
	}
	if parallelism < 1 {
		return fmt.Errorf("parallelism must be at least 1, got %d", parallelism)
	}
	if parallelism > maxParallelism {
		return fmt.Errorf("parallelism %d exceeds max parallelism %d (the number of key groups); raise max parallelism", parallelism, maxParallelism)
	}
	return nil
}
