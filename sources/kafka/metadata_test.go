package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

var allMetadata = []MetadataColumn{
	{Key: MetaTopic}, {Key: MetaPartition}, {Key: MetaOffset},
	{Key: MetaTimestamp, Name: "kafka_ts"}, {Key: MetaTimestampType},
	{Key: MetaKey, Name: "k"}, {Key: MetaHeaders}, {Key: MetaLeaderEpoch},
}

// metaRow is what the metadata columns of one row hold, read straight
// from the Arrow arrays.
type metaRow struct {
	id        int64
	topic     string
	partition int32
	offset    int64
	ts        int64 // ms
	tsType    string
	key       []byte // nil for null
	headers   []kgo.RecordHeader
	epoch     int32 // -1 for null
}

func readMetaRows(t *testing.T, rec arrow.RecordBatch) []metaRow {
	t.Helper()
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %q in %s", name, rec.Schema())
		}
		return rec.Column(idx[0])
	}
	id := col("id").(*array.Int64)
	topic := col("topic").(*array.String)
	part := col("partition").(*array.Int32)
	off := col("offset").(*array.Int64)
	ts := col("kafka_ts").(*array.Timestamp)
	tsType := col("timestamp-type").(*array.String)
	key := col("k").(*array.Binary)
	hdr := col("headers").(*array.Map)
	hk, hv := hdr.Keys().(*array.String), hdr.Items().(*array.Binary)
	epoch := col("leader-epoch").(*array.Int32)
	var out []metaRow
	for i := 0; i < int(rec.NumRows()); i++ {
		r := metaRow{id: id.Value(i), topic: topic.Value(i), partition: part.Value(i), offset: off.Value(i),
			ts: int64(ts.Value(i)), tsType: tsType.Value(i), epoch: -1}
		if key.IsValid(i) {
			r.key = slices.Clone(key.Value(i))
		}
		if hdr.IsNull(i) {
			t.Fatalf("row %d: null headers", i)
		}
		start, end := hdr.ValueOffsets(i)
		for j := start; j < end; j++ {
			h := kgo.RecordHeader{Key: hk.Value(int(j))}
			if hv.IsValid(int(j)) {
				h.Value = slices.Clone(hv.Value(int(j)))
			}
			r.headers = append(r.headers, h)
		}
		if epoch.IsValid(i) {
			r.epoch = epoch.Value(i)
		}
		out = append(out, r)
	}
	return out
}

// wantHeaders is what MetaHeaders holds for hs: the last value of each key,
// in order of last appearance.
func wantHeaders(hs []kgo.RecordHeader) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for i, h := range hs {
		if !laterKey(hs, i) {
			out = append(out, h)
		}
	}
	return out
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value) && (x.Value == nil) == (y.Value == nil)
	})
}

func TestMetadataColumns(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	var recs []*kgo.Record
	for i := int64(0); i < 40; i++ {
		r := rec(topic, int32(i%2), i, t0.UnixMilli()+i*37)
		switch i % 4 {
		case 0: // no key, no header
		case 1:
			r.Key = fmt.Appendf(nil, "key-%d", i)
			r.Headers = []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}}
		case 2:
			r.Key = []byte{} // empty, not null
			r.Headers = []kgo.RecordHeader{{Key: "dup", Value: []byte("first")}, {Key: "x", Value: []byte{0, 1}}, {Key: "dup", Value: []byte("last")}}
		case 3:
			r.Key = []byte{0xff, 0}
			r.Headers = []kgo.RecordHeader{{Key: "", Value: []byte("empty key")}}
		}
		recs = append(recs, r)
	}
	// Tombstones are counted and dropped.
	recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("gone"), Timestamp: t0})
	c.produce(c.producer(), recs...)
	oracle := map[string]*kgo.Record{}
	for _, r := range c.consumeCommitted(topic) {
		oracle[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
	}

	o := baseOptions(c, topic)
	o.BoundedMode = BoundedLatest
	o.Metadata = allMetadata
	o.BatchSize = 9
	src := mustSource(t, o)
	wantFields := []string{"id", "ts", "text", "topic", "partition", "offset", "kafka_ts", "timestamp-type", "k", "headers", "leader-epoch"}
	var gotFields []string
	for _, f := range src.Schema().Fields() {
		gotFields = append(gotFields, f.Name)
	}
	if !slices.Equal(gotFields, wantFields) {
		t.Fatalf("schema fields %v, want %v", gotFields, wantFields)
	}
	rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
	seen := 0
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.IsZero() {
			continue
		}
		if !b.Schema().Equal(src.Schema()) {
			t.Fatalf("batch schema %s, source schema %s", b.Schema(), src.Schema())
		}
		for _, m := range readMetaRows(t, b.Record) {
			seen++
			want := oracle[fmt.Sprintf("%d/%d", m.partition, m.offset)]
			if want == nil {
				t.Fatalf("row %+v: no such record", m)
			}
			switch {
			case m.id != idOf(want):
				t.Errorf("offset %d: id %d, want %d", m.offset, m.id, idOf(want))
			case m.topic != want.Topic:
				t.Errorf("offset %d: topic %q", m.offset, m.topic)
			case m.ts != want.Timestamp.UnixMilli():
				t.Errorf("offset %d: timestamp %d, want %d", m.offset, m.ts, want.Timestamp.UnixMilli())
			case m.tsType != "CreateTime":
				t.Errorf("offset %d: timestamp type %q", m.offset, m.tsType)
			case !bytes.Equal(m.key, want.Key) || (m.key == nil) != (want.Key == nil):
				t.Errorf("offset %d: key %q (nil %v), want %q (nil %v)", m.offset, m.key, m.key == nil, want.Key, want.Key == nil)
			case !sameHeaders(m.headers, wantHeaders(want.Headers)):
				t.Errorf("offset %d: headers %v, want %v", m.offset, m.headers, wantHeaders(want.Headers))
			case m.epoch != want.LeaderEpoch:
				t.Errorf("offset %d: leader epoch %d, want %d", m.offset, m.epoch, want.LeaderEpoch)
			}
		}
		b.Release()
	}
	if seen != 40 {
		t.Fatalf("read %d rows, want 40", seen)
	}
	if st := src.Stats(); st.Tombstones != 1 || st.Records != 40 {
		t.Fatalf("stats %+v, want 1 tombstone and 40 records", st)
	}
}

func TestMetadataColumnErrors(t *testing.T) {
	c := &cluster{addrs: []string{"127.0.0.1:1"}}
	for _, tc := range []struct {
		name string
		set  func(*Options)
		want string
	}{
		{"unknown key", func(o *Options) { o.Metadata = []MetadataColumn{{Key: "value.size"}} }, `unknown metadata key "value.size"`},
		{"clash", func(o *Options) { o.Metadata = []MetadataColumn{{Key: MetaTimestamp, Name: "ts"}} }, `"ts" (timestamp) clashes`},
		{"event time not a timestamp", func(o *Options) {
			o.Metadata = []MetadataColumn{{Key: MetaOffset}}
			o.EventTime = "offset"
		}, "must be a timestamp"},
		{"event time missing", func(o *Options) { o.EventTime = "nope" }, `"nope": not found`},
		{"no brokers", func(o *Options) { o.Brokers = nil }, "'properties.bootstrap.servers'"},
		{"no topic", func(o *Options) { o.Topics = nil }, "'topic'"},
		{"no decoder", func(o *Options) { o.Decoder = nil }, "'format'"},
		{"startup mode", func(o *Options) { o.StartupMode = "newest" }, `'scan.startup.mode' = "newest"`},
		{"group-offsets without group", func(o *Options) { o.StartupMode = StartGroupOffsets }, "'properties.group.id'"},
		{"timestamp without instant", func(o *Options) { o.StartupMode = StartTimestamp }, "'scan.startup.timestamp-millis'"},
		{"bounded mode", func(o *Options) { o.BoundedMode = "sometimes" }, `'scan.bounded.mode' = "sometimes"`},
		{"bounded offsets of another topic", func(o *Options) {
			o.BoundedMode, o.BoundedOffsets = BoundedSpecificOffsets, map[Partition]int64{{"other", 0}: 1}
		}, "other/0 is not of a topic"},
		{"isolation", func(o *Options) { o.Isolation = "serializable" }, "'properties.isolation.level'"},
		{"dlq without topic", func(o *Options) { o.OnError = DeadLetterOnError }, "dead-letter topic"},
		{"policy", func(o *Options) { o.OnError = "ignore" }, `error policy "ignore"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(c, "events")
			tc.set(&o)
			_, err := NewSource(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The event-time column may be the record timestamp; the schema's
// metadata names it.
func TestEventTimeMetadataSchema(t *testing.T) {
	c := &cluster{addrs: []string{"127.0.0.1:1"}}
	o := baseOptions(c, "events")
	o.Metadata = []MetadataColumn{{Key: MetaTimestamp, Name: "rowtime"}}
	o.EventTime = "rowtime"
	src := mustSource(t, o)
	idx, ok := arrowflow.EventTimeColumn(src.Schema())
	if !ok || src.Schema().Field(idx).Name != "rowtime" {
		t.Fatalf("event-time column of %s", src.Schema())
	}
}
