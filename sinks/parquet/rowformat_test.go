package parquet_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// rowFiles lists the committed-looking data files of a row format: every
// file below root with the extension, skipping "_" and "." folders.
func rowFiles(t *testing.T, root, ext string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ext) {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// folderValues decodes a file's partition values with net/url.
func folderValues(t *testing.T, rel string) map[string]*string {
	t.Helper()
	out := map[string]*string{}
	segs := strings.Split(rel, "/")
	for _, seg := range segs[:len(segs)-1] {
		k, v, ok := strings.Cut(seg, "=")
		if !ok {
			t.Fatalf("%s: folder %q is not col=value", rel, seg)
		}
		if v == "__HIVE_DEFAULT_PARTITION__" {
			out[k] = nil
			continue
		}
		u, err := url.PathUnescape(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = &u
	}
	return out
}

// sqlTime parses Flink's 'yyyy-MM-dd HH:mm:ss[.SSS]'.
func sqlTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return ts
}

// readRowTable reads the csv or json table of testSchema at root without
// the sink's code: encoding/csv or encoding/json for the files, net/url
// for the folders, giving rows as testRow.want does.
func readRowTable(t *testing.T, root, format string) [][]any {
	t.Helper()
	var out [][]any
	for _, rel := range rowFiles(t, root, "."+format) {
		part := folderValues(t, rel)
		region := any(nil)
		if p := part["region"]; p != nil {
			region = *p
		}
		dayText := part["day"]
		if dayText == nil {
			t.Fatalf("%s: day is null", rel)
		}
		day, err := time.Parse("2006-01-02", *dayText)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		switch format {
		case "csv":
			r := csv.NewReader(bytes.NewReader(data))
			recs, err := r.ReadAll()
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			for _, rec := range recs {
				// id, price, name, ts: the partition columns are not in the file.
				if len(rec) != 4 {
					t.Fatalf("%s: %d fields in %q, want 4", rel, len(rec), rec)
				}
				id, err := strconv.ParseInt(rec[0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				var price, name any
				if rec[1] != "" {
					f, err := strconv.ParseFloat(rec[1], 64)
					if err != nil {
						t.Fatal(err)
					}
					price = f
				}
				if rec[2] != "" {
					name = rec[2]
				}
				out = append(out, []any{id, region, price, day, name, sqlTime(t, rec[3])})
			}
		case "json":
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				var m map[string]any
				d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
				d.UseNumber()
				if err := d.Decode(&m); err != nil {
					t.Fatalf("%s: %q: %v", rel, sc.Text(), err)
				}
				if len(m) != 4 {
					t.Fatalf("%s: %q has %d fields, want id, price, name, ts", rel, sc.Text(), len(m))
				}
				id, err := m["id"].(json.Number).Int64()
				if err != nil {
					t.Fatal(err)
				}
				var price any
				if n, ok := m["price"].(json.Number); ok {
					if price, err = n.Float64(); err != nil {
						t.Fatal(err)
					}
				}
				out = append(out, []any{id, region, price, day, m["name"], sqlTime(t, m["ts"].(string))})
			}
		}
	}
	return out
}

// CSV and JSON tables go through the same staging and commit log as
// Parquet: the committed files, read back with encoding/csv and
// encoding/json, hold exactly the rows of the committed epochs, in
// Hive-style folders without the partition columns in the files; an
// epoch pre-committed and never committed is not there after recovery.
func TestRowFormatsCommittedRowsMatchInput(t *testing.T) {
	for _, format := range []string{parquet.FormatCSV, parquet.FormatJSON} {
		t.Run(format, func(t *testing.T) {
			mem := newMem(t)
			s := newSink(t, parquet.Options{Format: format, TargetFileSize: 4000})
			root := s.Options().Path
			ws := openWriters(t, s, mem, 2)
			g := newGen(21)
			var all [][]any
			for epoch := uint64(1); epoch <= 3; epoch++ {
				payloads, rows := writeEpoch(t, g, mem, epoch, ws, 3)
				if err := s.Commit(ctx, epoch, payloads); err != nil {
					t.Fatal(err)
				}
				all = append(all, wantRows(rows)...)
			}
			// Epoch 4 is pre-committed, and the process dies before its commit.
			writeEpoch(t, g, mem, 4, ws, 2)
			s2 := newSink(t, parquet.Options{Path: root, Format: format})
			if err := s2.Recover(ctx, job, 3); err != nil {
				t.Fatal(err)
			}
			files := rowFiles(t, root, "."+format)
			if len(files) < 6 {
				t.Fatalf("only %d files: the rolling size did not split them", len(files))
			}
			committed, err := parquet.CommittedFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, f := range committed {
				if f.Format != format {
					t.Fatalf("%s: format %q", f.Path, f.Format)
				}
				listed = append(listed, f.Path)
			}
			slices.Sort(listed)
			if !slices.Equal(listed, files) {
				t.Fatalf("files\n  %v\ncommit log\n  %v", files, listed)
			}
			sameRows(t, "independent read", readRowTable(t, root, format), all)
			if _, err := parquet.ReadCommitted(root, nil); err == nil || !strings.Contains(err.Error(), "Parquet") {
				t.Fatalf("ReadCommitted of a %s table: %v", format, err)
			}
		})
	}
}

// commitSchema is a table partitioned as Nexmark q10's: dt and hm
// strings.
var commitSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "dt", Type: arrow.BinaryTypes.String},
	{Name: "hm", Type: arrow.BinaryTypes.String},
}, nil)

// hmBatch is one row per minute given, ids from id.
func hmBatch(mem memory.Allocator, id int64, minutes ...string) arrowflow.Batch {
	b := array.NewRecordBuilder(mem, commitSchema)
	defer b.Release()
	for i, m := range minutes {
		b.Field(0).(*array.Int64Builder).Append(id + int64(i))
		b.Field(1).(*array.StringBuilder).Append("2026-12-03")
		b.Field(2).(*array.StringBuilder).Append(m)
	}
	return arrowflow.NewBatch(b.NewRecordBatch())
}

// successes lists the partitions with a success file.
func successes(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, f := range listAll(t, root) {
		if dir, ok := strings.CutSuffix(f, "/_SUCCESS"); ok {
			out = append(out, dir)
		}
	}
	slices.Sort(out)
	return out
}

func hmDirs(minutes ...string) []string {
	var out []string
	for _, m := range minutes {
		out = append(out, "dt=2026-12-03/hm="+url.PathEscape(m))
	}
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], ":", "%3A")
	}
	return out
}

func wmAt(t *testing.T, w arrowflow.SinkWriter, hhmmss string) {
	t.Helper()
	wm := arrowflow.MaxEventTime
	if hhmmss != "max" {
		wm = arrowflow.EventTimeOf(sqlTime(t, "2026-12-03 "+hhmmss))
	}
	if err := w.(arrowflow.WatermarkWriter).ProcessWatermark(wm); err != nil {
		t.Fatal(err)
	}
}

func preCommitAll(t *testing.T, epoch uint64, ws []arrowflow.SinkWriter) [][]byte {
	t.Helper()
	out := make([][]byte, len(ws))
	for i, w := range ws {
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

func write(t *testing.T, w arrowflow.SinkWriter, b arrowflow.Batch) {
	t.Helper()
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// With the partition-time trigger a partition's success file appears
// once a committed epoch's watermark (the lowest subtask's) passes the
// partition's time plus the delay, never for an epoch not committed, and
// for every partition when the input ends; after a crash the partitions
// waiting are derived from the commit log.
func TestPartitionTimeCommit(t *testing.T) {
	mem := newMem(t)
	pc := parquet.PartitionCommit{SuccessFile: "_SUCCESS", Trigger: parquet.TriggerPartitionTime, Delay: time.Minute,
		TimestampPattern: "$dt $hm:00"}
	opts := parquet.Options{Format: parquet.FormatCSV, PartitionBy: []string{"dt", "hm"}, PartitionCommit: pc}
	s := newSink(t, opts)
	root := s.Options().Path
	ws := openWriters(t, s, mem, 2)

	write(t, ws[0], hmBatch(mem, 0, "10:00", "10:01", "10:02"))
	write(t, ws[1], hmBatch(mem, 10, "10:01", "10:03"))
	wmAt(t, ws[0], "10:02:30")
	wmAt(t, ws[1], "10:05:00")
	p1 := preCommitAll(t, 1, ws)
	if got := successes(t, root); len(got) != 0 {
		t.Fatalf("success files before the commit: %v", got)
	}
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	// The epoch's watermark is 10:02:30: 10:00 + 1 min and 10:01 + 1 min
	// are below it, 10:02 + 1 min is not.
	if got, want := successes(t, root), hmDirs("10:00", "10:01"); !slices.Equal(got, want) {
		t.Fatalf("after epoch 1: success files in %v, want %v", got, want)
	}
	if err := s.Commit(ctx, 1, p1); err != nil { // again, as recovery does
		t.Fatal(err)
	}

	// Epoch 2 is pre-committed with a watermark past everything and
	// never committed: the crash.
	write(t, ws[0], hmBatch(mem, 20, "11:00"))
	wmAt(t, ws[0], "12:00:00")
	wmAt(t, ws[1], "12:00:00")
	preCommitAll(t, 2, ws)
	if got, want := successes(t, root), hmDirs("10:00", "10:01"); !slices.Equal(got, want) {
		t.Fatalf("after epoch 2's pre-commit: success files in %v, want %v", got, want)
	}

	s2 := newSink(t, parquet.Options{Path: root, Format: parquet.FormatCSV, PartitionBy: opts.PartitionBy, PartitionCommit: pc})
	if err := s2.Recover(ctx, job, 1); err != nil {
		t.Fatal(err)
	}
	ws2 := openWriters(t, s2, mem, 2)
	// Epoch 2 again, rows of 10:04 only, watermark 10:04: 10:02 (from
	// epoch 1, re-derived from the log) is due, 10:03 and 10:04 are not.
	write(t, ws2[1], hmBatch(mem, 30, "10:04"))
	wmAt(t, ws2[0], "10:04:00")
	wmAt(t, ws2[1], "10:04:30")
	if err := s2.Commit(ctx, 2, preCommitAll(t, 2, ws2)); err != nil {
		t.Fatal(err)
	}
	if got, want := successes(t, root), hmDirs("10:00", "10:01", "10:02"); !slices.Equal(got, want) {
		t.Fatalf("after the restart's epoch 2: success files in %v, want %v", got, want)
	}
	// The end of the input commits every partition with committed files;
	// 11:00's rows were never committed, so it gets none. Subtask 0
	// finished in an earlier epoch: it sends no payload, and counts as
	// at MaxEventTime.
	wmAt(t, ws2[0], "max")
	wmAt(t, ws2[1], "max")
	p3 := preCommitAll(t, 3, ws2)
	p3[0] = nil
	if err := s2.Commit(ctx, 3, p3); err != nil {
		t.Fatal(err)
	}
	if got, want := successes(t, root), hmDirs("10:00", "10:01", "10:02", "10:03", "10:04"); !slices.Equal(got, want) {
		t.Fatalf("at the end: success files in %v, want %v", got, want)
	}
	for _, dir := range successes(t, root) {
		if files := rowFiles(t, filepath.Join(root, filepath.FromSlash(dir)), ".csv"); len(files) == 0 {
			t.Fatalf("%s has a success file and no data", dir)
		}
	}
}

// With the process-time trigger a partition is committed once processing
// time passes its first file's time plus the delay, at the first epoch
// commit after that.
func TestProcessTimeCommit(t *testing.T) {
	mem := newMem(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	pc := parquet.PartitionCommit{SuccessFile: "_DONE", Delay: 2 * time.Minute}
	s := newSink(t, parquet.Options{Format: parquet.FormatJSON, PartitionBy: []string{"dt", "hm"}, PartitionCommit: pc, Now: clock})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 1)
	write(t, ws[0], hmBatch(mem, 0, "a"))
	if err := s.Commit(ctx, 1, preCommitAll(t, 1, ws)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	write(t, ws[0], hmBatch(mem, 1, "b"))
	if err := s.Commit(ctx, 2, preCommitAll(t, 2, ws)); err != nil {
		t.Fatal(err)
	}
	done := func() []string {
		var out []string
		for _, f := range listAll(t, root) {
			if dir, ok := strings.CutSuffix(f, "/_DONE"); ok {
				out = append(out, dir)
			}
		}
		return out
	}
	if got := done(); len(got) != 0 {
		t.Fatalf("committed before the delay: %v", got)
	}
	now = now.Add(90 * time.Second) // a: 2.5 min, b: 1.5 min
	if err := s.Commit(ctx, 3, preCommitAll(t, 3, ws)); err != nil {
		t.Fatal(err)
	}
	if got, want := done(), []string{"dt=2026-12-03/hm=a"}; !slices.Equal(got, want) {
		t.Fatalf("success files in %v, want %v", got, want)
	}
	wmAt(t, ws[0], "max")
	if err := s.Commit(ctx, 4, preCommitAll(t, 4, ws)); err != nil {
		t.Fatal(err)
	}
	if got, want := done(), []string{"dt=2026-12-03/hm=a", "dt=2026-12-03/hm=b"}; !slices.Equal(got, want) {
		t.Fatalf("at the end: success files in %v, want %v", got, want)
	}
}

// The rollover interval ends a file that has been open that long, checked
// at most every check interval; files end at the pre-commit anyway.
func TestRolloverInterval(t *testing.T) {
	mem := newMem(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := newSink(t, parquet.Options{Format: parquet.FormatCSV, PartitionBy: []string{"dt"},
		RolloverInterval: time.Minute, CheckInterval: 30 * time.Second, Now: func() time.Time { return now }})
	ws := openWriters(t, s, mem, 1)
	for range 5 {
		write(t, ws[0], hmBatch(mem, 0, "x"))
		now = now.Add(25 * time.Second)
	}
	ps := preCommitAll(t, 1, ws)
	if err := s.Commit(ctx, 1, ps); err != nil {
		t.Fatal(err)
	}
	// Writes at 0, 25, 50, 75, 100 s; checks at 0, 50, 100 s: the file of
	// 0-50 s is 50 s old at 50 s, rolled at 100 s (the check after a
	// minute); the next one ends at the pre-commit.
	if n := len(decodeStaged(t, ps[0]).Files); n != 2 {
		t.Fatalf("%d files, want 2", n)
	}
	if got := rowFiles(t, s.Options().Path, ".csv"); len(got) != 2 {
		t.Fatalf("files %v", got)
	}
}

func TestRowFormatOptionErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opts parquet.Options
		want string
	}{
		{parquet.Options{Format: "avro"}, `Format "avro"`},
		{parquet.Options{Format: "csv", PartitionCommit: parquet.PartitionCommit{SuccessFile: "_SUCCESS"}}, "needs PartitionBy"},
		{parquet.Options{Format: "csv", PartitionBy: []string{"dt"}, PartitionCommit: parquet.PartitionCommit{SuccessFile: "_SUCCESS", TimestampPattern: "$day"}}, "$day is not a partition column"},
		{parquet.Options{Format: "csv", PartitionBy: []string{"dt"}, PartitionCommit: parquet.PartitionCommit{SuccessFile: "_SUCCESS", Trigger: "watermark"}}, `Trigger "watermark"`},
		{parquet.Options{Format: "csv", PartitionBy: []string{"dt"}, PartitionCommit: parquet.PartitionCommit{SuccessFile: "a/b"}}, "not a file name"},
		{parquet.Options{Format: "csv", PartitionBy: []string{"dt"}, PartitionCommit: parquet.PartitionCommit{SuccessFile: "_S", TimestampFormatter: "yyyy-MM-dd QQ"}}, "not supported"},
	} {
		c.opts.Path = filepath.Join(dir, "t")
		_, err := parquet.New(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one with %q", c.opts, err, c.want)
		}
	}
	pc := parquet.PartitionCommit{SuccessFile: "_SUCCESS", TimestampPattern: "$dt $hm:00"}
	if err := pc.Check([]string{"dt", "hm"}); err != nil {
		t.Fatal(err)
	}
	pc.TimestampFormatter = "yyyyMMdd HH:mm:ss"
	if err := pc.Check([]string{"dt", "hm"}); err != nil {
		t.Fatal(err)
	}
}

// With the partition-time trigger, a partition whose values give no time
// fails the write, naming the partition: it could never be committed.
func TestPartitionTimeOfBadValues(t *testing.T) {
	mem := newMem(t)
	pc := parquet.PartitionCommit{SuccessFile: "_SUCCESS", Trigger: parquet.TriggerPartitionTime, TimestampPattern: "$dt $hm:00"}
	s := newSink(t, parquet.Options{Format: parquet.FormatCSV, PartitionBy: []string{"dt", "hm"}, PartitionCommit: pc})
	ws := openWriters(t, s, mem, 1)
	err := ws[0].Write(ctx, hmBatch(mem, 0, "10:00", "late"))
	if err == nil || !strings.Contains(err.Error(), "hm=late") || !strings.Contains(err.Error(), `"2026-12-03 late:00"`) {
		t.Fatalf("error %v, want one naming the partition and its time", err)
	}
}

// A csv commit that stopped after moving some files, before its commit
// log entry, leaves no success file although its watermark is the end of
// the input. Recovery then either completes it (the checkpoint holds the
// epoch: every file and every success file appear) or deletes the moved
// files (it does not: no success file ever appears for them).
func TestRowFormatCrashMidCommit(t *testing.T) {
	pc := parquet.PartitionCommit{SuccessFile: "_SUCCESS", Trigger: parquet.TriggerPartitionTime, TimestampPattern: "$dt $hm:00"}
	for _, inCheckpoint := range []bool{true, false} {
		t.Run(fmt.Sprintf("in-checkpoint=%v", inCheckpoint), func(t *testing.T) {
			mem := newMem(t)
			opts := parquet.Options{Format: parquet.FormatCSV, PartitionBy: []string{"dt", "hm"}, PartitionCommit: pc}
			s := newSink(t, opts)
			root := s.Options().Path
			ws := openWriters(t, s, mem, 2)
			write(t, ws[0], hmBatch(mem, 0, "10:00", "10:01", "10:02"))
			write(t, ws[1], hmBatch(mem, 10, "10:01", "10:03"))
			wmAt(t, ws[0], "max")
			wmAt(t, ws[1], "max")
			payloads := preCommitAll(t, 9, ws)
			moved := 0
			for _, p := range payloads {
				for i, f := range decodeStaged(t, p).Files {
					if i%2 == 1 {
						continue
					}
					final := filepath.Join(root, filepath.FromSlash(f.Path))
					if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(filepath.Join(root, filepath.FromSlash(f.Staged)), final); err != nil {
						t.Fatal(err)
					}
					moved++
				}
			}
			if moved == 0 {
				t.Fatal("nothing moved")
			}
			opts.Path = root
			s2 := newSink(t, opts)
			if inCheckpoint {
				if err := s2.Commit(ctx, 9, payloads); err != nil { // recovery commits the checkpoint's epoch again
					t.Fatal(err)
				}
				if err := s2.Recover(ctx, job, 9); err != nil {
					t.Fatal(err)
				}
				if got, want := successes(t, root), hmDirs("10:00", "10:01", "10:02", "10:03"); !slices.Equal(got, want) {
					t.Fatalf("success files in %v, want %v", got, want)
				}
				if n := len(rowFiles(t, root, ".csv")); n != 5 {
					t.Fatalf("%d files, want 5", n)
				}
				return
			}
			if err := s2.Recover(ctx, job, 8); err != nil {
				t.Fatal(err)
			}
			ws2 := openWriters(t, s2, mem, 2)
			wmAt(t, ws2[0], "max")
			wmAt(t, ws2[1], "max")
			if err := s2.Commit(ctx, 9, preCommitAll(t, 9, ws2)); err != nil {
				t.Fatal(err)
			}
			if got := successes(t, root); len(got) != 0 {
				t.Fatalf("success files for uncommitted data: %v", got)
			}
			if got := rowFiles(t, root, ".csv"); len(got) != 0 {
				t.Fatalf("uncommitted files left: %v", got)
			}
		})
	}
}
