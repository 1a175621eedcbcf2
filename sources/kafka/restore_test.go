package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/state"
)

// Positions taken between batches are exact: restarting from them with
// another parallelism reads every remaining record once, and the rows
// before and after split each partition at the recorded offset.
func TestRestoreFromReaderPositions(t *testing.T) {
	c := newCluster(t, 1)
	const topic, parts = "events", 5
	c.createTopic(topic, parts)
	good := fillMixed(c, topic, parts)
	var want []string
	for _, r := range c.consumeCommitted(topic) {
		want = append(want, oracleRow(r))
	}

	for _, tc := range []struct{ before, after, nexts int }{{1, 3, 1}, {2, 3, 4}, {3, 1, 9}, {2, 2, 1000}} {
		t.Run(fmt.Sprintf("par=%d-then-%d/nexts=%d", tc.before, tc.after, tc.nexts), func(t *testing.T) {
			mem := newMem(t)
			o := baseOptions(c, topic)
			o.BoundedMode = BoundedLatest
			o.Metadata = oracleMeta
			o.BatchSize = 11
			src := mustSource(t, o)
			splits := mustSplits(t, src)

			// First run: each reader reads some batches, then a barrier.
			var first [][]any
			positions := map[string][]byte{}
			var cp arrowflow.Checkpoint
			for s := 0; s < tc.before; s++ {
				rd := openReader(t, src, mem, s, tc.before, subtaskStates(splits, nil, s, tc.before))
				n := 0
				rows, _ := readUntil(t, rd, func([][]any) bool { n++; return n > tc.nexts })
				first = append(first, rows...)
				pos, err := rd.Positions()
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range pos {
					positions[p.Split] = p.Position
				}
				cp.Sources = map[string][]arrowflow.SplitState{"kafka": append(cp.Sources["kafka"], pos...)}
				rd.Close()
			}
			// Every row read lies before its partition's position.
			for _, r := range first {
				p := Partition{Topic: r[3].(string), Partition: int32(r[4].(int64))}
				pos, err := decodePosition(p.String(), positions[p.String()])
				if err != nil {
					t.Fatal(err)
				}
				if off := r[5].(int64); off >= pos.next {
					t.Fatalf("row at offset %d of %s read before a barrier, but the position is %d", off, p, pos.next)
				}
			}

			// Second run, restored, at another parallelism.
			cp.Job, cp.Epoch, cp.MaxParallelism = "kafka-test", 1, state.DefaultMaxParallelism
			sink, _, err := runJob(t, src, tc.after, arrowflow.Options{Allocator: mem, Restore: &cp})
			if err != nil {
				t.Fatal(err)
			}
			second := sink.Rows()
			for _, r := range second {
				p := Partition{Topic: r[3].(string), Partition: int32(r[4].(int64))}
				pos, _ := decodePosition(p.String(), positions[p.String()])
				if off := r[5].(int64); off < pos.next {
					t.Fatalf("restored run read offset %d of %s, before the restored position %d", off, p, pos.next)
				}
			}
			sameMultiset(t, "both runs", append(rowKeys(first), rowKeys(second)...), want)
			if len(want) != good {
				t.Fatalf("oracle has %d rows, want %d", len(want), good)
			}
		})
	}
}

// A running unbounded job is stopped with a savepoint while records keep
// arriving (plain and transactional, some aborted); a bounded job resumed
// from the savepoint at another parallelism reads the rest. Together they
// output every committed record exactly once.
func TestStopWithSavepointAndResume(t *testing.T) {
	c := newCluster(t, 1)
	const topic, parts = "events", 4
	c.createTopic(topic, parts)

	// Producer: rounds of plain, committed and aborted records.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var produced atomic.Int64
	wg.Go(func() {
		plain := c.producer()
		txn := c.producer(kgo.TransactionalID("resume-txn"))
		ctx := context.Background()
		for id := int64(0); ; id += 3 * parts {
			select {
			case <-stop:
				return
			default:
			}
			var a, b, x []*kgo.Record
			for p := int32(0); p < parts; p++ {
				a = append(a, rec(topic, p, id+int64(p), id))
				b = append(b, rec(topic, p, id+parts+int64(p), id))
				r := rec(topic, p, abortedBase+id+int64(p), id)
				x = append(x, r)
			}
			if err := plain.ProduceSync(ctx, a...).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			for i, recs := range [][]*kgo.Record{b, x} {
				if err := txn.BeginTransaction(); err != nil {
					t.Error(err)
					return
				}
				if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Error(err)
					return
				}
				if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(i == 0)); err != nil {
					t.Error(err)
					return
				}
			}
			produced.Add(2 * parts)
			time.Sleep(time.Millisecond)
		}
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	mem := newMem(t)
	store := state.NewMemoryStore()
	o := baseOptions(c, topic)
	o.Metadata = oracleMeta
	o.BatchSize = 7
	src := mustSource(t, o)

	var recorded atomic.Int64
	g := arrowflow.NewGraph("kafka-test")
	n := g.Source("kafka", src, 2)
	first := collect.New()
	g.Sink("collect", first, 2, arrowflow.Forward(n))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, StateStore: store, CheckpointInterval: 10 * time.Millisecond,
		Recorder: arrowflow.EpochRecorderFunc(func(context.Context, *arrowflow.Checkpoint) error { recorded.Add(1); return nil })})
	if err != nil {
		t.Fatal(err)
	}
	spc := make(chan arrowflow.Savepoint, 1)
	errc := make(chan error, 2)
	go func() {
		deadline := time.Now().Add(testTimeout)
		for (recorded.Load() < 3 || len(first.Rows()) == 0) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		sp, err := job.TriggerSavepoint(context.Background(), true)
		spc <- sp
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	sp := <-spc
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Let more records arrive after the stop, then stop producing.
	for p := produced.Load(); produced.Load() < p+100; {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()

	o.BoundedMode = BoundedLatest
	src2 := mustSource(t, o)
	second, _, err := runJob(t, src2, 3, arrowflow.Options{Allocator: mem, StateStore: store, Restore: sp.Checkpoint})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range c.consumeCommitted(topic) {
		want = append(want, oracleRow(r))
	}
	if int64(len(want)) != produced.Load() {
		t.Fatalf("oracle saw %d committed records, %d produced", len(want), produced.Load())
	}
	a, b := first.Rows(), second.Rows()
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("runs read %d and %d rows: the stop did not fall inside the stream", len(a), len(b))
	}
	sameMultiset(t, "both runs", append(rowKeys(a), rowKeys(b)...), want)
}
