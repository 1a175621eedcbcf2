// Package datagen is a deterministic, seeded source of generated Arrow
// record batches, for demos, tests and benchmarks.
//
// # Determinism
//
// Every value is a pure function of (Config.Seed, field index, global row
// number r): row r's value of a field is derived from a SplitMix64-style
// hash of the seed, the field and r, never from a sequential random number
// generator. So the multiset of rows a Source produces is the same whatever
// the parallelism, the number of splits, the batch size, the rate limit or
// the restarts from checkpointed positions; only the order of rows and
// their grouping into batches differ. Source.Row computes one row directly,
// which tests use as an oracle.
//
// # Splits
//
// Rows are dealt to a fixed number of splits (Config.Splits, 8 by default):
// row r belongs to split r mod Splits, so split s generates rows s, s+S,
// s+2S, ... (while r < Rows, when Rows bounds the source). Splits, not
// subtasks, carry positions: a split's position is the next row number it
// will generate, so a job can restore with another parallelism as long as
// Splits stays the same. A reader generates one batch from one split at a
// time, rotating round-robin over its unfinished splits.
//
// # Event time
//
// When an event-time column is configured, row r's event time is
// Start + r*Interval - jitter(r), with jitter(r) uniform in
// [0, MaxOutOfOrderness] and derived from the hash like every other value.
// A split's watermark is the largest event time it emitted minus
// MaxOutOfOrderness (rounded up to the column's unit) minus 1ns, so no
// generated row is ever late; a reader's watermark is the minimum over its
// unfinished splits.
//
// # Rate
//
// Config.RowsPerSecond limits the whole source; each reader gets a share
// proportional to its number of splits. A rate-limited reader never blocks
// for more than about 50ms in Next: when nothing is due it returns a zero
// arrowflow.Batch, so that the runtime can emit epoch barriers on time.
package datagen
