package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
)

func jsonDecoder(t testing.TB) format.Decoder {
	t.Helper()
	dec, err := format.NewDecoder(context.Background(), format.Config{Name: "json", Schema: testSchema})
	if err != nil {
		t.Fatalf("json decoder: %v", err)
	}
	return dec
}

// jsonValue is a record value of testSchema in JSON, the timestamp as
// RFC 3339 text or, with millis, as milliseconds.
func jsonValue(id int64, ts time.Time, millis bool) []byte {
	tsv := fmt.Sprintf("%q", ts.UTC().Format(time.RFC3339Nano))
	if millis {
		tsv = fmt.Sprint(ts.UnixMilli())
	}
	return fmt.Appendf(nil, `{"id":%d,"ts":%s,"text":"v%d"}`, id, tsv, id)
}

// The package's own JSON decoder through a job: committed records are
// decoded, aborted ones never read, bad JSON is skipped and counted, and
// the rows equal what the test format would give for the same records.
func TestJSONThroughJob(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 3)
	var plain, committed, aborted []*kgo.Record
	var want []string
	for i := int64(0); i < 90; i++ {
		ts := t0.Add(time.Duration(i) * time.Second)
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: jsonValue(i, ts, i%2 == 0)}
		switch {
		case i%10 == 9:
			r.Value = []byte(`{"id":"not a number"}`)
			plain = append(plain, r)
			continue
		case i%3 == 1:
			committed = append(committed, r)
		case i%5 == 0:
			r.Value = jsonValue(abortedBase+i, ts, false)
			aborted = append(aborted, r)
			continue
		default:
			plain = append(plain, r)
		}
		want = append(want, rowKey([]any{i, ts, fmt.Sprintf("v%d", i)}))
	}
	c.produce(c.producer(), plain...)
	txn := c.producer(kgo.TransactionalID("json-txn"))
	c.produceTxn(txn, true, committed...)
	c.produceTxn(txn, false, aborted...)

	o := baseOptions(c, topic)
	o.Decoder = jsonDecoder(t)
	o.BoundedMode = BoundedLatest
	o.OnError = SkipOnError
	o.BatchSize = 8
	src := mustSource(t, o)
	sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t), CheckpointInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sameMultiset(t, "json rows", rowKeys(sink.Rows()), want)
	if st := src.Stats(); st.Skipped != 9 {
		t.Fatalf("Stats.Skipped = %d, want 9", st.Skipped)
	}

	// Under the fail policy the JSON decoder's reason reaches the error.
	o.OnError = FailOnError
	_, _, err = runJob(t, mustSource(t, o), 1, arrowflow.Options{Allocator: newMem(t)})
	if err == nil || !strings.Contains(err.Error(), "json") || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("err = %v, want the json decoder's reason and the offset", err)
	}
}
