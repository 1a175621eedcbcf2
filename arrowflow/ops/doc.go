// Package ops holds simple operators over Go functions (map, filter) and a
// few small keyed operators used by the demo and the runtime's tests. The
// vectorized operators of SQL jobs live in kernels/ and window/.
package ops
