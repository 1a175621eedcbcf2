package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/sources/files"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
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
on 127.0.0.1:8081 (or a free port when it is taken; --http ADDR to choose,
--http off for none), where POST /savepoint takes a savepoint with the
token the job writes to CHECKPOINT-DIR/http-token; so does
'weir savepoint --checkpoint-dir DIR'. See docs/sql.md and
docs/operations.md.`,
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
			switch {
			case !cmd.Flags().Changed("http"):
				flags.http, flags.httpAnyPort = defaultStatusAddr, true
			case flags.http == "off":
				flags.http = ""
			}
			flags.lags = map[string]status.LagFunc{}
			for name, src := range job.Sources {
				if l, ok := src.(interface {
					Lag(context.Context) (int64, error)
				}); ok {
					flags.lags[name] = l.Lag
				}
			}
			flags.rejected = rejectedCounts(job.Sources)
			fmt.Fprintf(out, "job %s: parallelism %d, writes %s\n", job.Name, job.Parallelism, strings.Join(job.Sinks, ", "))
			j, err := runWithCheckpoints(cmd.Context(), out, job.Graph, flags, arrowflow.Options{Allocator: memory.DefaultAllocator})
			if err != nil {
				// Interrupted (Ctrl-C, SIGTERM): the way to stop an
				// unbounded job, not a failure (as `weir job`).
				if cmd.Context().Err() != nil && j != nil {
					fmt.Fprintf(out, "job %s stopped after %d committed epochs%s; run it again with the same checkpoint folder (%s) to resume\n", job.Name, j.EpochsCompleted(), rejectedSummary(flags.rejected)+lateSummary(j), flags.dir)
					return nil
				}
				return err
			}
			fmt.Fprintf(out, "job %s finished: %d epochs committed%s\n", job.Name, j.EpochsCompleted(), rejectedSummary(flags.rejected)+lateSummary(j))
			return nil
		},
	}
	flags.register(cmd)
	// weir run serves its status unless told not to (weir job, sharing
	// the flag, only when asked).
	cmd.Flags().Lookup("http").Usage = "serve the job's status, plan, Prometheus metrics and a savepoint trigger over HTTP on this address (default 127.0.0.1:8081, or a free port when it is taken; a port alone means 127.0.0.1; 'off' or \"\" for none); POST /savepoint needs the token, see --http-token"
	cmd.Flags().IntVar(&parallelism, "parallelism", 0, "subtasks per operator (default: SET 'parallelism.default', else the number of CPUs)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print the job's plan (operators, keys, exchanges, parallelism) and exit")
	return cmd
}

// rejectedCounts returns, per source that counts the records its format
// rejected (the Kafka and files sources, under the skip and dlq
// policies), a function reading the counts.
func rejectedCounts(sources map[string]arrowflow.Source) map[string]status.RejectedFunc {
	out := map[string]status.RejectedFunc{}
	for name, src := range sources {
		switch s := src.(type) {
		case *kafkasrc.Source:
			out[name] = func() status.RejectedCounts {
				st := s.Stats()
				return status.RejectedCounts{Skipped: st.Skipped, DeadLettered: st.DeadLettered}
			}
		case *files.Source:
			out[name] = func() status.RejectedCounts {
				st := s.Stats()
				return status.RejectedCounts{Skipped: st.Skipped, DeadLettered: st.DeadLettered}
			}
		}
	}
	return out
}

// rejectedSummary is ", source: N records skipped, M dead-lettered" for
// every source that rejected records, in name order; "" when none did.
func rejectedSummary(rejected map[string]status.RejectedFunc) string {
	names := slices.Sorted(maps.Keys(rejected))
	var b strings.Builder
	for _, name := range names {
		c := rejected[name]()
		if c.Skipped != 0 || c.DeadLettered != 0 {
			fmt.Fprintf(&b, ", %s: %d records skipped, %d dead-lettered", name, c.Skipped, c.DeadLettered)
		}
	}
	return b.String()
}

// lateSummary is ", late rows dropped: op N, op M" for every operator
// that dropped late rows (summed over its subtasks, in plan order); ""
// when none did (or there is no job).
func lateSummary(j *arrowflow.Job) string {
	if j == nil {
		return ""
	}
	var (
		names []string
		rows  = map[string]int64{}
	)
	for _, c := range j.OperatorCounts() {
		if _, ok := rows[c.Operator]; !ok {
			names = append(names, c.Operator)
		}
		rows[c.Operator] += c.LateRows
	}
	var b strings.Builder
	for _, name := range names {
		if n := rows[name]; n != 0 {
			if b.Len() == 0 {
				b.WriteString(", late rows dropped:")
			} else {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %d", name, n)
		}
	}
	return b.String()
}
