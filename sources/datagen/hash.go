package datagen

import "math/bits"

// Hashing: every random decision for row r of field f is hashRow(key, r),
// where key is streamKey(seed, f, purpose). hashRow is the r-th output of a
// SplitMix64 generator seeded with key, computed directly (SplitMix64 is a
// counter passed through a finalizer), so any row can be computed without
// the rows before it.

const golden = 0x9e3779b97f4a7c15 // 2^64 / phi, SplitMix64's increment

// Purposes of a field's hash streams.
const (
	purposeValue  = 0
	purposeNull   = 1
	purposeJitter = 2
)

// mix is SplitMix64's finalizer (Stafford's variant 13): a bijection on
// uint64 with good avalanche.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// streamKey derives the key of one hash stream of a field.
func streamKey(seed uint64, field int, purpose uint64) uint64 {
	return mix(mix(seed+golden) ^ mix((uint64(field)<<2|purpose)+golden))
}

// hashRow returns the 64 random bits of row r in the stream key.
func hashRow(key uint64, r int64) uint64 {
	return mix(key + uint64(r)*golden)
}

// below maps 64 random bits h to [0, n) (Lemire's multiply-shift; the bias
// is at most n/2^64).
func below(h, n uint64) uint64 {
	hi, _ := bits.Mul64(h, n)
	return hi
}

// unitFloat maps 64 random bits to [0, 1) with 53 bits of precision.
func unitFloat(h uint64) float64 {
	return float64(h>>11) * 0x1p-53
}
