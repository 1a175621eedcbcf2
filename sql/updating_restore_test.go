package sql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/checkpoint"
	"github.com/weirflow/weir/internal/nexmarkref"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

// runUntil compiles the suite's query q at parallelism par into sink out
// and runs it on the checkpoint folder dir, resuming from its newest
// checkpoint: to the end of the input, or, when stopAfter > 0, until
// out has committed that many more epochs, when the run is cancelled as a
// crash would end it (nothing after the last committed checkpoint
// survives but what the sink committed).
func runUntil(t *testing.T, q string, par int, events int, dir string, out *collect.Sink, stopAfter int) (*nexmark.Source, bool) {
	t.Helper()
	job, err := Compile(context.Background(), suiteScript(t, q, events, 10000, 8, t.TempDir()),
		Options{Parallelism: par, ForceParallelism: true, JobName: "updating-" + q, Sinks: map[string]arrowflow.Sink{"nexmark_" + q: out}})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var src *nexmark.Source
	for _, s := range job.Sources {
		if n, ok := s.(*nexmark.Source); ok {
			src = n
		}
	}
	folder, err := checkpoint.Open(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resumed, err := folder.Resume(ctx, job.Graph, "")
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	run, err := job.Graph.Plan(resumed.Options(folder, arrowflow.Options{Allocator: mem, CheckpointInterval: 15 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	before := len(out.Epochs())
	if stopAfter > 0 {
		go func() {
			for runCtx.Err() == nil && len(out.Epochs()) < before+stopAfter {
				time.Sleep(2 * time.Millisecond)
			}
			stop()
		}()
	}
	err = run.Run(runCtx)
	stopped := runCtx.Err() != nil && ctx.Err() == nil
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("%s at parallelism %d: %v", q, par, err)
	}
	mem.AssertSize(t, 0)
	return src, stopped
}

// An updating query stopped abruptly after a few committed epochs and
// resumed from its checkpoint at another parallelism (its operators'
// state restored by key group into more or fewer subtasks), twice: the
// sink's materialized table equals the plain answer, with no retraction
// of a row the sink does not hold.
func TestUpdatingQueriesRestoreAndRescale(t *testing.T) {
	const events = 120_000
	rotations := [][3]int{{2, 4, 1}, {4, 1, 2}}
	for i, q := range []string{"q4", "q9", "q16", "q18", "q20"} {
		for _, pars := range rotations[i%2 : i%2+1] {
			t.Run(fmt.Sprintf("%s/p%d-p%d-p%d", q, pars[0], pars[1], pars[2]), func(t *testing.T) {
				dir := t.TempDir()
				out := collect.New()
				src, stopped := runUntil(t, q, pars[0], events, dir, out, 3)
				if !stopped {
					t.Skipf("the first run ended before it was stopped: nothing restored")
				}
				if _, stopped = runUntil(t, q, pars[1], events, dir, out, 3); !stopped {
					t.Logf("the second run ended before it was stopped")
				}
				runUntil(t, q, pars[2], events, dir, out, 0)
				table, err := out.Table()
				if err != nil {
					t.Fatal(err)
				}
				got := make([]string, len(table))
				for i, r := range table {
					got[i] = fmtRow(r...)
				}
				slices.Sort(got)
				tables, err := nexmarkref.ReadTables(src)
				if err != nil {
					t.Fatal(err)
				}
				if err := updatingAnswer(q, tables, got); err != nil {
					t.Fatalf("after restores at parallelism %v: %v", pars, err)
				}
			})
		}
	}
}
