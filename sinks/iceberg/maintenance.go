package iceberg

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// RewriteOptions configure the compaction the sink runs by itself, in the
// background, after its commits: Flink's Iceberg sink maintenance
// ('flink-maintenance.rewrite.*'). A run starts after the commit that
// reaches any of the schedule's thresholds since the last run (counted
// from the sink's start), unless one is running; it compacts as Compact
// does, and its commit holds the lock of the sink's own commits, so the
// two never conflict (other writers' commits are retried as Compact
// retries them). A failed run is logged and counted
// (Sink.Maintenance), and the next threshold tries again: the job goes
// on.
type RewriteOptions struct {
	// Enabled turns the compaction on ('flink-maintenance.rewrite.enabled').
	Enabled bool
	// CommitCount: a run after this many commits of the sink
	// ('schedule.commit-count'; 0: not a trigger).
	CommitCount int
	// DataFileCount: a run after the sink's commits added this many data
	// files ('schedule.data-file-count'; 0: not a trigger).
	DataFileCount int
	// Interval: a run after the first commit this long after the last
	// run ('schedule.interval-second'; 0: not a trigger).
	Interval time.Duration
	// TargetFileSize and MinInputFiles are Compact's
	// ('target-file-size-bytes', 'min-input-files').
	TargetFileSize int64
	MinInputFiles  int
}

// Flink's defaults of RewriteOptions' schedule.
const (
	DefaultRewriteCommitCount   = 10
	DefaultRewriteDataFileCount = 1000
	DefaultRewriteInterval      = 600 * time.Second
)

// MaintenanceStats counts the sink's compaction runs.
type MaintenanceStats struct {
	// Runs is how many runs started, Compacted how many committed a
	// rewrite, Nothing how many found nothing to compact, Failed how many
	// failed (LastError is the last failure). Running: a run is on.
	Runs, Compacted, Nothing, Failed int64
	Running                          bool
	// FilesRemoved and DeleteFilesRemoved sum the runs' rewritten data
	// files and removed delete files.
	FilesRemoved, DeleteFilesRemoved int64
	LastError                        string
}

// maintenance is the sink's compaction schedule and its running run.
type maintenance struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	commits int
	files   int
	last    time.Time
	running bool
	stats   MaintenanceStats
}

// Maintenance returns the counts of the sink's compaction runs.
func (s *Sink) Maintenance() MaintenanceStats {
	s.maint.mu.Lock()
	defer s.maint.mu.Unlock()
	st := s.maint.stats
	st.Running = s.maint.running
	return st
}

// committed counts a commit that added files data files, and starts a
// compaction run when the schedule says so.
func (s *Sink) committed(files int) {
	r := s.opts.Rewrite
	if !r.Enabled {
		return
	}
	m := &s.maint
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	m.files += files
	due := (r.CommitCount > 0 && m.commits >= r.CommitCount) ||
		(r.DataFileCount > 0 && m.files >= r.DataFileCount) ||
		(r.Interval > 0 && time.Since(m.last) >= r.Interval)
	if !due || m.running || m.ctx.Err() != nil {
		return
	}
	m.commits, m.files, m.last, m.running = 0, 0, time.Now(), true
	m.stats.Runs++
	m.wg.Add(1)
	go s.compact()
}

// compact is one compaction run.
func (s *Sink) compact() {
	m := &s.maint
	defer m.wg.Done()
	start := time.Now()
	load := func(ctx context.Context) (*table.Table, error) { return s.cat.LoadTable(ctx, s.ident) }
	tbl, err := load(m.ctx)
	var res CompactResult
	if err == nil {
		res, err = Compact(m.ctx, tbl, load, CompactOptions{
			TargetFileSize: s.opts.Rewrite.TargetFileSize, MinInputFiles: s.opts.Rewrite.MinInputFiles, Lock: &s.commitMu,
		})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = false
	switch {
	case err != nil && errors.Is(err, context.Canceled) && m.ctx.Err() != nil:
		// The sink closed during the run: its new files are deleted.
	case err != nil:
		m.stats.Failed++
		m.stats.LastError = err.Error()
		s.logger.Warn("compaction failed; the next scheduled run tries again", "err", err, "took", time.Since(start))
	case res.Committed:
		m.stats.Compacted++
		m.stats.FilesRemoved += int64(res.FilesRemoved)
		m.stats.DeleteFilesRemoved += int64(res.DeleteFilesRemoved)
		s.logger.Info("compacted", "files", res.FilesRemoved, "into", res.FilesAdded, "delete-files-removed", res.DeleteFilesRemoved,
			"snapshot", res.SnapshotAfter, "took", time.Since(start))
	default:
		m.stats.Nothing++
		s.logger.Debug("nothing to compact", "why", res.Nothing)
	}
}

// stopMaintenance cancels a running compaction and waits for it.
func (s *Sink) stopMaintenance() {
	s.maint.cancel()
	s.maint.wg.Wait()
}
