package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
)

// runInBackground runs a job of src (2 subtasks) into a collect sink until
// the test ends.
func runInBackground(t *testing.T, src *Source, interval time.Duration) {
	t.Helper()
	g := arrowflow.NewGraph("lag-test")
	n := g.Source("kafka", src, 2)
	g.Sink("collect", collect.New(), 2, arrowflow.Forward(n))
	job, err := g.Plan(arrowflow.Options{Allocator: newMem(t), CheckpointInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitLag polls src.Lag until it returns want, failing after testTimeout.
func waitLag(t *testing.T, src *Source, want int64) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		got, err := src.Lag(context.Background())
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag %d (%v), want %d", got, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Lag counts from the committed positions, not from what the readers
// read: without commits it stays at everything since the start, and it
// grows with every record produced.
func TestLagCountsFromCommittedPositions(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 3)
	fillNumbered(c, topic, 3, 0, 10)
	o := baseOptions(c, topic)
	o.StartupMode = StartEarliest
	src := mustSource(t, o)
	if _, err := src.Lag(context.Background()); err == nil {
		t.Fatal("Lag before the job started did not fail")
	}
	// No checkpoint interval: an unbounded job never commits.
	runInBackground(t, src, 0)
	waitLag(t, src, 30)
	deadline := time.Now().Add(testTimeout)
	for src.Stats().Records < 30 {
		if time.Now().After(deadline) {
			t.Fatalf("read %d records of 30", src.Stats().Records)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if lag, err := src.Lag(context.Background()); err != nil || lag != 30 {
		t.Fatalf("lag %d, %v after reading everything without a commit; want 30", lag, err)
	}
	fillNumbered(c, topic, 3, 10, 5)
	waitLag(t, src, 45)
}

// With epochs committing, the lag drops to zero, and again after more
// records arrive.
func TestLagFallsAsEpochsCommit(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 3)
	fillNumbered(c, topic, 3, 0, 20)
	o := baseOptions(c, topic)
	o.StartupMode = StartEarliest
	src := mustSource(t, o)
	runInBackground(t, src, 10*time.Millisecond)
	waitLag(t, src, 0)
	fillNumbered(c, topic, 2, 20, 7)
	waitLag(t, src, 0)
	if got := src.Stats().Records; got != 3*20+2*7 {
		t.Fatalf("read %d records, want %d", got, 3*20+2*7)
	}
}

// A bounded source's lag counts only up to its end: records produced
// after a bounded job's start are not its lag.
func TestLagOfBoundedSourceStopsAtItsEnd(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	fillNumbered(c, topic, 2, 0, 10)
	o := baseOptions(c, topic)
	o.StartupMode = StartEarliest
	o.BoundedMode = BoundedLatest
	src := mustSource(t, o)
	if _, _, err := runJob(t, src, 2, arrowflow.Options{Allocator: newMem(t), CheckpointInterval: 5 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	fillNumbered(c, topic, 2, 10, 4)
	lag, err := src.Lag(context.Background())
	if err != nil || lag != 0 {
		t.Fatalf("lag after the bounded job: %d, %v; want 0", lag, err)
	}
}
