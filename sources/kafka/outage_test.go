package kafka

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/format/registry"
)

// A decode error that is not the record's fault (the schema registry
// cannot be reached) fails the job whatever the bad-record policy: under
// skip or dlq, good records would otherwise be dropped for as long as the
// outage lasts.
func TestRegistryOutageIsNotABadRecord(t *testing.T) {
	ctx := context.Background()
	reg := registry.New()
	if err := reg.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	cfg := format.Config{Name: "avro-confluent", Schema: schema, Options: map[string]string{
		"avro-confluent.url": reg.URL(), "avro-confluent.subject": "events-value",
	}}
	enc, err := format.NewEncoder(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := int64(0); i < 20; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 20)
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	var recs []*kgo.Record
	if err := enc.Encode(rec, func(row int, v []byte) error {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(row % 2), Value: append([]byte(nil), v...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	col.Release()
	c.produce(c.producer(), recs...)
	dec, err := format.NewDecoder(ctx, cfg) // learns the schema now
	if err != nil {
		t.Fatal(err)
	}
	_ = reg.Close() // the outage: the decoder cannot fetch the writer schema
	for _, policy := range []ErrorPolicy{SkipOnError, DeadLetterOnError} {
		o := Options{Brokers: c.addrs, Topics: []string{"events"}, Decoder: dec, BoundedMode: BoundedLatest, OnError: policy}
		if policy == DeadLetterOnError {
			c.createTopic("events-dlq-"+string(policy), 1)
			o.DeadLetterTopic = "events-dlq-" + string(policy)
		}
		src := mustSource(t, o)
		sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t)})
		if err == nil || !strings.Contains(err.Error(), "registry") {
			t.Fatalf("policy %s: a registry outage gave %v and %d rows, want the job to fail naming the registry", policy, err, len(sink.Rows()))
		}
		if st := src.Stats(); st.Skipped != 0 || st.DeadLettered != 0 {
			t.Fatalf("policy %s: %d skipped, %d dead-lettered during an outage, want none", policy, st.Skipped, st.DeadLettered)
		}
	}
}
