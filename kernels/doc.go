// Package kernels is weir's library of vectorized kernels over Apache Arrow
// arrays: hashing of key columns, gathering rows by index, and (as the
// library grows) expressions, filters, projections and hash group-by.
//
// A kernel is a function over typed slices, validity bitmaps and an optional
// selection vector (increasing row indices still alive; nil means every
// row), writing into an output it is given. Type dispatch happens once per
// call, never per row.
//
// The package imports only Arrow and can be used without the rest of weir.
package kernels
