package sql

import (
	"context"
	"strings"

	"github.com/weirflow/weir/arrowflow"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

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
	upsert, err := o.boolean("write.upsert.enabled", false)
	if err != nil {
		return nil, err
	}
	if upsert {
		if len(s.primaryKey) == 0 {
			return nil, o.errorf("write.upsert.enabled", "upserts need a PRIMARY KEY (...) NOT ENFORCED on the table")
		}
		io.UpsertKeys = s.primaryKey
	}
	sink, err := icebergsink.New(ctx, io, s.schema)
	if err != nil {
		return nil, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return sink, nil
}
