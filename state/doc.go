// Package state holds weir's keyed, columnar operator state and its
// snapshots.
//
// State is organised by key group: a key's 64-bit hash maps to one of
// MaxParallelism key groups (128 by default), and a subtask of an operator
// with parallelism P owns a contiguous KeyGroupRange of them. Because
// snapshots are written per key group, a job can be restored with another
// parallelism: each new subtask reads only the key groups it now owns.
//
// Operators write their state as Arrow record batches (keys and
// accumulators as columns, never Go maps serialised row by row) through a
// SnapshotWriter obtained from a Store; a Handle describes the finished
// snapshot and is what checkpoint manifests reference.
//
// This package imports only Arrow and weir's kernels.
package state
