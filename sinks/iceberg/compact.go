package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/weirflow/weir/internal/ctxsleep"
)

// DefaultMinInputFiles is the fewest small files in a partition that
// Compact rewrites by default.
const DefaultMinInputFiles = int(compaction.DefaultMinInputFiles)

const (
	// compactAttempts bounds the rewrites of one Compact: a rewrite
	// whose files a concurrent commit changed is deleted and written
	// again, at most this many times in all.
	compactAttempts = 5
	// compactRecommits bounds the commits of one written rewrite that
	// concurrent commits beat while leaving its files alone: a job
	// committing an epoch every few seconds beats a slow rewrite's first
	// commit often, and its next one seldom.
	compactRecommits = 50
)

// ErrCompactionBeaten is wrapped in the error of a Compact that gave up
// because concurrent commits beat each of its attempts: nothing of it
// was committed, and its new files are deleted.
var ErrCompactionBeaten = errors.New("compaction gave up")

// CompactOptions configure Compact.
type CompactOptions struct {
	// TargetFileSize is the size of the files to write; the table's
	// 'write.target-file-size-bytes' (512 MiB by default) when 0. Files
	// under 75% of it are candidates.
	TargetFileSize int64
	// MinInputFiles is the fewest candidate files in a partition worth
	// rewriting; DefaultMinInputFiles when 0.
	MinInputFiles int
	// Lock, when set, is held around each commit, the table reloaded and
	// the rewrite checked under it: a writer holding it for its own
	// commits (the Sink's maintenance) never conflicts with the
	// compaction.
	Lock sync.Locker
	// Progress, when set, is told of each commit or rewrite done again
	// after concurrent commits.
	Progress func(msg string)
}

// CompactResult is what a Compact did.
type CompactResult struct {
	// Committed: a rewrite was committed; else Nothing says why there
	// was nothing to compact (when the error is nil).
	Committed bool
	Nothing   string
	// The snapshot read, its data files and their bytes.
	SnapshotRead int64
	FilesBefore  int
	BytesBefore  int64
	// Of a committed rewrite: the groups, the files and bytes rewritten
	// and written, the delete files removed, and the snapshot after with
	// its data files.
	Groups             int
	FilesRemoved       int
	BytesRemoved       int64
	FilesAdded         int
	BytesAdded         int64
	DeleteFilesRemoved int
	SnapshotAfter      int64
	FilesAfter         int
	// Recommits counts commits of a written rewrite done again after
	// concurrent commits that left its files alone, Rewrites the rewrites
	// deleted and written again after concurrent commits that changed
	// them.
	Recommits, Rewrites int
	// Table is the table as last loaded (after the commit, when one).
	Table *table.Table
}

// Compact rewrites the small data files of tbl's current snapshot into
// files of about the target size, in one replace snapshot, applying the
// delete files that apply to them; delete files no data file needs any
// more are removed in the same snapshot. load reloads the table from its
// catalog. Safe next to writers of the table: a commit a concurrent
// commit beats is committed again on the table as it is then when the
// rewritten files are still there with the same deletes (a job's
// appends and equality deletes do not touch them), else the new files
// are deleted and the compaction starts over.
func Compact(ctx context.Context, tbl *table.Table, load func(context.Context) (*table.Table, error), o CompactOptions) (res CompactResult, err error) {
	if o.TargetFileSize < 0 {
		return res, fmt.Errorf("target file size must not be negative, got %d", o.TargetFileSize)
	}
	if o.MinInputFiles < 0 {
		return res, fmt.Errorf("min input files must be at least 1, got %d", o.MinInputFiles)
	}
	if o.MinInputFiles == 0 {
		o.MinInputFiles = DefaultMinInputFiles
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	res.Table = tbl
	var w *compactionWork
	defer func() {
		if w != nil {
			// Not committed: the new files are no part of the table.
			err = errors.Join(err, w.removeNew())
		}
	}()
	for attempt := 1; ; {
		if w == nil {
			if w, err = planAndRewrite(ctx, res.Table, o, &res); err != nil || w == nil {
				return res, err
			}
		}
		var next *table.Table
		if o.Lock != nil {
			next, err = w.commitLocked(ctx, load, o.Lock, &res)
		} else {
			next, err = w.commit(ctx, res.Table)
		}
		if next != nil {
			res.Table = next
			w.report(next, &res)
			w = nil
			return res, err
		}
		stale := errors.Is(err, errRewriteStale)
		if !stale && !isConflict(err) {
			// The catalog may have taken the commit after all: the new
			// files stay (an orphan file cleanup removes them if not).
			w = nil
			return res, fmt.Errorf("commit: %w", err)
		}
		if !stale {
			ok := true // under the lock, commitLocked checks the table again
			if o.Lock == nil {
				// A short random wait: writers committing in step keep
				// colliding.
				if err := ctxsleep.Sleep(ctx, time.Duration(2+mrand.IntN(10*min(res.Recommits+1, 10)))*time.Millisecond); err != nil {
					return res, err
				}
				if res.Table, err = load(ctx); err != nil {
					return res, err
				}
				if ok, err = w.stillApplies(ctx, res.Table); err != nil {
					return res, err
				}
			}
			if ok && res.Recommits < compactRecommits {
				res.Recommits++
				progress(fmt.Sprintf("a concurrent commit changed the table, not the files rewritten: committing again (%d of %d)", res.Recommits, compactRecommits))
				continue
			}
		}
		if attempt == compactAttempts {
			return res, fmt.Errorf("%w after %d rewrites and %d commits again, each beaten by a concurrent commit: %w", ErrCompactionBeaten, attempt, res.Recommits, err)
		}
		attempt++
		if err := ctxsleep.Sleep(ctx, time.Duration(attempt-1)*100*time.Millisecond); err != nil {
			return res, err
		}
		progress(fmt.Sprintf("a concurrent commit changed the files rewritten: deleting the new files, rewriting again (attempt %d of %d)", attempt, compactAttempts))
		res.Rewrites++
		err = w.removeNew()
		w = nil
		if err != nil {
			return res, fmt.Errorf("deleting the files written for the compaction: %w", err)
		}
		if res.Table, err = load(ctx); err != nil {
			return res, err
		}
	}
}

// errRewriteStale: the files a rewrite replaces changed since it was
// planned.
var errRewriteStale = errors.New("the files rewritten changed")

// compactionWork is a compaction written but not committed: the planned
// snapshot's small files and the files that replace them.
type compactionWork struct {
	fs     iceio.IO
	snap   *table.Snapshot
	groups []table.CompactionGroupResult
	// deletes lists, for each rewritten file, the position delete files
	// and deletion vectors that applied to it when it was read; eqDeletes
	// the equality delete files.
	deletes   map[string][]string
	eqDeletes map[string][]string
	schemaID  int
	specID    int
}

// planAndRewrite plans the compaction of tbl's current snapshot and
// writes the new files; nil when there is nothing to compact.
func planAndRewrite(ctx context.Context, tbl *table.Table, o CompactOptions, res *CompactResult) (*compactionWork, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Nothing = "the table has no snapshot"
		return nil, nil
	}
	cfg := compaction.DefaultConfig()
	target := o.TargetFileSize
	if target == 0 {
		target = tbl.Properties().GetInt64(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)
	}
	cfg.TargetFileSizeBytes = target
	cfg.MinFileSizeBytes = target * 3 / 4
	cfg.MaxFileSizeBytes = max(target*9/5, target+1)
	cfg.MinInputFiles = uint(o.MinInputFiles)

	tasks, err := planWholeFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	w := &compactionWork{snap: snap, deletes: map[string][]string{}, eqDeletes: map[string][]string{},
		schemaID: tbl.Schema().ID, specID: tbl.Metadata().DefaultPartitionSpec()}
	res.SnapshotRead, res.FilesBefore, res.BytesBefore = snap.SnapshotID, len(tasks), 0
	for _, task := range tasks {
		res.BytesBefore += task.File.FileSizeBytes()
	}
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return nil, err
	}
	if len(plan.Groups) == 0 {
		res.Nothing = fmt.Sprintf("%s (%s) in snapshot %d; no partition has %d or more files under %s",
			plural(len(tasks), "data file"), plural(res.BytesBefore, "byte"), snap.SnapshotID, o.MinInputFiles, plural(cfg.MinFileSizeBytes, "byte"))
		return nil, nil
	}
	if w.fs, err = tbl.FS(ctx); err != nil {
		return nil, err
	}
	for _, g := range plan.Groups {
		for _, task := range g.Tasks {
			w.deletes[task.File.FilePath()] = DeleteFilePaths(task)
			w.eqDeletes[task.File.FilePath()] = FilePaths(task.EqualityDeleteFiles)
		}
		r, err := table.ExecuteCompactionGroup(ctx, tbl,
			table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes},
			table.WithCompactionTargetFileSize(target))
		w.groups = append(w.groups, r)
		if err != nil {
			return nil, errors.Join(err, w.removeNew())
		}
	}
	return w, nil
}

// plural is "1 file", "2 files".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// planWholeFiles plans a scan of tbl's current snapshot, one task per
// data file.
func planWholeFiles(ctx context.Context, tbl *table.Table) ([]table.FileScanTask, error) {
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan the scan: %w", err)
	}
	return WholeFileTasks(tasks), nil
}

// DeleteFilePaths lists the position delete files and deletion vectors
// that apply to a scan task's file, sorted.
func DeleteFilePaths(task table.FileScanTask) []string {
	return FilePaths(append(slices.Clip(task.DeleteFiles), task.DeletionVectorFiles...))
}

// FilePaths lists the files' paths, sorted.
func FilePaths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, df := range files {
		out[i] = df.FilePath()
	}
	slices.Sort(out)
	return out
}

// commitLocked commits the rewrite under lock, on the table reloaded
// under it, when the rewrite still applies to it; a conflict error when
// it does not.
func (w *compactionWork) commitLocked(ctx context.Context, load func(context.Context) (*table.Table, error), lock sync.Locker, res *CompactResult) (*table.Table, error) {
	lock.Lock()
	defer lock.Unlock()
	tbl, err := load(ctx)
	if err != nil {
		return nil, err
	}
	res.Table = tbl
	ok, err := w.stillApplies(ctx, tbl)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errRewriteStale
	}
	return w.commit(ctx, tbl)
}

// commit commits the rewrite on tbl in one replace snapshot.
//
// The new files keep the data sequence number of the snapshot the
// compaction read (as Iceberg Java's rewrite does by default,
// 'use-starting-sequence-number'): the equality deletes it applied do not
// apply to them again, and the ones a job commits after it planned still
// do. Equality delete files no data file needs once the rewritten ones
// are gone (by the snapshot read: later data files have higher sequence
// numbers than any of its deletes) are removed in the same snapshot.
func (w *compactionWork) commit(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	// A position delete file can apply to files of several groups, or to
	// files no group rewrites: remove only those that apply to rewritten
	// files alone (iceberg-go's per-group lists do not know the others).
	rewritten := map[string]struct{}{}
	for _, g := range w.groups {
		for _, df := range g.OldDataFiles {
			rewritten[df.FilePath()] = struct{}{}
		}
	}
	dead, err := table.CollectDeadPositionDeletes(ctx, w.fs, tbl.CurrentSnapshot(), rewritten)
	if err != nil {
		return nil, err
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, w.fs, tbl.Metadata(), w.snap, rewritten)
	if err != nil {
		return nil, err
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(nil).DataSequenceNumber(w.snap.SequenceNumber)
	for _, g := range w.groups {
		g.SafePosDeletes = nil
		rw.ApplyResult(g)
	}
	if len(dead) > 0 {
		rw.ApplyResult(table.CompactionGroupResult{SafePosDeletes: dead})
	}
	for _, df := range deadEq {
		rw.DeleteFile(df)
	}
	if err := rw.Commit(ctx); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// stillApplies reports whether the rewrite can be committed on tbl as it
// is: same schema and partition spec, and every rewritten file still in
// the table with the same position deletes applying to it and the
// equality deletes that applied still there. Otherwise the new files
// could miss rows' deletion (a position delete of a rewritten file added
// meanwhile) or replace files no longer there. Equality deletes added
// meanwhile (a job's upserts) are no conflict: they apply to the new
// files too, which keep the read snapshot's sequence number.
func (w *compactionWork) stillApplies(ctx context.Context, tbl *table.Table) (bool, error) {
	if tbl.Schema().ID != w.schemaID || tbl.Metadata().DefaultPartitionSpec() != w.specID || tbl.CurrentSnapshot() == nil {
		return false, nil
	}
	tasks, err := planWholeFiles(ctx, tbl)
	if err != nil {
		return false, err
	}
	now := make(map[string][]string, len(tasks))
	nowEq := make(map[string][]string, len(tasks))
	for _, task := range tasks {
		now[task.File.FilePath()] = DeleteFilePaths(task)
		nowEq[task.File.FilePath()] = FilePaths(task.EqualityDeleteFiles)
	}
	for path, deletes := range w.deletes {
		cur, ok := now[path]
		if !ok || !slices.Equal(cur, deletes) {
			return false, nil
		}
		for _, eq := range w.eqDeletes[path] {
			if _, found := slices.BinarySearch(nowEq[path], eq); !found {
				return false, nil
			}
		}
	}
	return true, nil
}

// removeNew deletes the files the rewrite wrote.
func (w *compactionWork) removeNew() error {
	var errs []error
	for _, g := range w.groups {
		for _, df := range g.NewDataFiles {
			if err := w.fs.Remove(df.FilePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting the files written for the compaction: %w", errors.Join(errs...))
	}
	return nil
}

// report fills res with the files before and after the committed
// rewrite.
func (w *compactionWork) report(next *table.Table, res *CompactResult) {
	res.Committed = true
	res.Groups = len(w.groups)
	for _, g := range w.groups {
		res.FilesAdded += len(g.NewDataFiles)
		res.FilesRemoved += len(g.OldDataFiles)
		res.BytesRemoved += g.BytesBefore
		res.BytesAdded += g.BytesAfter
	}
	res.FilesAfter = -1
	if s := next.CurrentSnapshot(); s != nil {
		res.SnapshotAfter = s.SnapshotID
		if s.Summary != nil {
			res.DeleteFilesRemoved, _ = strconv.Atoi(s.Summary.Properties["removed-delete-files"])
			if n, err := strconv.Atoi(s.Summary.Properties["total-data-files"]); err == nil {
				res.FilesAfter = n
			}
		}
	}
}

// WholeFileTasks merges the byte-range tasks iceberg-go's planner splits
// a large file into back into one task per file: compaction rewrites and
// removes whole files, and one file in two tasks of a group would be
// removed twice.
func WholeFileTasks(tasks []table.FileScanTask) []table.FileScanTask {
	out := tasks[:0:0]
	index := map[string]int{}
	for _, t := range tasks {
		path := t.File.FilePath()
		if i, ok := index[path]; ok {
			out[i].Start, out[i].Length = 0, t.File.FileSizeBytes()
			continue
		}
		index[path] = len(out)
		out = append(out, t)
	}
	return out
}
