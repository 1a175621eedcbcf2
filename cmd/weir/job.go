package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/checkpoint"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/kernels"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	kafkasink "github.com/weirflow/weir/sinks/kafka"
	"github.com/weirflow/weir/sinks/parquet"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// checkpointFlags are the options of every command that runs a job with
// durable checkpoints.
type checkpointFlags struct {
	dir           string
	interval      time.Duration
	retain        int
	fromSavepoint string
	allowChanged  bool
	// allowRewind and takeOver are --allow-output-rewind and
	// --take-over-output (checkpoint.Options).
	allowRewind bool
	takeOver    bool
	// http is the address of the job's status server (--http; "": none).
	http string
	// httpAnyPort: when http's port is taken, serve on any free one (the
	// default address of weir run, not one the user asked for).
	httpAnyPort bool
	// lags are the source lag reports the status server shows, by source
	// name. Not a flag: whoever builds the graph's sources adds them
	// (the map is shared by copies of the flags).
	lags map[string]status.LagFunc
	// httpToken is --http-token: the status server's token for POST
	// /savepoint ("": WEIR_HTTP_TOKEN, else a random one).
	httpToken string
	// httpAllowedHosts is --http-allowed-hosts: more host names the status
	// server answers to.
	httpAllowedHosts []string
	// rejected are the per-source counts of rejected records the status
	// server shows, as lags (not a flag; shared by copies of the flags).
	rejected map[string]status.RejectedFunc
}

func (c *checkpointFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.dir, "checkpoint-dir", "", "folder of the job's checkpoints; a restart on the same folder resumes exactly where the last completed epoch ended (empty: checkpoints in memory only, no recovery)")
	f.DurationVar(&c.interval, "checkpoint-interval", 10*time.Second, "how often an epoch closes and its output commits")
	f.IntVar(&c.retain, "checkpoint-retain", checkpoint.DefaultRetain, "number of completed checkpoints kept (at least 2)")
	f.StringVar(&c.fromSavepoint, "from-savepoint", "", "start from this savepoint folder (made by `weir savepoint`), also with another parallelism")
	f.BoolVar(&c.allowChanged, "allow-changed-job", false, "resume from the checkpoint folder even though its latest checkpoint was written by a job graph of another shape (an edited job): state is matched by node name, new nodes start empty, state of removed nodes and positions of splits the sources no longer list are dropped")
	f.BoolVar(&c.allowRewind, "allow-output-rewind", false, "resume although the newest intact checkpoint is older than an epoch the outputs have committed (newer manifests corrupt or deleted), or start fresh over output the job has committed: the epochs in between are written again (duplicates); without it the job refuses to start")
	f.BoolVar(&c.takeOver, "take-over-output", false, "claim outputs (Parquet folder, Iceberg table, Kafka transactional id prefix) owned by another checkpoint folder, a job this one replaces: that job is fenced (its later commits fail); without it the job refuses to start on another job's output")
	f.StringVar(&c.http, "http", "", "serve the job's status, plan, Prometheus metrics and a savepoint trigger over HTTP on this address, e.g. 127.0.0.1:8081 (a port alone means 127.0.0.1; POST /savepoint needs the token, see --http-token; empty: off)")
	f.StringVar(&c.httpToken, "http-token", "", "the status server's token, which POST /savepoint needs as 'Authorization: Bearer TOKEN', at least 16 characters (default: $WEIR_HTTP_TOKEN, else a random one); written to CHECKPOINT-DIR/http-token (mode 0600) while the job runs")
	f.StringSliceVar(&c.httpAllowedHosts, "http-allowed-hosts", nil, "more host names the status server answers to in Host and Origin headers, comma-separated, besides localhost, 127.0.0.0/8, [::1] and its own address (a reverse proxy's name; '*': any)")
}

// minCheckpointInterval is the shortest checkpoint interval accepted: each
// epoch writes and syncs a manifest and commits every sink.
const minCheckpointInterval = 10 * time.Millisecond

// validate rejects settings with which a job cannot work, before anything
// starts: an interval at which no epoch would ever close, or a retention
// that recovery cannot work with.
func (c *checkpointFlags) validate() error {
	switch {
	case c.interval <= 0:
		return fmt.Errorf("checkpoint interval %v: must be positive (an epoch closes, and its output commits, once per interval; "+
			"with none an unbounded job never commits); use e.g. --checkpoint-interval 10s", c.interval)
	case c.interval < minCheckpointInterval:
		return fmt.Errorf("checkpoint interval %v: at least %v", c.interval, minCheckpointInterval)
	case c.retain < 2:
		return fmt.Errorf("--checkpoint-retain %d: at least 2 checkpoints must be kept (recovery may need the one before the newest to compute an epoch again)", c.retain)
	}
	return nil
}

// runWithCheckpoints plans and runs g with the checkpoint flags: it locks
// the folder, recovers (re-commits the last recorded epoch, discards
// uncommitted output of earlier runs, restores state and source
// positions), serves `weir savepoint` requests, and runs until the job
// ends, stops with a savepoint, or ctx is cancelled. With --http it
// serves the job's status meanwhile (see package internal/status).
func runWithCheckpoints(ctx context.Context, out io.Writer, g *arrowflow.Graph, c checkpointFlags, base arrowflow.Options) (*arrowflow.Job, error) {
	return runWithCheckpointsHook(ctx, out, g, c, base, nil)
}

// runWithCheckpointsHook is runWithCheckpoints, calling planned (when not
// nil) with the job once it is planned, before it runs (for progress
// displays).
func runWithCheckpointsHook(ctx context.Context, out io.Writer, g *arrowflow.Graph, c checkpointFlags, base arrowflow.Options, planned func(*arrowflow.Job)) (*arrowflow.Job, error) {
	if c.http == "" {
		return runCheckpointed(ctx, out, g, c, base, planned, nil)
	}
	srv, err := startStatusServer(out, g, c)
	if err != nil {
		return nil, err
	}
	// Closed after the job ended: an answer to POST /savepoint?stop=true
	// in flight is written first.
	defer srv.Close()
	job, err := runCheckpointed(ctx, out, g, c, base, func(j *arrowflow.Job) {
		srv.SetJob(j)
		if planned != nil {
			planned(j)
		}
	}, srv)
	srv.Done(err)
	return job, err
}

// startStatusServer starts the status server of --http and prints its
// address. Its savepoints are those of `weir savepoint`: the job's next
// epoch closes as a savepoint, stored under the checkpoint folder.
//
// The server's token (for POST /savepoint) is --http-token, else
// $WEIR_HTTP_TOKEN, else a random one; with a checkpoint folder it is
// written to DIR/http-token (mode 0600) once the job holds the folder,
// and removed when the job ends. The start line says where, never what.
func startStatusServer(out io.Writer, g *arrowflow.Graph, c checkpointFlags) (*status.Server, error) {
	cfg := status.Config{Graph: g, Lag: c.lags, Rejected: c.rejected, AllowedHosts: c.httpAllowedHosts,
		Warnf: func(format string, args ...any) { fmt.Fprintf(out, "warning: "+format+"\n", args...) }}
	tokenFrom := "--http-token"
	cfg.Token = c.httpToken
	if cfg.Token == "" {
		cfg.Token, tokenFrom = os.Getenv("WEIR_HTTP_TOKEN"), "WEIR_HTTP_TOKEN"
	}
	var srv *status.Server
	if c.dir == "" {
		cfg.NoSavepointReason = "the job runs without --checkpoint-dir: savepoints need a checkpoint folder; start it with --checkpoint-dir DIR"
	} else {
		cfg.Savepoint = func(ctx context.Context, stop bool) (uint64, string, error) {
			j := srv.Job()
			if j == nil {
				return 0, "", errors.New("the job is not planned yet")
			}
			sp, err := j.TriggerSavepoint(ctx, stop)
			if err != nil {
				return 0, "", err
			}
			return sp.Checkpoint.Epoch, sp.Location, nil
		}
	}
	if c.dir != "" {
		cfg.TokenFile = filepath.Join(c.dir, "http-token")
	}
	var err error
	if srv, err = status.New(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", tokenFrom, err)
	}
	addr, err := srv.Start(c.http)
	if err != nil && c.httpAnyPort && errors.Is(err, syscall.EADDRINUSE) {
		addr, err = srv.Start("127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", c.http, err)
	}
	if cfg.TokenFile != "" {
		fmt.Fprintf(out, "status: http://%s/ (POST /savepoint needs the token in %s)\n", addr, cfg.TokenFile)
	} else {
		fmt.Fprintf(out, "status: http://%s/\n", addr)
	}
	return srv, nil
}

// runCheckpointed is runWithCheckpointsHook's job, reporting checkpoint
// times to srv when not nil.
func runCheckpointed(ctx context.Context, out io.Writer, g *arrowflow.Graph, c checkpointFlags, base arrowflow.Options, planned func(*arrowflow.Job), srv *status.Server) (*arrowflow.Job, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	base.CheckpointInterval = c.interval
	if c.dir == "" {
		if c.fromSavepoint != "" {
			return nil, errors.New("--from-savepoint needs --checkpoint-dir")
		}
		if srv != nil {
			base.Recorder = srv.Recorder(base.Recorder)
		}
		job, err := g.Plan(base)
		if err != nil {
			return nil, err
		}
		if planned != nil {
			planned(job)
		}
		return job, job.Run(ctx)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	folder, err := checkpoint.Open(c.dir, checkpoint.Options{Retain: c.retain, Logger: logger, AllowChangedJob: c.allowChanged,
		AllowOutputRewind: c.allowRewind, TakeOverOutputs: c.takeOver})
	if err != nil {
		return nil, err
	}
	defer folder.Close()
	resumed, err := folder.Resume(ctx, g, c.fromSavepoint)
	if err != nil {
		return nil, err
	}
	for _, e := range resumed.Skipped {
		fmt.Fprintf(out, "warning: %v\n", e)
	}
	for _, e := range resumed.Recomputed {
		fmt.Fprintf(out, "warning: the output of epoch %d was aborted outside the job (a transaction timed out while the job was down); computing it again from the checkpoint before\n", e)
	}
	switch {
	case resumed.Restore == nil:
		fmt.Fprintf(out, "checkpoints in %s: fresh start at epoch %d\n", c.dir, resumed.FirstEpoch)
	case resumed.FromSavepoint != "":
		fmt.Fprintf(out, "restoring savepoint %s (epoch %d); first epoch %d\n", resumed.FromSavepoint, resumed.Restore.Epoch, resumed.FirstEpoch)
	default:
		fmt.Fprintf(out, "recovering from the checkpoint of epoch %d in %s; first epoch %d\n", resumed.Restore.Epoch, c.dir, resumed.FirstEpoch)
	}
	opts := resumed.Options(folder, base)
	opts.DropVanishedSplits = c.allowChanged
	if srv != nil {
		opts.Recorder = srv.Recorder(opts.Recorder)
	}
	job, err := g.Plan(opts)
	if err != nil {
		return nil, err
	}
	if planned != nil {
		planned(job)
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		folder.ServeSavepointRequests(serveCtx, job)
	}()
	err = job.Run(ctx)
	// A stop-with-savepoint ends Run while the answer to `weir savepoint`
	// is being written: let it finish before the process exits.
	stopServing()
	<-served
	return job, err
}

type jobOptions struct {
	brokers     []string
	in          string
	txnTimeout  time.Duration
	txnPrefix   string
	rows        int64
	rate        float64
	parallelism int
	seed        uint64
	out         string
	fileSize    int64
	ice         icebergFlags
	cp          checkpointFlags
}

func newJobCommand() *cobra.Command {
	o := jobOptions{}
	cmd := &cobra.Command{
		Use:   "job windowed|passthrough|kafka-windowed",
		Short: "Run a built-in job, exactly once: into a Parquet folder, an Iceberg table or a Kafka topic",
		Long: `Runs one of weir's built-in jobs with durable checkpoints:

  windowed     datagen -> keyed by key -> count, min and max of price per key
               in tumbling 1 s event-time windows -> Parquet
  passthrough  datagen -> Parquet, partitioned by category
  kafka-windowed
               Kafka topic --in (JSON rows of 'weir gen', read up to the
               end offsets seen at start) -> the windowed aggregate above ->
               Kafka topic --out (JSON, keyed by key), in one transaction
               per epoch and subtask

The output folder is a transactional Parquet table: files of an epoch
become visible when the epoch commits, and _weir/commits/ lists exactly
the committed files. Kill the job at any moment and start it again with
the same --checkpoint-dir: the table ends up with exactly the rows of a
run without failures. The same holds for the Kafka topic, read with
isolation.level=read_committed. With --table ns.name instead of --out,
windowed and passthrough write an Iceberg table (one snapshot per epoch;
embedded SQL catalog on SQLite in --warehouse unless --catalog-uri says
otherwise), with the same guarantee.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"windowed", "passthrough", "kafka-windowed"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runJob(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.rows, "rows", 1_000_000, "rows to generate (0: unbounded)")
	f.Float64Var(&o.rate, "rate", 0, "rows per second (0: as fast as possible)")
	f.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "subtasks per operator")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generated rows")
	f.StringVar(&o.out, "out", "", "output folder (a Parquet table), or output topic for kafka-windowed (required)")
	f.StringSliceVar(&o.brokers, "brokers", []string{"127.0.0.1:9092"}, "Kafka bootstrap brokers (kafka-windowed)")
	f.StringVar(&o.in, "in", "events", "input topic (kafka-windowed)")
	f.DurationVar(&o.txnTimeout, "transaction-timeout", kafkasink.DefaultTransactionTimeout, "Kafka transaction timeout (kafka-windowed): longer than any expected downtime")
	f.StringVar(&o.txnPrefix, "transactional-id-prefix", "", "prefix of the Kafka sink's transactional ids (kafka-windowed; default: the job name); unique per job on a cluster")
	o.ice.register(f)
	f.Int64Var(&o.fileSize, "target-file-size", 128<<20, "roll Parquet files at about this many bytes")
	o.cp.register(cmd)
	return cmd
}

// builtinJob builds the graph of a built-in job.
func builtinJob(name string, o jobOptions) (*arrowflow.Graph, error) {
	if o.parallelism < 1 || o.parallelism > state.DefaultMaxParallelism {
		return nil, fmt.Errorf("--parallelism must be in [1, %d], got %d", state.DefaultMaxParallelism, o.parallelism)
	}
	if o.out == "" && (name == "kafka-windowed" || o.ice.table == "") {
		return nil, errors.New("--out is required (or --table for an Iceberg table)")
	}
	if name == "kafka-windowed" {
		return kafkaWindowedJob(o)
	}
	src, err := genSource(o.seed, o.rows, o.rate, 16)
	if err != nil {
		return nil, err
	}
	g := arrowflow.NewGraph(name)
	gen := g.Source("generate", src, o.parallelism)
	switch name {
	case "windowed":
		agg, err := perKeyWindows(src.Schema())
		if err != nil {
			return nil, err
		}
		outSchema, err := agg.OutputSchema()
		if err != nil {
			return nil, err
		}
		name, sink, err := o.tableSink(outSchema, nil)
		if err != nil {
			return nil, err
		}
		win := g.Operator("per-key-windows", agg.Factory(), o.parallelism, arrowflow.KeyBy(gen, "key"))
		g.Sink(name, sink, o.parallelism, arrowflow.Forward(win))
	case "passthrough":
		name, sink, err := o.tableSink(src.Schema(), []string{"category"})
		if err != nil {
			return nil, err
		}
		g.Sink(name, sink, o.parallelism, arrowflow.Forward(gen))
	default:
		return nil, fmt.Errorf("unknown built-in job %q (windowed, passthrough, kafka-windowed)", name)
	}
	return g, nil
}

// target names the job's output for messages.
func (o jobOptions) target(job string) string {
	if o.ice.table != "" && job != "kafka-windowed" {
		return "Iceberg table " + o.ice.table + " (warehouse " + o.ice.warehouse + ")"
	}
	return o.out
}

// tableSink is the output of the built-in jobs: the Iceberg table --table
// when given, else the Parquet folder --out, partitioned by the given
// columns.
func (o jobOptions) tableSink(schema *arrow.Schema, partitionBy []string) (string, arrowflow.Sink, error) {
	if o.ice.table != "" {
		cat, err := o.ice.catalog()
		if err != nil {
			return "", nil, err
		}
		sink, err := icebergsink.New(context.Background(), icebergsink.Options{
			Catalog: cat, Table: o.ice.table, PartitionBy: partitionBy, TargetFileSize: o.fileSize,
		}, schema)
		return "iceberg", sink, err
	}
	sink, err := parquet.New(parquet.Options{Path: o.out, PartitionBy: partitionBy, TargetFileSize: o.fileSize})
	return "parquet", sink, err
}

// perKeyWindows is the windowed aggregate of the built-in jobs: count,
// min and max of price per key in tumbling one-second event-time windows.
func perKeyWindows(input *arrow.Schema) (window.Aggregate, error) {
	agg := window.Aggregate{
		Input: input, Time: "ts", Window: window.Tumbling(time.Second), Keys: []string{"key"},
		Aggs: []window.Agg{
			// Order-independent aggregates: the output is the same bit
			// for bit however rows interleave (a float sum is not).
			{Func: kernels.AggCountStar, Name: "rows"},
			{Func: kernels.AggMin, Args: []string{"price"}, Name: "min_price"},
			{Func: kernels.AggMax, Args: []string{"price"}, Name: "max_price"},
		},
	}
	return agg, agg.Validate()
}

// kafkaWindowedJob reads the JSON rows of `weir gen` from a topic and
// writes the per-key windows to another, exactly once.
func kafkaWindowedJob(o jobOptions) (*arrowflow.Graph, error) {
	if len(o.brokers) == 0 || o.in == "" {
		return nil, errors.New("--brokers and --in are required")
	}
	ctx := context.Background()
	schema := datagenSchema()
	dec, err := format.NewDecoder(ctx, format.Config{Name: "json", Schema: schema})
	if err != nil {
		return nil, err
	}
	src, err := kafkasrc.NewSource(kafkasrc.Options{
		Brokers: o.brokers, Topics: []string{o.in}, Decoder: dec,
		StartupMode: kafkasrc.StartEarliest, BoundedMode: kafkasrc.BoundedLatest,
		EventTime: "ts", MaxOutOfOrderness: time.Second,
	})
	if err != nil {
		return nil, err
	}
	if o.cp.lags != nil {
		o.cp.lags["kafka-in"] = src.Lag
	}
	agg, err := perKeyWindows(src.Schema())
	if err != nil {
		return nil, err
	}
	outSchema, err := agg.OutputSchema()
	if err != nil {
		return nil, err
	}
	enc, err := format.NewEncoder(ctx, format.Config{Name: "json", Schema: outSchema})
	if err != nil {
		return nil, err
	}
	sink, err := kafkasink.New(kafkasink.Options{
		Brokers: o.brokers, Topic: o.out, Encoder: enc, KeyColumns: []string{"key"},
		TransactionTimeout: o.txnTimeout, TransactionalIDPrefix: o.txnPrefix,
	})
	if err != nil {
		return nil, err
	}
	g := arrowflow.NewGraph("kafka-windowed")
	in := g.Source("kafka-in", src, o.parallelism)
	win := g.Operator("per-key-windows", agg.Factory(), o.parallelism, arrowflow.KeyBy(in, "key"))
	g.Sink("kafka-out", sink, o.parallelism, arrowflow.Forward(win))
	return g, nil
}

// datagenSchema is the schema of the rows `weir gen` produces.
func datagenSchema() *arrow.Schema {
	src, err := genSource(1, 1, 0, 1)
	if err != nil {
		panic(err) // a constant configuration
	}
	return src.Schema()
}

func runJob(cmd *cobra.Command, name string, o jobOptions) error {
	out := cmd.OutOrStdout()
	o.cp.lags = map[string]status.LagFunc{} // kafka-windowed adds its source's
	g, err := builtinJob(name, o)
	if err != nil {
		return fmt.Errorf("job %s: %w", name, err)
	}
	defer closeSinks(g)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	start := time.Now()
	job, err := runWithCheckpoints(cmd.Context(), out, g, o.cp, arrowflow.Options{Allocator: mem})
	if err != nil {
		if cmd.Context().Err() != nil && job != nil {
			fmt.Fprintf(out, "stopped after %d committed epochs; start again with the same --checkpoint-dir to resume\n", job.EpochsCompleted())
			return nil
		}
		return err
	}
	fmt.Fprintf(out, "job %s: %d epochs committed in %.2fs into %s\n", name, job.EpochsCompleted(), time.Since(start).Seconds(), o.target(name))
	return nil
}

func newSavepointCommand() *cobra.Command {
	var (
		dir     string
		stop    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "savepoint --checkpoint-dir DIR [--stop]",
		Short: "Take a savepoint of the job running on a checkpoint folder",
		Long: `Asks the job running on --checkpoint-dir for a savepoint: its next epoch
closes as a savepoint, and once committed it is copied into a
self-contained folder under DIR/savepoints/ that retention never removes.
Start a job from it with --from-savepoint, also with another parallelism.
With --stop the job stops right after the savepoint (stop-with-savepoint).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return errors.New("savepoint: --checkpoint-dir is required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			res, err := checkpoint.RequestSavepoint(ctx, dir, stop)
			if err != nil {
				return fmt.Errorf("savepoint: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "savepoint of epoch %d: %s\n", res.Epoch, res.Location)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "checkpoint-dir", "", "checkpoint folder of the running job")
	cmd.Flags().BoolVar(&stop, "stop", false, "stop the job after the savepoint")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the savepoint")
	return cmd
}

// closeSinks closes the graph's sinks that hold connections (io.Closer).
func closeSinks(g *arrowflow.Graph) {
	for _, n := range g.Nodes() {
		if n.Kind() != arrowflow.SinkNode {
			continue
		}
		if c, ok := n.Sink().(io.Closer); ok {
			_ = c.Close()
		}
	}
}
