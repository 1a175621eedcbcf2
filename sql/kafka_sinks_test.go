package sql

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/checkpoint"
	"github.com/weirflow/weir/internal/kafkatest"
)

// A job writing two Kafka tables, neither with a
// 'sink.transactional-id-prefix': each sink gets transactional ids of its
// own (job-table), so they do not fence each other's producers, and every
// row reaches its topic exactly once.
func TestTwoKafkaSinksInOneJob(t *testing.T) {
	b := kafkatest.Start(t, "", 2)
	const rows = 30000
	script := fmt.Sprintf(`CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d');
CREATE TABLE evens (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'evens', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
CREATE TABLE odds (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'odds', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
INSERT INTO evens SELECT id FROM src WHERE id %% 2 = 0;
INSERT INTO odds SELECT id FROM src WHERE id %% 2 = 1;
`, b.Addr(), rows-1)
	// Run on a checkpoint folder, stopped abruptly after a few epochs,
	// then resumed: at the resume each sink recovers (commits or aborts)
	// the transactions under its own prefix only.
	dir := t.TempDir()
	for round, stopAfter := range []int{3, 0} {
		job, err := Compile(context.Background(), script, Options{Parallelism: 2, ForceParallelism: true, JobName: "two-sinks"})
		if err != nil {
			t.Fatal(err)
		}
		folder, err := checkpoint.Open(dir, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resumed, err := folder.Resume(ctx, job.Graph, "")
		if err != nil {
			t.Fatal(err)
		}
		if round == 1 && resumed.Restore == nil {
			t.Fatal("the second run found no checkpoint to resume from")
		}
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		run, err := job.Graph.Plan(resumed.Options(folder, arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond}))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		if stopAfter > 0 {
			go func() {
				defer stop()
				for runCtx.Err() == nil {
					if m, _, err := folder.Latest(runCtx); err == nil && m != nil && m.Epoch >= uint64(stopAfter) {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
		if err := run.Run(runCtx); err != nil && runCtx.Err() == nil {
			t.Fatalf("round %d: %v", round, err)
		}
		stop()
		cancel()
		folder.Close()
		mem.AssertSize(t, 0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListTransactions(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]bool{}
	for id := range listed {
		p, _, _ := strings.Cut(id, "-0-")
		p, _, _ = strings.Cut(p, "-1-")
		if p != "two-sinks-evens" && p != "two-sinks-odds" {
			t.Fatalf("transactional id %q: want one of the sink's own prefixes two-sinks-evens, two-sinks-odds", id)
		}
		prefixes[p] = true
	}
	if len(prefixes) != 2 {
		t.Fatalf("transactional ids %v: want both sinks' prefixes", slices.Sorted(maps.Keys(listed)))
	}
	for parity, topic := range []string{"evens", "odds"} {
		var got, want []string
		for _, r := range kafkatest.ReadCommitted(t, []string{b.Addr()}, topic) {
			got = append(got, r.Value)
		}
		for id := parity; id < rows; id += 2 {
			want = append(want, fmt.Sprintf(`{"id":%d}`, id))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("topic %s: %d records, want %d (first %q)", topic, len(got), len(want), first(got))
		}
	}
}
