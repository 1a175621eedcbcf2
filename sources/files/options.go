package files

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// DefaultBatchSize is the largest number of rows per batch when
// Options.BatchSize is zero.
const DefaultBatchSize = 8192

// Format names for Options.Format besides the line-delimited formats of
// package format.
const (
	// Parquet reads Parquet files through arrow-go's pqarrow.
	Parquet = "parquet"
)

// lineFormats are the formats of package format read one record per line.
// avro and avro-confluent are binary, without line boundaries, and are
// refused.
var lineFormats = []string{"csv", "json", "raw"}

// ErrorPolicy says what happens to a line of a text file that the format
// rejects. The names and values are those of sources/kafka's policies.
// Parquet files have no malformed records: their errors always fail.
type ErrorPolicy string

const (
	// FailOnError fails the job with an error naming the file, the line
	// number and the format's reason (the default).
	FailOnError ErrorPolicy = "fail"
	// SkipOnError drops the line and counts it (Stats.Skipped).
	SkipOnError ErrorPolicy = "skip"
	// DeadLetterOnError writes the line, where it came from and why it was
	// rejected to a file under Options.DeadLetterPath, and counts it
	// (Stats.DeadLettered). Like the Kafka source's dead-letter topic it
	// is at least once: a line may be written again when the job recovers
	// from a checkpoint taken before it.
	DeadLetterOnError ErrorPolicy = "dlq"
)

// Options configure a file Source. Path, Format and Schema are required
// (Schema may be left out for the raw format).
type Options struct {
	// Path is a file or a folder ('path'). A folder is read recursively:
	// every regular file under it, in path order, except hidden ones
	// (names starting with ".") and names starting with "_" (unless they
	// contain "="), at any depth, as Hive, Spark and Flink skip them
	// (_SUCCESS, .crc files, _temporary folders). A table written by
	// sinks/parquet (a folder with a _weir folder) is read as its commit
	// log lists it: exactly its committed files, also when Path is one of
	// its partition folders or files, or a folder above it.
	Path string
	// Format is the files' format ('format'): Parquet, or one of the
	// line-delimited formats of package format, "json" (JSON Lines),
	// "csv" or "raw" (each line one value). avro and avro-confluent are
	// not line-delimited and are refused.
	Format string
	// FormatOptions are the format's options under Flink's names, as
	// package format takes them ("csv.field-delimiter",
	// "json.timestamp-format.standard", ...). Parquet takes none.
	FormatOptions map[string]string
	// Schema are the declared columns, in the order of the batches the
	// source produces: the files' columns (Parquet: matched by name,
	// case-sensitive; csv: by position) and the partition columns. It is
	// required, except for raw, where nil means one nullable binary column
	// "value".
	Schema *arrow.Schema
	// PartitionBy names the declared columns whose values come from
	// Hive-style folder names (col=value/), outermost first (Flink's
	// PARTITIONED BY). Every file must lie in a folder of each. When
	// empty, the partition columns are the declared columns that name a
	// col=value folder of any file listed (and then every file must lie
	// in one of each too). A table written by sinks/parquet is read
	// with the partition columns its commit log records.
	PartitionBy []string
	// BatchSize is the largest number of rows per batch (default
	// DefaultBatchSize). A batch never holds rows of two files.
	BatchSize int
	// OnError is the policy for lines of text files that the format
	// rejects (default FailOnError).
	OnError ErrorPolicy
	// DeadLetterPath is the folder that receives rejected lines under
	// DeadLetterOnError, one JSON Lines file per reader and run; it is
	// created if missing.
	DeadLetterPath string

	// EventTime names the event-time column, a declared timestamp column
	// (Flink's WATERMARK FOR column AS column - INTERVAL ...). Empty: no
	// event time.
	EventTime string
	// MaxOutOfOrderness is how far behind the largest event time seen in
	// a file a row may be and still be on time: each file's watermark is
	// its largest event time minus this.
	MaxOutOfOrderness time.Duration
	// FilesInEventTimeOrder says that, in path order, no row of a file is
	// more than MaxOutOfOrderness behind the newest row of an earlier file
	// (files in date partitions, say). Then only the file being read holds
	// a subtask's watermark back, so windows fire while the source reads,
	// as with Flink's file source. Otherwise (the default) every file of
	// the subtask not read to its end holds it back: no row is late
	// because of the order of the files, but the watermark stays at its
	// minimum until the subtask reaches its last file, and windows fire
	// only then.
	FilesInEventTimeOrder bool
}

// withDefaults returns a copy of o (not sharing its maps and slices) with
// defaults applied to zero fields.
func (o Options) withDefaults() Options {
	o.FormatOptions = maps.Clone(o.FormatOptions)
	o.PartitionBy = slices.Clone(o.PartitionBy)
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.OnError == "" {
		o.OnError = FailOnError
	}
	return o
}

// validate checks the settings that need no file system access; errors
// name the field at fault.
func (o *Options) validate() error {
	var errs []error
	if o.Path == "" {
		errs = append(errs, errors.New("Path is required"))
	}
	switch {
	case o.Format == Parquet:
		if len(o.FormatOptions) > 0 {
			errs = append(errs, fmt.Errorf("format parquet takes no FormatOptions (got %s)", sortedKeys(o.FormatOptions)))
		}
	case slices.Contains(lineFormats, o.Format):
	case o.Format == "avro" || o.Format == "avro-confluent":
		errs = append(errs, fmt.Errorf("format %q is not line-delimited; the files source reads parquet or one record per line: %s",
			o.Format, lineFormatList()))
	case o.Format == "":
		errs = append(errs, fmt.Errorf("Format is required: parquet, %s", lineFormatList()))
	default:
		errs = append(errs, fmt.Errorf("unknown format %q: want parquet, %s", o.Format, lineFormatList()))
	}
	if o.Schema == nil && o.Format != "raw" {
		errs = append(errs, errors.New("Schema (the declared columns) is required"))
	}
	if o.Schema != nil {
		names := map[string]bool{}
		for _, f := range o.Schema.Fields() {
			if names[f.Name] {
				errs = append(errs, fmt.Errorf("Schema declares column %q twice", f.Name))
			}
			names[f.Name] = true
		}
	}
	switch {
	case o.BatchSize < 0:
		errs = append(errs, fmt.Errorf("BatchSize %d must be positive (0 = %d)", o.BatchSize, DefaultBatchSize))
	case o.BatchSize > 1<<24:
		errs = append(errs, fmt.Errorf("BatchSize %d is too large; at most %d", o.BatchSize, 1<<24))
	}
	switch o.OnError {
	case FailOnError, SkipOnError:
	case DeadLetterOnError:
		if o.DeadLetterPath == "" {
			errs = append(errs, errors.New("error policy dlq needs a folder for rejected lines (DeadLetterPath)"))
		}
	default:
		errs = append(errs, fmt.Errorf("error policy %q: want fail, skip or dlq", o.OnError))
	}
	if o.MaxOutOfOrderness < 0 {
		errs = append(errs, fmt.Errorf("MaxOutOfOrderness %s must not be negative", o.MaxOutOfOrderness))
	}
	seen := map[string]bool{}
	for _, c := range o.PartitionBy {
		switch {
		case c == "":
			errs = append(errs, errors.New("PartitionBy has an empty column name"))
		case seen[c]:
			errs = append(errs, fmt.Errorf("PartitionBy lists column %q twice", c))
		case o.Schema != nil && len(o.Schema.FieldIndices(c)) == 0:
			errs = append(errs, fmt.Errorf("PartitionBy column %q is not a declared column", c))
		}
		seen[c] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("files source: %w", err)
	}
	return nil
}

func lineFormatList() string {
	return `"json", "csv" or "raw"`
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
