// Package kernels is weir's library of vectorized kernels over Apache Arrow
// record batches: expressions (Compile), filters (CompileFilter),
// projections (CompileProjection), hashing of key columns (HashColumns),
// partitioning by key group (Partitioner), gathering rows (Take) and hash
// group-by with aggregates (GroupTable, GroupBy, Accumulator).
//
// A kernel is a function over typed slices, validity bitmaps and an
// optional selection vector (increasing row indices still alive; nil means
// every row), writing into an output it is given. Type dispatch happens
// once, when an expression or group-by is compiled against a schema, never
// per row, and compiled objects reuse their scratch memory, so steady-state
// processing allocates nothing per batch beyond the output arrays.
// Compiled objects are therefore used by one goroutine at a time.
//
// Integer overflow and integer division by zero are errors naming the
// expression and row, not wrapped values. docs/kernels.md in the
// repository describes types, NULL semantics and every function.
//
// The package imports only Arrow and can be used without the rest of weir.
package kernels
