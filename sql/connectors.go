package sql

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/sinks/blackhole"
	kafkasink "github.com/weirflow/weir/sinks/kafka"
	printsink "github.com/weirflow/weir/sinks/print"
	"github.com/weirflow/weir/sources/datagen"
	"github.com/weirflow/weir/sources/files"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
	"github.com/weirflow/weir/sources/nexmark"
)

// sourceConnectors and sinkConnectors name the connectors a table can
// read from and write to.
var (
	sourceConnectors = []string{"datagen", "filesystem", "kafka", "nexmark", "upsert-kafka"}
	sinkConnectors   = []string{"blackhole", "filesystem", "iceberg", "kafka", "print", "upsert-kafka"}
)

// metaColumn is a METADATA column of a table.
type metaColumn struct {
	name, key string
	typ       arrow.DataType
}

// scanSpec is what a source connector is opened with.
type scanSpec struct {
	table    string
	opts     *tableOptions
	physical []arrow.Field // the declared physical columns
	metadata []metaColumn
	// eventTime and delay: the WATERMARK is `eventTime - delay` on a
	// physical column, which a connector that tracks watermarks per
	// split (Kafka: per partition) may generate itself.
	eventTime string
	delay     time.Duration
	// partitionBy are the PARTITIONED BY columns (filesystem: read from
	// the folder names).
	partitionBy []string
	// primaryKey is the table's PRIMARY KEY (upsert-kafka's key).
	primaryKey []string
}

// scanSource is an opened source.
type scanSource struct {
	src arrowflow.Source
	// watermarked: the source generates the declared watermark itself;
	// otherwise the plan adds a watermark operator.
	watermarked bool
	// changes: the source's batches carry row kinds (a change format such
	// as debezium-json, or upsert-kafka), a retract changelog unless
	// upsert.
	changes bool
	// upsert: the changes are upserts on the table's PRIMARY KEY
	// (upsert-kafka): an insert or update-after replaces the key's row, a
	// delete carries the key columns only. The planner normalizes them
	// into a retract changelog.
	upsert bool
}

// openSource opens the source of a table with connector.
func openSource(ctx context.Context, connector string, s scanSpec) (scanSource, error) {
	var (
		res scanSource
		err error
	)
	switch connector {
	case "nexmark":
		res, err = nexmarkSource(s)
	case "datagen":
		res, err = datagenSource(s)
	case "kafka":
		res, err = kafkaSource(ctx, s)
	case "filesystem":
		res, err = filesystemSource(s)
	case "upsert-kafka":
		res, err = upsertKafkaSource(ctx, s)
	default:
		if contains(sinkConnectors, connector) {
			return scanSource{}, hinted(semErrorf(s.opts.posOf("connector"), "table %s: the %s connector can only be written to (INSERT INTO), not read", s.table, connector),
				"sources: "+strings.Join(sourceConnectors, ", "))
		}
		return scanSource{}, hinted(s.opts.errorf("connector", "unknown connector %q", connector),
			"sources: "+strings.Join(sourceConnectors, ", ")+"; sinks: "+strings.Join(sinkConnectors, ", "))
	}
	if err != nil {
		return scanSource{}, err
	}
	if len(s.metadata) > 0 && connector != "kafka" && connector != "upsert-kafka" {
		return scanSource{}, semErrorf(s.opts.pos, "table %s: the %s connector has no METADATA columns", s.table, connector)
	}
	if err := s.opts.checkUnknown(connector); err != nil {
		return scanSource{}, err
	}
	// The declared columns must exist in what the source produces.
	got := res.src.Schema()
	for _, f := range s.physical {
		idx := got.FieldIndices(f.Name)
		if len(idx) != 1 {
			return scanSource{}, semErrorf(s.opts.pos, "table %s: column %s: the %s connector has no such column (it has %s)", s.table, f.Name, connector, fieldNames(got))
		}
		if err := compatible(f.Type, got.Field(idx[0]).Type); err != nil {
			return scanSource{}, semErrorf(s.opts.pos, "table %s: column %s: %v", s.table, f.Name, err)
		}
	}
	return res, nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nexmarkSource reads Flink nexmark's options: 'events.num',
// 'first-event.rate' and 'next-event.rate' (the event-time rate; both
// equal), the standard proportions only, 'rate.limited' (pace at the
// event rate), and weir's 'seed', 'splits', 'batch-size'.
func nexmarkSource(s scanSpec) (scanSource, error) {
	o := s.opts
	cfg := nexmark.Config{}
	var err error
	if cfg.Events, err = o.integer("events.num", 0); err != nil {
		return scanSource{}, err
	}
	first, err := o.integer("first-event.rate", 10_000)
	if err != nil {
		return scanSource{}, err
	}
	next, err := o.integer("next-event.rate", first)
	if err != nil {
		return scanSource{}, err
	}
	if next != first {
		return scanSource{}, o.errorf("next-event.rate", "%d differs from 'first-event.rate' %d; weir's generator has one rate", next, first)
	}
	cfg.EventsPerSecond = first
	for key, want := range map[string]int64{"person.proportion": 1, "auction.proportion": 3, "bid.proportion": 46} {
		v, err := o.integer(key, want)
		if err != nil {
			return scanSource{}, err
		}
		if v != want {
			return scanSource{}, o.errorf(key, "%d: weir's generator has the standard proportions only (person 1, auction 3, bid 46)", v)
		}
	}
	limited, err := o.boolean("rate.limited", false)
	if err != nil {
		return scanSource{}, err
	}
	if limited {
		cfg.RateLimit = float64(first)
	}
	seed, err := o.integer("seed", 0)
	if err != nil {
		return scanSource{}, err
	}
	cfg.Seed = uint64(seed)
	splits, err := o.integer("splits", 0)
	if err != nil {
		return scanSource{}, err
	}
	cfg.Splits = int(splits)
	bs, err := o.integer("batch-size", 0)
	if err != nil {
		return scanSource{}, err
	}
	cfg.BatchSize = int(bs)
	src, err := nexmark.New(cfg)
	if err != nil {
		return scanSource{}, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return scanSource{src: src}, nil
}

// datagenSource reads Flink datagen's options: 'number-of-rows',
// 'rows-per-second' (pacing; 0 or unset: as fast as possible, where
// Flink defaults to 10000), and per field 'fields.NAME.kind' (random,
// sequence), '.min', '.max', '.start', '.end' (sequence), '.length',
// '.null-rate'; weir's 'seed' and 'splits'. A timestamp column the
// WATERMARK is on advances with the rows: 'fields.NAME.start' (a
// timestamp, default 2026-01-01 00:00:00), 'fields.NAME.interval'
// between rows (default 1 ms) and 'fields.NAME.max-out-of-orderness'.
func datagenSource(s scanSpec) (scanSource, error) {
	o := s.opts
	cfg := datagen.Config{}
	var err error
	if cfg.Rows, err = o.integer("number-of-rows", 0); err != nil {
		return scanSource{}, err
	}
	if cfg.RowsPerSecond, err = o.float("rows-per-second", 0); err != nil {
		return scanSource{}, err
	}
	seed, err := o.integer("seed", 0)
	if err != nil {
		return scanSource{}, err
	}
	cfg.Seed = uint64(seed)
	splits, err := o.integer("splits", 0)
	if err != nil {
		return scanSource{}, err
	}
	cfg.Splits = int(splits)
	for _, f := range s.physical {
		p := "fields." + f.Name + "."
		if f.Name == s.eventTime {
			cfg.EventTime.Column = f.Name
			if v, ok := o.get(p + "start"); ok {
				t, err := time.Parse("2006-01-02 15:04:05.999999999", v)
				if err != nil {
					return scanSource{}, o.errorf(p+"start", "%q is not a timestamp 'YYYY-MM-DD hh:mm:ss[.fff]'", v)
				}
				cfg.EventTime.Start = t
			}
			if cfg.EventTime.Interval, err = o.duration(p+"interval", time.Millisecond); err != nil {
				return scanSource{}, err
			}
			if cfg.EventTime.MaxOutOfOrderness, err = o.duration(p+"max-out-of-orderness", 0); err != nil {
				return scanSource{}, err
			}
			cfg.Fields = append(cfg.Fields, datagen.Field{Name: f.Name, Type: f.Type})
			continue
		}
		df := datagen.Field{Name: f.Name, Type: f.Type}
		kind, err := o.oneOf(p+"kind", "random", "random", "sequence")
		if err != nil {
			return scanSource{}, err
		}
		if kind == "sequence" {
			df.Kind = datagen.Sequence
			if df.Min, err = o.float(p+"start", 0); err != nil {
				return scanSource{}, err
			}
			end, err := o.float(p+"end", -1)
			if err != nil {
				return scanSource{}, err
			}
			if end >= df.Min && cfg.Rows == 0 {
				cfg.Rows = int64(end-df.Min) + 1 // Flink: a sequence ends the source
			}
		} else {
			if df.Min, err = o.float(p+"min", 0); err != nil {
				return scanSource{}, err
			}
			if df.Max, err = o.float(p+"max", 0); err != nil {
				return scanSource{}, err
			}
		}
		l, err := o.integer(p+"length", 0)
		if err != nil {
			return scanSource{}, err
		}
		df.Length = int(l)
		if df.NullRate, err = o.float(p+"null-rate", 0); err != nil {
			return scanSource{}, err
		}
		cfg.Fields = append(cfg.Fields, df)
	}
	src, err := datagen.New(cfg)
	if err != nil {
		return scanSource{}, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return scanSource{src: src, watermarked: s.eventTime != "" && s.delay >= cfg.EventTime.MaxOutOfOrderness}, nil
}

// kafkaSource reads Flink Kafka's options (see docs/kafka.md for the
// table of names).
func kafkaSource(ctx context.Context, s scanSpec) (scanSource, error) {
	o := s.opts
	ko := kafkasrc.Options{}
	servers, err := o.required("properties.bootstrap.servers")
	if err != nil {
		return scanSource{}, err
	}
	ko.Brokers = splitList(servers, ",")
	topic, err := o.required("topic")
	if err != nil {
		return scanSource{}, err
	}
	ko.Topics = splitList(topic, ";")
	ko.GroupID = o.str("properties.group.id", "")
	mode, err := o.oneOf("scan.startup.mode", string(kafkasrc.StartEarliest), string(kafkasrc.StartEarliest), string(kafkasrc.StartLatest),
		string(kafkasrc.StartGroupOffsets), string(kafkasrc.StartTimestamp), string(kafkasrc.StartSpecificOffsets))
	if err != nil {
		return scanSource{}, err
	}
	ko.StartupMode = kafkasrc.StartupMode(mode)
	if ms, err := o.integer("scan.startup.timestamp-millis", 0); err != nil {
		return scanSource{}, err
	} else if ms != 0 {
		ko.StartupTimestamp = time.UnixMilli(ms)
	}
	if v, ok := o.get("scan.startup.specific-offsets"); ok {
		if len(ko.Topics) != 1 {
			return scanSource{}, o.errorf("scan.startup.specific-offsets", "needs exactly one topic")
		}
		if ko.SpecificOffsets, err = kafkasrc.ParseSpecificOffsets(ko.Topics[0], v); err != nil {
			return scanSource{}, o.errorf("scan.startup.specific-offsets", "%v", err)
		}
	}
	bmode, err := o.oneOf("scan.bounded.mode", string(kafkasrc.Unbounded), string(kafkasrc.Unbounded), string(kafkasrc.BoundedLatest),
		string(kafkasrc.BoundedByTimestamp), string(kafkasrc.BoundedSpecificOffsets))
	if err != nil {
		return scanSource{}, err
	}
	ko.BoundedMode = kafkasrc.BoundedMode(bmode)
	if ms, err := o.integer("scan.bounded.timestamp-millis", 0); err != nil {
		return scanSource{}, err
	} else if ms != 0 {
		ko.BoundedTimestamp = time.UnixMilli(ms)
	}
	if v, ok := o.get("scan.bounded.specific-offsets"); ok {
		if len(ko.Topics) != 1 {
			return scanSource{}, o.errorf("scan.bounded.specific-offsets", "needs exactly one topic")
		}
		if ko.BoundedOffsets, err = kafkasrc.ParseSpecificOffsets(ko.Topics[0], v); err != nil {
			return scanSource{}, o.errorf("scan.bounded.specific-offsets", "%v", err)
		}
	}
	if ko.IdleTimeout, err = o.duration("scan.watermark.idle-timeout", 0); err != nil {
		return scanSource{}, err
	}
	if ko.PartitionDiscoveryInterval, err = o.duration("scan.topic-partition-discovery.interval", 0); err != nil {
		return scanSource{}, err
	}
	if _, ok := o.m["scan.topic-partition-discovery.interval"]; ok && ko.PartitionDiscoveryInterval == 0 {
		ko.PartitionDiscoveryInterval = kafkasrc.NoPartitionDiscovery // Flink's "0" disables discovery
	}
	iso, err := o.oneOf("properties.isolation.level", string(kafkasrc.ReadCommitted), string(kafkasrc.ReadCommitted), string(kafkasrc.ReadUncommitted))
	if err != nil {
		return scanSource{}, err
	}
	ko.Isolation = kafkasrc.Isolation(iso)
	if ko.Security, err = o.kafkaSecurity(); err != nil {
		return scanSource{}, err
	}
	o.withPrefix("sink.", false) // the sink's, when the table is also written
	valueCols, err := kafkaKeyColumns(ctx, o, s.physical, &ko)
	if err != nil {
		return scanSource{}, err
	}
	fmtName, fmtOpts, err := formatOptions(o)
	if err != nil {
		return scanSource{}, err
	}
	policy, err := o.oneOf("weir.on-error", "fail", "fail", "skip", "dlq")
	if err != nil {
		return scanSource{}, err
	}
	if ignore, err := o.boolean(fmtName+".ignore-parse-errors", false); err != nil {
		return scanSource{}, err
	} else if ignore {
		policy = "skip"
	}
	ko.OnError = kafkasrc.ErrorPolicy(policy)
	ko.DeadLetterTopic = o.str("weir.dead-letter-topic", "")
	ko.Decoder, err = format.NewDecoder(ctx, format.Config{Name: fmtName, Schema: arrow.NewSchema(valueCols, nil), Options: fmtOpts})
	if err != nil {
		return scanSource{}, o.errorf("format", "%v", err)
	}
	var valueMeta []metaColumn
	for _, m := range s.metadata {
		if strings.HasPrefix(m.key, "value.") {
			valueMeta = append(valueMeta, m)
			continue
		}
		ko.Metadata = append(ko.Metadata, kafkasrc.MetadataColumn{Key: m.key, Name: m.name})
	}
	if len(valueMeta) > 0 {
		if ko.Decoder, err = withFormatMetadata(ko.Decoder, fmtName, valueMeta); err != nil {
			return scanSource{}, semErrorf(o.pos, "table %s: %v", s.table, err)
		}
		if ko.KeyDecoder != nil {
			// The value decoder's metadata columns follow the physical
			// ones, by name, as with no key.
			for _, m := range valueMeta {
				ko.Columns = append(ko.Columns, m.name)
			}
		}
	}
	if s.eventTime != "" {
		ko.EventTime, ko.MaxOutOfOrderness = s.eventTime, s.delay
	}
	src, err := kafkasrc.NewSource(ko)
	if err != nil {
		return scanSource{}, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	got := src.Schema()
	for _, m := range s.metadata {
		idx := got.FieldIndices(m.name)
		if len(idx) == 1 {
			if err := compatible(m.typ, got.Field(idx[0]).Type); err != nil {
				return scanSource{}, semErrorf(o.pos, "table %s: metadata column %s (FROM '%s'): %v", s.table, m.name, m.key, err)
			}
		}
	}
	return scanSource{src: src, watermarked: s.eventTime != "", changes: format.CarriesChanges(fmtName)}, nil
}

// formatOptions reads 'format' (or 'value.format') and returns the
// format's name and its options (those prefixed by the name, or by
// value.NAME).
func formatOptions(o *tableOptions) (string, map[string]string, error) {
	name := o.str("format", "")
	if v := o.str("value.format", ""); v != "" {
		if name != "" && name != v {
			return "", nil, o.errorf("value.format", "%q differs from 'format' %q", v, name)
		}
		name = v
	}
	if name == "" {
		return "", nil, semErrorf(o.pos, "table %s: option 'format' is required", o.table)
	}
	opts := o.withPrefix(name+".", false)
	for k, v := range o.withPrefix("value."+name+".", true) {
		opts[name+"."+k] = v
	}
	// The bad-record policy belongs to the connector (a source reads it;
	// a sink, which Flink lets share the table's options, ignores it).
	delete(opts, name+".ignore-parse-errors")
	return name, opts, nil
}

func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sinkSpec is what a sink connector is opened with.
type sinkSpec struct {
	table       string
	opts        *tableOptions
	schema      *arrow.Schema // the rows written: the table's physical columns
	primaryKey  []string
	partitionBy []string
	job         string
	// ownTxnPrefix asks a Kafka sink without 'sink.transactional-id-prefix'
	// for transactional ids of its own (job-table), as when a job writes
	// several Kafka tables.
	ownTxnPrefix bool
}

// openSink opens the sink of a table with connector.
func openSink(ctx context.Context, connector string, s sinkSpec) (arrowflow.Sink, error) {
	var (
		sink arrowflow.Sink
		err  error
	)
	o := s.opts
	switch connector {
	case "blackhole":
		sink = blackhole.New()
	case "print":
		po := printsink.Options{Prefix: o.str("print-identifier", "")}
		if stderr, err := o.boolean("standard-error", false); err != nil {
			return nil, err
		} else if stderr {
			po.Writer = os.Stderr
		}
		sink = printsink.New(po)
	case "filesystem":
		sink, err = filesystemSink(s)
	case "iceberg":
		sink, err = icebergSink(ctx, s)
	case "kafka":
		sink, err = kafkaSink(ctx, s)
	case "upsert-kafka":
		sink, err = upsertKafkaSink(ctx, s)
	default:
		if contains(sourceConnectors, connector) {
			return nil, hinted(o.errorf("connector", "table %s: the %s connector can only be read, not written", s.table, connector),
				"sinks: "+strings.Join(sinkConnectors, ", "))
		}
		return nil, hinted(o.errorf("connector", "unknown connector %q", connector),
			"sources: "+strings.Join(sourceConnectors, ", ")+"; sinks: "+strings.Join(sinkConnectors, ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(s.partitionBy) > 0 && connector != "filesystem" && connector != "iceberg" {
		return nil, semErrorf(o.pos, "table %s: the %s connector has no PARTITIONED BY", s.table, connector)
	}
	if err := o.checkUnknown(connector); err != nil {
		return nil, err
	}
	return sink, nil
}

// filesystemSource reads the files under 'path' once (bounded): 'format'
// parquet, json, csv or raw (one record per line, with the format's
// options), PARTITIONED BY columns from Hive-style folder names, a weir
// Parquet table's committed files only; bad lines go by 'weir.on-error'
// (or '<format>.ignore-parse-errors') with 'weir.dead-letter-path';
// 'weir.files-in-event-time-order' lets only the file being read hold
// the watermark back, as Flink's file source does.
func filesystemSource(s scanSpec) (scanSource, error) {
	o := s.opts
	path, err := o.required("path")
	if err != nil {
		return scanSource{}, err
	}
	if _, ok := o.get("source.monitor-interval"); ok {
		return scanSource{}, hinted(o.errorf("source.monitor-interval", "the filesystem source reads the files there are once; it does not watch the folder"),
			"leave it out: the job ends after the last file")
	}
	fo := files.Options{Path: strings.TrimPrefix(path, "file://"), Schema: arrow.NewSchema(s.physical, nil), PartitionBy: s.partitionBy}
	if fo.Format, fo.FormatOptions, err = formatOptions(o); err != nil {
		return scanSource{}, err
	}
	if fo.Format == "parquet" {
		fo.FormatOptions = nil // parquet.* options are the sink's
		for k := range o.withPrefix("parquet.", false) {
			return scanSource{}, o.errorf(k, "the filesystem source takes no parquet options (the files say how they are written)")
		}
	}
	policy, err := o.oneOf("weir.on-error", "fail", "fail", "skip", "dlq")
	if err != nil {
		return scanSource{}, err
	}
	if ignore, err := o.boolean(fo.Format+".ignore-parse-errors", false); err != nil {
		return scanSource{}, err
	} else if ignore {
		policy = "skip"
	}
	fo.OnError = files.ErrorPolicy(policy)
	fo.DeadLetterPath = o.str("weir.dead-letter-path", "")
	batch, err := o.integer("weir.batch-size", 0)
	if err != nil {
		return scanSource{}, err
	}
	fo.BatchSize = int(batch)
	if fo.FilesInEventTimeOrder, err = o.boolean("weir.files-in-event-time-order", false); err != nil {
		return scanSource{}, err
	}
	if s.eventTime != "" {
		fo.EventTime, fo.MaxOutOfOrderness = s.eventTime, s.delay
	}
	src, err := files.New(fo)
	if err != nil {
		return scanSource{}, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return scanSource{src: src, watermarked: s.eventTime != ""}, nil
}

// icebergSink reads the Flink Iceberg connector's options: 'catalog-type'
// (weir: sql, the default, or rest), 'catalog-name', 'uri', 'warehouse',
// 'catalog-database' and 'catalog-table' (default: the SQL table's own
// name), 'write.upsert.enabled' (upserts on the PRIMARY KEY),
// 'write.target-file-size-bytes'; options with a catalog property prefix
// (s3., gcs., adls., client., rest., credential, token) go to the
// catalog. A SQL catalog's 'uri' follows iceberg.CatalogOptions.URI's
// rules (a SQLite path, sqlite:PATH, postgres://..., or a key=value
// PostgreSQL connection string; anything else is refused, never taken
// as a file name); errors show it with its passwords masked.
// kafkaSink reads Flink Kafka's sink options (docs/kafka.md).
func kafkaSink(ctx context.Context, s sinkSpec) (arrowflow.Sink, error) {
	o := s.opts
	ko := kafkasink.Options{}
	servers, err := o.required("properties.bootstrap.servers")
	if err != nil {
		return nil, err
	}
	ko.Brokers = splitList(servers, ",")
	if ko.Topic, err = o.required("topic"); err != nil {
		return nil, err
	}
	fmtName, fmtOpts, err := formatOptions(o)
	if err != nil {
		return nil, err
	}
	ko.Encoder, err = format.NewEncoder(ctx, format.Config{Name: fmtName, Schema: s.schema, Options: fmtOpts})
	if err != nil {
		return nil, o.errorf("format", "%v", err)
	}
	leaveKafkaSourceOptions(o, "key.fields-prefix", "value.fields-include")
	if v, ok := o.get("key.fields"); ok {
		ko.KeyColumns = splitList(v, ";")
	}
	if kf, ok := o.get("key.format"); ok {
		if format.CarriesChanges(kf) {
			// As Flink: the change goes in the value; a key is the
			// key columns' values.
			return nil, hinted(o.errorf("key.format", "%s writes changes, not a key; the value format carries the row kinds", kf), "use 'key.format' = 'json' or 'raw'")
		}
		var keyCols []arrow.Field
		for _, c := range ko.KeyColumns {
			idx := s.schema.FieldIndices(c)
			if len(idx) != 1 {
				return nil, o.errorf("key.fields", "no column %s", c)
			}
			keyCols = append(keyCols, s.schema.Field(idx[0]))
		}
		ko.KeyEncoder, err = format.NewEncoder(ctx, format.Config{Name: kf, Schema: arrow.NewSchema(keyCols, nil), Options: o.withPrefix("key."+kf+".", false)})
		if err != nil {
			return nil, o.errorf("key.format", "%v", err)
		}
	}
	if ko.Partitioner, err = o.oneOf("sink.partitioner", kafkasink.PartitionDefault, kafkasink.PartitionDefault, kafkasink.PartitionFixed, kafkasink.PartitionRoundRobin); err != nil {
		return nil, err
	}
	g, err := o.oneOf("sink.delivery-guarantee", string(kafkasink.ExactlyOnce), string(kafkasink.ExactlyOnce), string(kafkasink.AtLeastOnce))
	if err != nil {
		return nil, err
	}
	ko.DeliveryGuarantee = kafkasink.Guarantee(g)
	ko.TransactionalIDPrefix = o.str("sink.transactional-id-prefix", "")
	if ko.TransactionalIDPrefix == "" && s.ownTxnPrefix {
		ko.TransactionalIDPrefix = strings.Join(strings.Fields(s.job+"-"+s.table), "_")
	}
	if ms, err := o.integer("properties.transaction.timeout.ms", 0); err != nil {
		return nil, err
	} else if ms > 0 {
		ko.TransactionTimeout = time.Duration(ms) * time.Millisecond
	}
	pool, err := o.integer("sink.transactional-id-pool", 0)
	if err != nil {
		return nil, err
	}
	ko.Pool = int(pool)
	if ko.Security, err = o.kafkaSecurity(); err != nil {
		return nil, err
	}
	sink, err := kafkasink.New(ko)
	if err != nil {
		return nil, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return sink, nil
}

// withFormatMetadata returns dec reading, after its value columns, the
// format metadata of cols (Flink's METADATA FROM 'value.<key>', as
// 'value.source.table' of debezium-json), each named as its column.
func withFormatMetadata(dec format.Decoder, fmtName string, cols []metaColumn) (format.Decoder, error) {
	md, ok := dec.(format.MetadataDecoder)
	if !ok {
		return nil, fmt.Errorf("metadata column %s (FROM '%s'): the format %s has no metadata", cols[0].name, cols[0].key, fmtName)
	}
	keys := make([]string, len(cols))
	for i, c := range cols {
		keys[i] = strings.TrimPrefix(c.key, "value.")
	}
	withMeta, err := md.WithMetadata(keys...)
	if err != nil {
		return nil, fmt.Errorf("metadata column %s: %w", cols[0].name, err)
	}
	fields := slices.Clone(withMeta.Schema().Fields())
	nValue := len(fields) - len(cols)
	for i, c := range cols {
		fields[nValue+i].Name = c.name
	}
	sm := withMeta.Schema().Metadata()
	return renamedChangeDecoder{withMeta, arrow.NewSchema(fields, &sm)}, nil
}

// renamedChangeDecoder is a change decoder whose batches' columns have
// other names: the kafka source takes its decoder's columns by position,
// under the names of Schema.
type renamedChangeDecoder struct {
	format.ChangeDecoder
	schema *arrow.Schema
}

// Schema implements format.Decoder.
func (d renamedChangeDecoder) Schema() *arrow.Schema { return d.schema }

// leaveKafkaSourceOptions marks a Kafka sink's table's source options
// (and more, prefixes or names) read: a table both read and written (as
// in Flink) has the source's options too, and they are the source's to
// check.
func leaveKafkaSourceOptions(o *tableOptions, more ...string) {
	for _, p := range append([]string{"scan.", "properties.group.id", "properties.isolation.level", "weir.on-error", "weir.dead-letter-topic"}, more...) {
		o.withPrefix(p, false)
	}
}
