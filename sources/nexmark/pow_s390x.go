//go:build s390x

package nexmark

// pow10Exact is false on s390x, where math.Pow has an assembly
// implementation that pow10 does not replicate.
const pow10Exact = false
