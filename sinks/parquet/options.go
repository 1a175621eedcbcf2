package parquet

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

const (
	// DefaultTargetFileSize is the size at which a file is closed and the
	// next one started, when Options.TargetFileSize is zero.
	DefaultTargetFileSize = 128 << 20
	// DefaultRowGroupSize is the number of rows per Parquet row group when
	// Options.RowGroupSize is zero. A row group is buffered in memory
	// (compressed) until it is complete, once per open partition, so it is
	// kept well below the file size; 128 Ki rows is close to DuckDB's
	// 122,880 and large enough for readers to skip by statistics.
	DefaultRowGroupSize = 128 << 10
	// DefaultCompression is the codec when Options.Compression is empty.
	DefaultCompression = "zstd"
)

// Options configures a Sink. Only Path is required.
type Options struct {
	// Path is the table's folder. It is created if missing. The sink
	// writes data files under it (in Hive-style partition folders when
	// PartitionBy is set) and its bookkeeping under Path/_weir.
	Path string
	// PartitionBy lists the columns whose values name the partition
	// folders, outermost first: PartitionBy {"day", "region"} writes
	// Path/day=2026-01-02/region=eu/part-....parquet. The columns must
	// have an integer, boolean, string or date type; like Hive and Spark,
	// the sink writes them in the folder names only, not in the files.
	PartitionBy []string
	// TargetFileSize is the size in bytes at which a file is finished and
	// the next one of its partition started (default 128 MiB). Files also
	// end at every epoch's pre-commit, so an epoch's files are smaller
	// when less than this arrives per partition during one epoch.
	TargetFileSize int64
	// Compression is the Parquet codec: "zstd" (default), "snappy" or
	// "none".
	Compression string
	// RowGroupSize is the number of rows per row group (default
	// DefaultRowGroupSize).
	RowGroupSize int64

	// Format is the data files' format: FormatParquet (the default),
	// FormatCSV or FormatJSON. CSV and JSON files hold one row per line,
	// written by package format's encoders with FormatOptions (csv.*,
	// json.*, as Flink names them). Compression and RowGroupSize apply to
	// Parquet only. ReadCommitted reads Parquet tables only; CommittedFiles
	// lists the files of any format.
	Format        string
	FormatOptions map[string]string

	// RolloverInterval and InactivityInterval finish a file that has been
	// open that long, or not written to for that long (zero: never),
	// checked when a batch arrives, at most every CheckInterval. Files
	// also end at every epoch's pre-commit whatever the policy says, so
	// that each epoch's output is committed exactly once: an interval
	// longer than the checkpoint interval has no effect.
	RolloverInterval, InactivityInterval, CheckInterval time.Duration

	// PartitionCommit writes a success file into partitions once they are
	// complete (zero: never). See PartitionCommit.
	PartitionCommit PartitionCommit

	// Now is the processing-time clock of rolling and process-time
	// partition commits; nil is the task's clock (arrowflow.TaskInfo.Clock)
	// in writers and time.Now in Commit. Tests set it.
	Now func() time.Time
}

// codecs maps Options.Compression to the Parquet codec.
var codecs = map[string]compress.Compression{
	"zstd":   compress.Codecs.Zstd,
	"snappy": compress.Codecs.Snappy,
	"none":   compress.Codecs.Uncompressed,
}

// validate checks o and returns it with defaults filled in.
func (o Options) validate() (Options, error) {
	var errs []error
	if o.Path == "" {
		errs = append(errs, errors.New("Path is empty"))
	} else {
		o.Path = filepath.Clean(o.Path)
	}
	seen := make(map[string]bool, len(o.PartitionBy))
	for _, c := range o.PartitionBy {
		switch {
		case c == "":
			errs = append(errs, errors.New("PartitionBy has an empty column name"))
		case seen[c]:
			errs = append(errs, fmt.Errorf("PartitionBy lists column %q twice", c))
		}
		seen[c] = true
	}
	o.PartitionBy = slices.Clone(o.PartitionBy)
	switch {
	case o.TargetFileSize < 0:
		errs = append(errs, fmt.Errorf("TargetFileSize %d is negative", o.TargetFileSize))
	case o.TargetFileSize == 0:
		o.TargetFileSize = DefaultTargetFileSize
	}
	switch {
	case o.RowGroupSize < 0:
		errs = append(errs, fmt.Errorf("RowGroupSize %d is negative", o.RowGroupSize))
	case o.RowGroupSize == 0:
		o.RowGroupSize = DefaultRowGroupSize
	}
	if o.Compression == "" {
		o.Compression = DefaultCompression
	}
	if _, ok := codecs[o.Compression]; !ok {
		errs = append(errs, fmt.Errorf("Compression %q is not one of zstd, snappy, none", o.Compression))
	}
	if o.Format == "" {
		o.Format = FormatParquet
	}
	if _, ok := formatExtensions[o.Format]; !ok {
		errs = append(errs, fmt.Errorf("Format %q is not one of parquet, csv, json", o.Format))
	}
	if o.RolloverInterval < 0 || o.InactivityInterval < 0 || o.CheckInterval < 0 {
		errs = append(errs, errors.New("RolloverInterval, InactivityInterval and CheckInterval must not be negative"))
	}
	o.FormatOptions = maps.Clone(o.FormatOptions)
	if o.PartitionCommit.enabled() {
		pc, err := o.PartitionCommit.validate(o.PartitionBy)
		if err != nil {
			errs = append(errs, err)
		}
		o.PartitionCommit = pc
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("parquet sink: %w", err)
	}
	return o, nil
}
