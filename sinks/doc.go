// Package sinks is the parent of weir's sink connectors. Each sub-package
// implements arrowflow.Sink: a two-phase writer per subtask (write,
// pre-commit at each epoch barrier) and a commit of every subtask's
// payloads once the epoch's checkpoint is recorded.
//
//   - print: human-readable rows on standard output (not transactional)
//   - blackhole: discards rows, counting them (for benchmarks)
//   - collect: keeps committed rows in memory (for tests and embedding)
//
// Kafka, Iceberg and Parquet sinks follow in their own sub-packages.
package sinks
