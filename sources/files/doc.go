// Package files is a bounded source that reads a folder (or one file)
// once, to its end: backfills, batch inputs, the output of another weir
// job.
//
// # Files
//
// Path is a file or a folder. A folder is read recursively, every
// regular file under it, sorted by its slash-separated path relative to
// the folder, which is also its split id; hidden names and names starting
// with "_" (unless they contain "=") are skipped at any depth, as Hive,
// Spark and Flink skip them. A folder with a _weir folder is a table
// written by sinks/parquet: exactly the files its commit log lists are
// read (parquet.CommittedFiles), so files of uncommitted, aborted or
// half-committed epochs never are; this holds also when Path is a
// partition folder or a file of such a table, or a folder above one.
//
// # Formats
//
// parquet is read through arrow-go's pqarrow, row groups in batches of
// BatchSize rows, projected by name (case-sensitive) to the declared
// columns; only the needed leaf columns are decoded. A declared column
// that a file lacks, or whose type cannot be read as declared, fails the
// job naming the file and the column. Safe widenings are read (int32 as
// int64, float32 as float64, timestamp[ms] as timestamp[us], string as
// large_string, ...; see the converter type for the list); narrowing
// and lossy conversions are refused. A declared NOT NULL column that holds
// nulls fails.
//
// json (JSON Lines), csv and raw are read one record per line through
// package format, with its options. Lines end with "\n" or "\r\n"; the
// last may lack it. Blank lines are skipped (except for raw, where every
// line is a value), and so is a UTF-8 byte order mark. A CSV field cannot
// span lines. avro and avro-confluent are not line-delimited and are
// refused. Compressed text files are not supported.
//
// # Partition columns
//
// Declared columns named by Hive-style folders (col=value/, Hive-escaped
// as sinks/parquet writes them) take their values from the folder names,
// parsed as the declared type; __HIVE_DEFAULT_PARTITION__ (and an empty
// value) is NULL. Options.PartitionBy lists them explicitly; otherwise
// they are the declared columns some file's folders name. The value in
// the folder wins over a column of that name in a file.
//
// # Splits and positions
//
// Each file is a split; a subtask reads its files one after the other. A
// file's position records the rows emitted from it, for text also the
// byte offset and number of the next line, and the file's size and its
// neighbours in the listing. Parquet resumes by skipping whole row groups
// by their row counts, then rows within one row group (pqarrow's
// SeekToRow, or decoding and dropping them when a column read is in a
// list or map); text resumes by seeking to the offset. Positions are per
// file, so a job restores with any parallelism. A restored job fails,
// naming the file, when a file it had read from changed size or when a
// listed file disappeared since the checkpoint (found through its
// neighbours' positions). Files added to the folder since the checkpoint
// are read from their start.
//
// # Bad lines
//
// Options.OnError applies to lines a text format rejects: fail (the
// default; the error names the file, the line number and the format's
// reason), skip (counted in Stats.Skipped) or dlq (written with their
// origin and reason to a JSON Lines file per reader under
// Options.DeadLetterPath; see DeadLetter). Parquet files fail on any
// error.
//
// # Event time
//
// With Options.EventTime, each file's watermark is its largest event
// time minus MaxOutOfOrderness, and a subtask's watermark is the minimum
// over its files still to read (or only the one being read, with
// FilesInEventTimeOrder); it is MaxEventTime once every file is read.
package files
