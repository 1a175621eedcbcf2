package sql

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	kafkasink "github.com/weirflow/weir/sinks/kafka"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
)

// Flink's words for an upsert-kafka table without a PRIMARY KEY.
const upsertKafkaNeedsPK = "'upsert-kafka' tables require to define a PRIMARY KEY constraint. " +
	"The PRIMARY KEY specifies which columns should be read from or write to the Kafka message key. " +
	"The PRIMARY KEY also defines records in the 'upsert-kafka' table should update or delete on which keys."

// upsertKeyValue is the split of an upsert-kafka table's physical columns
// into the key's and the value's.
type upsertKeyValue struct {
	keyFormat, valueFormat string
	keyOpts, valueOpts     map[string]string
	prefix                 string
	key                    []arrow.Field // the PRIMARY KEY columns, named without the prefix
	value                  []arrow.Field // every column (ALL) or all but the key's (EXCEPT_KEY)
}

// upsertKafkaFormats reads 'key.format', 'key.fields-prefix',
// 'value.format' and 'value.fields-include' of an upsert-kafka table with
// the given physical columns and PRIMARY KEY, with Flink's rules.
func upsertKafkaFormats(table string, o *tableOptions, physical []arrow.Field, pk []string) (upsertKeyValue, error) {
	return keyValueFormats(table, o, physical, pk, true)
}

// keyValueFormats splits a Kafka table's columns into the key's (keyCols:
// the PRIMARY KEY of upsert-kafka, 'key.fields' of kafka) and the
// value's.
func keyValueFormats(table string, o *tableOptions, physical []arrow.Field, keyCols []string, upsert bool) (upsertKeyValue, error) {
	var kv upsertKeyValue
	pk := keyCols
	keyWord := "the PRIMARY KEY"
	if !upsert {
		keyWord = "'key.fields'"
	}
	if upsert && len(pk) == 0 {
		return kv, hinted(semErrorf(o.pos, "table %s: %s", table, upsertKafkaNeedsPK), "add PRIMARY KEY (col, ...) NOT ENFORCED")
	}
	kf, err := o.required("key.format")
	if err != nil {
		return kv, err
	}
	if format.CarriesChanges(kf) {
		return kv, o.errorf("key.format", "%s writes changes, not a key; the key is the PRIMARY KEY's values (use 'json', 'csv', 'avro' or 'raw')", kf)
	}
	kv.keyFormat = kf
	kv.keyOpts = map[string]string{}
	for k, v := range o.withPrefix("key."+kf+".", true) {
		kv.keyOpts[kf+"."+k] = v
	}
	if kv.valueFormat, kv.valueOpts, err = formatOptions(o); err != nil {
		return kv, err
	}
	if upsert && format.CarriesChanges(kv.valueFormat) {
		// Flink's refusal: an upsert topic's values are rows.
		return kv, o.errorf("value.format", "'upsert-kafka' connector doesn't support '%s' as value format, because '%s' is not in insert-only mode", kv.valueFormat, kv.valueFormat)
	}
	include, err := o.oneOf("value.fields-include", "ALL", "ALL", "EXCEPT_KEY")
	if err != nil {
		return kv, err
	}
	kv.prefix = o.str("key.fields-prefix", "")
	if kv.prefix != "" && include != "EXCEPT_KEY" {
		return kv, o.errorf("key.fields-prefix", "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'. "+
			"Set it to 'EXCEPT_KEY' instead to avoid field overlaps.")
	}
	byName := map[string]arrow.Field{}
	for _, f := range physical {
		byName[f.Name] = f
	}
	inKey := map[string]bool{}
	for _, c := range pk {
		f, ok := byName[c]
		if !ok {
			return kv, semErrorf(o.pos, "table %s: %s column %s is not a physical column", table, keyWord, c)
		}
		name, ok := strings.CutPrefix(c, kv.prefix)
		if !ok || name == "" {
			return kv, o.errorf("key.fields-prefix", "all fields in %s must be prefixed with the given key prefix %q; %s is not", keyWord, kv.prefix, c)
		}
		f.Name = name
		kv.key = append(kv.key, f)
		inKey[c] = true
	}
	for _, f := range physical {
		if include == "EXCEPT_KEY" && inKey[f.Name] {
			continue
		}
		kv.value = append(kv.value, f)
	}
	return kv, nil
}

// upsertKafkaSource opens Flink's upsert-kafka source (docs/kafka.md): it
// reads the topic from its earliest offset, a record with a value being
// an insert (+I) of its key's row, a tombstone a delete (-D) with the key
// columns set and the others NULL; the planner normalizes these upserts
// by the PRIMARY KEY (changelog-normalize).
func upsertKafkaSource(ctx context.Context, s scanSpec) (scanSource, error) {
	o := s.opts
	kv, err := upsertKafkaFormats(s.table, o, s.physical, s.primaryKey)
	if err != nil {
		return scanSource{}, err
	}
	ko := kafkasrc.Options{Upsert: true, StartupMode: kafkasrc.StartEarliest, KeyFieldsPrefix: kv.prefix}
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
	if _, ok := o.get("scan.startup.mode"); ok {
		return scanSource{}, hinted(o.errorf("scan.startup.mode", "upsert-kafka reads its topic from the earliest offset, as Flink's does: a key's value may be anywhere in the log"),
			"use the kafka connector to start elsewhere")
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
		ko.PartitionDiscoveryInterval = kafkasrc.NoPartitionDiscovery
	}
	iso, err := o.oneOf("properties.isolation.level", string(kafkasrc.ReadCommitted), string(kafkasrc.ReadCommitted), string(kafkasrc.ReadUncommitted))
	if err != nil {
		return scanSource{}, err
	}
	ko.Isolation = kafkasrc.Isolation(iso)
	if ko.Security, err = o.kafkaSecurity(); err != nil {
		return scanSource{}, err
	}
	policy, err := o.oneOf("weir.on-error", "fail", "fail", "skip", "dlq")
	if err != nil {
		return scanSource{}, err
	}
	if ignore, err := o.boolean(kv.valueFormat+".ignore-parse-errors", false); err != nil {
		return scanSource{}, err
	} else if ignore {
		policy = "skip"
	}
	if ignore, err := o.boolean("value."+kv.valueFormat+".ignore-parse-errors", false); err != nil {
		return scanSource{}, err
	} else if ignore {
		policy = "skip"
	}
	if v, ok := kv.keyOpts[kv.keyFormat+".ignore-parse-errors"]; ok {
		// The policy is the table's: a bad key skips its record (Flink
		// would read the record with NULL key columns).
		delete(kv.keyOpts, kv.keyFormat+".ignore-parse-errors")
		if strings.EqualFold(strings.TrimSpace(v), "true") {
			policy = "skip"
		}
	}
	ko.OnError = kafkasrc.ErrorPolicy(policy)
	ko.DeadLetterTopic = o.str("weir.dead-letter-topic", "")
	// A table both read and written (as in Flink) has the sink's options
	// too; they are the sink's to check.
	o.withPrefix("sink.", false)
	o.withPrefix("properties.transaction.timeout.ms", false)
	if ko.Decoder, err = format.NewDecoder(ctx, format.Config{Name: kv.valueFormat, Schema: arrow.NewSchema(kv.value, nil), Options: kv.valueOpts}); err != nil {
		return scanSource{}, o.errorf("value.format", "%v", err)
	}
	if ko.KeyDecoder, err = format.NewDecoder(ctx, format.Config{Name: kv.keyFormat, Schema: arrow.NewSchema(kv.key, nil), Options: kv.keyOpts}); err != nil {
		return scanSource{}, o.errorf("key.format", "%v", err)
	}
	for _, f := range s.physical {
		ko.Columns = append(ko.Columns, f.Name)
	}
	for _, m := range s.metadata {
		ko.Metadata = append(ko.Metadata, kafkasrc.MetadataColumn{Key: m.key, Name: m.name})
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
		if idx := got.FieldIndices(m.name); len(idx) == 1 {
			if err := compatible(m.typ, got.Field(idx[0]).Type); err != nil {
				return scanSource{}, semErrorf(o.pos, "table %s: metadata column %s (FROM '%s'): %v", s.table, m.name, m.key, err)
			}
		}
	}
	return scanSource{src: src, watermarked: s.eventTime != "", changes: true, upsert: true}, nil
}

// upsertKafkaSink opens Flink's upsert-kafka sink (docs/kafka.md): the
// PRIMARY KEY's values are the record key, an insert or update-after is
// written as the row, a delete as a tombstone, an update-before not at
// all. Unlike Flink's (at-least-once by default), it writes exactly once
// by default, as weir's kafka sink does.
func upsertKafkaSink(ctx context.Context, s sinkSpec) (arrowflow.Sink, error) {
	o := s.opts
	kv, err := upsertKafkaFormats(s.table, o, s.schema.Fields(), s.primaryKey)
	if err != nil {
		return nil, err
	}
	ko := kafkasink.Options{Upsert: true, KeyColumns: s.primaryKey}
	servers, err := o.required("properties.bootstrap.servers")
	if err != nil {
		return nil, err
	}
	ko.Brokers = splitList(servers, ",")
	if ko.Topic, err = o.required("topic"); err != nil {
		return nil, err
	}
	if strings.Contains(ko.Topic, ";") {
		return nil, o.errorf("topic", "an upsert-kafka sink writes one topic, not a list")
	}
	delete(kv.keyOpts, kv.keyFormat+".ignore-parse-errors")
	leaveKafkaSourceOptions(o, kv.valueFormat+".ignore-parse-errors", "value."+kv.valueFormat+".ignore-parse-errors")
	if ko.Encoder, err = format.NewEncoder(ctx, format.Config{Name: kv.valueFormat, Schema: arrow.NewSchema(kv.value, nil), Options: kv.valueOpts}); err != nil {
		return nil, o.errorf("value.format", "%v", err)
	}
	if len(kv.value) != s.schema.NumFields() {
		for _, f := range kv.value {
			ko.ValueColumns = append(ko.ValueColumns, f.Name)
		}
	}
	if ko.KeyEncoder, err = format.NewEncoder(ctx, format.Config{Name: kv.keyFormat, Schema: arrow.NewSchema(kv.key, nil), Options: kv.keyOpts}); err != nil {
		return nil, o.errorf("key.format", "%v", err)
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
	rows, err := o.integer("sink.buffer-flush.max-rows", 0)
	if err != nil {
		return nil, err
	}
	ko.BufferFlushMaxRows = int(rows)
	if ko.BufferFlushInterval, err = o.duration("sink.buffer-flush.interval", 0); err != nil {
		return nil, err
	}
	if ko.Security, err = o.kafkaSecurity(); err != nil {
		return nil, err
	}
	sink, err := kafkasink.New(ko)
	if err != nil {
		return nil, semErrorf(o.pos, "table %s: %v", s.table, err)
	}
	return sink, nil
}

// kafkaKeyColumns reads the plain kafka connector's key options, Flink's
// 'key.format' with 'key.fields' (';' separated, prefixed names),
// 'key.fields-prefix' and 'value.fields-include', and sets ko's key
// decoding (KeyDecoder, KeyFieldsPrefix, Columns in the table's order). It
// returns the columns the value format decodes: every physical column
// (ALL, the default) or all but the key's (EXCEPT_KEY). Without
// 'key.format' it returns the physical columns and sets nothing.
func kafkaKeyColumns(ctx context.Context, o *tableOptions, physical []arrow.Field, ko *kafkasrc.Options) ([]arrow.Field, error) {
	_, ok := o.get("key.format")
	if !ok {
		// 'key.fields' alone is the sink's (a key column written as it
		// is); the source reads every column from the value.
		o.get("key.fields")
		if _, ok := o.get("key.fields-prefix"); ok {
			return nil, o.errorf("key.fields-prefix", "needs 'key.format'")
		}
		if inc, err := o.oneOf("value.fields-include", "ALL", "ALL", "EXCEPT_KEY"); err != nil {
			return nil, err
		} else if inc == "EXCEPT_KEY" {
			return nil, o.errorf("value.fields-include", "EXCEPT_KEY needs 'key.format': the key columns are not in the value")
		}
		return physical, nil
	}
	fields, ok := o.get("key.fields")
	if !ok || len(splitList(fields, ";")) == 0 {
		return nil, o.errorf("key.format", "A key format 'key.format' requires the declaration of one or more of key fields using 'key.fields'.")
	}
	kv, err := keyValueFormats(o.table, o, physical, splitList(fields, ";"), false)
	if err != nil {
		return nil, err
	}
	delete(kv.keyOpts, kv.keyFormat+".ignore-parse-errors") // the table's policy decides
	if ko.KeyDecoder, err = format.NewDecoder(ctx, format.Config{Name: kv.keyFormat, Schema: arrow.NewSchema(kv.key, nil), Options: kv.keyOpts}); err != nil {
		return nil, o.errorf("key.format", "%v", err)
	}
	ko.KeyFieldsPrefix = kv.prefix
	ko.Columns = ko.Columns[:0]
	for _, f := range physical {
		ko.Columns = append(ko.Columns, f.Name)
	}
	return kv.value, nil
}
