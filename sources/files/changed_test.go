package files

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// checkpointAfter reads nexts batches with one reader over every split
// and returns a checkpoint of its positions.
func checkpointAfter(t *testing.T, src *Source, nexts int) *arrowflow.Checkpoint {
	t.Helper()
	mem := newMem(t)
	rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))
	readN(t, rd, nexts)
	pos, err := rd.Positions()
	if err != nil {
		t.Fatal(err)
	}
	rd.Close()
	return &arrowflow.Checkpoint{Job: "files-test", Epoch: 1, MaxParallelism: state.DefaultMaxParallelism,
		Sources: map[string][]arrowflow.SplitState{"files": pos}}
}

// A job restored from a checkpoint fails, naming the file, when a file
// changed size since the checkpoint or disappeared (whether it was read
// to its end, in the middle, or not started), for every parallelism.
func TestFilesChangedSinceCheckpoint(t *testing.T) {
	for _, format := range []string{Parquet, "json"} {
		for _, tc := range []struct {
			name   string
			file   int    // the file changed: 0 read to its end, 1 in the middle, 2 and 3 not started
			change string // "append" or "delete"
			parts  []string
		}{
			{"append-read", 0, "append", []string{"changed since the checkpoint"}},
			{"append-middle", 1, "append", []string{"changed since the checkpoint"}},
			{"append-unread", 2, "append", []string{"changed since the checkpoint"}},
			{"delete-read", 0, "delete", []string{"no longer lists"}},
			{"delete-middle", 1, "delete", []string{"no longer lists"}},
			{"delete-unread", 2, "delete", []string{"no longer lists"}},
			// A deleted file is a split the source no longer lists: the
			// runtime refuses the checkpoint's positions for it.
			{"delete-last", 3, "delete", []string{"no longer lists"}},
		} {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				paths := make([]string, 4)
				for i := range paths {
					paths[i] = filepath.Join(dir, fmt.Sprintf("f%d", i))
					rows := events(i*30, i*30+30)
					if format == Parquet {
						writeParquet(t, paths[i], eventSchema, rows, 10, true)
					} else {
						writeFile(t, paths[i], joinLines(linesOf(rows, jsonLine), false, false))
					}
				}
				o := Options{Path: dir, Format: format, Schema: eventSchema, BatchSize: 20}
				cp := checkpointAfter(t, mustNew(t, o), 3) // all of f0, half of f1

				switch tc.change {
				case "append":
					f, err := os.OpenFile(paths[tc.file], os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteString("\n")
					f.Close()
				case "delete":
					if err := os.Remove(paths[tc.file]); err != nil {
						t.Fatal(err)
					}
				}
				for _, par := range []int{1, 3} {
					mem := newMem(t)
					_, err := runJob(t, mustNew(t, o), par, arrowflow.Options{Allocator: mem, Restore: cp})
					name := paths[tc.file]
					if tc.change == "delete" {
						name = fmt.Sprintf("splits f%d ", tc.file) // the split ID, relative to the folder
					}
					wantErr(t, err, append([]string{name}, tc.parts...)...)
				}
			})
		}
	}
}

// A file that changes or disappears between the listing and its reading
// fails the job, naming it.
func TestFilesChangedWhileRunning(t *testing.T) {
	for _, change := range []string{"append", "delete"} {
		t.Run(change, func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
			writeFile(t, a, jsonLine(event(0))+"\n")
			writeFile(t, b, jsonLine(event(1))+"\n")
			src := mustNew(t, Options{Path: dir, Format: "json", Schema: eventSchema})
			rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))
			if rows, _ := readN(t, rd, 1); len(rows) != 1 {
				t.Fatalf("rows %v", rows)
			}
			if change == "append" {
				writeFile(t, b, jsonLine(event(1))+"\n"+jsonLine(event(2))+"\n")
			} else if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			_, err := rd.Next(ctx)
			wantErr(t, err, b, map[string]string{"append": "changed since it was listed", "delete": "disappeared since it was listed"}[change])
		})
	}
}

// A committed file of a weir table whose size differs from its commit
// log entry is refused when listing.
func TestWeirTableFileChanged(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	writeWeirTable(t, table)
	files, err := os.ReadDir(table)
	if err != nil {
		t.Fatal(err)
	}
	var data string
	for _, f := range files {
		if !f.IsDir() {
			data = filepath.Join(table, f.Name())
		}
	}
	fh, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("x")
	fh.Close()
	_, err = mustNew(t, Options{Path: table, Format: Parquet, Schema: eventSchema}).Splits(ctx)
	wantErr(t, err, filepath.Base(data), "its commit log says")
}
