package kafka

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirflow/weir/arrowflow"
)

// dlqLimit is the dead-letter topic's max.message.bytes in these tests.
const dlqLimit = 2048

// fillWithOversized produces fillWithBad's records and one more bad
// record, whose 20 KiB value is larger than the dead-letter topic
// accepts; it returns the bad records and the oversized one.
func fillWithOversized(c *cluster, topic string) (bad []*kgo.Record, big *kgo.Record) {
	bad = fillWithBad(c, topic)
	big = &kgo.Record{Topic: topic, Partition: 1, Key: []byte("big"),
		Value:   bytes.Repeat([]byte("not a record "), 20*1024/13),
		Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}}
	c.produce(c.producer(), big)
	good := rec(topic, 0, 60, t0.UnixMilli()+60)
	c.produce(c.producer(), good)
	return append(bad, big), big
}

// checkOversized runs a bounded job over fillWithOversized's input with
// the dlq policy and checks that it passed every record: the good ones
// as rows, exactly once, the bad ones as dead letters, the oversized one
// truncated and marked.
func checkOversized(t *testing.T, c *cluster, wantValue func(orig []byte) bool) {
	t.Helper()
	bad, big := fillWithOversized(c, "events")
	o := baseOptions(c, "events")
	o.BoundedMode = BoundedLatest
	o.OnError = DeadLetterOnError
	o.DeadLetterTopic = "events-dlq"
	src := mustSource(t, o)
	sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t)})
	if err != nil {
		t.Fatalf("job failed on a dead letter larger than the topic accepts: %v", err)
	}
	var want []int64
	for i := int64(0); i <= 60; i++ {
		if i%7 != 3 || i == 60 {
			want = append(want, i)
		}
	}
	if got := ids(sink.Rows()); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	st := src.Stats()
	if st.DeadLettered != int64(len(bad)) || st.DeadLetterTruncated != 1 {
		t.Fatalf("Stats.DeadLettered = %d, DeadLetterTruncated = %d, want %d and 1", st.DeadLettered, st.DeadLetterTruncated, len(bad))
	}
	dl := c.consumeCommitted("events-dlq")
	if len(dl) != len(bad) {
		t.Fatalf("dead-letter topic holds %d records, want %d", len(dl), len(bad))
	}
	var truncated int
	for _, d := range dl {
		hs := map[string]string{}
		for _, h := range d.Headers {
			hs[h.Key] = string(h.Value)
		}
		if !strings.Contains(hs[HeaderError], "want id,ts,text") || hs[HeaderTopic] != "events" || hs[HeaderPartition] == "" || hs[HeaderOffset] == "" {
			t.Errorf("dead letter lost its error or source headers: %v", hs)
		}
		if hs[HeaderPartition] != strconv.Itoa(int(big.Partition)) || hs[HeaderOffset] != strconv.FormatInt(big.Offset, 10) {
			if hs[HeaderTruncated] != "" {
				t.Errorf("small dead letter %q marked truncated", d.Value)
			}
			continue
		}
		truncated++
		if hs[HeaderTruncated] != "true" || hs[HeaderOriginalSize] != strconv.Itoa(len(big.Value)) {
			t.Errorf("oversized dead letter headers %v: want %s=true and %s=%d", hs, HeaderTruncated, HeaderOriginalSize, len(big.Value))
		}
		if !bytes.HasPrefix(big.Value, d.Value) || !wantValue(d.Value) {
			t.Errorf("oversized dead letter value of %d bytes is not the cut expected of the original's %d", len(d.Value), len(big.Value))
		}
	}
	if truncated != 1 {
		t.Fatalf("%d dead letters of the oversized record, want 1", truncated)
	}
}

// TestDeadLetterLargerThanTopicLimit: a rejected record larger than the
// dead-letter topic's max.message.bytes is written cut to fit, marked,
// and the job goes on (it used to fail with MESSAGE_TOO_LARGE on every
// restart).
func TestDeadLetterLargerThanTopicLimit(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	if err := c.c.CreateTopic("events-dlq", 1, map[string]string{"max.message.bytes": strconv.Itoa(dlqLimit)}); err != nil {
		t.Fatal(err)
	}
	checkOversized(t, c, func(v []byte) bool { return len(v) > 0 && len(v) < dlqLimit })
}

// TestDeadLetterTooLargeRetried: when the topic's limit cannot be read
// (DescribeConfigs refused), the writer assumes the broker default; the
// broker answers MESSAGE_TOO_LARGE and the dead letter is written again
// without its payload, error and source headers kept.
func TestDeadLetterTooLargeRetried(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	if err := c.c.CreateTopic("events-dlq", 1, map[string]string{"max.message.bytes": strconv.Itoa(dlqLimit)}); err != nil {
		t.Fatal(err)
	}
	c.c.ControlKey(int16(kmsg.DescribeConfigs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kreq.(*kmsg.DescribeConfigsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, r := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
	checkOversized(t, c, func(v []byte) bool { return len(v) == 0 })
}
