package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/window"
)

// manualClock is a clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// wmOracle computes the watermark from the rows returned so far: per
// partition the largest event time minus the bound; the minimum over
// partitions, MinEventTime while one has no row (and none is idle).
type wmOracle struct {
	bound time.Duration
	max   map[int64]arrowflow.EventTime
}

func (o *wmOracle) observe(rows [][]any) {
	for _, r := range rows {
		p, et := r[4].(int64), arrowflow.EventTimeOf(r[1].(time.Time))
		if cur, ok := o.max[p]; !ok || et > cur {
			o.max[p] = et
		}
	}
}

func (o *wmOracle) watermark(partitions ...int64) arrowflow.EventTime {
	wm := arrowflow.MaxEventTime
	for _, p := range partitions {
		m, ok := o.max[p]
		if !ok {
			return arrowflow.MinEventTime
		}
		wm = min(wm, m-arrowflow.EventTime(o.bound))
	}
	return wm
}

// Each partition's watermark is its largest event time minus the bound;
// the reader's is the minimum over partitions, until one of them is idle
// for IdleTimeout. The same holds when the watermark is not the reader's
// own but generated from an expression outside it
// (window.SplitWatermarkSource, SQL's WATERMARK on a computed column),
// from the partitions the reader says its rows came from.
func TestWatermarksPerPartition(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		t.Run(map[bool]string{false: "reader", true: "SplitWatermarkSource"}[wrapped], func(t *testing.T) {
			testWatermarksPerPartition(t, wrapped)
		})
	}
}

func testWatermarksPerPartition(t *testing.T, wrapped bool) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	// Out of order within each partition; partition 1 lags.
	var recs []*kgo.Record
	for i := int64(0); i < 20; i++ {
		jitter := (i * 7 % 5) * 100 // ms
		recs = append(recs, rec(topic, 0, i, t0.Add(time.Duration(i)*time.Second).UnixMilli()-jitter))
		if i < 8 {
			recs = append(recs, rec(topic, 1, 100+i, t0.Add(time.Duration(i)*500*time.Millisecond).UnixMilli()+jitter))
		}
	}
	c.produce(c.producer(), recs...)

	const bound, idle = 1500 * time.Millisecond, 10 * time.Second
	o := baseOptions(c, topic)
	o.Metadata = []MetadataColumn{{Key: MetaTopic}, {Key: MetaPartition}}
	o.BatchSize = 3
	o.PartitionDiscoveryInterval = NoPartitionDiscovery
	var src arrowflow.Source
	if wrapped {
		src = window.SplitWatermarkSource(mustSource(t, o), window.SplitWatermarkSpec{
			Expr: kernels.Sub(kernels.Col("ts"), kernels.Lit(bound)), IdleTimeout: idle})
	} else {
		o.EventTime = "ts"
		o.MaxOutOfOrderness = bound
		o.IdleTimeout = idle
		src = mustSource(t, o)
	}
	clock := &manualClock{now: time.Unix(1e9, 0)}
	rd, err := src.Open(&arrowflow.TaskInfo{Parallelism: 1, Allocator: newMem(t), Clock: clock}, splitStates(mustSplits(t, window.UnwrapSource(src).(*Source))))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if wm := rd.Watermark(); wm != arrowflow.MinEventTime {
		t.Fatalf("watermark before any row: %s", wm)
	}
	oracle := &wmOracle{bound: bound, max: map[int64]arrowflow.EventTime{}}
	total := 0
	for total < 28 {
		b, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows := appendRows(t, nil, b)
		total += len(rows)
		oracle.observe(rows)
		if got, want := rd.Watermark(), oracle.watermark(0, 1); got != want {
			t.Fatalf("after %d rows: watermark %s, want %s", total, got, want)
		}
		if rd.(arrowflow.IdleReporter).Idle() {
			t.Fatal("reader idle while reading")
		}
	}
	lagging := oracle.watermark(1)
	if got := rd.Watermark(); got != lagging {
		t.Fatalf("watermark %s, want the lagging partition's %s", got, lagging)
	}

	// Partition 1 goes quiet; partition 0 goes on. After the idle timeout
	// partition 1 no longer holds the watermark back.
	clock.advance(idle)
	var more []*kgo.Record
	for i := int64(20); i < 25; i++ {
		more = append(more, rec(topic, 0, i, t0.Add(time.Duration(i)*time.Second).UnixMilli()))
	}
	c.produce(c.producer(), more...)
	for total < 33 {
		b, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows := appendRows(t, nil, b)
		total += len(rows)
		oracle.observe(rows)
	}
	if got, want := rd.Watermark(), oracle.watermark(0); got != want {
		t.Fatalf("with partition 1 idle: watermark %s, want partition 0's %s", got, want)
	}
	if rd.(arrowflow.IdleReporter).Idle() {
		t.Fatal("reader idle while partition 0 is active")
	}
	clock.advance(idle)
	if !rd.(arrowflow.IdleReporter).Idle() {
		t.Fatal("reader not idle after every partition was quiet for the idle timeout")
	}
	if got, want := rd.Watermark(), oracle.watermark(0); got != want {
		t.Fatalf("all idle: watermark %s, want the largest %s", got, want)
	}
}

// A reader without partitions is idle at once, whatever the idle timeout.
func TestEmptyReaderIsIdle(t *testing.T) {
	c := newCluster(t, 1)
	c.createTopic("events", 1)
	o := baseOptions(c, "events")
	o.EventTime = "ts"
	src := mustSource(t, o)
	mustSplits(t, src)
	rd := openReader(t, src, newMem(t), 1, 2, nil)
	if !rd.Idle() {
		t.Fatal("reader without partitions is not idle")
	}
	b, err := rd.Next(context.Background())
	if err != nil || !b.IsZero() {
		t.Fatalf("Next: %v, %v", b, err)
	}
}

// wmProbe is an operator that records the largest watermark it got.
type wmProbe struct {
	arrowflow.BaseOperator
	wm *atomic.Int64
}

func (p *wmProbe) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	return out.Emit(b)
}

func (p *wmProbe) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	p.wm.Store(int64(wm))
	return out.EmitWatermark(wm)
}

func (p *wmProbe) Finish(arrowflow.Emitter) error { return nil }
func (p *wmProbe) Close() error                   { return nil }

// In a job, a subtask whose partition stays empty does not hold the
// downstream watermark back once the idle timeout passed; without an idle
// timeout it does.
func TestIdleSubtaskInJob(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "events"
	c.createTopic(topic, 2)
	var recs []*kgo.Record
	for i := int64(0); i < 10; i++ {
		recs = append(recs, rec(topic, 0, i, t0.Add(time.Duration(i)*time.Second).UnixMilli()))
	}
	c.produce(c.producer(), recs...)
	const bound = time.Second
	want := arrowflow.EventTimeOf(t0.Add(9*time.Second - bound))

	run := func(idle time.Duration, wait func(wm *atomic.Int64) bool) {
		o := baseOptions(c, topic)
		o.EventTime = "ts"
		o.MaxOutOfOrderness = bound
		o.IdleTimeout = idle
		src := mustSource(t, o)
		var wm atomic.Int64
		wm.Store(int64(arrowflow.MinEventTime))
		g := arrowflow.NewGraph("kafka-wm")
		s := g.Source("kafka", src, 2)
		p := g.Operator("probe", func() arrowflow.Operator { return &wmProbe{wm: &wm} }, 1, arrowflow.Rebalance(s))
		g.Sink("sink", blackhole.New(), 1, arrowflow.Forward(p))
		job, err := g.Plan(arrowflow.Options{Allocator: newMem(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- job.Run(ctx) }()
		ok := wait(&wm)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("idle timeout %s: downstream watermark %s", idle, arrowflow.EventTime(wm.Load()))
		}
	}
	run(200*time.Millisecond, func(wm *atomic.Int64) bool {
		deadline := time.Now().Add(testTimeout)
		for time.Now().Before(deadline) {
			if arrowflow.EventTime(wm.Load()) == want {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	})
	run(0, func(wm *atomic.Int64) bool {
		time.Sleep(500 * time.Millisecond)
		return arrowflow.EventTime(wm.Load()) == arrowflow.MinEventTime
	})
}
