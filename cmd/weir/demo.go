package main

import (
	"cmp"
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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
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
	demoHotTable   = "demo.hot_auctions"
	demoGroup      = "weir-demo"
	// demoHotN is how many hot auctions each window keeps: the auctions
	// ranked 1 to demoHotN by bid count, ties kept (RANK() <= demoHotN).
	demoHotN = 3
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
		Short: "Run the demo: Nexmark bids through Kafka into Iceberg tables, exactly once",
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
    -> hot auctions: per window, the 3         window Top-N, two phases:
       auctions with the most bids, ties       per subtask, then keyed by
       kept (RANK() <= 3), with their rank     window
    -> the Iceberg table demo.hot_auctions     same warehouse, same epochs

It shows events in, windows out, epochs committed and the consumer lag
while it runs, and what the tables hold at the end. It checks that the
windows count every bid exactly once and that demo.hot_auctions holds
exactly each window's top 3 of demo.auction_stats. Interrupt it (Ctrl-C,
or kill it) and run it again: it resumes from its checkpoints in
DIR/checkpoints and ends with exactly the tables an uninterrupted run
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
	cmd.AddCommand(newDemoCDCCommand())
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
	if err := createTopic(ctx, brokers, demoTopic, o.partitions); err != nil {
		return fmt.Errorf("demo: %w", err)
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
			fmt.Fprintln(out, "\ninterrupted; run `weir demo` again: it resumes where it stopped and ends with exactly the tables of an uninterrupted run")
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

// createTopic creates a topic of the embedded broker when missing.
func createTopic(ctx context.Context, brokers []string, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// topicEndOffsets are the end offsets of a topic's partitions 0 to
// partitions-1: what an interrupted producer already wrote.
func topicEndOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions int) ([]int64, error) {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	have := make([]int64, partitions)
	ends.Each(func(lo kadm.ListedOffset) {
		if int(lo.Partition) < len(have) {
			have[lo.Partition] = lo.Offset
		}
	})
	return have, nil
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
	have, err := topicEndOffsets(ctx, cl, demoTopic, o.partitions)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
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
// 10 s windows into the Iceberg table demo.auction_stats and, from the
// same windows, each window's hot auctions into demo.hot_auctions.
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
	// Hot auctions: Flink's window Top-N over the windowed counts,
	//   RANK() OVER (PARTITION BY window_start, window_end ORDER BY bids DESC) <= 3
	// (WithTies), so an auction with as many bids as the third is never
	// dropped at random and the output is the same on every run. A
	// window's rows come from every subtask of the aggregate (it is keyed
	// by auction), so the top-N runs in two phases: each subtask keeps its
	// own candidates (Local, forward from the aggregate), then a phase
	// keyed by the window bounds ranks them (Final). That is correct at
	// any parallelism, and only candidates cross the exchange.
	hot := window.TopN{
		Input: outSchema, WindowStart: "window_start", WindowEnd: "window_end",
		OrderBy: []window.OrderKey{{Column: "bids", Desc: true}},
		N:       demoHotN, WithTies: true, RowNumber: "rank",
	}
	if err := hot.Validate(); err != nil {
		return nil, nil, err
	}
	hotFinal, err := hot.Final()
	if err != nil {
		return nil, nil, err
	}
	hotSchema, err := hotFinal.OutputSchema()
	if err != nil {
		return nil, nil, err
	}
	wh := icebergsink.CatalogOptions{Warehouse: filepath.Join(o.dir, "warehouse")}
	statsSink, err := icebergsink.New(ctx, icebergsink.Options{Catalog: wh, Table: demoStatsTable}, outSchema)
	if err != nil {
		return nil, nil, err
	}
	hotSink, err := icebergsink.New(ctx, icebergsink.Options{Catalog: wh, Table: demoHotTable}, hotSchema)
	if err != nil {
		_ = statsSink.Close()
		return nil, nil, err
	}
	g := arrowflow.NewGraph("weir-demo")
	in := g.Source("kafka-bids", src, o.parallelism)
	win := g.Operator("auction-windows", agg.Factory(), o.parallelism, arrowflow.KeyBy(in, "auction"))
	g.Sink(demoStatsSinkName, statsSink, o.parallelism, arrowflow.Forward(win))
	local := g.Operator("hot-auctions-local", hot.Local().Factory(), o.parallelism, arrowflow.Forward(win))
	top := g.Operator("hot-auctions", hotFinal.Factory(), o.parallelism, arrowflow.KeyBy(local, hotFinal.KeyBy...))
	g.Sink(demoHotSinkName, hotSink, o.parallelism, arrowflow.Forward(top))
	return g, src, nil
}

// The demo's sink nodes; the progress line counts their rows.
const (
	demoStatsSinkName = "iceberg"
	demoHotSinkName   = "iceberg-hot"
)

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
	flags := checkpointFlags{dir: filepath.Join(o.dir, "checkpoints"), interval: o.checkpoint, retain: 3}
	j, err := runWithProgress(ctx, out, g, flags, func(j *arrowflow.Job) string {
		return demoProgress(ctx, j, src, adm)
	})
	return j, src, err
}

// demoProgress is one line of the live display.
func demoProgress(ctx context.Context, j *arrowflow.Job, src *kafkasrc.Source, adm *kadm.Client) string {
	var windows, hot int64
	for _, s := range j.Stats() {
		// A sink ends its task's chain ("a -> b -> sink").
		switch {
		case strings.HasSuffix(s.Task, demoStatsSinkName):
			windows += s.RowsOut
		case strings.HasSuffix(s.Task, demoHotSinkName):
			hot += s.RowsOut
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
	return fmt.Sprintf("  events in %10d | windows out %8d | hot %4d | epochs committed %4d | lag %s",
		src.Stats().Records, windows, hot, j.EpochsCompleted(), lag)
}

// demoRow is a row of demo.auction_stats, or with its rank of
// demo.hot_auctions.
type demoRow struct {
	start, end              time.Time
	auction, bids, maxPrice int64
	avg                     float64
	rank                    int64 // demo.hot_auctions only
}

func (r demoRow) String() string {
	return fmt.Sprintf("window [%s, %s) rank %d auction %d bids %d max_price %d avg_price %v",
		r.start.Format(time.DateTime), r.end.Format(time.TimeOnly), r.rank, r.auction, r.bids, r.maxPrice, r.avg)
}

// demoWindowOrder orders rows by window, then rank (bids, descending),
// then auction.
func demoWindowOrder(a, b demoRow) int {
	if c := a.start.Compare(b.start); c != 0 {
		return c
	}
	if c := a.end.Compare(b.end); c != 0 {
		return c
	}
	if a.bids != b.bids {
		return cmp.Compare(b.bids, a.bids)
	}
	if a.rank != b.rank {
		return cmp.Compare(a.rank, b.rank)
	}
	return cmp.Compare(a.auction, b.auction)
}

func demoRowsEqual(a, b demoRow) bool {
	return a.start.Equal(b.start) && a.end.Equal(b.end) && a.auction == b.auction && a.bids == b.bids &&
		a.maxPrice == b.maxPrice && a.avg == b.avg && a.rank == b.rank
}

// demoTopAuctions is the hot-auctions query in plain Go, the reference
// for demo.hot_auctions: per window, the rows whose RANK() by bids,
// descending, is at most n (ties kept; tied rows share a rank).
func demoTopAuctions(stats []demoRow, n int64) []demoRow {
	rows := slices.Clone(stats)
	slices.SortFunc(rows, demoWindowOrder)
	var top []demoRow
	for i := 0; i < len(rows); {
		j := i + 1 // rows[i:j] are one window's, by bids descending
		for j < len(rows) && rows[j].start.Equal(rows[i].start) && rows[j].end.Equal(rows[i].end) {
			j++
		}
		var rank int64
		for k := i; k < j; k++ {
			if k == i || rows[k].bids != rows[k-1].bids {
				rank = int64(k-i) + 1 // tied rows share the rank of the first
			}
			if rank > n {
				break
			}
			r := rows[k]
			r.rank = rank
			top = append(top, r)
		}
		i = j
	}
	return top
}

// readDemoTable reads a demo table back with iceberg-go's scan; it
// returns the rows and the number of snapshots.
func readDemoTable(ctx context.Context, cat catalog.Catalog, name string) ([]demoRow, int, error) {
	ident, err := icebergsink.ParseIdentifier(name)
	if err != nil {
		return nil, 0, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, 0, fmt.Errorf("demo: load %s: %w", name, err)
	}
	snaps := len(tbl.Metadata().Snapshots())
	if tbl.CurrentSnapshot() == nil {
		return nil, snaps, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("demo: scan %s: %w", name, err)
	}
	defer at.Release()
	var rows []demoRow
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		var (
			start, end            *array.Timestamp
			auction, bids, maxPri *array.Int64
			avg                   *array.Float64
			rank                  *array.Int64 // demo.hot_auctions only
		)
		err := errors.Join(demoColumn(rec, name, "window_start", &start), demoColumn(rec, name, "window_end", &end),
			demoColumn(rec, name, "auction", &auction), demoColumn(rec, name, "bids", &bids),
			demoColumn(rec, name, "max_price", &maxPri), demoColumn(rec, name, "avg_price", &avg))
		if len(rec.Schema().FieldIndices("rank")) > 0 {
			err = errors.Join(err, demoColumn(rec, name, "rank", &rank))
		}
		if err != nil {
			return nil, 0, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := demoRow{
				start: arrowflow.ValueAt(start, i).(time.Time), end: arrowflow.ValueAt(end, i).(time.Time),
				auction: auction.Value(i), bids: bids.Value(i), maxPrice: maxPri.Value(i), avg: avg.Value(i),
			}
			if rank != nil {
				r.rank = rank.Value(i)
			}
			rows = append(rows, r)
		}
	}
	return rows, snaps, tr.Err()
}

// demoColumn sets *dst to rec's column name, of table, which must be of
// dst's Arrow type.
func demoColumn[T arrow.Array](rec arrow.RecordBatch, table, name string, dst *T) error {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return fmt.Errorf("demo: %s has no column %s", table, name)
	}
	a, ok := rec.Column(idx[0]).(T)
	if !ok {
		return fmt.Errorf("demo: %s: column %s is %s, not the type the demo writes", table, name, rec.Column(idx[0]).DataType())
	}
	*dst = a
	return nil
}

// demoSummary reads both tables back (iceberg-go's scan), checks that the
// windows count every bid exactly once and that demo.hot_auctions is the
// top 3 of demo.auction_stats, and shows a few rows of each.
func demoSummary(ctx context.Context, out io.Writer, o demoOptions, bids int64) error {
	wh := filepath.Join(o.dir, "warehouse")
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		return err
	}
	defer closeCatalogIfCloser(cat)
	stats, statsSnaps, err := readDemoTable(ctx, cat, demoStatsTable)
	if err != nil {
		return err
	}
	hot, hotSnaps, err := readDemoTable(ctx, cat, demoHotTable)
	if err != nil {
		return err
	}

	var total int64
	for _, s := range stats {
		total += s.bids
	}
	busiest := slices.Clone(stats)
	slices.SortFunc(busiest, func(a, b demoRow) int {
		if a.bids != b.bids {
			return cmp.Compare(b.bids, a.bids)
		}
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.auction, b.auction)
	})
	fmt.Fprintf(out, "\ntable %s (warehouse %s): %d windows in %d snapshots\n", demoStatsTable, wh, len(stats), statsSnaps)
	fmt.Fprintln(out, "busiest auction windows:")
	fmt.Fprintf(out, "  %-20s %8s %6s %10s %12s\n", "window_start", "auction", "bids", "max_price", "avg_price")
	for _, s := range busiest[:min(5, len(busiest))] {
		fmt.Fprintf(out, "  %-20s %8d %6d %10d %12.2f\n", s.start.Format(time.DateTime), s.auction, s.bids, s.maxPrice, s.avg)
	}

	slices.SortFunc(hot, demoWindowOrder)
	fmt.Fprintf(out, "\ntable %s: %d rows in %d snapshots\n", demoHotTable, len(hot), hotSnaps)
	demoShowHot(out, hot, 3)

	if total != bids {
		return fmt.Errorf("demo: check failed: the table counts %d bids, the topic holds %d", total, bids)
	}
	fmt.Fprintf(out, "\ncheck: the windows count each of the %d bids exactly once\n", bids)
	want := demoTopAuctions(stats, demoHotN)
	if err := demoCompareHot(hot, want); err != nil {
		hint := ""
		if hotSnaps < statsSnaps {
			// Both sinks commit every epoch: the hot-auctions table
			// started later than the job.
			hint = fmt.Sprintf(" (%s has fewer snapshots than %s: if %s was written by a weir without hot auctions, start over with --fresh)",
				demoHotTable, demoStatsTable, o.dir)
		}
		return fmt.Errorf("demo: check failed: %s is not the top %d of %s: %w%s", demoHotTable, demoHotN, demoStatsTable, err, hint)
	}
	fmt.Fprintf(out, "check: %s holds exactly the top %d auctions (ties kept) of each of the %d windows in %s, computed again here\n",
		demoHotTable, demoHotN, demoWindowCount(stats), demoStatsTable)
	fmt.Fprintln(out, "look further:")
	fmt.Fprintf(out, "  go run ./cmd/weir table snapshots --warehouse %s --table %s\n", wh, demoStatsTable)
	fmt.Fprintf(out, "  go run ./cmd/weir table head --warehouse %s --table %s\n", wh, demoHotTable)
	return nil
}

// demoShowHot prints the hot auctions of the last windows of rows
// (sorted by demoWindowOrder), at most 6 rows a window.
func demoShowHot(out io.Writer, rows []demoRow, windows int) {
	first := len(rows)
	for n := 0; first > 0 && n < windows; n++ {
		w := rows[first-1].start
		for first > 0 && rows[first-1].start.Equal(w) {
			first--
		}
	}
	if first == len(rows) {
		return
	}
	fmt.Fprintf(out, "hot auctions (top %d by bids, ties kept) of the last windows:\n", demoHotN)
	fmt.Fprintf(out, "  %-20s %-10s %4s %8s %6s %10s\n", "window_start", "window_end", "rank", "auction", "bids", "max_price")
	shown := 0
	for i, r := range rows[first:] {
		if i > 0 && !rows[first+i-1].start.Equal(r.start) {
			shown = 0
		}
		if shown++; shown > 6 {
			if shown == 7 {
				fmt.Fprintln(out, "  ... (more tied rows)")
			}
			continue
		}
		fmt.Fprintf(out, "  %-20s %-10s %4d %8d %6d %10d\n", r.start.Format(time.DateTime), r.end.Format(time.TimeOnly), r.rank, r.auction, r.bids, r.maxPrice)
	}
}

// demoCompareHot says how got (demo.hot_auctions) differs from want (the
// reference), both sorted by demoWindowOrder.
func demoCompareHot(got, want []demoRow) error {
	for i := 0; i < max(len(got), len(want)); i++ {
		if i < len(got) && i < len(want) && demoRowsEqual(got[i], want[i]) {
			continue
		}
		g, w := "no row", "no row"
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		return fmt.Errorf("%d rows, expected %d; the first difference, row %d: the table has %s, expected %s", len(got), len(want), i+1, g, w)
	}
	return nil
}

// demoWindowCount counts the distinct windows of rows.
func demoWindowCount(rows []demoRow) int {
	seen := map[[2]int64]bool{}
	for _, r := range rows {
		seen[[2]int64{r.start.UnixNano(), r.end.UnixNano()}] = true
	}
	return len(seen)
}

func closeCatalogIfCloser(c any) {
	if cl, ok := c.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
}
