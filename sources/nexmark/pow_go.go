//go:build !s390x

package nexmark

// pow10Exact is whether pow10 may use its own path: math.Pow is the pure
// Go algorithm it replicates.
const pow10Exact = true
