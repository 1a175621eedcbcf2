// Package bench holds weir's benchmark harness. The runtime's own
// micro-benchmarks live next to the code they measure (go test -bench);
// the Nexmark suite and side-by-side peer runs will live here.
package bench
