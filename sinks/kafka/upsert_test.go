package kafka_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/sinks/kafka"
)

// change is one row of a retract changelog of (k, n).
type change struct {
	kind arrowflow.RowKind
	k    string
	n    int64
}

// randomChangelog returns epochs of a retract changelog over keys k0..:
// inserts, updates (-U then +U) and deletes, each key's changes valid
// for the table it describes.
func randomChangelog(rng *rand.Rand, keys, epochs, perEpoch int) [][]change {
	vals := map[string]int64{}
	out := make([][]change, epochs)
	next := int64(1)
	for e := range out {
		for range perEpoch {
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			old, ok := vals[k]
			switch {
			case !ok:
				out[e] = append(out[e], change{arrowflow.Insert, k, next})
				vals[k] = next
			case rng.IntN(4) == 0:
				out[e] = append(out[e], change{arrowflow.Delete, k, old})
				delete(vals, k)
			default:
				out[e] = append(out[e], change{arrowflow.UpdateBefore, k, old}, change{arrowflow.UpdateAfter, k, next})
				vals[k] = next
			}
			next++
		}
	}
	return out
}

// upsertsOf is what an upsert sink must write for changes, per key in
// order: "k,n" for a value, "" for a tombstone.
func upsertsOf(epochs [][]change) map[string][]string {
	out := map[string][]string{}
	for _, cs := range epochs {
		for _, c := range cs {
			switch c.kind {
			case arrowflow.Insert, arrowflow.UpdateAfter:
				out[c.k] = append(out[c.k], fmt.Sprintf("%s,%d", c.k, c.n))
			case arrowflow.Delete:
				out[c.k] = append(out[c.k], "")
			}
		}
	}
	return out
}

// lastOf keeps the last upsert of each key: the table a reader of the
// compacted topic sees ("" for a deleted key).
func lastOf(ups map[string][]string) map[string]string {
	out := map[string]string{}
	for k, vs := range ups {
		out[k] = vs[len(vs)-1]
	}
	return out
}

// readUpserts reads topic with a plain read_committed franz-go consumer up
// to the last stable offsets and returns, per key in offset order, the
// values ("" for a tombstone: a nil value). An empty non-nil value, which
// the test's encoder never writes, fails the test.
func readUpserts(t *testing.T, brokers []string, topic string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, next := map[int32]int64{}, map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	keyPartition := map[string]int32{}
	out := map[string][]string{}
	for {
		done := true
		for p, e := range end {
			done = done && next[p] >= e
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				next[r.Partition] = r.Offset + 1
				if r.Attrs.IsControl() || r.Offset >= end[r.Partition] {
					continue
				}
				k := string(r.Key)
				if q, ok := keyPartition[k]; ok && q != r.Partition {
					t.Fatalf("key %s in partitions %d and %d", k, q, r.Partition)
				}
				keyPartition[k] = r.Partition
				switch {
				case r.Value == nil:
					out[k] = append(out[k], "")
				case len(r.Value) == 0:
					t.Fatalf("key %s: an empty value that is not a tombstone", k)
				default:
					if !strings.HasPrefix(string(r.Value), k+",") {
						t.Fatalf("key %s has value %s", k, r.Value)
					}
					out[k] = append(out[k], string(r.Value))
				}
			}
		})
	}
	return out
}

// writeChanges writes changes through w in batches of random sizes, some
// with a selection that leaves out rows the changelog does not hold (which
// must not be written).
func writeChanges(t *testing.T, ctx context.Context, rng *rand.Rand, mem memory.Allocator, w arrowflow.SinkWriter, cs []change) {
	t.Helper()
	for len(cs) > 0 {
		n := min(len(cs), 1+rng.IntN(40))
		var ks []string
		var ns []int64
		var kinds []arrowflow.RowKind
		var sel []int32
		useSel := rng.IntN(2) == 0
		for _, c := range cs[:n] {
			if useSel && rng.IntN(3) == 0 { // a filtered-out row: junk
				ks, ns, kinds = append(ks, "junk"), append(ns, -1), append(kinds, arrowflow.Insert)
			}
			if useSel {
				sel = append(sel, int32(len(ks)))
			}
			ks, ns, kinds = append(ks, c.k), append(ns, c.n), append(kinds, c.kind)
		}
		if err := w.Write(ctx, changeBatch(mem, ks, ns, kinds, sel)); err != nil {
			t.Fatal(err)
		}
		cs = cs[n:]
	}
}

// subtaskOf spreads keys over subtasks as the planner's key-by does: one
// key's changes all reach one subtask, in order.
func subtaskOf(k string, par int) int {
	h := 0
	for _, c := range k {
		h = h*31 + int(c)
	}
	return h % par
}

func splitBySubtask(cs []change, par int) [][]change {
	out := make([][]change, par)
	for _, c := range cs {
		s := subtaskOf(c.k, par)
		out[s] = append(out[s], c)
	}
	return out
}

// An upsert sink writes a retract changelog as upserts: each insert and
// update-after as key and value, each delete as a tombstone, no
// update-before; a plain read_committed consumer finds, per key and in
// order, exactly the upserts of the changelog (none twice, none lost), also
// across a crash after a pre-committed epoch, with the epoch after it
// written in part and then replayed.
func TestUpsertSinkExactlyOnce(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(7, 21))
	log := randomChangelog(rng, 40, 5, 120)
	const par = 2
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	opts := kafka.Options{Brokers: brokers, Topic: "upserts", Encoder: textEncoder{}, KeyColumns: []string{"k"}, Upsert: true}
	open := func(first uint64) (*kafka.Sink, []arrowflow.SinkWriter) {
		s, err := kafka.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ws := make([]arrowflow.SinkWriter, par)
		for i := range ws {
			if ws[i], err = s.Open(&arrowflow.TaskInfo{Job: "up", Name: "kafka", Subtask: i, Parallelism: par, Allocator: mem, FirstEpoch: first}); err != nil {
				t.Fatal(err)
			}
		}
		return s, ws
	}
	epoch := func(s *kafka.Sink, ws []arrowflow.SinkWriter, e uint64, cs []change, commit bool) [][]byte {
		parts := splitBySubtask(cs, par)
		payloads := make([][]byte, par)
		for i, w := range ws {
			writeChanges(t, ctx, rng, mem, w, parts[i])
			p, err := w.PreCommit(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			payloads[i] = p
		}
		if commit {
			if err := s.Commit(ctx, e, payloads); err != nil {
				t.Fatal(err)
			}
		}
		return payloads
	}

	s, ws := open(1)
	epoch(s, ws, 1, log[0], true)
	p2 := epoch(s, ws, 2, log[1], false) // manifest 2 written, then the crash
	parts := splitBySubtask(log[2], par)
	replayedUB := 0
	for i, w := range ws {
		half := parts[i][:len(parts[i])/2]
		writeChanges(t, ctx, rng, mem, w, half) // epoch 3 in part, in open transactions
		for _, c := range half {
			if c.kind == arrowflow.UpdateBefore {
				replayedUB++
			}
		}
	}
	s.Close()
	crashed := s

	// Recovery from manifest 2: commit its transactions again, abort what
	// came after, replay from epoch 3.
	s, ws = open(3)
	if err := s.Commit(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, "up", 2); err != nil {
		t.Fatal(err)
	}
	for e := 3; e <= 5; e++ {
		epoch(s, ws, uint64(e), log[e-1], true)
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	want := upsertsOf(log)
	got := readUpserts(t, brokers, "upserts")
	sameUpserts(t, got, want)
	ub := 0
	for _, cs := range log {
		for _, c := range cs {
			if c.kind == arrowflow.UpdateBefore {
				ub++
			}
		}
	}
	// The update-befores of epoch 3's first half were dropped twice: once
	// before the crash, once in the replay.
	if d := crashed.UpdateBeforesDropped() + s.UpdateBeforesDropped(); d != int64(ub+replayedUB) {
		t.Errorf("UpdateBeforesDropped = %d, want the changelog's %d and %d replayed", d, ub, replayedUB)
	}
}

func sameUpserts(t *testing.T, got, want map[string][]string) {
	t.Helper()
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	bad := 0
	for k := range keys {
		if !slices.Equal(got[k], want[k]) {
			if bad++; bad <= 5 {
				t.Errorf("key %s: topic holds %q, want %q", k, got[k], want[k])
			}
		}
	}
}

// With 'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval', an
// upsert sink writes each key's latest change once per flush: within an
// epoch (the interval never runs out here) a key is written once, and the
// last record of every key is still its latest value. A small max-rows
// flushes more often, never losing the order of a key's changes.
func TestUpsertSinkBuffer(t *testing.T) {
	for _, maxRows := range []int{1 << 20, 5} {
		t.Run(fmt.Sprintf("max-rows=%d", maxRows), func(t *testing.T) {
			c := newCluster(t)
			brokers := c.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rng := rand.New(rand.NewPCG(3, uint64(maxRows)))
			log := randomChangelog(rng, 25, 3, 150)
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			s, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "buffered", Encoder: textEncoder{}, KeyColumns: []string{"k"},
				Upsert: true, BufferFlushMaxRows: maxRows, BufferFlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w, err := s.Open(&arrowflow.TaskInfo{Job: "buf", Name: "kafka", Subtask: 0, Parallelism: 1, Allocator: mem, FirstEpoch: 1})
			if err != nil {
				t.Fatal(err)
			}
			perEpoch := map[string][]string{} // what the epoch's writes must leave, per key, with a buffer of every key
			for e, cs := range log {
				writeChanges(t, ctx, rng, mem, w, cs)
				p, err := w.PreCommit(ctx, uint64(e+1))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Commit(ctx, uint64(e+1), [][]byte{p}); err != nil {
					t.Fatal(err)
				}
				for k, v := range lastOf(upsertsOf([][]change{cs})) {
					perEpoch[k] = append(perEpoch[k], v)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := readUpserts(t, brokers, "buffered")
			all := upsertsOf(log)
			if maxRows > 1000 {
				sameUpserts(t, got, perEpoch)
			} else {
				// Flushes fold less: a key's records are a subsequence of
				// its upserts that ends with the latest.
				for k, vs := range all {
					if !isSubsequence(got[k], vs) || len(got[k]) == 0 || got[k][len(got[k])-1] != vs[len(vs)-1] {
						t.Errorf("key %s: topic holds %q, want a subsequence of %q ending with its last", k, got[k], vs)
					}
				}
			}
			written, total := 0, 0
			for _, vs := range got {
				written += len(vs)
			}
			for _, vs := range all {
				total += len(vs)
			}
			if f := s.Folded(); f != int64(total-written) {
				t.Errorf("Folded = %d, want %d upserts - %d written", f, total, written)
			}
			if maxRows > 1000 && written >= total {
				t.Errorf("the buffer folded nothing: %d of %d upserts written", written, total)
			}
		})
	}
}

func isSubsequence(sub, seq []string) bool {
	i := 0
	for _, v := range seq {
		if i < len(sub) && sub[i] == v {
			i++
		}
	}
	return i == len(sub)
}

// The upsert mode's options are checked: key columns required, a value
// format of rows, the key's partitioner, and Flink's rule that both buffer
// options are set or neither.
func TestUpsertSinkOptions(t *testing.T) {
	dbz, err := format.NewEncoder(context.Background(), format.Config{Name: format.DebeziumJSON, Schema: changeSchema})
	if err != nil {
		t.Fatal(err)
	}
	base := kafka.Options{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Encoder: textEncoder{}, KeyColumns: []string{"k"}, Upsert: true}
	for _, tc := range []struct {
		name string
		edit func(*kafka.Options)
		want string
	}{
		{"no key", func(o *kafka.Options) { o.KeyColumns = nil }, "needs key columns"},
		{"change format", func(o *kafka.Options) { o.Encoder = dbz }, "must write rows"},
		{"round-robin", func(o *kafka.Options) { o.Partitioner = kafka.PartitionRoundRobin }, "partitions by the key"},
		{"max-rows only", func(o *kafka.Options) { o.BufferFlushMaxRows = 10 }, "must both be greater than zero"},
		{"interval only", func(o *kafka.Options) { o.BufferFlushInterval = time.Second }, "must both be greater than zero"},
		{"buffer without upsert", func(o *kafka.Options) {
			o.Upsert, o.BufferFlushMaxRows, o.BufferFlushInterval = false, 10, time.Second
		}, "upsert sink (upsert-kafka) only"},
	} {
		o := base
		tc.edit(&o)
		_, err := kafka.New(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := kafka.New(base); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
