package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sinks/print"
	"github.com/weirflow/weir/sources/datagen"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

type demoOptions struct {
	rows        int64
	rate        float64
	parallelism int
	top         int
	seed        uint64
	checkpoint  time.Duration
}

func newDemoCommand() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the built-in demo job and say what it did",
		Long: `Runs weir's demo job on generated data, with no setup:

  generate rows (id, key, category, price, ts)   datagen source, one subtask per core
    -> drop rows without a price                 filter, chained into the source's task
    -> exchange by key                           hash of key -> 128 key groups -> subtasks
    -> count rows and sum prices per key         keyed state, snapshotted every epoch
    -> keep the top keys by count                one subtask
    -> print them                                print sink
  and, from the same filtered rows:
    -> exchange by category, count and sum per   tumbling 1 s event-time windows,
       category and window                       columnar window state

Epochs close every --checkpoint-interval with aligned barriers; every
sink commits each epoch once. At the end the demo checks that the
per-key counts add up to the rows that passed the filter.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.rows, "rows", 10_000_000, "number of rows to generate")
	f.Float64Var(&o.rate, "rate", 0, "rows per second to generate (0: as fast as possible)")
	f.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "subtasks per operator")
	f.IntVar(&o.top, "top", 10, "number of keys to print")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generated data")
	f.DurationVar(&o.checkpoint, "checkpoint-interval", 250*time.Millisecond, "how often an epoch closes (0: only the final epoch)")
	return cmd
}

func runDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	if o.rows < 1 {
		return errors.New("demo: --rows must be at least 1")
	}
	if o.parallelism < 1 || o.parallelism > state.DefaultMaxParallelism {
		return fmt.Errorf("demo: --parallelism must be in [1, %d], got %d", state.DefaultMaxParallelism, o.parallelism)
	}
	if o.top < 1 {
		return errors.New("demo: --top must be at least 1")
	}
	src, err := datagen.New(datagen.Config{
		Seed:          o.seed,
		Rows:          o.rows,
		RowsPerSecond: o.rate,
		Splits:        16,
		EventTime:     datagen.EventTimeConfig{MaxOutOfOrderness: 100 * time.Millisecond},
	})
	if err != nil {
		return err
	}
	totals := collect.New()
	g := arrowflow.NewGraph("demo")
	gen := g.Source("generate", src, o.parallelism)
	keep := g.Operator("drop-null-prices", ops.Where(kernels.IsNotNull(kernels.Col("price"))), o.parallelism, arrowflow.Forward(gen))
	count := g.Operator("count-per-key", ops.CountByKey{Key: "key", Value: "price"}.Factory(), o.parallelism,
		arrowflow.KeyBy(keep, "key"))
	top := g.Operator("top-keys", ops.TopN{By: "count", TieBreak: "key", N: o.top}.Factory(), 1,
		arrowflow.Rebalance(count))
	g.Sink("print", print.New(print.Options{Writer: out}), 1, arrowflow.Forward(top))
	g.Sink("totals", totals, o.parallelism, arrowflow.Forward(count))
	// The same rows, counted per category in tumbling one-second windows of
	// event time: columnar window state, snapshotted every epoch.
	perWindow := window.Aggregate{
		Input: src.Schema(), Time: "ts", Window: window.Tumbling(time.Second), Keys: []string{"category"},
		Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "rows"}, {Func: kernels.AggSum, Args: []string{"price"}, Name: "sum_price"}},
	}
	if err := perWindow.Validate(); err != nil {
		return err
	}
	windows := collect.New()
	win := g.Operator("per-category-windows", perWindow.Factory(), o.parallelism, arrowflow.KeyBy(keep, "category"))
	g.Sink("windows", windows, o.parallelism, arrowflow.Forward(win))

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: o.checkpoint})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "weir demo: %d generated rows, parallelism %d, an epoch every %s\n\n%s\n",
		o.rows, o.parallelism, o.checkpoint, job.Explain())
	fmt.Fprintf(out, "top %d keys by count (key, count, sum_price):\n", o.top)

	cpu0 := cpuTime()
	start := time.Now()
	err = job.Run(cmd.Context())
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	if err != nil {
		return err
	}
	return demoSummary(out, job, totals, windows, mem, o, wall, cpu)
}

func demoSummary(out io.Writer, job *arrowflow.Job, totals, windows *collect.Sink, mem *memory.CheckedAllocator,
	o demoOptions, wall, cpu time.Duration) error {
	var generated, passed int64
	for _, st := range job.Stats() {
		if st.Task == "generate -> drop-null-prices" {
			generated += st.RowsIn
			passed += st.RowsOut
		}
	}
	var counted int64
	rows := totals.Rows()
	for _, r := range rows {
		counted += r[1].(int64)
	}
	fmt.Fprintf(out, "\ngenerated %d rows in %.2fs: %.2fM rows/s, %.2fM rows/s per CPU-second (%.2fs CPU)\n",
		generated, wall.Seconds(), float64(generated)/wall.Seconds()/1e6, float64(generated)/cpu.Seconds()/1e6, cpu.Seconds())
	var windowed int64
	winRows := windows.Rows()
	for _, r := range winRows {
		windowed += r[3].(int64) // window_start, window_end, category, rows, sum_price
	}
	fmt.Fprintf(out, "%d rows had no price and were dropped; %d keys counted\n", generated-passed, len(rows))
	fmt.Fprintf(out, "%d per-category results in one-second event-time windows, over %d rows\n", len(winRows), windowed)
	fmt.Fprintf(out, "epochs committed: %d (the last one final)\n", job.EpochsCompleted())
	if generated != o.rows || counted != passed || windowed != passed {
		return fmt.Errorf("demo: check failed: generated %d of %d rows; per-key counts add up to %d, windows to %d; %d rows passed the filter",
			generated, o.rows, counted, windowed, passed)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		return fmt.Errorf("demo: check failed: %d bytes of Arrow memory still allocated after the job", n)
	}
	fmt.Fprintf(out, "check: per-key counts and window counts each add up to the %d rows that passed the filter; no Arrow memory left allocated\n", passed)
	return nil
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
