package iceberg

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/failpoint"
)

// Snapshot summary properties of weir's commits, and the table property
// prefix holding each job's last committed epoch.
const (
	// SummaryJobID names the job that committed a snapshot.
	SummaryJobID = "weir.job-id"
	// SummaryEpoch is the epoch a snapshot commits.
	SummaryEpoch = "weir.epoch"
	// SummaryCommitID is unique per commit attempt: after an ambiguous
	// catalog error, weir looks for it to learn whether the commit landed.
	SummaryCommitID = "weir.commit-id"
	// SummarySourcePositions holds, as JSON, the positions of every
	// source split the epoch ends at: {"source": {"split": "position"}}
	// (Kafka: the next offset per partition).
	SummarySourcePositions = "weir.source-positions"
	// LastEpochPropertyPrefix + job is a table property set in the same
	// commit as the snapshot: the job's last committed epoch, which
	// snapshot expiry cannot remove.
	LastEpochPropertyPrefix = "weir.last-epoch."
)

// DefaultTargetFileSize is the default size at which data files roll.
const DefaultTargetFileSize = 128 << 20

// Options configure the Iceberg sink. Names in parentheses are the Flink
// Iceberg connector's.
type Options struct {
	// Catalog holds the table.
	Catalog CatalogOptions
	// Table is "namespace.table" ('catalog-database' and 'catalog-table').
	Table string
	// PartitionBy is the partition spec of a table the sink creates:
	// "col" (identity), "year(col)", "month(col)", "day(col)",
	// "hour(col)", "bucket(N, col)", "truncate(W, col)". An existing
	// table keeps its spec.
	PartitionBy []string
	// Properties are table properties of a table the sink creates, over
	// weir's defaults ('format-version' = '2',
	// 'write.parquet.compression-codec' = 'zstd',
	// 'commit.manifest-merge.enabled' = 'true'). An existing table keeps
	// its own, except that in upsert mode 'format-version' = '2' upgrades
	// a version 1 table (which is refused otherwise).
	Properties map[string]string
	// SchemaEvolution lets the sink add stream columns an existing table
	// lacks, as optional columns ('write.schema-evolution.enabled').
	SchemaEvolution bool
	// TargetFileSize rolls data files at about this many bytes
	// ('write.target-file-size-bytes'); DefaultTargetFileSize when 0.
	TargetFileSize int64
	// UpsertKeys turns on upsert mode ('write.upsert.enabled' with the
	// table's PRIMARY KEY): each row replaces the table's row with the
	// same values in these columns, through equality deletes; a
	// changelog's row kinds apply (see upsert.go: retractions delete). The
	// input must be keyed by them (each key's rows reach one subtask), the
	// key columns must be non-nullable, a partitioned table must be
	// partitioned by key columns only (as Flink requires), and the table
	// must be format version 2 or later. An epoch's changes are folded
	// per key until its pre-commit.
	UpsertKeys []string
	// CommitRetries bounds the commits retried after conflicts with other
	// writers (beyond iceberg-go's own retries), with exponential backoff
	// up to 2 s; default 30.
	CommitRetries int
	// Logger receives commit retries and cleanup; slog.Default() when nil.
	Logger *slog.Logger
	// Rewrite runs compaction of the table in the background after the
	// sink's commits (off by default; see RewriteOptions).
	Rewrite RewriteOptions
}

// Sink writes a stream into an Iceberg table exactly once: each subtask
// writes its epoch's rows as Parquet data files, pre-commit lists them in
// a manifest file next to the table's metadata, and the epoch's commit
// appends all subtasks' files in one snapshot. It implements
// arrowflow.RecoverableSink.
type Sink struct {
	opts   Options
	cat    catalog.Catalog
	ident  table.Identifier
	schema *arrow.Schema // the stream's
	logger *slog.Logger

	mu        sync.Mutex
	tbl       *table.Table      // as loaded at New or after the sink's last commit
	positions map[uint64]string // epoch -> SummarySourcePositions, until committed
	claimed   map[string]string // job -> owner ID claimed (OwnedSink)

	// commitMu is held by each commit, and by the maintenance's
	// compaction around its own.
	commitMu sync.Mutex
	maint    maintenance
}

// New opens the catalog and the table, creating it from schema (the
// stream's) when missing, or checking and (when allowed) evolving an
// existing table's schema.
func New(ctx context.Context, o Options, schema *arrow.Schema) (*Sink, error) {
	ident, err := ParseIdentifier(o.Table)
	if err != nil {
		return nil, err
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.CommitRetries <= 0 {
		o.CommitRetries = 30
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	cat, err := OpenCatalog(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(ctx, cat, ident, schema, o)
	if err != nil {
		closeCatalog(cat)
		return nil, err
	}
	s := &Sink{opts: o, cat: cat, ident: ident, schema: schema, tbl: tbl, logger: logger.With("sink", "iceberg", "table", o.Table)}
	s.maint.ctx, s.maint.cancel = context.WithCancel(context.Background())
	s.maint.last = time.Now()
	return s, nil
}

// Close stops a running compaction (its new files are deleted) and
// releases the catalog.
func (s *Sink) Close() error {
	s.stopMaintenance()
	closeCatalog(s.cat)
	return nil
}

func closeCatalog(cat catalog.Catalog) {
	if c, ok := cat.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// Table returns the table as the sink last saw it.
func (s *Sink) Table() *table.Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tbl
}

func (s *Sink) errorf(format string, args ...any) error {
	return fmt.Errorf("iceberg sink %s: "+format, append([]any{s.opts.Table}, args...)...)
}

// payload is one subtask's pre-committed epoch: a manifest file listing
// its data files.
type payload struct {
	Job      string `json:"job"`
	Manifest string `json:"manifest"`
	Length   int64  `json:"length"`
	SpecID   int32  `json:"spec"`
	Version  int    `json:"version"`
	Files    int    `json:"files"`
	Rows     int64  `json:"rows"`
	// Deletes is the manifest of the epoch's equality delete files
	// (upsert mode).
	Deletes *payload `json:"deletes,omitempty"`
}

// Commit implements arrowflow.Sink: it appends every subtask's data files
// of the epoch in one snapshot whose summary names the job, the epoch and
// a fresh commit id, and sets the job's last-epoch table property in the
// same commit. An epoch the job committed already (in the snapshot
// ancestry or the property) is skipped. Conflicts with other writers are
// retried on a refreshed table; after an ambiguous catalog error the table
// is reloaded and searched for the commit id.
func (s *Sink) Commit(ctx context.Context, epoch uint64, payloads [][]byte) error {
	ps, err := decodePayloads(payloads)
	if err != nil || len(ps) == 0 {
		return err
	}
	job := ps[0].Job
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	tbl, err := s.cat.LoadTable(ctx, s.ident)
	if err != nil {
		return s.errorf("load table: %w", err)
	}
	if last := lastCommitted(tbl, job); last >= epoch {
		s.setTable(tbl)
		return nil // committed before (a recovery commits the restored epoch again)
	}
	owner, err := s.checkOwner(tbl, job)
	if err != nil {
		return s.errorf("commit epoch %d: %w", epoch, err)
	}
	files, deletes, err := s.readManifests(ctx, tbl, ps)
	if err != nil {
		return err
	}
	commitID := newCommitID()
	props := iceberg.Properties{SummaryJobID: job, SummaryEpoch: strconv.FormatUint(epoch, 10), SummaryCommitID: commitID}
	if owner != "" {
		props[SummaryOwner] = owner
	}
	if pos := s.takePositions(epoch); pos != "" {
		props[SummarySourcePositions] = pos
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		tx := tbl.NewTransaction()
		err := tx.SetProperties(iceberg.Properties{LastEpochPropertyPrefix + job: strconv.FormatUint(epoch, 10)})
		if err == nil && len(files) == 0 && len(deletes) == 0 {
			// nothing to add (every subtask's epoch was empty)
		} else if err == nil && len(deletes) == 0 {
			err = tx.AddDataFiles(ctx, files, props)
		} else if err == nil {
			err = tx.NewRowDelta(props).AddRows(files...).AddDeletes(deletes...).Commit(ctx)
		}
		var committed *table.Table
		if err == nil {
			committed, err = tx.Commit(ctx)
		}
		if err == nil {
			failpoint.Inject(failpoint.MidCommit) // the catalog has the snapshot, the job does not know yet
			s.setTable(committed)
			s.logger.Debug("epoch committed", "job", job, "epoch", epoch, "files", len(files), "attempts", attempt+1, "took", time.Since(start))
			s.deleteManifests(ctx, committed, ps)
			s.committed(len(files))
			return nil
		}
		// The commit may or may not have landed: look.
		again, lerr := s.cat.LoadTable(ctx, s.ident)
		if lerr != nil {
			return s.errorf("commit epoch %d: %w; and reloading the table to learn whether it landed failed: %v", epoch, err, lerr)
		}
		if hasCommit(again, commitID) || lastCommitted(again, job) >= epoch {
			s.setTable(again)
			s.deleteManifests(ctx, again, ps)
			return nil
		}
		if _, ferr := s.checkOwner(again, job); ferr != nil {
			return s.errorf("commit epoch %d: %w", epoch, ferr)
		}
		if !isConflict(err) {
			// Ambiguous (the catalog may still apply it) or a real
			// failure: never retried blindly. Recovery commits the
			// epoch again after checking the table.
			return s.errorf("commit epoch %d (commit id %s): %w", epoch, commitID, err)
		}
		if attempt+1 >= s.opts.CommitRetries {
			return s.errorf("commit epoch %d: conflicts with other writers persisted over %d attempts: %w", epoch, attempt+1, err)
		}
		s.logger.Info("commit conflict with another writer; retrying on the refreshed table", "epoch", epoch, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return s.errorf("commit epoch %d: %w", epoch, ctx.Err())
		case <-time.After(backoff(attempt)):
		}
		// Retry on the table as it is after the wait: the table loaded
		// before it is stale by then whenever the other writer commits
		// more often than the wait is long, and every retry would lose.
		tbl = again
		if fresh, err := s.cat.LoadTable(ctx, s.ident); err == nil {
			if hasCommit(fresh, commitID) || lastCommitted(fresh, job) >= epoch {
				s.setTable(fresh)
				s.deleteManifests(ctx, fresh, ps)
				return nil
			}
			tbl = fresh
		}
	}
}

// backoff is the wait before commit retry attempt+1: exponential from
// 10 ms to 2 s, with full jitter so that competing writers spread out.
func backoff(attempt int) time.Duration {
	d := min(10*time.Millisecond<<min(attempt, 8), 2*time.Second)
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

func decodePayloads(payloads [][]byte) ([]payload, error) {
	var ps []payload
	for sub, raw := range payloads {
		if raw == nil {
			continue
		}
		var p payload
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("iceberg sink: subtask %d: bad pre-commit payload: %w", sub, err)
		}
		if len(ps) > 0 && p.Job != ps[0].Job {
			return nil, fmt.Errorf("iceberg sink: payloads of jobs %q and %q in one epoch", ps[0].Job, p.Job)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// lastCommitted is the highest epoch job committed to tbl: the larger of
// its last-epoch property and the weir.epoch of its snapshots in the
// current snapshot's ancestry.
func lastCommitted(tbl *table.Table, job string) uint64 {
	last, _ := strconv.ParseUint(tbl.Properties()[LastEpochPropertyPrefix+job], 10, 64)
	for snap := range ancestry(tbl) {
		if snap.Summary == nil || snap.Summary.Properties[SummaryJobID] != job {
			continue
		}
		if e, err := strconv.ParseUint(snap.Summary.Properties[SummaryEpoch], 10, 64); err == nil && e > last {
			last = e
		}
	}
	return last
}

// hasCommit reports whether a snapshot in tbl's current ancestry carries
// commitID.
func hasCommit(tbl *table.Table, commitID string) bool {
	for snap := range ancestry(tbl) {
		if snap.Summary != nil && snap.Summary.Properties[SummaryCommitID] == commitID {
			return true
		}
	}
	return false
}

// ancestry yields the current snapshot and its ancestors still in the
// metadata (expired ones end the walk).
func ancestry(tbl *table.Table) func(yield func(*table.Snapshot) bool) {
	return func(yield func(*table.Snapshot) bool) {
		md := tbl.Metadata()
		seen := map[int64]bool{}
		for snap := md.CurrentSnapshot(); snap != nil && !seen[snap.SnapshotID]; {
			if !yield(snap) {
				return
			}
			seen[snap.SnapshotID] = true
			if snap.ParentSnapshotID == nil {
				return
			}
			snap = md.SnapshotByID(*snap.ParentSnapshotID)
		}
	}
}

func newCommitID() string {
	return uuid.NewString()
}

// LastCommittedEpoch implements arrowflow.RecoverableSink.
func (s *Sink) LastCommittedEpoch(ctx context.Context, job string) (uint64, error) {
	tbl, err := s.cat.LoadTable(ctx, s.ident)
	if err != nil {
		return 0, s.errorf("load table: %w", err)
	}
	s.setTable(tbl)
	return lastCommitted(tbl, job), nil
}

// Abort implements arrowflow.Sink: it deletes the epoch's data files and
// manifests.
func (s *Sink) Abort(ctx context.Context, epoch uint64, payloads [][]byte) error {
	ps, err := decodePayloads(payloads)
	if err != nil || len(ps) == 0 {
		return err
	}
	tbl := s.Table()
	files, deletes, err := s.readManifests(ctx, tbl, ps)
	if err != nil {
		return err
	}
	var paths []string
	for _, f := range append(files, deletes...) {
		paths = append(paths, f.FilePath())
	}
	for _, p := range ps {
		if p.Manifest != "" {
			paths = append(paths, p.Manifest)
		}
		if p.Deletes != nil {
			paths = append(paths, p.Deletes.Manifest)
		}
	}
	return s.deleteFiles(ctx, tbl, paths)
}

// Recover implements arrowflow.RecoverableSink: with no writer of job
// running, it deletes the job's pre-commit manifests and the data files
// its writers left of epochs after the last one committed to the table
// (files are named after job, epoch and subtask).
func (s *Sink) Recover(ctx context.Context, job string, committed uint64) error {
	tbl, err := s.cat.LoadTable(ctx, s.ident)
	if err != nil {
		return s.errorf("load table: %w", err)
	}
	s.setTable(tbl)
	last := max(committed, lastCommitted(tbl, job))
	hash := jobHash(job)
	var garbage []string
	err = walkFiles(ctx, tbl, func(path string) {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if h, epoch, ok := parseManifestName(name); ok && h == hash {
			garbage = append(garbage, path) // every manifest of the job is spent or never committed
			_ = epoch
			return
		}
		if id, ok := uuidInDataFileName(name); ok {
			if h, epoch, _, ok := parseWriteUUID(id); ok && h == hash && epoch > last {
				garbage = append(garbage, path)
			}
		}
	})
	if err != nil {
		return s.errorf("recover: list the table's files: %w", err)
	}
	if len(garbage) > 0 {
		s.logger.Info("deleting files of epochs never committed", "job", job, "last committed", last, "files", len(garbage))
	}
	return s.deleteFiles(ctx, tbl, garbage)
}

// jobHash is the 48 bits of a job's name that weir's file names carry.
func jobHash(job string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(job))
	return h.Sum64() >> 16
}

// writeUUID names the data files of (job, epoch, subtask): a version-8
// UUID holding 48 bits of the job's hash, 12 bits of subtask, and 62 bits
// of epoch, so that recovery can tell a job's uncommitted files by name.
func writeUUID(job string, epoch uint64, subtask int) uuid.UUID {
	var u uuid.UUID
	h := jobHash(job)
	binary.BigEndian.PutUint16(u[0:2], uint16(h>>32))
	binary.BigEndian.PutUint32(u[2:6], uint32(h))
	u[6] = 0x80 | byte(subtask>>8)&0x0f
	u[7] = byte(subtask)
	binary.BigEndian.PutUint64(u[8:16], epoch&(1<<62-1))
	u[8] |= 0x80 // RFC 9562 variant
	return u
}

func parseWriteUUID(u uuid.UUID) (hash, epoch uint64, subtask int, ok bool) {
	if u[6]>>4 != 8 || u[8]>>6 != 2 {
		return 0, 0, 0, false
	}
	hash = uint64(binary.BigEndian.Uint16(u[0:2]))<<32 | uint64(binary.BigEndian.Uint32(u[2:6]))
	subtask = int(u[6]&0x0f)<<8 | int(u[7])
	epoch = binary.BigEndian.Uint64(u[8:16]) & (1<<62 - 1)
	return hash, epoch, subtask, true
}

// uuidInDataFileName finds the write UUID in an iceberg-go data file name
// ("{partition}-{task}-{uuid}-{count}.parquet").
func uuidInDataFileName(name string) (uuid.UUID, bool) {
	if !strings.HasSuffix(name, ".parquet") {
		return uuid.UUID{}, false
	}
	parts := strings.Split(strings.TrimSuffix(name, ".parquet"), "-")
	if len(parts) < 7 {
		return uuid.UUID{}, false
	}
	id, err := uuid.Parse(strings.Join(parts[2:7], "-"))
	return id, err == nil
}

// manifestName is the pre-commit manifest of (job, epoch, subtask).
func manifestName(job string, epoch uint64, subtask int) string {
	return fmt.Sprintf("weir-%012x-%d-%d-%s.avro", jobHash(job), epoch, subtask, uuid.NewString()[:8])
}

func parseManifestName(name string) (hash, epoch uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "weir-")
	if !ok || !strings.HasSuffix(rest, ".avro") {
		return 0, 0, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, ".avro"), "-")
	if len(parts) != 4 {
		return 0, 0, false
	}
	h, err1 := strconv.ParseUint(parts[0], 16, 64)
	e, err2 := strconv.ParseUint(parts[1], 10, 64)
	return h, e, err1 == nil && err2 == nil
}

var (
	_ arrowflow.RecoverableSink  = (*Sink)(nil)
	_ arrowflow.PositionRecorder = (*Sink)(nil)
)

// isConflict reports whether a commit failed because the table changed
// under it (another writer committed first): it did not apply and may be
// retried on the refreshed table. iceberg-go's SQL catalog reports a
// failed requirement without wrapping table.ErrCommitFailed.
func isConflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed: ")
}

// EpochPositions implements arrowflow.PositionRecorder: the positions go
// into the epoch's snapshot summary.
func (s *Sink) EpochPositions(epoch uint64, sources map[string][]arrowflow.SplitState) {
	m := map[string]map[string]string{}
	for src, splits := range sources {
		m[src] = map[string]string{}
		for _, sp := range splits {
			pos := string(sp.Position)
			if !utf8.Valid(sp.Position) {
				pos = "base64:" + base64.StdEncoding.EncodeToString(sp.Position)
			}
			m[src][sp.Split] = pos
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.positions == nil {
		s.positions = map[uint64]string{}
	}
	s.positions[epoch] = string(data)
}

func (s *Sink) takePositions(epoch uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.positions[epoch]
	for e := range s.positions {
		if e <= epoch {
			delete(s.positions, e)
		}
	}
	return p
}

func (s *Sink) setTable(t *table.Table) {
	s.mu.Lock()
	s.tbl = t
	s.mu.Unlock()
}
