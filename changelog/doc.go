// Package changelog holds weir's updating operators, Flink SQL's dynamic
// tables done the columnar way: operators that consume and produce
// changelogs (batches whose rows carry an arrowflow.RowKind: insert,
// update-before, update-after, delete) instead of append-only streams.
//
//   - GroupAggregate: GROUP BY without a window, and SELECT DISTINCT.
//   - Join: regular joins (INNER, LEFT, RIGHT, FULL OUTER) with a residual
//     condition, over append-only and updating inputs.
//   - Rank: deduplication and Top-N (ROW_NUMBER, RANK, DENSE_RANK) outside
//     windows.
//
// Each operator is keyed (put it behind arrowflow.KeyBy on its keys), keeps
// its state columnar (kernels.GroupTable group ids, slices indexed by them,
// rows in a state/rowstore.Store), snapshots it by key group so that a job
// restores into another parallelism, and can bound it with a state TTL, as
// Flink's table.exec.state.ttl.
//
// Operators that update their results fold the changes of one epoch
// (arrowflow.EpochFlusher): a key updated many times between two
// checkpoints emits one update-before/update-after pair when the epoch
// closes, where Flink emits one pair per input row unless mini-batch is
// configured. See docs/sql.md, "Updating results".
package changelog
