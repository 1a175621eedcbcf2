package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/kafka"
	"github.com/weirflow/weir/sources/datagen"
)

func genSource(t *testing.T, rows int64) *datagen.Source {
	t.Helper()
	src, err := datagen.New(datagen.Config{
		Seed: 3, Rows: rows, BatchSize: 113, Splits: 4, RowsPerSecond: 40000,
		Fields: []datagen.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: datagen.Sequence},
			{Name: "user", Type: arrow.BinaryTypes.String, Values: []string{"ann", "bob", "cy", "dee"}},
			{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Min: 1, Max: 1000},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func wantValues(src *datagen.Source, rows int64) []string {
	var out []string
	for r := int64(0); r < rows; r++ {
		row := src.Row(r)
		out = append(out, fmt.Sprintf("%v,%v,%v", row[0], row[1], row[2]))
	}
	return sortStrings(out)
}

// A bounded job writes through transactions at parallelism 2 with
// checkpoints every few milliseconds: a read_committed consumer sees
// every row once, keyed by the key column, over several epochs.
func TestExactlyOnceJob(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	const rows = 20000
	src := genSource(t, rows)
	sink, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "out", Encoder: textEncoder{}, KeyColumns: []string{"user"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	g := arrowflow.NewGraph("eo")
	gen := g.Source("gen", src, 2)
	g.Sink("kafka", sink, 2, arrowflow.Rebalance(gen))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	j, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := j.Run(ctx); err != nil {
		t.Fatal(err)
	}
	cp := j.LatestCheckpoint()
	if cp.Epoch < 3 {
		t.Fatalf("only %d epochs; the test needs several", cp.Epoch)
	}
	for sub, p := range cp.Sinks["kafka"].Payloads {
		if p != nil && !strings.Contains(string(p), fmt.Sprintf(`"txn":"eo-%d-%d"`, sub, cp.Epoch%kafka.DefaultPool)) {
			t.Errorf("subtask %d's payload of epoch %d: %s", sub, cp.Epoch, p)
		}
	}
	got, keys := readCommitted(t, brokers, "out")
	sameValues(t, "read_committed output", got, wantValues(src, rows))
	for v, k := range keys {
		if user := strings.Split(v, ",")[1]; k != user {
			t.Fatalf("record %q has key %q, want its user %q", v, k, user)
		}
	}
	mem.AssertSize(t, 0)
}

// Transactions of epochs that never commit are invisible to
// read_committed consumers, and Recover aborts the open ones, so that the
// stable offset moves on.
func TestUncommittedEpochsInvisibleAndRecovered(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	sink, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "t", Encoder: textEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	ws := openWriters(t, sink, "job", 2, 1)
	p1 := writeEpoch(t, ctx, mem, ws, 1, "a")
	if err := sink.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	writeEpoch(t, ctx, mem, ws, 2, "b") // pre-committed, never committed
	write(t, ctx, mem, ws[0], "c")      // not even pre-committed
	// The process dies here: no writer closes, the producers vanish.
	sink.Close()

	again, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "t", Encoder: textEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.Commit(ctx, 1, p1); err != nil {
		t.Fatalf("committing epoch 1 again: %v", err)
	}
	if err := again.Recover(ctx, "job", 1); err != nil {
		t.Fatal(err)
	}
	got, _ := readCommitted(t, brokers, "t")
	sameValues(t, "after recovery", got, []string{"a-0", "a-1"})
}

func openWriters(t *testing.T, s *kafka.Sink, job string, n int, first uint64) []arrowflow.SinkWriter {
	t.Helper()
	ws := make([]arrowflow.SinkWriter, n)
	for i := range ws {
		w, err := s.Open(&arrowflow.TaskInfo{Job: job, Name: "kafka", Subtask: i, Parallelism: n, Allocator: memory.DefaultAllocator, FirstEpoch: first})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	return ws
}

// writeEpoch writes one record "<tag>-<subtask>" per writer and
// pre-commits epoch.
func writeEpoch(t *testing.T, ctx context.Context, mem memory.Allocator, ws []arrowflow.SinkWriter, epoch uint64, tag string) [][]byte {
	t.Helper()
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		write(t, ctx, mem, w, fmt.Sprintf("%s-%d", tag, i))
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	return payloads
}

func write(t *testing.T, ctx context.Context, mem memory.Allocator, w arrowflow.SinkWriter, value string) {
	t.Helper()
	b := stringBatch(mem, value)
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
}
