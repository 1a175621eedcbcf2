package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// t0 is the timestamp of the first record these tests produce; record i
// of a partition is stamped t0 + i seconds.
var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// fillNumbered produces n records to each of partitions 0..parts-1 of
// topic, with id p*100+i, from index `from` on.
func fillNumbered(c *cluster, topic string, parts int32, from, n int) {
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := from; i < from+n; i++ {
			recs = append(recs, rec(topic, p, int64(p)*100+int64(i), t0.Add(time.Duration(i)*time.Second).UnixMilli()))
		}
	}
	c.produce(c.producer(), recs...)
}

// numbered lists ids p*100+i for i in [from, to) of each listed partition.
func numbered(from, to int, ps ...int64) []int64 {
	var out []int64
	for _, p := range ps {
		for i := from; i < to; i++ {
			out = append(out, p*100+int64(i))
		}
	}
	slices.Sort(out)
	return out
}

func readAllSplits(t *testing.T, src *Source) [][]any {
	t.Helper()
	rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
	return readToEOF(t, rd)
}

func TestStartupAndBoundedModes(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	fillNumbered(c, topic, 2, 0, 10)
	adm := c.admin()
	ctx := context.Background()
	offs := make(kadm.Offsets)
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		set  func(o *Options)
		want []int64
	}{
		{"earliest", func(o *Options) {}, numbered(0, 10, 0, 1)},
		{"timestamp", func(o *Options) {
			o.StartupMode, o.StartupTimestamp = StartTimestamp, t0.Add(5500*time.Millisecond)
		}, numbered(6, 10, 0, 1)},
		{"timestamp after every record", func(o *Options) {
			o.StartupMode, o.StartupTimestamp = StartTimestamp, t0.Add(time.Hour)
		}, nil},
		{"group-offsets", func(o *Options) {
			o.StartupMode, o.GroupID = StartGroupOffsets, "g"
		}, append(numbered(3, 10, 0), numbered(0, 10, 1)...)},
		{"specific-offsets", func(o *Options) {
			o.StartupMode, o.SpecificOffsets = StartSpecificOffsets, map[Partition]int64{{topic, 1}: 7}
		}, append(numbered(0, 10, 0), numbered(7, 10, 1)...)},
		{"bounded timestamp", func(o *Options) {
			o.BoundedMode, o.BoundedTimestamp = BoundedByTimestamp, t0.Add(4500*time.Millisecond)
		}, numbered(0, 5, 0, 1)},
		{"bounded specific-offsets", func(o *Options) {
			o.BoundedMode, o.BoundedOffsets = BoundedSpecificOffsets, map[Partition]int64{{topic, 0}: 4, {topic, 1}: 0}
		}, numbered(0, 4, 0)},
		{"timestamp to timestamp", func(o *Options) {
			o.StartupMode, o.StartupTimestamp = StartTimestamp, t0.Add(2*time.Second)
			o.BoundedMode, o.BoundedTimestamp = BoundedByTimestamp, t0.Add(4*time.Second)
		}, numbered(2, 4, 0, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(c, topic)
			o.BoundedMode = BoundedLatest
			tc.set(&o)
			rows := readAllSplits(t, mustSource(t, o))
			if got := ids(rows); !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("bounded specific-offsets must list every partition", func(t *testing.T) {
		o := baseOptions(c, topic)
		o.BoundedMode, o.BoundedOffsets = BoundedSpecificOffsets, map[Partition]int64{{topic, 0}: 4}
		_, err := mustSource(t, o).Splits(ctx)
		if err == nil || !strings.Contains(err.Error(), "events/1") {
			t.Fatalf("err = %v, want one naming events/1", err)
		}
	})
}

// Bounded latest-offset stops at the end seen at start, and a restored
// bounded position keeps the end its first run resolved.
func TestBoundedLatestStopsAtStart(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	fillNumbered(c, topic, 2, 0, 10)
	o := baseOptions(c, topic)
	o.BoundedMode = BoundedLatest
	o.BatchSize = 4
	src := mustSource(t, o)
	splits := mustSplits(t, src)
	fillNumbered(c, topic, 2, 10, 5) // after the start: not read
	mem := newMem(t)
	rd := openReader(t, src, mem, 0, 1, splitStates(splits))
	rows, _ := readUntil(t, rd, func(rows [][]any) bool { return len(rows) >= 4 })
	before := len(rows)
	pos, err := rd.Positions()
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, readToEOF(t, rd)...)
	if got, want := ids(rows), numbered(0, 10, 0, 1); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	for _, p := range pos {
		if !strings.HasSuffix(string(p.Position), ":10") {
			t.Fatalf("bounded position %s = %q, want it to carry end offset 10", p.Split, p.Position)
		}
	}
	// Restored after more records arrived: the end is still 10.
	fillNumbered(c, topic, 2, 15, 5)
	mustSplits(t, src)
	rd2 := openReader(t, src, mem, 0, 1, pos)
	rest := readToEOF(t, rd2)
	if got := before + len(rest); got != 20 {
		t.Fatalf("restored bounded read: %d + %d rows, want 20", before, len(rest))
	}
}

// latest-offset starts after what is there at the start; a restored
// position wins over the startup mode.
func TestStartLatestAndRestoredPositionWins(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	fillNumbered(c, topic, 2, 0, 10)
	o := baseOptions(c, topic)
	o.StartupMode = StartLatest
	o.PartitionDiscoveryInterval = NoPartitionDiscovery
	src := mustSource(t, o)
	splits := mustSplits(t, src)
	mem := newMem(t)
	rd := openReader(t, src, mem, 0, 1, splitStates(splits))
	// Nothing new yet: Next returns zero batches, quickly.
	start := time.Now()
	if rows, _ := readUntil(t, rd, func([][]any) bool { return time.Since(start) > 300*time.Millisecond }); len(rows) != 0 {
		t.Fatalf("latest-offset read %d old rows", len(rows))
	}
	fillNumbered(c, topic, 2, 10, 5)
	rows, _ := readUntil(t, rd, func(rows [][]any) bool { return len(rows) >= 10 })
	if got, want := ids(rows), numbered(10, 15, 0, 1); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}

	restored := []arrowflow.SplitState{{Split: topic + "/0", Position: []byte("2")}, {Split: topic + "/1"}}
	rd2 := openReader(t, src, mem, 0, 1, restored)
	rows, _ = readUntil(t, rd2, func(rows [][]any) bool { return len(rows) >= 18 })
	want := append(numbered(2, 15, 0), numbered(10, 15, 1)...) // partition 1 starts at latest as planned
	if got := ids(rows); !slices.Equal(got, want) {
		t.Fatalf("restored: ids %v, want %v", got, want)
	}
}

func TestNextWaitsBriefly(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 1)
	o := baseOptions(c, "events")
	src := mustSource(t, o)
	rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
	for i := 0; i < 3; i++ {
		start := time.Now()
		b, err := rd.Next(context.Background())
		if err != nil || !b.IsZero() {
			t.Fatalf("Next on an empty topic: %v, %v", b, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Next waited %s", d)
		}
	}
}

// After each committed epoch the group's offsets are the epoch's positions,
// so a later run in group-offsets mode continues where the first ended.
func TestGroupOffsetsCommittedPerEpoch(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 3)
	good := fillMixed(c, topic, 3)
	o := baseOptions(c, topic)
	o.BoundedMode = BoundedLatest
	o.GroupID = "weir-job"
	o.BatchSize = 5
	mem := newMem(t)
	sink, _, err := runJob(t, mustSource(t, o), 2, arrowflow.Options{Allocator: mem, CheckpointInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.Rows()) != good {
		t.Fatalf("%d rows, want %d", len(sink.Rows()), good)
	}
	ctx := context.Background()
	ends, err := c.admin().ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := c.admin().FetchOffsets(ctx, "weir-job")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		e, _ := ends.Lookup(topic, p)
		g, ok := committed.Lookup(topic, p)
		if !ok || g.At != e.Offset {
			t.Errorf("partition %d: group offset %v (%v), want the end %d", p, g.At, ok, e.Offset)
		}
	}

	fillNumbered(c, topic, 2, 50, 3)
	o.StartupMode = StartGroupOffsets
	second, _, err := runJob(t, mustSource(t, o), 1, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(second.Rows()), numbered(50, 53, 0, 1); !slices.Equal(got, want) {
		t.Fatalf("group-offsets run: ids %v, want %v", got, want)
	}
}

// A restored position that retention already deleted resumes at the log
// start instead of failing or waiting.
func TestPositionBelowLogStart(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 1)
	fillNumbered(c, topic, 1, 0, 10)
	if err := c.c.DeleteRecords(topic, 0, 6); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(c, topic)
	o.BoundedMode = BoundedLatest
	src := mustSource(t, o)
	mustSplits(t, src)
	rd := openReader(t, src, newMem(t), 0, 1, []arrowflow.SplitState{{Split: topic + "/0", Position: []byte("2")}})
	if got, want := ids(readToEOF(t, rd)), numbered(6, 10, 0); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
}
