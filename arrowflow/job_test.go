package arrowflow_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/blackhole"
)

func TestPlanChainsForwardEdgesOfEqualParallelism(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 10, 3)
	defer rec.Release()
	g := arrowflow.NewGraph("plan")
	src := g.Source("src", &replaySource{rec: rec, splits: 2, per: 1}, 2)
	f := g.Operator("filter", ops.Filter(func(arrow.RecordBatch, int) bool { return true }), 2, arrowflow.Forward(src))
	k := g.Operator("keyed", ops.Filter(func(arrow.RecordBatch, int) bool { return true }), 3, arrowflow.KeyBy(f, "key"))
	m := g.Operator("map", ops.Filter(func(arrow.RecordBatch, int) bool { return true }), 3, arrowflow.Forward(k))
	g.Sink("sink", blackhole.New(), 3, arrowflow.Forward(m))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	plan := job.Explain()
	for _, want := range []string{
		"task 1: src -> filter (parallelism 2)",
		"task 2: keyed -> map -> sink (parallelism 3)",
		"<- keyed by [key] over 128 key groups, append-only, from task 1 (filter)",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err == nil {
		t.Fatal("a job ran twice")
	}
}

func TestGraphValidationNamesTheProblem(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 1, 1)
	defer rec.Release()
	src := func() arrowflow.Source { return &replaySource{rec: rec, splits: 1, per: 1} }
	pass := ops.Filter(func(arrow.RecordBatch, int) bool { return true })
	cases := []struct {
		name  string
		build func(g *arrowflow.Graph)
		want  string
	}{
		{"forward parallelism", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 2)
			g.Sink("k", blackhole.New(), 3, arrowflow.Forward(s))
		}, `forward input from "s" needs equal parallelism (2 vs 3)`},
		{"duplicate name", func(g *arrowflow.Graph) {
			s := g.Source("x", src(), 1)
			g.Sink("x", blackhole.New(), 1, arrowflow.Forward(s))
		}, `sink "x": name already used`},
		{"no sink", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 1)
			g.Operator("o", pass, 1, arrowflow.Forward(s))
		}, "job has no sink"},
		{"unconsumed", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 1)
			g.Source("lonely", src(), 1)
			g.Sink("k", blackhole.New(), 1, arrowflow.Forward(s))
		}, `source "lonely": output is not consumed`},
		{"keyless keyed edge", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 1)
			g.Sink("k", blackhole.New(), 1, arrowflow.KeyBy(s))
		}, "names no key columns"},
		{"parallelism over max", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 1)
			g.Sink("k", blackhole.New(), 200, arrowflow.Rebalance(s))
		}, "exceeds max parallelism 128"},
		{"operator without input", func(g *arrowflow.Graph) {
			s := g.Source("s", src(), 1)
			g.Operator("o", pass, 1)
			g.Sink("k", blackhole.New(), 1, arrowflow.Forward(s))
		}, `operator "o": needs at least one input`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := arrowflow.NewGraph("bad")
			c.build(g)
			_, err := g.Plan(arrowflow.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// A slow sink must hold back its producers: the number of batches created
// but not yet consumed stays within what the queues can hold.
func TestBackpressureBoundsBatchesInFlight(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 100, 10)
	defer rec.Release()
	var produced, consumed atomic.Int64
	release := make(chan struct{})
	sink := &funcSink{}
	g := arrowflow.NewGraph("backpressure")
	const sources, capacity = 2, 4
	src := g.Source("src", &replaySource{rec: rec, splits: sources, produced: &produced}, sources)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink.write = func(arrowflow.Batch) error {
		consumed.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g.Sink("slow", sink, 1, arrowflow.Rebalance(src))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, QueueCapacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()

	// Queues: one channel per source subtask into the sink's gate, each
	// of `capacity` messages; each source task may hold one more batch
	// while it waits for room; and the sink's task may hold one it has
	// taken from its queue but not yet handed to write (counted as
	// consumed only there). Blocked in write, the sink holds none: then
	// exactly `steady` are in flight.
	const steady = sources*capacity + sources
	const bound = steady + 1
	inFlight := func() int64 { return produced.Load() - consumed.Load() }
	for i := 0; i < 500; i++ {
		if n := inFlight(); n > bound {
			t.Fatalf("step %d: %d batches in flight, bound %d", i, n, bound)
		}
		release <- struct{}{}
	}
	// The producers are far faster than this sink, so the queues fill up
	// to the bound and stay there (a liveness check with a generous
	// deadline, not a timing assertion).
	deadline := time.Now().Add(10 * time.Second)
	for inFlight() < steady && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := inFlight(); n != steady {
		t.Fatalf("in flight %d after the producers filled the queues, want exactly %d", n, steady)
	}
	for _, st := range job.Stats() {
		if st.MaxQueued > sources*capacity {
			t.Fatalf("task %s queued %d messages, capacity %d", st.Task, st.MaxQueued, sources*capacity)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled job returned %v", err)
	}
}

type failAfter struct {
	arrowflow.BaseOperator
	n     int
	seen  int
	panic bool
}

func (f *failAfter) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	f.seen++
	if f.seen > f.n {
		b.Release()
		if f.panic {
			panic("kaboom")
		}
		return errors.New("boom")
	}
	return out.Emit(b)
}

func TestFirstErrorStopsJobAndNamesTheNode(t *testing.T) {
	cases := []struct {
		name string
		op   arrowflow.OperatorFactory
		sink arrowflow.Sink
		want []string
	}{
		{"operator error", func() arrowflow.Operator { return &failAfter{n: 20} }, blackhole.New(),
			[]string{`operator "explode" (subtask `, "boom"}},
		{"operator panic", func() arrowflow.Operator { return &failAfter{n: 20, panic: true} }, blackhole.New(),
			[]string{`operator "explode" (subtask `, "panic: kaboom"}},
		{"sink error", ops.Filter(func(arrow.RecordBatch, int) bool { return true }),
			&funcSink{write: func(arrowflow.Batch) error { return errors.New("disk full") }},
			[]string{`sink "out" (subtask `, "disk full"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			rec := int64Record(mem, 64, 16)
			defer rec.Release()
			g := arrowflow.NewGraph("failing")
			src := g.Source("src", &replaySource{rec: rec, splits: 4}, 2) // unbounded
			ex := g.Operator("explode", c.op, 3, arrowflow.KeyBy(src, "key"))
			g.Sink("out", c.sink, 2, arrowflow.Rebalance(ex))
			job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = job.Run(context.Background())
			if err == nil {
				t.Fatal("job succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var ne *arrowflow.NodeError
			if !errors.As(err, &ne) {
				t.Fatalf("error %v is not a NodeError", err)
			}
		})
	}
}

type errSource struct{ replaySource }

func (s *errSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	if info.Subtask == 1 {
		return nil, errors.New("broker unreachable")
	}
	return s.replaySource.Open(info, splits)
}

func TestSourceOpenErrorNamesSource(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 8, 2)
	defer rec.Release()
	g := arrowflow.NewGraph("src-fail")
	src := g.Source("kafka-in", &errSource{replaySource{rec: rec, splits: 2}}, 2)
	g.Sink("out", blackhole.New(), 1, arrowflow.Rebalance(src))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `source "kafka-in" (subtask 2 of 2): open: broker unreachable`) {
		t.Fatalf("error %v", err)
	}
}

func TestCancelStopsUnboundedJobAndReleasesEverything(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 256, 50)
	defer rec.Release()
	sink := blackhole.New()
	g := arrowflow.NewGraph("forever")
	src := g.Source("src", &replaySource{rec: rec, splits: 3}, 3)
	k := g.Operator("count", ops.CountByKey{Key: "key", Value: "val"}.Factory(), 2, arrowflow.KeyBy(src, "key"))
	g.Sink("out", sink, 2, arrowflow.Forward(k))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	for job.EpochsCompleted() < 3 {
		select {
		case err := <-done:
			t.Fatalf("unbounded job ended by itself: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled job returned %v", err)
	}
}
