package kafka

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/format"
)

// Defaults applied by NewSource to zero Options fields.
const (
	// DefaultBatchSize is the default largest number of rows per batch.
	DefaultBatchSize = 4096
	// DefaultPartitionDiscoveryInterval is how often a running unbounded
	// source looks for new partitions unless told otherwise.
	DefaultPartitionDiscoveryInterval = 30 * time.Second
	// NoPartitionDiscovery, as Options.PartitionDiscoveryInterval,
	// disables partition discovery (Flink's interval "0").
	NoPartitionDiscovery time.Duration = -1
)

// StartupMode says where a partition without a restored position starts
// ('scan.startup.mode').
type StartupMode string

// Startup modes, named as Flink's 'scan.startup.mode' values.
const (
	// StartEarliest starts at each partition's log start offset (the
	// default).
	StartEarliest StartupMode = "earliest-offset"
	// StartLatest starts at each partition's end when the job starts: the
	// last stable offset under read_committed, the high watermark under
	// read_uncommitted. Only records produced later are read.
	StartLatest StartupMode = "latest-offset"
	// StartGroupOffsets starts at the offsets committed by
	// Options.GroupID; partitions the group never committed start at
	// their earliest offset.
	StartGroupOffsets StartupMode = "group-offsets"
	// StartTimestamp starts at the first offset whose record timestamp is
	// at or after Options.StartupTimestamp (the partition's end if none).
	StartTimestamp StartupMode = "timestamp"
	// StartSpecificOffsets starts at Options.SpecificOffsets; partitions
	// not listed start at their earliest offset.
	StartSpecificOffsets StartupMode = "specific-offsets"
)

// BoundedMode says where a partition ends ('scan.bounded.mode'). A bounded
// source ends (its readers return io.EOF) once every partition reached its
// end offset, and it does not discover new partitions.
type BoundedMode string

// Bounded modes, named as Flink's 'scan.bounded.mode' values.
const (
	// Unbounded reads forever (the default).
	Unbounded BoundedMode = "unbounded"
	// BoundedLatest stops at each partition's end offset seen when the
	// job starts: the last stable offset under read_committed (so an open
	// transaction's records are not waited for), the high watermark under
	// read_uncommitted.
	BoundedLatest BoundedMode = "latest-offset"
	// BoundedByTimestamp stops before the first offset whose record
	// timestamp is at or after Options.BoundedTimestamp (at the
	// partition's end offset at start if there is none).
	BoundedByTimestamp BoundedMode = "timestamp"
	// BoundedSpecificOffsets stops before Options.BoundedOffsets, which
	// must list every partition.
	BoundedSpecificOffsets BoundedMode = "specific-offsets"
)

// Isolation is the isolation level of the consumer
// ('properties.isolation.level').
type Isolation string

const (
	// ReadCommitted reads only records of committed transactions and
	// non-transactional records (the default).
	ReadCommitted Isolation = "read_committed"
	// ReadUncommitted reads every record, also of aborted and open
	// transactions.
	ReadUncommitted Isolation = "read_uncommitted"
)

// ErrorPolicy says what happens to a record whose value the decoder
// rejects.
type ErrorPolicy string

const (
	// FailOnError fails the job with an error naming the record's topic,
	// partition and offset and the decoder's reason (the default).
	FailOnError ErrorPolicy = "fail"
	// SkipOnError drops the record and counts it (Stats.Skipped).
	SkipOnError ErrorPolicy = "skip"
	// DeadLetterOnError writes the raw record to Options.DeadLetterTopic
	// with headers saying why and where it came from, and counts it
	// (Stats.DeadLettered). Dead-letter output is at least once: a record
	// may be written again when the job recovers from a checkpoint taken
	// before it.
	DeadLetterOnError ErrorPolicy = "dlq"
)

// Partition names one partition of a topic.
type Partition struct {
	Topic     string // the topic's name
	Partition int32  // the partition's number, from 0
}

// String returns "topic/partition", the partition's split id.
func (p Partition) String() string { return p.Topic + "/" + strconv.Itoa(int(p.Partition)) }

// ParsePartition parses a split id "topic/partition".
func ParsePartition(split string) (Partition, error) {
	i := strings.LastIndexByte(split, '/')
	if i <= 0 {
		return Partition{}, fmt.Errorf("kafka source: split %q: want \"topic/partition\"", split)
	}
	n, err := strconv.ParseInt(split[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.Itoa(int(n)) != split[i+1:] {
		return Partition{}, fmt.Errorf("kafka source: split %q: partition %q is not a partition number", split, split[i+1:])
	}
	return Partition{Topic: split[:i], Partition: int32(n)}, nil
}

// ParseSpecificOffsets parses Flink's format of 'scan.startup.specific-offsets'
// and 'scan.bounded.specific-offsets' for one topic,
// "partition:0,offset:42;partition:1,offset:300".
func ParseSpecificOffsets(topic, s string) (map[Partition]int64, error) {
	out := make(map[Partition]int64)
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		fields := map[string]string{}
		for kv := range strings.SplitSeq(item, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
			if !ok || (k != "partition" && k != "offset") {
				return nil, fmt.Errorf("specific offsets %q: %q is neither partition:N nor offset:N", s, kv)
			}
			fields[k] = strings.TrimSpace(v)
		}
		ps, hasP := fields["partition"]
		os, hasO := fields["offset"]
		if !hasP || !hasO {
			return nil, fmt.Errorf("specific offsets %q: %q needs both partition:N and offset:N", s, item)
		}
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("specific offsets %q: bad partition %q", s, ps)
		}
		off, err := strconv.ParseInt(os, 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("specific offsets %q: bad offset %q", s, os)
		}
		out[Partition{Topic: topic, Partition: int32(p)}] = off
	}
	return out, nil
}

// Metadata keys: what a MetadataColumn can carry, as Flink's Kafka
// connector names them in METADATA FROM '...'.
const (
	// MetaTopic is the record's topic (string, not null).
	MetaTopic = "topic"
	// MetaPartition is the record's partition (int32, not null).
	MetaPartition = "partition"
	// MetaOffset is the record's offset (int64, not null).
	MetaOffset = "offset"
	// MetaTimestamp is the record's timestamp (timestamp[ms, UTC], not
	// null): Flink's TIMESTAMP_LTZ(3).
	MetaTimestamp = "timestamp"
	// MetaTimestampType is "CreateTime", "LogAppendTime" or
	// "NoTimestampType" (string, not null).
	MetaTimestampType = "timestamp-type"
	// MetaKey is the record's key (binary, null for a null key). Flink
	// exposes keys through 'key.format' instead; weir offers the raw bytes.
	MetaKey = "key"
	// MetaHeaders is the record's headers as map<string, binary> (not null,
	// values null for null header values), Flink's MAP<STRING, BYTES>. Kafka
	// allows a header key more than once; as in Flink the last value wins.
	// A dead-letter record keeps every header.
	MetaHeaders = "headers"
	// MetaLeaderEpoch is the partition leader epoch the record was written
	// in (int32, null when unknown).
	MetaLeaderEpoch = "leader-epoch"
)

// MetadataColumn appends a column with record metadata to every batch,
// after the decoded value's columns (Flink's `name TYPE METADATA FROM
// 'key'`).
type MetadataColumn struct {
	// Key is what the column holds: one of the Meta* constants.
	Key string
	// Name is the column's name (Key when empty). It must not clash with a
	// value column.
	Name string
}

func (m MetadataColumn) name() string {
	if m.Name == "" {
		return m.Key
	}
	return m.Name
}

// Options configure a Kafka source. Each field names the Flink Kafka
// connector option it corresponds to, so that a Flink job's WITH clause
// translates one to one.
type Options struct {
	// Brokers are the bootstrap brokers, "host:port"
	// ('properties.bootstrap.servers'). Required.
	Brokers []string
	// Topics are the topics to read ('topic'; several allowed, as Flink's
	// "topic-a;topic-b"). Required. Every topic must exist when the job
	// starts.
	Topics []string
	// GroupID is the consumer group ('properties.group.id'). It is used
	// only to start from the group's committed offsets (StartGroupOffsets)
	// and, after each committed epoch, to commit that epoch's positions as
	// the group's offsets so that lag monitoring sees progress. The source
	// never joins the group and never depends on those offsets for
	// correctness: positions live in weir's checkpoints.
	GroupID string

	// StartupMode says where partitions without a restored position start
	// ('scan.startup.mode', default StartEarliest). A position restored
	// from a checkpoint always wins.
	StartupMode StartupMode
	// StartupTimestamp is the instant for StartTimestamp
	// ('scan.startup.timestamp-millis').
	StartupTimestamp time.Time
	// SpecificOffsets are the start offsets for StartSpecificOffsets
	// ('scan.startup.specific-offsets'; see ParseSpecificOffsets).
	SpecificOffsets map[Partition]int64

	// BoundedMode says where partitions end ('scan.bounded.mode', default
	// Unbounded).
	BoundedMode BoundedMode
	// BoundedTimestamp is the instant for BoundedByTimestamp
	// ('scan.bounded.timestamp-millis').
	BoundedTimestamp time.Time
	// BoundedOffsets are the end offsets (exclusive) for
	// BoundedSpecificOffsets ('scan.bounded.specific-offsets').
	BoundedOffsets map[Partition]int64

	// Decoder decodes record values into the value columns ('format' or
	// 'value.format' and its options; see package format). Required. A
	// format.ChangeDecoder (debezium-json, canal-json, ...) makes the
	// source's batches a changelog: one record gives no row, one or
	// several, each with its row kind (arrowflow.Batch.Kinds).
	Decoder format.Decoder
	// KeyDecoder, when set, decodes record keys into the key columns
	// (Flink's 'key.format' over 'key.fields'): its schema's fields are
	// the key columns as named in the key, without KeyFieldsPrefix. A
	// record without a key (a null key) gives NULL key columns, except
	// under Upsert, where it is a bad record.
	KeyDecoder format.Decoder
	// KeyFieldsPrefix is 'key.fields-prefix': a key column is named
	// KeyFieldsPrefix + its name in the key.
	KeyFieldsPrefix string
	// Columns, with a KeyDecoder, are the physical columns in the
	// table's order, each a key column (prefixed name) or a value
	// column; nil means the value columns, then the key columns the
	// value lacks. A column both in the key and in the value (Flink's
	// 'value.fields-include' = 'ALL') takes the value's, and the key's
	// in a row without a value (an upsert tombstone).
	Columns []string
	// Upsert reads the topic as Flink's upsert-kafka source does: a
	// record with a value is an insert (+I) of the key's row, which
	// replaces the key's previous row (the planner's changelog-normalize
	// turns these upserts into a retract changelog); a tombstone (a null
	// value) is a delete (-D) of the key, a row with the key columns set
	// and the others NULL. It needs a KeyDecoder and a Decoder of rows
	// (not a format.ChangeDecoder).
	Upsert bool
	// Metadata are columns of record metadata appended after the value
	// columns (Flink's METADATA columns).
	Metadata []MetadataColumn

	// EventTime names the event-time column: a timestamp column of the
	// value or a metadata column of key MetaTimestamp (Flink's WATERMARK
	// FOR column AS column - INTERVAL ...). Empty: no event time.
	EventTime string
	// MaxOutOfOrderness is how far behind the largest event time seen in
	// a partition a row may be and still be on time: each partition's
	// watermark is its largest event time minus this.
	MaxOutOfOrderness time.Duration
	// IdleTimeout is how long a partition may produce no rows before it
	// stops holding the watermark back ('scan.watermark.idle-timeout';
	// 0: never).
	IdleTimeout time.Duration

	// Isolation is the consumer's isolation level
	// ('properties.isolation.level', default ReadCommitted).
	Isolation Isolation
	// PartitionDiscoveryInterval is how often an unbounded source looks for
	// partitions added to its topics while it runs
	// ('scan.topic-partition-discovery.interval'). Zero means
	// DefaultPartitionDiscoveryInterval; NoPartitionDiscovery (any
	// negative value) disables discovery, which Flink writes as "0".
	PartitionDiscoveryInterval time.Duration

	// OnError is the policy for records the decoder rejects (default
	// FailOnError).
	OnError ErrorPolicy
	// DeadLetterTopic receives rejected records under DeadLetterOnError.
	// It must exist.
	DeadLetterTopic string

	// BatchSize is the largest number of rows per batch (default
	// DefaultBatchSize).
	BatchSize int
	// Security is how every client of the source reaches the brokers:
	// TLS, mTLS, SASL PLAIN or SCRAM ('properties.security.protocol',
	// 'properties.sasl.*', 'properties.ssl.*'; see ParseSecurity).
	Security Security
	// ClientOpts are appended to the options of every franz-go client the
	// source creates, after Security's: client id, fetch sizes, or TLS
	// and SASL set up by hand (kgo.DialTLSConfig, kgo.SASL).
	ClientOpts []kgo.Opt
}

// withDefaults returns o with defaults applied to zero fields.
func (o Options) withDefaults() Options {
	o.Brokers = slices.Clone(o.Brokers)
	o.Topics = slices.Clone(o.Topics)
	o.Metadata = slices.Clone(o.Metadata)
	o.ClientOpts = slices.Clone(o.ClientOpts)
	if o.StartupMode == "" {
		o.StartupMode = StartEarliest
	}
	if o.BoundedMode == "" {
		o.BoundedMode = Unbounded
	}
	if o.Isolation == "" {
		o.Isolation = ReadCommitted
	}
	if o.PartitionDiscoveryInterval == 0 {
		o.PartitionDiscoveryInterval = DefaultPartitionDiscoveryInterval
	}
	if o.OnError == "" {
		o.OnError = FailOnError
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	return o
}

// validate checks o (defaults applied); errors name the Flink option.
func (o *Options) validate() error {
	if len(o.Brokers) == 0 {
		return fmt.Errorf("kafka source: 'properties.bootstrap.servers' (Options.Brokers) is required")
	}
	if len(o.Topics) == 0 {
		return fmt.Errorf("kafka source: 'topic' (Options.Topics) is required")
	}
	seen := map[string]bool{}
	for _, t := range o.Topics {
		if t == "" || strings.ContainsAny(t, "/ ") {
			return fmt.Errorf("kafka source: 'topic' %q is not a valid topic name", t)
		}
		if seen[t] {
			return fmt.Errorf("kafka source: 'topic' %q listed twice", t)
		}
		seen[t] = true
	}
	if o.Decoder == nil {
		return fmt.Errorf("kafka source: 'format' (Options.Decoder) is required")
	}
	if err := o.validateKey(); err != nil {
		return err
	}
	switch o.StartupMode {
	case StartEarliest, StartLatest:
	case StartGroupOffsets:
		if o.GroupID == "" {
			return fmt.Errorf("kafka source: 'scan.startup.mode' = 'group-offsets' needs 'properties.group.id' (Options.GroupID)")
		}
	case StartTimestamp:
		if o.StartupTimestamp.IsZero() {
			return fmt.Errorf("kafka source: 'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis' (Options.StartupTimestamp)")
		}
	case StartSpecificOffsets:
		if err := checkOffsets("scan.startup.specific-offsets", o.SpecificOffsets, seen, false); err != nil {
			return err
		}
	default:
		return fmt.Errorf("kafka source: 'scan.startup.mode' = %q: want earliest-offset, latest-offset, group-offsets, timestamp or specific-offsets", o.StartupMode)
	}
	switch o.BoundedMode {
	case Unbounded, BoundedLatest:
	case BoundedByTimestamp:
		if o.BoundedTimestamp.IsZero() {
			return fmt.Errorf("kafka source: 'scan.bounded.mode' = 'timestamp' needs 'scan.bounded.timestamp-millis' (Options.BoundedTimestamp)")
		}
	case BoundedSpecificOffsets:
		if err := checkOffsets("scan.bounded.specific-offsets", o.BoundedOffsets, seen, true); err != nil {
			return err
		}
	default:
		return fmt.Errorf("kafka source: 'scan.bounded.mode' = %q: want unbounded, latest-offset, timestamp or specific-offsets", o.BoundedMode)
	}
	switch o.Isolation {
	case ReadCommitted, ReadUncommitted:
	default:
		return fmt.Errorf("kafka source: 'properties.isolation.level' = %q: want read_committed or read_uncommitted", o.Isolation)
	}
	switch o.OnError {
	case FailOnError, SkipOnError:
	case DeadLetterOnError:
		if o.DeadLetterTopic == "" {
			return fmt.Errorf("kafka source: error policy 'dlq' needs a dead-letter topic (Options.DeadLetterTopic)")
		}
	default:
		return fmt.Errorf("kafka source: error policy %q: want fail, skip or dlq", o.OnError)
	}
	if o.BatchSize < 0 {
		return fmt.Errorf("kafka source: batch size %d must be positive", o.BatchSize)
	}
	if o.MaxOutOfOrderness < 0 {
		return fmt.Errorf("kafka source: max out-of-orderness %s must not be negative", o.MaxOutOfOrderness)
	}
	if o.IdleTimeout < 0 {
		return fmt.Errorf("kafka source: 'scan.watermark.idle-timeout' %s must not be negative", o.IdleTimeout)
	}
	return nil
}

func checkOffsets(option string, offs map[Partition]int64, topics map[string]bool, required bool) error {
	if required && len(offs) == 0 {
		return fmt.Errorf("kafka source: %q is required by its mode and lists no offset", option)
	}
	for p, off := range offs {
		if !topics[p.Topic] {
			return fmt.Errorf("kafka source: %q: partition %s is not of a topic the source reads", option, p)
		}
		if off < 0 || p.Partition < 0 {
			return fmt.Errorf("kafka source: %q: partition %s offset %d: must not be negative", option, p, off)
		}
	}
	return nil
}

// validateKey checks the key decoding options.
func (o *Options) validateKey() error {
	if o.KeyDecoder == nil {
		switch {
		case o.Upsert:
			return fmt.Errorf("kafka source: upsert mode needs a key format ('key.format', Options.KeyDecoder)")
		case o.Columns != nil:
			return fmt.Errorf("kafka source: Options.Columns orders key and value columns; it needs a key format ('key.format', Options.KeyDecoder)")
		case o.KeyFieldsPrefix != "":
			return fmt.Errorf("kafka source: 'key.fields-prefix' needs a key format ('key.format', Options.KeyDecoder)")
		}
		return nil
	}
	if _, ok := o.KeyDecoder.(format.ChangeDecoder); ok {
		return fmt.Errorf("kafka source: a key format decodes key columns; a change format (debezium-json, ...) goes in the value")
	}
	if _, ok := o.Decoder.(format.ChangeDecoder); ok && o.Upsert {
		return fmt.Errorf("kafka source: upsert mode reads rows, a record being the key's latest row; a change format (debezium-json, ...) is not one (Flink refuses it too)")
	}
	return nil
}
