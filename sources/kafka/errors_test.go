package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// fillWithBad produces 30 records to each of 2 partitions; every 7th one
// (by id) is not in the test format. It returns the bad records.
func fillWithBad(c *cluster, topic string) (bad []*kgo.Record) {
	var recs []*kgo.Record
	for i := int64(0); i < 60; i++ {
		r := rec(topic, int32(i%2), i, t0.UnixMilli()+i)
		if i%7 == 3 {
			r.Value = fmt.Appendf(nil, "bad record %d", i)
			r.Key = fmt.Appendf(nil, "k%d", i)
			r.Headers = []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}
			bad = append(bad, r)
		}
		recs = append(recs, r)
	}
	c.produce(c.producer(), recs...)
	return bad
}

func TestErrorPolicyFail(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	bad := fillWithBad(c, "events")
	o := baseOptions(c, "events")
	o.BoundedMode = BoundedLatest
	_, _, err := runJob(t, mustSource(t, o), 2, arrowflow.Options{Allocator: newMem(t)})
	if err == nil {
		t.Fatal("job with a bad record succeeded under the fail policy")
	}
	// The first bad record of either partition fails the job.
	var named bool
	for _, r := range bad[:2] {
		want := fmt.Sprintf(`topic "events" partition %d at offset %d`, r.Partition, r.Offset)
		named = named || strings.Contains(err.Error(), want)
	}
	if !named || !strings.Contains(err.Error(), "want id,ts,text") || !strings.Contains(err.Error(), "skip or dlq") {
		t.Fatalf("error %q does not name the record and the decoder's reason", err)
	}
}

func TestErrorPolicySkip(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	bad := fillWithBad(c, "events")
	o := baseOptions(c, "events")
	o.BoundedMode = BoundedLatest
	o.OnError = SkipOnError
	src := mustSource(t, o)
	sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t)})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(0); i < 60; i++ {
		if i%7 != 3 {
			want = append(want, i)
		}
	}
	if got := ids(sink.Rows()); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	if st := src.Stats(); st.Skipped != int64(len(bad)) {
		t.Fatalf("Stats.Skipped = %d, want %d", st.Skipped, len(bad))
	}
}

func TestErrorPolicyDeadLetter(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 2)
	c.createTopic("events-dlq", 1)
	bad := fillWithBad(c, "events")
	o := baseOptions(c, "events")
	o.BoundedMode = BoundedLatest
	o.OnError = DeadLetterOnError
	o.DeadLetterTopic = "events-dlq"
	src := mustSource(t, o)
	sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sink.Rows()); got != 60-len(bad) {
		t.Fatalf("%d rows, want %d", got, 60-len(bad))
	}
	// The job ended, so every dead letter was acknowledged before its
	// final checkpoint.
	if st := src.Stats(); st.DeadLettered != int64(len(bad)) {
		t.Fatalf("Stats.DeadLettered = %d, want %d", st.DeadLettered, len(bad))
	}
	dl := c.consumeCommitted("events-dlq")
	if len(dl) != len(bad) {
		t.Fatalf("dead-letter topic holds %d records, want %d", len(dl), len(bad))
	}
	byOrigin := map[string]*kgo.Record{}
	for _, r := range bad {
		byOrigin[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
	}
	for _, d := range dl {
		hs := map[string]string{}
		for _, h := range d.Headers {
			hs[h.Key] = string(h.Value)
		}
		orig := byOrigin[hs[HeaderPartition]+"/"+hs[HeaderOffset]]
		switch {
		case orig == nil:
			t.Fatalf("dead letter %q with headers %v matches no bad record", d.Value, hs)
		case hs[HeaderTopic] != "events":
			t.Errorf("dead letter topic header %q", hs[HeaderTopic])
		case !bytes.Equal(d.Value, orig.Value) || !bytes.Equal(d.Key, orig.Key):
			t.Errorf("dead letter key/value %q/%q, want %q/%q", d.Key, d.Value, orig.Key, orig.Value)
		case hs["origin"] != "test" || d.Headers[0].Key != "origin":
			t.Errorf("dead letter lost the original headers: %v", d.Headers)
		case !strings.Contains(hs[HeaderError], "want id,ts,text"):
			t.Errorf("dead letter error header %q", hs[HeaderError])
		case !d.Timestamp.Equal(orig.Timestamp.Truncate(time.Millisecond)):
			t.Errorf("dead letter timestamp %s, want %s", d.Timestamp, orig.Timestamp)
		}
		delete(byOrigin, hs[HeaderPartition]+"/"+hs[HeaderOffset])
	}
	if len(byOrigin) != 0 {
		t.Fatalf("bad records without a dead letter: %v", keysOf(byOrigin))
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A dead-letter topic that does not exist fails Open, saying so.
func TestDeadLetterTopicMustExist(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 1)
	o := baseOptions(c, "events")
	o.OnError = DeadLetterOnError
	o.DeadLetterTopic = "nowhere"
	src := mustSource(t, o)
	_, err := src.Open(&arrowflow.TaskInfo{Parallelism: 1, Allocator: newMem(t)}, splitStates(mustSplits(t, src)))
	if err == nil || !strings.Contains(err.Error(), `dead-letter topic "nowhere"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestUnknownTopic(t *testing.T) {
	c := newCluster(t, 1)
	o := baseOptions(c, "missing")
	_, err := mustSource(t, o).Splits(t.Context())
	if err == nil || !strings.Contains(err.Error(), `topic "missing"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestParseSpecificOffsets(t *testing.T) {
	got, err := ParseSpecificOffsets("t", "partition:0,offset:42;partition:1,offset:300")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[Partition{"t", 0}] != 42 || got[Partition{"t", 1}] != 300 {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"partition:0", "partition:x,offset:1", "partition:0,offset:-1", "p:0,o:1"} {
		if _, err := ParseSpecificOffsets("t", bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, s := range []string{"t/0", "a.b-c/12"} {
		p, err := ParsePartition(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePartition(%q) = %v, %v", s, p, err)
		}
	}
	for _, s := range []string{"t", "/1", "t/-1", "t/01", "t/x"} {
		if _, err := ParsePartition(s); err == nil {
			t.Errorf("ParsePartition(%q) succeeded", s)
		}
	}
	for _, p := range []position{{0, -1}, {42, -1}, {7, 100}} {
		q, err := decodePosition("t/0", p.encode())
		if err != nil || q != p {
			t.Errorf("position %v round trip: %v, %v", p, q, err)
		}
	}
	for _, b := range []string{"", "x", "-1", "1:", "1:x", strconv.Itoa(-5) + ":3"} {
		if _, err := decodePosition("t/0", []byte(b)); err == nil {
			t.Errorf("position %q decoded", b)
		}
	}
}
