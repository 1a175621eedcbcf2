// Package sources is the parent of weir's source connectors. Each
// sub-package implements arrowflow.Source: a replayable input divided into
// splits, read by subtasks that record a position per split at every epoch
// barrier and resume from it on recovery.
//
//   - datagen: a deterministic, seeded generator of typed rows
//   - kafka: topics' partitions as splits, offsets as positions
//   - nexmark: the Nexmark benchmark's event generator
//
// File sources follow in their own sub-package.
package sources
