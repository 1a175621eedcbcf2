package files

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/state"
)

// restoreData writes five files of the format with 0 to 180 events each;
// Parquet files have row groups of 37 rows, so that batches of 10 rows
// cut row groups anywhere.
func restoreData(t *testing.T, format string) (dir string, want [][]any) {
	dir = t.TempDir()
	sizes := []int{180, 0, 1, 95, 37}
	next := 0
	for i, n := range sizes {
		rows := events(next, next+n)
		next += n
		want = append(want, rows...)
		path := filepath.Join(dir, fmt.Sprintf("f%d", i))
		switch format {
		case Parquet:
			writeParquet(t, path, eventSchema, rows, 37, i%2 == 0)
		case "json":
			writeFile(t, path, joinLines(linesOf(rows, jsonLine), true, i%2 == 1))
		}
	}
	return dir, want
}

// Positions taken between batches are exact: readers of one parallelism
// read some batches, and a job restored from their positions at another
// parallelism reads the rest. Together they read every row once.
func TestRestoreFromPositions(t *testing.T) {
	for _, format := range []string{Parquet, "json"} {
		dir, want := restoreData(t, format)
		for _, tc := range []struct{ before, after, nexts int }{{1, 3, 1}, {2, 1, 4}, {3, 2, 9}, {2, 3, 13}, {2, 2, 1000}} {
			t.Run(fmt.Sprintf("%s/par=%d-then-%d/nexts=%d", format, tc.before, tc.after, tc.nexts), func(t *testing.T) {
				mem := newMem(t)
				src := mustNew(t, Options{Path: dir, Format: format, Schema: eventSchema, BatchSize: 10})
				ids := mustSplits(t, src)
				var first [][]any
				cp := &arrowflow.Checkpoint{Job: "files-test", Epoch: 1, MaxParallelism: state.DefaultMaxParallelism,
					Sources: map[string][]arrowflow.SplitState{}}
				for s := range tc.before {
					rd := openReader(t, src, mem, s, tc.before, subtaskStates(ids, nil, s, tc.before))
					rows, _ := readN(t, rd, tc.nexts)
					first = append(first, rows...)
					pos, err := rd.Positions()
					if err != nil {
						t.Fatal(err)
					}
					cp.Sources["files"] = append(cp.Sources["files"], pos...)
					rd.Close()
				}
				src2 := mustNew(t, Options{Path: dir, Format: format, Schema: eventSchema, BatchSize: 10})
				sink, err := runJob(t, src2, tc.after, arrowflow.Options{Allocator: mem, Restore: cp})
				if err != nil {
					t.Fatal(err)
				}
				second := sink.Rows()
				if tc.nexts < 1000 && len(first) == 0 {
					t.Fatal("the first readers read nothing")
				}
				sameRows(t, "both runs", append(first, second...), want)
			})
		}
	}
}

// slowSource paces a source's readers and makes them fail once fail
// reports true, as a crash would.
type slowSource struct {
	arrowflow.Source
	fail func() bool
}

func (s *slowSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	rd, err := s.Source.Open(info, splits)
	if err != nil {
		return nil, err
	}
	return &slowReader{SourceReader: rd, fail: s.fail}, nil
}

type slowReader struct {
	arrowflow.SourceReader
	fail func() bool
}

var errInjected = errors.New("injected failure")

func (r *slowReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if r.fail() {
		return arrowflow.Batch{}, errInjected
	}
	time.Sleep(time.Millisecond)
	return r.SourceReader.Next(ctx)
}

// A job fails after some checkpoints; restored from the last one at
// another parallelism, into the same sink, it completes. The sink holds
// every row exactly once, as after a run without failure.
func TestRestoreAfterFailureIsExactlyOnce(t *testing.T) {
	for _, format := range []string{Parquet, "json"} {
		t.Run(format, func(t *testing.T) {
			mem := newMem(t)
			dir, want := restoreData(t, format)
			store := state.NewMemoryStore()
			sink := collect.New()
			var restore *arrowflow.Checkpoint
			for i, par := range []int{2, 3} {
				last := i == 1
				var recorded atomic.Int64
				src := &slowSource{Source: mustNew(t, Options{Path: dir, Format: format, Schema: eventSchema, BatchSize: 7}),
					fail: func() bool { return !last && recorded.Load() >= 3 }}
				err := runJobInto(t, src, par, arrowflow.Options{
					Allocator: mem, CheckpointInterval: 5 * time.Millisecond, StateStore: store, Restore: restore,
					Recorder: arrowflow.EpochRecorderFunc(func(_ context.Context, cp *arrowflow.Checkpoint) error {
						recorded.Add(1)
						restore = cp
						return nil
					}),
				}, sink)
				if last {
					if err != nil {
						t.Fatal(err)
					}
					break
				}
				if !errors.Is(err, errInjected) {
					t.Fatalf("first run: want the injected failure, got %v", err)
				}
				if n := len(sink.Rows()); n == 0 || n >= len(want) {
					t.Fatalf("first run committed %d of %d rows: the failure did not fall inside the input", n, len(want))
				}
			}
			sameRows(t, "rows", sink.Rows(), want)
		})
	}
}

// An empty folder has no splits, and a job over it ends with no rows.
func TestEmptyFolder(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "_SUCCESS"), "")
	src := mustNew(t, Options{Path: dir, Format: Parquet, Schema: eventSchema, EventTime: "ts"})
	if ids := mustSplits(t, src); len(ids) != 0 {
		t.Fatalf("splits %v", ids)
	}
	sink, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
	if err != nil || len(sink.Rows()) != 0 {
		t.Fatalf("rows %v, err %v", sink.Rows(), err)
	}
}
