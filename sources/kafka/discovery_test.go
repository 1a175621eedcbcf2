package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/state"
)

// Partitions added while a job runs are read from offset 0 by exactly one
// subtask (one that had no partition before, here), appear in the job's
// positions and are restored by name with another parallelism.
func TestDiscoveredPartitions(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 1)
	fillNumbered(c, topic, 1, 0, 10)

	mem := newMem(t)
	store := state.NewMemoryStore()
	o := baseOptions(c, topic)
	o.Metadata = oracleMeta
	o.PartitionDiscoveryInterval = 50 * time.Millisecond
	src := mustSource(t, o)
	g := arrowflow.NewGraph("kafka-test")
	n := g.Source("kafka", src, 3)
	first := collect.New()
	g.Sink("collect", first, 3, arrowflow.Forward(n))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, StateStore: store, CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- job.Run(ctx) }()

	waitRows := func(n int) {
		t.Helper()
		deadline := time.Now().Add(testTimeout)
		for len(first.Rows()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("sink has %d rows, want %d", len(first.Rows()), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRows(10)
	// Three partitions more; discoveredOwner gives events/1 and events/2
	// to subtask 0 and events/3 to subtask 1, which had none.
	if owners := []int{discoveredOwner("events/1", 3), discoveredOwner("events/2", 3), discoveredOwner("events/3", 3)}; !slices.Equal(owners, []int{0, 0, 1}) {
		t.Fatalf("owners %v: the hash changed; pick partitions that reach an empty subtask", owners)
	}
	if _, err := c.admin().CreatePartitions(ctx, 3, topic); err != nil {
		t.Fatal(err)
	}
	// Produced at once: a reader starting new partitions at their end would
	// miss them.
	fillNumbered(c, topic, 4, 10, 5)
	waitRows(10 + 4*5)
	sp, err := job.TriggerSavepoint(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Discovered != 3 {
		t.Fatalf("Stats.Discovered = %d, want 3 (each new partition adopted once)", st.Discovered)
	}
	var saved []string
	for _, s := range sp.Checkpoint.Sources["kafka"] {
		saved = append(saved, s.Split)
	}
	slices.Sort(saved)
	if want := []string{"events/0", "events/1", "events/2", "events/3"}; !slices.Equal(saved, want) {
		t.Fatalf("savepoint splits %v, want %v", saved, want)
	}

	// Restart at parallelism 2, bounded: the rest, once.
	fillNumbered(c, topic, 4, 15, 3)
	o.BoundedMode = BoundedLatest
	second, _, err := runJob(t, mustSource(t, o), 2, arrowflow.Options{Allocator: mem, StateStore: store, Restore: sp.Checkpoint})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range c.consumeCommitted(topic) {
		want = append(want, oracleRow(r))
	}
	if len(want) != 10+4*5+4*3 {
		t.Fatalf("oracle: %d records", len(want))
	}
	sameMultiset(t, "both runs", append(rowKeys(first.Rows()), rowKeys(second.Rows())...), want)
	for _, r := range first.Rows() {
		if r[3] != topic {
			t.Fatalf("row %v", r)
		}
	}
	// New partitions were read from their first offset.
	firstOffsets := map[int64]int64{}
	for _, r := range first.Rows() {
		p, off := r[4].(int64), r[5].(int64)
		if cur, ok := firstOffsets[p]; !ok || off < cur {
			firstOffsets[p] = off
		}
	}
	for p := int64(1); p < 4; p++ {
		if firstOffsets[p] != 0 {
			t.Errorf("partition %d first read at offset %d, want 0 (%v)", p, firstOffsets[p], firstOffsets)
		}
	}
}

// A bounded source does not discover partitions, and a subtask without
// partitions ends at once.
func TestBoundedNoDiscovery(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 1)
	o := baseOptions(c, "events")
	o.BoundedMode = BoundedLatest
	o.PartitionDiscoveryInterval = time.Millisecond
	src := mustSource(t, o)
	mustSplits(t, src)
	rd := openReader(t, src, newMem(t), 1, 2, nil)
	if rd.disc != nil {
		t.Fatal("bounded reader runs discovery")
	}
	if !rd.Idle() {
		t.Fatal("reader without partitions is not idle")
	}
	if rows := readToEOF(t, rd); len(rows) != 0 {
		t.Fatalf("rows %v", rows)
	}
}

func TestDiscoveredOwnerSpreads(t *testing.T) {
	for _, par := range []int{1, 2, 3, 7} {
		count := make([]int, par)
		for p := 0; p < 1000; p++ {
			o := discoveredOwner(fmt.Sprintf("topic/%d", p), par)
			if o < 0 || o >= par {
				t.Fatalf("owner %d of parallelism %d", o, par)
			}
			count[o]++
		}
		for s, n := range count {
			if n < 1000/par/2 {
				t.Errorf("parallelism %d: subtask %d owns %d of 1000 partitions", par, s, n)
			}
		}
	}
}
