// Package kafka is weir's Kafka source: it reads the partitions of one or
// more topics as Arrow record batches, with positions recorded in weir's
// checkpoints, so that a job reading Kafka is exactly once end to end.
// Its options follow Flink's Kafka SQL connector (see Options, whose
// fields name the Flink option each one stands for).
//
// # Splits
//
// Each partition is a split, named "topic/partition". Splits lists the
// partitions of the topics when the job starts, ordered by topic name and
// partition number, and the runtime deals them to the source's subtasks
// (split i to subtask i mod parallelism). Each subtask reads its
// partitions with its own franz-go client, assigned directly: the source
// never joins a consumer group, so nothing rebalances under it.
//
// # Positions
//
// A split's position is the offset of the next record to read, written as
// decimal text ("42"); a bounded split appends its end offset ("42:100").
// Positions are exactly "after the last record of the last batch returned":
// a batch takes at most BatchSize rows from what the client fetched, and
// records fetched but not yet returned stay buffered in the client for the
// next batch, so none slips past a barrier. Transaction markers advance
// the position too (they are read, never returned as rows), so a position
// can be beyond the last data record.
//
// A restored position always wins: StartupMode only decides where splits
// without one start. Positions are restored by split name, so a job can
// restore with another parallelism, and partitions discovered while
// running are restored like the others.
//
// # Start and end
//
// Where a partition starts (StartupMode: earliest-offset, latest-offset,
// group-offsets, timestamp, specific-offsets) and, for a bounded source,
// where it ends (BoundedMode: latest-offset, timestamp, specific-offsets)
// is resolved once, by Splits, when the job starts. Under read_committed,
// "latest" is the last stable offset: an open transaction is not waited
// for. A bounded source ends (its readers return io.EOF) when every
// partition's position reached its end offset; its checkpointed positions
// carry those end offsets, so a bounded job that recovers reads exactly
// the range of its first run.
//
// # Transactions
//
// By default the source reads with isolation read_committed: records of
// aborted transactions are never returned, and records of open ones only
// once they commit. Aborted records and markers take offsets, so a
// position moves in jumps; that is why positions are offsets to resume
// at, not counts.
//
// # Partition discovery
//
// An unbounded source looks for new partitions every
// PartitionDiscoveryInterval (30 s by default; bounded sources do not
// look, as in Flink). A partition that was not in the split list when the
// job started is adopted by exactly one subtask, the FNV-1a hash of its
// split name modulo the parallelism, which every subtask computes on its
// own; it is read from its earliest offset, so records written between the
// partition's creation and its discovery are not lost. A subtask without
// partitions keeps looking and reports itself idle meanwhile.
//
// A partition created while the job was stopped is in the split list of
// the run that restores it, without a position, so it starts by
// StartupMode: with latest-offset, records written to it before the
// restart are skipped (Flink would read it from the earliest offset; the
// runtime does not yet tell a source that it is restoring).
//
// # Watermarks
//
// With an event-time column (Options.EventTime: a timestamp column of the
// value, or the "timestamp" metadata column), each partition's watermark is
// the largest event time read from it minus MaxOutOfOrderness, and a
// subtask's watermark is the minimum over its partitions (see
// window.SplitWatermarks). A partition that produced no row for
// IdleTimeout stops holding the watermark back; a subtask all of whose
// partitions are idle, or that has none, reports itself idle
// (arrowflow.IdleReporter) so that it does not stall event time
// downstream. Without an idle timeout an empty partition holds the
// watermark back for ever, as in Flink.
//
// # Bad records
//
// A record whose value the decoder rejects is handled by Options.OnError:
// "fail" (the default) fails the job with an error naming the topic,
// partition and offset and the decoder's reason; "skip" drops it and counts
// it (Stats.Skipped); "dlq" writes the raw record (key, value, headers,
// timestamp) to DeadLetterTopic with headers saying why (HeaderError) and
// where it came from (HeaderTopic, HeaderPartition, HeaderOffset), and
// counts it. Dead letters are written at least once: before a checkpoint
// records positions past a bad record its dead letter is acknowledged, but
// a job that recovers from an earlier checkpoint writes it again. Records
// with a null value (tombstones) are dropped and counted
// (Stats.Tombstones), as Flink's Kafka source drops them.
//
// # Guarantees
//
// Within a run, each record of a partition is returned once, in offset
// order; after a recovery the job resumes exactly at the positions of its
// last committed epoch, so with transactional sinks the output is exactly
// once. Consumer-group offsets (Options.GroupID) are committed after each
// committed epoch for monitoring only and never read back except by
// group-offsets startup. Records removed by retention before they were
// read are lost: the client resumes at the log start (Stats.DataLoss
// counts the losses the client reports).
package kafka
