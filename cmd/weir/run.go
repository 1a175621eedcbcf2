package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/sql"
	"github.com/weirflow/weir/state"
)

// defaultStatusAddr is where `weir run` serves its status unless told
// otherwise (Flink's REST port); when it is taken, a free port is used.
const defaultStatusAddr = "127.0.0.1:8081"

func newRunCommand() *cobra.Command {
	var (
		flags       checkpointFlags
		parallelism int
		explain     bool
	)
	cmd := &cobra.Command{
		Use:   "run JOB.sql",
		Short: "Run a streaming SQL job (Flink SQL dialect)",
		Long: `Runs a script of Flink SQL statements: CREATE TABLE ... WITH (...) for
sources and sinks, CREATE VIEW, SET, and INSERT INTO ... SELECT (all
INSERTs form one job). The job checkpoints every --checkpoint-interval
(or SET 'execution.checkpointing.interval') into --checkpoint-dir (or
SET 'state.checkpoints.dir', else weir-checkpoints/<script name>); run it
again on the same folder and it resumes exactly where the last completed
epoch ended. Its status, plan and Prometheus metrics are served over HTTP
(--http), where POST /savepoint takes a savepoint; so does
'weir savepoint --checkpoint-dir DIR'. See docs/sql.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			opts := sql.Options{Parallelism: runtime.NumCPU(), JobName: strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))}
			if cmd.Flags().Changed("parallelism") {
				if parallelism < 1 {
					return errors.New("run: --parallelism must be at least 1")
				}
				opts.Parallelism, opts.ForceParallelism = parallelism, true
			}
			opts.DryRun = explain // explaining touches no table, folder or topic
			job, err := sql.Compile(cmd.Context(), string(src), opts)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			defer closeSinks(job.Graph)
			if job.Parallelism > state.DefaultMaxParallelism {
				return fmt.Errorf("%s: parallelism %d: at most %d (the number of key groups)", args[0], job.Parallelism, state.DefaultMaxParallelism)
			}
			out := cmd.OutOrStdout()
			for _, w := range job.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			if explain {
				planned, err := job.Graph.Plan(arrowflow.Options{Allocator: memory.DefaultAllocator})
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "job %s, parallelism %d, writes %s\n\n%s\n%s", job.Name, job.Parallelism, strings.Join(job.Sinks, ", "), job.Plan, planned.Explain())
				return nil
			}
			if !cmd.Flags().Changed("checkpoint-interval") && job.CheckpointInterval > 0 {
				flags.interval = job.CheckpointInterval
			}
			if !cmd.Flags().Changed("checkpoint-dir") {
				flags.dir = job.CheckpointDir
				if flags.dir == "" {
					flags.dir = filepath.Join("weir-checkpoints", opts.JobName)
				}
			}
			if !cmd.Flags().Changed("http") {
				flags.http, flags.httpAnyPort = defaultStatusAddr, true
			}
			flags.lags = map[string]status.LagFunc{}
			for name, src := range job.Sources {
				if l, ok := src.(interface {
					Lag(context.Context) (int64, error)
				}); ok {
					flags.lags[name] = l.Lag
				}
			}
			fmt.Fprintf(out, "job %s: parallelism %d, writes %s\n", job.Name, job.Parallelism, strings.Join(job.Sinks, ", "))
			j, err := runWithCheckpoints(cmd.Context(), out, job.Graph, flags, arrowflow.Options{Allocator: memory.DefaultAllocator})
			if err != nil {
				// Interrupted (Ctrl-C, SIGTERM): the way to stop an
				// unbounded job, not a failure (as `weir job`).
				if cmd.Context().Err() != nil && j != nil {
					fmt.Fprintf(out, "job %s stopped after %d committed epochs; run it again with the same checkpoint folder (%s) to resume\n", job.Name, j.EpochsCompleted(), flags.dir)
					return nil
				}
				return err
			}
			fmt.Fprintf(out, "job %s finished: %d epochs committed\n", job.Name, j.EpochsCompleted())
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().IntVar(&parallelism, "parallelism", 0, "subtasks per operator (default: SET 'parallelism.default', else the number of CPUs)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print the job's plan (operators, keys, exchanges, parallelism) and exit")
	return cmd
}
