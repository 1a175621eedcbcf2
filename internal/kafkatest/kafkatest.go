// Package kafkatest holds helpers for tests against kfake, franz-go's
// Kafka-protocol broker: a restartable broker on a loopback port and an
// independent read_committed reader that serves as the oracle of what a
// topic holds.
package kafkatest

import (
	"context"
	"net"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker is a one-node kfake cluster on 127.0.0.1, closed when the test
// ends. With a data folder it keeps its data across Restart.
type Broker struct {
	t       testing.TB
	c       *kfake.Cluster
	port    int
	dataDir string
	opts    []kfake.Opt
}

// Start starts a broker with auto-created topics of partitions
// partitions. dataDir, when not empty, persists its data.
func Start(t testing.TB, dataDir string, partitions int, opts ...kfake.Opt) *Broker {
	t.Helper()
	b := &Broker{t: t, dataDir: dataDir}
	b.opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions)}, opts...)
	if dataDir != "" {
		b.opts = append(b.opts, kfake.DataDir(dataDir))
	}
	b.start(0)
	t.Cleanup(func() {
		if b.c != nil {
			b.c.Close()
		}
	})
	return b
}

func (b *Broker) start(port int) {
	b.t.Helper()
	var err error
	for attempt := 0; ; attempt++ {
		b.c, err = kfake.NewCluster(append(b.opts, kfake.Ports(port))...)
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port may linger
	}
	if err != nil {
		b.t.Fatal(err)
	}
	if port == 0 {
		_, p, err := net.SplitHostPort(b.c.ListenAddrs()[0])
		if err == nil {
			b.port, err = strconv.Atoi(p)
		}
		if err != nil {
			b.t.Fatal(err)
		}
	}
}

// Addr is the broker's address.
func (b *Broker) Addr() string { return b.c.ListenAddrs()[0] }

// Cluster is the running kfake cluster.
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Restart stops the broker cleanly (open transactions are kept, as a
// controlled shutdown of Kafka keeps them) and starts it again on the same
// port and data folder.
func (b *Broker) Restart() {
	b.t.Helper()
	if b.dataDir == "" {
		b.t.Fatal("kafkatest: Restart needs a data folder")
	}
	b.c.Close()
	b.c = nil
	b.start(b.port)
}

// Record is a record read back from a topic.
type Record struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// ReadCommitted reads every committed record of topic with a plain
// franz-go read_committed consumer, up to the last stable offsets seen
// when it starts, and returns them ordered by partition and offset.
// opts are added to the consumer's options (TLS, SASL).
func ReadCommitted(t testing.TB, brokers []string, topic string, opts ...kgo.Opt) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("kafkatest: end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		end[o.Partition] = o.Offset
	})
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	var out []Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kafkatest: reading %s: %v (at %v, end %v)", topic, ctx.Err(), next, end)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				next[r.Partition] = r.Offset + 1
				// Commit and abort markers only move the position.
				if !r.Attrs.IsControl() && r.Offset < end[r.Partition] {
					out = append(out, Record{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
				}
			}
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// Values returns the records' values, sorted.
func Values(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	sort.Strings(out)
	return out
}
