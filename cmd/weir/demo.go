package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/kernels"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
	"github.com/weirflow/weir/sources/nexmark"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

const (
	demoTopic      = "bids"
	demoStatsTable = "demo.auction_stats"
	demoGroup      = "weir-demo"
)

type demoOptions struct {
	dir         string
	events      int64
	parallelism int
	partitions  int
	checkpoint  time.Duration
	rate        float64
	fresh       bool
}

func newDemoCommand() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the demo: Nexmark bids through Kafka into an Iceberg table, exactly once",
		Long: `Runs weir's main job on an embedded setup, with no flags needed:

  an embedded Kafka-protocol broker (kfake), persisted in DIR/kafka
  Nexmark bids (sources/nexmark), produced into the topic "bids" as JSON,
  at --rate events per second, while the job runs
  a weir job reading the topic                 Kafka source, read_committed
    -> per auction, tumbling 10 s windows      bids, max and average price
       of event time                           (columnar window state)
    -> the Iceberg table demo.auction_stats    one snapshot per epoch, in the
                                               warehouse DIR/warehouse (SQLite
                                               catalog)

It shows events in, windows out, epochs committed and the consumer lag
while it runs, and what the table holds at the end. Interrupt it (Ctrl-C,
or kill it) and run it again: it resumes from its checkpoints in
DIR/checkpoints and ends with exactly the table an uninterrupted run
gives. --fresh starts over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "weir-demo", "folder of the demo's broker data, checkpoints and Iceberg warehouse")
	f.Int64Var(&o.events, "events", 1_000_000, "Nexmark events to generate (46 in 50 are bids)")
	f.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "subtasks per operator")
	f.IntVar(&o.partitions, "partitions", 4, "partitions of the bids topic")
	f.DurationVar(&o.checkpoint, "checkpoint-interval", time.Second, "how often an epoch closes and its windows commit to the table")
	f.Float64Var(&o.rate, "rate", 100_000, "events per second the producer generates (0: as fast as it can)")
	f.BoolVar(&o.fresh, "fresh", false, "delete DIR first and start over")
	return cmd
}

func runDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	switch {
	case o.events < 50:
		return errors.New("demo: --events must be at least 50")
	case o.parallelism < 1 || o.parallelism > state.DefaultMaxParallelism:
		return fmt.Errorf("demo: --parallelism must be in [1, %d], got %d", state.DefaultMaxParallelism, o.parallelism)
	case o.partitions < 1:
		return errors.New("demo: --partitions must be at least 1")
	case o.rate < 0:
		return errors.New("demo: --rate must not be negative")
	case o.checkpoint <= 0:
		return errors.New("demo: --checkpoint-interval must be positive")
	}
	if o.fresh {
		if err := os.RemoveAll(o.dir); err != nil {
			return fmt.Errorf("demo: --fresh: %w", err)
		}
	}
	broker, err := kfake.NewCluster(mustKfakeOptions(kafkaOptions{port: 0, dataDir: filepath.Join(o.dir, "kafka"), partitions: o.partitions})...)
	if err != nil {
		return fmt.Errorf("demo: start the embedded broker: %w", err)
	}
	// A clean stop keeps the broker's data consistent for the next run.
	defer broker.Close()
	brokers := broker.ListenAddrs()
	fmt.Fprintf(out, "demo: embedded Kafka on %s, data in %s\n", strings.Join(brokers, ","), filepath.Join(o.dir, "kafka"))

	bids := nexmark.CountOf(nexmark.BidEvent, o.events)
	if err := createDemoTopic(ctx, brokers, o); err != nil {
		return err
	}
	// The producer feeds the topic at --rate while the job reads it.
	pctx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	produced := make(chan error, 1)
	go func() { produced <- produceBids(pctx, out, brokers, o, bids) }()
	start := time.Now()
	job, src, err := runDemoJob(ctx, out, brokers, o, bids)
	if err != nil {
		stopProducer()
		<-produced
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\ninterrupted; run `weir demo` again: it resumes where it stopped and ends with exactly the table of an uninterrupted run")
			return nil
		}
		return err
	}
	if err := <-produced; err != nil {
		return err
	}
	fmt.Fprintf(out, "\njob: %d events read in %.2fs, %d epochs committed\n", src.Stats().Records, time.Since(start).Seconds(), job.EpochsCompleted())
	return demoSummary(ctx, out, o, bids)
}

// createDemoTopic creates the bids topic when missing.
func createDemoTopic(ctx context.Context, brokers []string, o demoOptions) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(o.partitions), 1, nil, demoTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("demo: create topic %s: %w", demoTopic, err)
	}
	return nil
}

// demoEndOffsets are the partitions' end offsets once every bid is in:
// bid j goes to partition j mod partitions.
func demoEndOffsets(bids int64, partitions int) map[kafkasrc.Partition]int64 {
	m := map[kafkasrc.Partition]int64{}
	for p := 0; p < partitions; p++ {
		m[kafkasrc.Partition{Topic: demoTopic, Partition: int32(p)}] = max(0, (bids-int64(p)+int64(partitions)-1)/int64(partitions))
	}
	return m
}

func mustKfakeOptions(o kafkaOptions) []kfake.Opt {
	opts, err := kfakeOptions(o)
	if err != nil {
		panic("BUG: demo broker options: " + err.Error())
	}
	return opts
}

// produceBids writes the bids of o.events Nexmark events into the topic,
// bid j to partition j mod partitions, resuming after the records the
// partitions already hold: an interrupted run leaves a prefix of each
// partition's sequence, so the topic ends with each bid exactly once.
func produceBids(ctx context.Context, out io.Writer, brokers []string, o demoOptions, want int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, demoTopic)
	if err != nil {
		return fmt.Errorf("demo: end offsets of %s: %w", demoTopic, err)
	}
	have := make([]int64, o.partitions)
	ends.Each(func(lo kadm.ListedOffset) {
		if int(lo.Partition) < len(have) {
			have[lo.Partition] = lo.Offset
		}
	})
	gen, err := nexmark.New(nexmark.Config{Events: o.events, Splits: 1, RateLimit: o.rate})
	if err != nil {
		return err
	}
	// Start at the first bid some partition still lacks: the events
	// before it are all in the topic (generated only to be skipped).
	first := want
	for p, h := range have {
		first = min(first, h*int64(o.partitions)+int64(p))
	}
	n := first - first%46 // bids before the 50-event cycle holding bid first
	startEvent := n / 46 * 50
	pos := binary.BigEndian.AppendUint64(nil, uint64(startEvent))
	rd, err := gen.Open(&arrowflow.TaskInfo{Job: "demo-producer", Parallelism: 1, Allocator: memory.DefaultAllocator},
		[]arrowflow.SplitState{{Split: "nexmark-0", Position: pos}})
	if err != nil {
		return err
	}
	defer rd.Close()
	enc, err := format.NewEncoder(ctx, format.Config{Name: "json", Schema: nexmark.BidSchema()})
	if err != nil {
		return err
	}
	var (
		sent     int64
		mu       sync.Mutex
		firstErr error
	)
	started := time.Now()
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if b.IsZero() {
			continue
		}
		rec, err := nexmark.Project(memory.DefaultAllocator, b, nexmark.BidEvent)
		b.Release()
		if err != nil {
			return err
		}
		auctions := rec.Column(rec.Schema().FieldIndices("auction")[0]).(*array.Int64)
		err = enc.Encode(rec, func(row int, value []byte) error {
			j := n + int64(row)
			p := int(j % int64(o.partitions))
			if j/int64(o.partitions) < have[p] {
				return nil // produced by an earlier run
			}
			sent++
			r := &kgo.Record{Topic: demoTopic, Partition: int32(p), Key: strconv.AppendInt(nil, auctions.Value(row), 10), Value: slices.Clone(value)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
			return nil
		})
		n += rec.NumRows()
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("demo: produce bids: %w", firstErr)
	}
	if n != want {
		return fmt.Errorf("BUG: demo: generated %d bids, expected %d", n, want)
	}
	fmt.Fprintf(out, "demo: producer done: %d of the %d bids sent in this run (%.2fs)\n", sent, n, time.Since(started).Seconds())
	return nil
}

// demoJob builds the demo's graph: bids from Kafka, per-auction tumbling
// 10 s windows, the Iceberg table.
func demoJob(brokers []string, o demoOptions, bids int64) (*arrowflow.Graph, *kafkasrc.Source, error) {
	ctx := context.Background()
	dec, err := format.NewDecoder(ctx, format.Config{Name: "json", Schema: nexmark.BidSchema()})
	if err != nil {
		return nil, nil, err
	}
	src, err := kafkasrc.NewSource(kafkasrc.Options{
		Brokers: brokers, Topics: []string{demoTopic}, GroupID: demoGroup, Decoder: dec,
		StartupMode: kafkasrc.StartEarliest, BoundedMode: kafkasrc.BoundedSpecificOffsets, BoundedOffsets: demoEndOffsets(bids, o.partitions),
		EventTime: "dateTime", MaxOutOfOrderness: time.Second,
	})
	if err != nil {
		return nil, nil, err
	}
	agg := window.Aggregate{
		Input: src.Schema(), Time: "dateTime", Window: window.Tumbling(10 * time.Second), Keys: []string{"auction"},
		Aggs: []window.Agg{
			{Func: kernels.AggCountStar, Name: "bids"},
			{Func: kernels.AggMax, Args: []string{"price"}, Name: "max_price"},
			{Func: kernels.AggAvg, Args: []string{"price"}, Name: "avg_price"},
		},
	}
	if err := agg.Validate(); err != nil {
		return nil, nil, err
	}
	outSchema, err := agg.OutputSchema()
	if err != nil {
		return nil, nil, err
	}
	sink, err := icebergsink.New(ctx, icebergsink.Options{
		Catalog: icebergsink.CatalogOptions{Warehouse: filepath.Join(o.dir, "warehouse")}, Table: demoStatsTable,
	}, outSchema)
	if err != nil {
		return nil, nil, err
	}
	g := arrowflow.NewGraph("weir-demo")
	in := g.Source("kafka-bids", src, o.parallelism)
	win := g.Operator("auction-windows", agg.Factory(), o.parallelism, arrowflow.KeyBy(in, "auction"))
	g.Sink("iceberg", sink, o.parallelism, arrowflow.Forward(win))
	return g, src, nil
}

func runDemoJob(ctx context.Context, out io.Writer, brokers []string, o demoOptions, bids int64) (*arrowflow.Job, *kafkasrc.Source, error) {
	g, src, err := demoJob(brokers, o, bids)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: %w", err)
	}
	defer closeSinks(g)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var (
		jobMu sync.Mutex
		job   *arrowflow.Job
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			jobMu.Lock()
			j := job
			jobMu.Unlock()
			if j != nil {
				fmt.Fprintln(out, demoProgress(ctx, j, src, adm))
			}
		}
	}()
	base := arrowflow.Options{Allocator: memory.DefaultAllocator}
	flags := checkpointFlags{dir: filepath.Join(o.dir, "checkpoints"), interval: o.checkpoint, retain: 3}
	j, err := runWithCheckpointsHook(ctx, out, g, flags, base, func(j *arrowflow.Job) {
		jobMu.Lock()
		job = j
		jobMu.Unlock()
	})
	close(stop)
	<-done
	return j, src, err
}

// demoProgress is one line of the live display.
func demoProgress(ctx context.Context, j *arrowflow.Job, src *kafkasrc.Source, adm *kadm.Client) string {
	var windows int64
	for _, s := range j.Stats() {
		if strings.HasSuffix(s.Task, "iceberg") {
			windows += s.RowsOut
		}
	}
	lag := "?"
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if lags, err := adm.Lag(cctx, demoGroup); err == nil {
		if l, ok := lags[demoGroup]; ok && l.Error() == nil {
			lag = strconv.FormatInt(l.Lag.Total(), 10)
		}
	}
	return fmt.Sprintf("  events in %10d | windows out %8d | epochs committed %4d | lag %s",
		src.Stats().Records, windows, j.EpochsCompleted(), lag)
}

// demoSummary reads the table back (iceberg-go's scan), checks it holds
// every bid exactly once, and shows a few rows.
func demoSummary(ctx context.Context, out io.Writer, o demoOptions, bids int64) error {
	wh := filepath.Join(o.dir, "warehouse")
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		return err
	}
	defer closeCatalogIfCloser(cat)
	ident, _ := icebergsink.ParseIdentifier(demoStatsTable)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return err
	}
	defer at.Release()
	type stat struct {
		auction, bids, maxPrice int64
		avg                     float64
		start                   time.Time
	}
	var rows []stat
	var total int64
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
		for i := 0; i < int(rec.NumRows()); i++ {
			s := stat{
				auction:  rec.Column(col("auction")).(*array.Int64).Value(i),
				bids:     rec.Column(col("bids")).(*array.Int64).Value(i),
				maxPrice: rec.Column(col("max_price")).(*array.Int64).Value(i),
				avg:      rec.Column(col("avg_price")).(*array.Float64).Value(i),
				start:    arrowflow.ValueAt(rec.Column(col("window_start")), i).(time.Time),
			}
			total += s.bids
			rows = append(rows, s)
		}
	}
	slices.SortFunc(rows, func(a, b stat) int {
		if a.bids != b.bids {
			return int(b.bids - a.bids)
		}
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return int(a.auction - b.auction)
	})
	snaps := len(tbl.Metadata().Snapshots())
	fmt.Fprintf(out, "\ntable %s (warehouse %s): %d windows in %d snapshots\n", demoStatsTable, wh, len(rows), snaps)
	fmt.Fprintln(out, "busiest auction windows:")
	fmt.Fprintf(out, "  %-20s %8s %6s %10s %12s\n", "window_start", "auction", "bids", "max_price", "avg_price")
	for _, s := range rows[:min(5, len(rows))] {
		fmt.Fprintf(out, "  %-20s %8d %6d %10d %12.2f\n", s.start.Format("2006-01-02 15:04:05"), s.auction, s.bids, s.maxPrice, s.avg)
	}
	if total != bids {
		return fmt.Errorf("demo: check failed: the table counts %d bids, the topic holds %d", total, bids)
	}
	fmt.Fprintf(out, "check: the windows count each of the %d bids exactly once\n", bids)
	fmt.Fprintf(out, "look further: go run ./cmd/weir table snapshots --warehouse %s --table %s\n", wh, demoStatsTable)
	return nil
}

func closeCatalogIfCloser(c any) {
	if cl, ok := c.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
}
