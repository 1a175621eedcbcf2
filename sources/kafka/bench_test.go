package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/blackhole"
)

const (
	benchTopic      = "bench"
	benchPartitions = 4
	benchRecords    = 1_000_000
)

// benchFill produces benchRecords small JSON records of testSchema, round-robin over the
// partitions, and returns their total value bytes.
func benchFill(b *testing.B, addrs []string) int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	var bytes int64
	errc := make(chan error, 1)
	ts := t0.UnixMilli()
	for i := int64(0); i < benchRecords; i++ {
		r := &kgo.Record{Topic: benchTopic, Partition: int32(i % benchPartitions),
			Value: fmt.Appendf(nil, `{"id":%d,"ts":%d,"text":"payload-%d"}`, i, ts+i, i%1000)}
		bytes += int64(len(r.Value))
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	return bytes
}

// BenchmarkEndToEnd compares reading a pre-filled 4-partition topic of a
// million small records to its end with a plain franz-go consumer that
// only counts records, and with a weir job (Kafka source, bounded at the
// latest offsets, decoding every JSON value into Arrow, into a blackhole
// sink)
// at parallelism 1 and 2. Each reports records/s; the weir runs also
// report their ratio to the plain consumer's rate.
func BenchmarkEndToEnd(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateTopic(benchTopic, benchPartitions, nil); err != nil {
		b.Fatal(err)
	}
	addrs := c.ListenAddrs()
	start := time.Now()
	valueBytes := benchFill(b, addrs)
	b.Logf("produced %d records (%d value bytes) in %s", benchRecords, valueBytes, time.Since(start).Round(time.Millisecond))

	dec := jsonDecoder(b)
	var plainRate float64
	b.Run("franz-go", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(valueBytes)
		for b.Loop() {
			if n := countToEnd(b, addrs); n != benchRecords {
				b.Fatalf("counted %d records, want %d", n, benchRecords)
			}
		}
		plainRate = float64(benchRecords) * float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(plainRate, "records/s")
	})
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("weir/parallelism=%d", par), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(valueBytes)
			for b.Loop() {
				src, err := NewSource(Options{Brokers: addrs, Topics: []string{benchTopic}, Decoder: dec,
					BoundedMode: BoundedLatest})
				if err != nil {
					b.Fatal(err)
				}
				sink := blackhole.New()
				g := arrowflow.NewGraph("bench")
				n := g.Source("kafka", src, par)
				g.Sink("blackhole", sink, par, arrowflow.Forward(n))
				job, err := g.Plan(arrowflow.Options{CheckpointInterval: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if sink.Rows() != benchRecords {
					b.Fatalf("sink got %d rows, want %d", sink.Rows(), benchRecords)
				}
			}
			rate := float64(benchRecords) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "records/s")
			if plainRate > 0 {
				b.ReportMetric(rate/plainRate, "x-franz-go")
			}
		})
	}
}

// countToEnd reads every partition of the bench topic from the start to
// its end offset with a plain read_committed franz-go consumer, counting
// records.
func countToEnd(b *testing.B, addrs []string) int {
	ctx := context.Background()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		b.Fatal(err)
	}
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, benchTopic)
	adm.Close()
	if err != nil {
		b.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		parts[o.Partition] = kgo.NewOffset().AtStart()
		left[o.Partition] = o.Offset
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{benchTopic: parts}))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			n += len(p.Records)
			if k := len(p.Records); k > 0 && p.Records[k-1].Offset+1 >= left[p.Partition] {
				delete(left, p.Partition)
			}
		})
	}
	return n
}
