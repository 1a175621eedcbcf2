package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// abortedBase starts the ids of records produced in aborted transactions.
const abortedBase = 1_000_000

// fillMixed produces, to every partition but the last of topic (which
// stays empty), plain records, records of committed transactions and
// records of aborted transactions, interleaved, so that some partitions
// end with a commit marker and others with an abort marker. It returns the
// number of records that are not aborted.
func fillMixed(c *cluster, topic string, partitions int32) int {
	plain := c.producer()
	txn := c.producer(kgo.TransactionalID("oracle-txn"))
	id := int64(0)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	batch := func(n int, ps ...int32) []*kgo.Record {
		var out []*kgo.Record
		for i := 0; i < n; i++ {
			for _, p := range ps {
				out = append(out, rec(topic, p, id, ts+id))
				id++
			}
		}
		return out
	}
	aborted := func(n int, ps ...int32) []*kgo.Record {
		recs := batch(n, ps...)
		for _, r := range recs {
			id := idOf(r)
			r.Value = valueOf(abortedBase+id, ts+id, "aborted")
		}
		return recs
	}
	var all []int32
	for p := int32(0); p < partitions-1; p++ {
		all = append(all, p)
	}
	good := 0
	c.produce(plain, batch(40, all...)...)
	good += 40 * len(all)
	c.produceTxn(txn, true, batch(30, all...)...)
	good += 30 * len(all)
	c.produceTxn(txn, false, aborted(25, all...)...)
	c.produce(plain, batch(10, all...)...)
	good += 10 * len(all)
	c.produceTxn(txn, false, aborted(5, all[0])...)
	c.produceTxn(txn, true, batch(20, all[1:]...)...) // these end with a commit marker
	good += 20 * len(all[1:])
	c.produceTxn(txn, false, aborted(7, all[len(all)-1])...) // and this one with an abort marker
	return good
}

// idOf parses the id of a test-format record value.
func idOf(r *kgo.Record) int64 {
	var id, ts int64
	var text string
	fmt.Sscanf(string(r.Value), "%d,%d,%s", &id, &ts, &text)
	return id
}

var oracleMeta = []MetadataColumn{{Key: MetaTopic}, {Key: MetaPartition}, {Key: MetaOffset}}

// oracleRow is the row the source must produce for r with oracleMeta.
func oracleRow(r *kgo.Record) string {
	var id, ts int64
	var text string
	if _, err := fmt.Sscanf(string(r.Value), "%d,%d,%s", &id, &ts, &text); err != nil {
		panic(err)
	}
	return rowKey([]any{id, time.UnixMilli(ts).UTC(), text, r.Topic, int64(r.Partition), r.Offset})
}

// A bounded latest-offset job reads exactly what a plain read_committed
// consumer sees, at any parallelism, and never an aborted record.
func TestOracleReadCommitted(t *testing.T) {
	c := newCluster(t, 3)
	const topic, parts = "events", 5
	c.createTopic(topic, parts)
	good := fillMixed(c, topic, parts)

	var want []string
	for _, r := range c.consumeCommitted(topic) {
		want = append(want, oracleRow(r))
	}
	if len(want) != good {
		t.Fatalf("oracle consumer saw %d records, %d were produced outside aborted transactions", len(want), good)
	}
	for _, par := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			o := baseOptions(c, topic)
			o.BoundedMode = BoundedLatest
			o.Metadata = oracleMeta
			o.BatchSize = 17
			src := mustSource(t, o)
			sink, _, err := runJob(t, src, par, arrowflow.Options{Allocator: newMem(t), CheckpointInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			rows := sink.Rows()
			for _, r := range rows {
				if r[0].(int64) >= abortedBase {
					t.Fatalf("aborted record read: %v", r)
				}
			}
			sameMultiset(t, "job output", rowKeys(rows), want)
			if st := src.Stats(); st.Records != int64(good) {
				t.Errorf("Stats.Records = %d, want %d", st.Records, good)
			}
		})
	}
}

// Under read_uncommitted the source reads aborted records too, exactly as
// a plain read_uncommitted consumer does.
func TestOracleReadUncommitted(t *testing.T) {
	c := newCluster(t, 1)
	const topic, parts = "events", 3
	c.createTopic(topic, parts)
	fillMixed(c, topic, parts)
	o := baseOptions(c, topic)
	o.BoundedMode = BoundedLatest
	o.Isolation = ReadUncommitted
	o.Metadata = oracleMeta
	src := mustSource(t, o)
	sink, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var want []string
	aborted := 0
	readAllUncommitted(t, cl, func(r *kgo.Record) {
		want = append(want, oracleRow(r))
		if idOf(r) >= abortedBase {
			aborted++
		}
	})
	if aborted == 0 {
		t.Fatal("read_uncommitted oracle saw no aborted record")
	}
	sameMultiset(t, "job output", rowKeys(sink.Rows()), want)
}

// readAllUncommitted polls cl until a quiet spell.
func readAllUncommitted(t *testing.T, cl *kgo.Client, each func(*kgo.Record)) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for quiet := 0; quiet < 3; {
		if time.Now().After(deadline) {
			t.Fatal("consumer timed out")
		}
		n := 0
		fs := pollFor(cl, 200*time.Millisecond)
		fs.EachRecord(func(r *kgo.Record) { n++; each(r) })
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}
