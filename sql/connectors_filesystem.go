package sql

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	parquetsink "github.com/weirflow/weir/sinks/parquet"
)

// Flink's defaults of the filesystem sink's rolling policy.
const (
	defaultRolloverInterval   = 30 * time.Minute
	defaultCheckInterval      = time.Minute
	defaultInactivityInterval = 30 * time.Minute
)

// filesystemSink writes the files of Flink's filesystem connector under
// 'path' (docs/parquet.md): 'format' parquet ('parquet.compression',
// 'parquet.block.size': rows per row group, weir's reading), csv or json
// (one row per line, with the format's csv.* and json.* options), in
// Hive-style partition folders of the PARTITIONED BY columns, each
// epoch's files committed exactly once. Rolling:
// 'sink.rolling-policy.file-size', '.rollover-interval',
// '.inactivity-interval' and '.check-interval'; files also end at every
// checkpoint. Partition commits: 'sink.partition-commit.trigger'
// (process-time or partition-time), '.delay', '.policy.kind'
// (success-file; metastore and custom are refused), '.success-file.name',
// '.watermark-time-zone', and 'partition.time-extractor.kind' (default),
// '.timestamp-pattern', '.timestamp-formatter'.
func filesystemSink(s sinkSpec) (arrowflow.Sink, error) {
	o := s.opts
	path, err := o.required("path")
	if err != nil {
		return nil, err
	}
	po := parquetsink.Options{Path: strings.TrimPrefix(path, "file://"), PartitionBy: s.partitionBy}
	switch f := o.str("format", ""); f {
	case "parquet":
		po.Format = parquetsink.FormatParquet
		po.Compression = strings.ToLower(o.str("parquet.compression", ""))
		if po.Compression == "uncompressed" {
			po.Compression = "none"
		}
		if po.RowGroupSize, err = o.integer("parquet.block.size", 0); err != nil {
			return nil, err
		}
	case "csv", "json":
		name, fopts, err := formatOptions(o)
		if err != nil {
			return nil, err
		}
		po.Format, po.FormatOptions = name, fopts
		// Check the format's options on the files' columns now rather
		// than when the job runs.
		if _, err := parquetsink.NewRowEncoder(name, dataSchema(s.schema, s.partitionBy), fopts); err != nil {
			return nil, o.errorf("format", "%v", err)
		}
	default:
		return nil, hinted(o.errorf("format", "%q: the filesystem sink writes parquet, csv or json", f), "set 'format' = 'parquet', 'csv' or 'json'")
	}
	if po.TargetFileSize, err = o.size("sink.rolling-policy.file-size", 0); err != nil {
		return nil, err
	}
	if po.RolloverInterval, err = o.duration("sink.rolling-policy.rollover-interval", defaultRolloverInterval); err != nil {
		return nil, err
	}
	if po.CheckInterval, err = o.duration("sink.rolling-policy.check-interval", defaultCheckInterval); err != nil {
		return nil, err
	}
	if po.InactivityInterval, err = o.duration("sink.rolling-policy.inactivity-interval", defaultInactivityInterval); err != nil {
		return nil, err
	}
	if on, err := o.boolean("sink.shuffle-by-partition.enable", false); err != nil {
		return nil, err
	} else if on {
		return nil, hinted(o.errorf("sink.shuffle-by-partition.enable", "weir does not shuffle rows by partition before the sink"),
			"leave it out: each subtask writes its own files in every partition it sees")
	}
	if on, err := o.boolean("auto-compaction", false); err != nil {
		return nil, err
	} else if on {
		return nil, hinted(o.errorf("auto-compaction", "weir does not compact the files it wrote"), "leave it out, or raise 'sink.rolling-policy.file-size' and the checkpoint interval")
	}
	if po.PartitionCommit, err = partitionCommit(o, s.partitionBy); err != nil {
		return nil, err
	}
	sink, err := parquetsink.New(po)
	if err != nil {
		return nil, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return sink, nil
}

// dataSchema is schema without the partition columns: the columns in the
// files.
func dataSchema(schema *arrow.Schema, partitionBy []string) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range schema.Fields() {
		if !contains(partitionBy, f.Name) {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// partitionCommit reads Flink's partition commit options. Without
// 'sink.partition-commit.policy.kind' nothing is committed, as in Flink;
// a table without PARTITIONED BY has no partitions to commit, and the
// options are read (and checked) only.
func partitionCommit(o *tableOptions, partitionBy []string) (parquetsink.PartitionCommit, error) {
	var pc parquetsink.PartitionCommit
	var err error
	if pc.Trigger, err = o.oneOf("sink.partition-commit.trigger", parquetsink.TriggerProcessTime,
		parquetsink.TriggerProcessTime, parquetsink.TriggerPartitionTime); err != nil {
		return pc, err
	}
	if pc.Delay, err = o.duration("sink.partition-commit.delay", 0); err != nil {
		return pc, err
	}
	if pc.Delay < 0 {
		return pc, o.errorf("sink.partition-commit.delay", "the delay is negative")
	}
	if tz, ok := o.get("sink.partition-commit.watermark-time-zone"); ok {
		if pc.Location, err = time.LoadLocation(tz); err != nil {
			return pc, o.errorf("sink.partition-commit.watermark-time-zone", "%q is not a time zone (UTC, or a name such as 'Europe/Berlin')", tz)
		}
	}
	success := false
	if kinds, ok := o.get("sink.partition-commit.policy.kind"); ok {
		for _, k := range splitList(kinds, ",") {
			switch strings.ToLower(k) {
			case "success-file":
				success = true
			case "metastore":
				return pc, hinted(o.errorf("sink.partition-commit.policy.kind", "metastore: weir has no metastore (Hive catalog) to add partitions to"),
					"use 'success-file', or write to an Iceberg table ('connector' = 'iceberg'), whose catalog tracks its files")
			case "custom":
				return pc, hinted(o.errorf("sink.partition-commit.policy.kind", "custom: weir runs no Java commit policy classes"), "use 'success-file'")
			default:
				return pc, o.errorf("sink.partition-commit.policy.kind", "%q is not success-file (nor metastore or custom, which weir refuses)", k)
			}
		}
	}
	if _, ok := o.get("sink.partition-commit.policy.class"); ok {
		return pc, hinted(o.errorf("sink.partition-commit.policy.class", "weir runs no Java commit policy classes"), "use 'sink.partition-commit.policy.kind' = 'success-file'")
	}
	name := o.str("sink.partition-commit.success-file.name", parquetsink.DefaultSuccessFile)
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return pc, o.errorf("sink.partition-commit.success-file.name", "%q is not a file name", name)
	}
	if _, err := o.oneOf("partition.time-extractor.kind", "default", "default", "custom"); err != nil {
		return pc, err
	} else if v, _ := o.get("partition.time-extractor.kind"); v == "custom" {
		return pc, hinted(o.errorf("partition.time-extractor.kind", "custom: weir runs no Java time extractor classes"),
			"use the default extractor with 'partition.time-extractor.timestamp-pattern'")
	}
	if _, ok := o.get("partition.time-extractor.class"); ok {
		return pc, o.errorf("partition.time-extractor.class", "weir runs no Java time extractor classes")
	}
	pc.TimestampPattern = o.str("partition.time-extractor.timestamp-pattern", "")
	pc.TimestampFormatter = o.str("partition.time-extractor.timestamp-formatter", "")
	if len(partitionBy) == 0 || !success {
		return parquetsink.PartitionCommit{}, nil
	}
	pc.SuccessFile = name
	// Name the option in errors about the pattern and formatter.
	if p := pc.TimestampPattern; p != "" {
		rest := p
		for _, c := range sortedByLength(partitionBy) {
			rest = strings.ReplaceAll(rest, "$"+c, "")
		}
		if i := strings.IndexByte(rest, '$'); i >= 0 {
			return pc, hinted(o.errorf("partition.time-extractor.timestamp-pattern", "%q: $%s is not a partition column", p, leadingIdent(rest[i+1:])),
				"the partition columns are "+strings.Join(partitionBy, ", "))
		}
	}
	if err := pc.Check(partitionBy); err != nil {
		return pc, o.errorf("partition.time-extractor.timestamp-formatter", "%v", err)
	}
	return pc, nil
}

// sortedByLength returns names longest first, so that $ab is replaced
// before $a.
func sortedByLength(names []string) []string {
	out := append([]string(nil), names...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func leadingIdent(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return s[:i]
		}
	}
	return s
}
