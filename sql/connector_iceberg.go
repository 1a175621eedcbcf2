package sql

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// icebergTablePropertyPrefixes are the namespaces of Iceberg's table
// properties: options under them (and 'format-version') that are not the
// connector's own become table properties of a table the sink creates,
// as Flink's Iceberg connector passes its options to the table it
// creates. Other unknown options stay errors.
var icebergTablePropertyPrefixes = []string{"write.", "read.", "commit.", "history.", "gc.", "format.", "schema.", "snapshot.", "manifest.", "compatibility.", "engine."}

// icebergSink reads the Iceberg connector's options (docs/iceberg.md).
func icebergSink(ctx context.Context, s sinkSpec) (arrowflow.Sink, error) {
	o := s.opts
	io := icebergsink.Options{}
	var err error
	io.Catalog.Type, err = o.oneOf("catalog-type", "sql", "sql", "rest")
	if err != nil {
		return nil, err
	}
	io.Catalog.Name = o.str("catalog-name", "")
	io.Catalog.URI = o.str("uri", "")
	io.Catalog.Warehouse = o.str("warehouse", "")
	if io.Catalog.Warehouse == "" && io.Catalog.URI == "" {
		return nil, hinted(semErrorf(o.pos, "table %s: the iceberg connector needs 'warehouse' (or a catalog 'uri')", s.table),
			"'warehouse' = 'path/to/warehouse' uses the embedded SQLite catalog there")
	}
	props := map[string]string{}
	for _, p := range []string{"s3.", "gcs.", "adls.", "client.", "rest.", "io-impl"} {
		for k, v := range o.withPrefix(p, false) {
			props[k] = v
		}
	}
	for _, k := range []string{"credential", "token", "scope", "oauth2-server-uri"} {
		if v, ok := o.get(k); ok {
			props[k] = v
		}
	}
	io.Catalog.Properties = props
	db := o.str("catalog-database", "default")
	tbl := o.str("catalog-table", s.table)
	if strings.Contains(tbl, ".") {
		io.Table = tbl
	} else {
		io.Table = db + "." + tbl
	}
	io.PartitionBy = s.partitionBy
	if io.TargetFileSize, err = o.integer("write.target-file-size-bytes", 0); err != nil {
		return nil, err
	}
	if v, ok := o.get("format-version"); ok && v != "1" && v != "2" && v != "3" {
		return nil, o.errorf("format-version", "%q: want 1, 2 or 3", v)
	}
	upsert, err := o.boolean("write.upsert.enabled", false)
	if err != nil {
		return nil, err
	}
	if upsert {
		if len(s.primaryKey) == 0 {
			return nil, o.errorf("write.upsert.enabled", "upserts need a PRIMARY KEY (...) NOT ENFORCED on the table")
		}
		if v, ok := o.get("format-version"); ok && v == "1" {
			return nil, o.errorf("format-version", "upserts need format version 2 or later (equality deletes)")
		}
		io.UpsertKeys = s.primaryKey
	}
	// Table properties of a created table: Iceberg's namespaces, the
	// connector options among them included (as Flink).
	io.Properties = map[string]string{}
	for _, p := range icebergTablePropertyPrefixes {
		for k, v := range o.withPrefix(p, false) {
			io.Properties[k] = v
		}
	}
	if v, ok := o.get("format-version"); ok {
		io.Properties["format-version"] = v
	}
	if io.Rewrite, err = icebergMaintenance(o); err != nil {
		return nil, err
	}
	sink, err := icebergsink.New(ctx, io, s.schema)
	if err != nil {
		return nil, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return sink, nil
}

// icebergMaintenance reads the options of Flink's Iceberg sink
// maintenance that weir runs: compaction ('flink-maintenance.rewrite.*',
// icebergsink.RewriteOptions), with Flink's defaults. Expiring snapshots
// and deleting orphan files in the job are refused with a pointer to
// `weir table expire`.
func icebergMaintenance(o *tableOptions) (icebergsink.RewriteOptions, error) {
	const p = "flink-maintenance.rewrite."
	r := icebergsink.RewriteOptions{}
	var err error
	if r.Enabled, err = o.boolean(p+"enabled", false); err != nil {
		return r, err
	}
	ints := []struct {
		key string
		def int64
		dst func(int64)
	}{
		{"schedule.commit-count", icebergsink.DefaultRewriteCommitCount, func(v int64) { r.CommitCount = int(v) }},
		{"schedule.data-file-count", icebergsink.DefaultRewriteDataFileCount, func(v int64) { r.DataFileCount = int(v) }},
		{"schedule.interval-second", int64(icebergsink.DefaultRewriteInterval / time.Second), func(v int64) { r.Interval = time.Duration(v) * time.Second }},
		{"target-file-size-bytes", 0, func(v int64) { r.TargetFileSize = v }},
		{"min-input-files", int64(icebergsink.DefaultMinInputFiles), func(v int64) { r.MinInputFiles = int(v) }},
	}
	for _, opt := range ints {
		v, err := o.integer(p+opt.key, opt.def)
		if err != nil {
			return r, err
		}
		least := int64(0)
		if opt.key == "min-input-files" {
			least = 1
		}
		if v < least {
			return r, o.errorf(p+opt.key, "%d: must be at least %d", v, least)
		}
		opt.dst(v)
	}
	if r.Enabled && r.CommitCount == 0 && r.DataFileCount == 0 && r.Interval == 0 {
		return r, o.errorf(p+"enabled", "no schedule: set one of %sschedule.commit-count, .data-file-count or .interval-second above 0", p)
	}
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		if !strings.HasPrefix(k, "flink-maintenance.") || o.used[k] {
			continue
		}
		if strings.HasPrefix(k, p) {
			return r, hinted(o.errorf(k, "weir's compaction does not have this option"),
				"weir reads "+p+"enabled, schedule.commit-count, schedule.data-file-count, schedule.interval-second, target-file-size-bytes and min-input-files")
		}
		return r, hinted(o.errorf(k, "weir runs only the compaction of Flink's sink maintenance (%senabled)", p),
			"expire snapshots with `weir table expire`, next to the job or from cron (docs/table.md)")
	}
	return r, nil
}
