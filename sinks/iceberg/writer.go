package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
)

// Open implements arrowflow.Sink.
func (s *Sink) Open(info *arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	if info.Job == "" {
		return nil, s.errorf("the job has no name (commits are recorded per job)")
	}
	mem := info.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	w := &writer{s: s, info: info, mem: mem, epoch: max(info.FirstEpoch, 1)}
	if len(s.opts.UpsertKeys) > 0 {
		w.upsert = newUpsertBuffer()
	}
	return w, nil
}

// writer is one subtask's writer. An epoch's batches stream into
// iceberg-go's WriteRecords (partitioning and rolling files at the target
// size) on a goroutine; pre-commit ends the stream and lists the data
// files in a manifest.
type writer struct {
	s      *Sink
	info   *arrowflow.TaskInfo
	mem    memory.Allocator
	epoch  uint64 // the open epoch
	cur    *epochWrite
	upsert *upsertBuffer // upsert mode: the epoch's rows until pre-commit
}

// epochWrite is one epoch's stream of batches into data files.
type epochWrite struct {
	tbl    *table.Table
	schema *arrow.Schema // the batches', with field ids
	in     chan arrow.RecordBatch
	cancel context.CancelFunc
	done   chan struct{}
	files  []iceberg.DataFile
	err    error
	rows   int64
	closed sync.Once
}

func (w *writer) start(ctx context.Context, sc *arrow.Schema) error {
	tbl := w.s.Table()
	withIDs, err := withFieldIDs(sc, tbl.Schema())
	if err != nil {
		return w.s.errorf("%w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ew := &epochWrite{tbl: tbl, schema: withIDs, in: make(chan arrow.RecordBatch, 4), cancel: cancel, done: make(chan struct{})}
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for rec := range ew.in {
			if !yield(rec, nil) {
				rec.Release()
				for rest := range ew.in {
					rest.Release()
				}
				return
			}
		}
	}
	opts := []table.WriteRecordOption{
		table.WithTargetFileSize(w.s.opts.TargetFileSize),
		table.WithWriteUUID(writeUUID(w.info.Job, w.epoch, w.info.Subtask)),
		table.WithMaxWriteWorkers(1),
	}
	go func() {
		defer close(ew.done)
		for df, err := range table.WriteRecords(ctx, tbl, withIDs, records, opts...) {
			if err != nil {
				ew.err = err
				for rest := range ew.in { // unblock Write until the stream ends
					rest.Release()
				}
				return
			}
			ew.files = append(ew.files, df)
		}
	}()
	w.cur = ew
	return nil
}

// Write implements arrowflow.SinkWriter.
func (w *writer) Write(ctx context.Context, b arrowflow.Batch) error {
	if b.NumRows() == 0 {
		b.Release()
		return nil
	}
	if w.upsert == nil && !b.AppendOnly() {
		for k := range b.NumRows() {
			if kind := b.Kind(k); kind.IsRetraction() {
				b.Release()
				return w.s.errorf("epoch %d: a %s row (an update or delete) reached a table that is not in upsert mode, which can only append; set 'write.upsert.enabled' = 'true' with a PRIMARY KEY (Options.UpsertKeys)", w.epoch, kind)
			}
		}
	}
	kinds := arrowflow.GatherKinds(nil, b)
	rec, err := b.Materialize(w.mem)
	b.Release()
	if err != nil {
		return err
	}
	if w.upsert != nil {
		if err := w.upsert.add(w.mem, rec, kinds, w.s.opts.UpsertKeys); err != nil {
			return w.s.errorf("epoch %d: %w", w.epoch, err)
		}
		return nil
	}
	if w.cur == nil {
		if err := w.start(ctx, rec.Schema()); err != nil {
			rec.Release()
			return err
		}
	}
	return w.send(ctx, rec)
}

// send passes rec (its reference) to the epoch's data file stream.
func (w *writer) send(ctx context.Context, rec arrow.RecordBatch) error {
	ew := w.cur
	withIDs := array.NewRecordBatch(ew.schema, rec.Columns(), rec.NumRows())
	ew.rows += rec.NumRows()
	rec.Release()
	select {
	case ew.in <- withIDs:
		return nil
	case <-ew.done:
		withIDs.Release()
		return w.s.errorf("write data files of epoch %d: %w", w.epoch, ew.err)
	case <-ctx.Done():
		withIDs.Release()
		return ctx.Err()
	}
}

// finish ends the epoch's stream and waits for its files.
func (ew *epochWrite) finish() ([]iceberg.DataFile, error) {
	ew.closed.Do(func() { close(ew.in) })
	<-ew.done
	ew.cancel()
	return ew.files, ew.err
}

// PreCommit implements arrowflow.SinkWriter: the epoch's data files are
// complete and listed in a manifest file in the table's metadata folder;
// the payload names it.
func (w *writer) PreCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	if w.epoch != 0 && epoch != w.epoch {
		return nil, w.s.errorf("BUG: pre-commit of epoch %d while epoch %d is open", epoch, w.epoch)
	}
	var deletes []iceberg.DataFile
	if w.upsert != nil {
		var err error
		if deletes, err = w.upsertFiles(ctx, w.mem); err != nil {
			return nil, w.s.errorf("upsert files of epoch %d: %w", epoch, err)
		}
	}
	w.epoch = epoch + 1
	ew := w.cur
	var files []iceberg.DataFile
	tbl := w.s.Table()
	rows := int64(0)
	if ew != nil {
		w.cur = nil
		var err error
		if files, err = ew.finish(); err != nil {
			return nil, w.s.errorf("write data files of epoch %d: %w", epoch, err)
		}
		tbl, rows = ew.tbl, ew.rows
	}
	if len(files) == 0 && len(deletes) == 0 {
		return nil, nil
	}
	// A delete-only epoch has a payload without a data manifest.
	p := payload{Job: w.info.Job}
	if len(files) > 0 {
		var err error
		if p, err = writeManifest(ctx, tbl, w.info.Job, epoch, w.info.Subtask, files, iceberg.ManifestContentData); err != nil {
			return nil, w.s.errorf("epoch %d: %w", epoch, err)
		}
	}
	if len(deletes) > 0 {
		d, err := writeManifest(ctx, tbl, w.info.Job, epoch, w.info.Subtask, deletes, iceberg.ManifestContentDeletes)
		if err != nil {
			return nil, w.s.errorf("epoch %d: %w", epoch, err)
		}
		p.Deletes = &d
	}
	p.Rows = rows
	return json.Marshal(p)
}

// Close implements arrowflow.SinkWriter: an open epoch's files are
// deleted.
func (w *writer) Close() error {
	if w.upsert != nil {
		w.upsert.release()
	}
	ew := w.cur
	if ew == nil {
		return nil
	}
	w.cur = nil
	ew.cancel()
	files, _ := ew.finish()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.FilePath()
	}
	return w.s.deleteFiles(context.Background(), ew.tbl, paths)
}

// manifestSnapshotID is the snapshot id recorded in pre-commit manifests;
// the commit adds their data files to a new snapshot of its own.
const manifestSnapshotID = 1

// writeManifest lists files (data files, or delete files with content
// ManifestContentDeletes) in a new manifest file next to the table's
// metadata.
func writeManifest(ctx context.Context, tbl *table.Table, job string, epoch uint64, subtask int, files []iceberg.DataFile, content iceberg.ManifestContent) (payload, error) {
	md := tbl.Metadata()
	loc, err := tbl.LocationProvider()
	if err != nil {
		return payload{}, err
	}
	path := loc.NewMetadataLocation(manifestName(job, epoch, subtask))
	snap := int64(manifestSnapshotID)
	spec := md.PartitionSpec()
	if s := md.PartitionSpecByID(int(files[0].SpecID())); s != nil {
		spec = *s
	}
	var buf bytes.Buffer
	mw, err := iceberg.NewManifestWriter(md.Version(), &buf, spec, tbl.Schema(), snap, iceberg.WithManifestWriterContent(content))
	if err != nil {
		return payload{}, fmt.Errorf("write manifest %s: %w", path, err)
	}
	for _, f := range files {
		if err := mw.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snap, nil, nil, f)); err != nil {
			return payload{}, fmt.Errorf("write manifest %s: %w", path, err)
		}
	}
	if err := mw.Close(); err != nil {
		return payload{}, fmt.Errorf("write manifest %s: %w", path, err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return payload{}, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return payload{}, errors.New("the table's file IO cannot write")
	}
	if err := wfs.WriteFile(path, buf.Bytes()); err != nil {
		return payload{}, fmt.Errorf("write manifest %s: %w", path, err)
	}
	return payload{Job: job, Manifest: path, Length: int64(buf.Len()), SpecID: int32(spec.ID()), Version: md.Version(), Files: len(files)}, nil
}

// readManifests reads the data files and the delete files the payloads'
// manifests list.
func (s *Sink) readManifests(ctx context.Context, tbl *table.Table, ps []payload) (data, deletes []iceberg.DataFile, err error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, s.errorf("file IO: %w", err)
	}
	for _, p := range ps {
		if p.Manifest != "" {
			files, err := s.readManifest(fsys, p, iceberg.ManifestContentData)
			if err != nil {
				return nil, nil, err
			}
			data = append(data, files...)
		}
		if p.Deletes != nil {
			files, err := s.readManifest(fsys, *p.Deletes, iceberg.ManifestContentDeletes)
			if err != nil {
				return nil, nil, err
			}
			deletes = append(deletes, files...)
		}
	}
	return data, deletes, nil
}

func (s *Sink) readManifest(fsys icebergio.IO, p payload, content iceberg.ManifestContent) ([]iceberg.DataFile, error) {
	f, err := fsys.Open(p.Manifest)
	if err != nil {
		return nil, s.errorf("pre-commit manifest %s is gone (deleted by a recovery or by hand?): %w", p.Manifest, err)
	}
	defer f.Close()
	mf := iceberg.NewManifestFile(p.Version, p.Manifest, p.Length, p.SpecID, manifestSnapshotID).Content(content).Build()
	entries, err := iceberg.ReadManifest(mf, f, true)
	if err != nil {
		return nil, s.errorf("read pre-commit manifest %s: %w", p.Manifest, err)
	}
	if len(entries) != p.Files {
		return nil, s.errorf("pre-commit manifest %s lists %d files, the checkpoint says %d", p.Manifest, len(entries), p.Files)
	}
	files := make([]iceberg.DataFile, len(entries))
	for i, e := range entries {
		files[i] = e.DataFile()
	}
	return files, nil
}

// deleteManifests removes the spent pre-commit manifests of a committed
// epoch (best effort: Recover removes leftovers).
func (s *Sink) deleteManifests(ctx context.Context, tbl *table.Table, ps []payload) {
	var paths []string
	for _, p := range ps {
		if p.Manifest != "" {
			paths = append(paths, p.Manifest)
		}
		if p.Deletes != nil {
			paths = append(paths, p.Deletes.Manifest)
		}
	}
	if err := s.deleteFiles(ctx, tbl, paths); err != nil {
		s.logger.Warn("could not delete spent pre-commit manifests", "err", err)
	}
}

func (s *Sink) deleteFiles(ctx context.Context, tbl *table.Table, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return s.errorf("file IO: %w", err)
	}
	if bulk, ok := fsys.(icebergio.BulkRemovableIO); ok {
		if _, err := bulk.DeleteFiles(ctx, paths); err != nil {
			return s.errorf("delete files: %w", err)
		}
		return nil
	}
	var errs []error
	for _, p := range paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return s.errorf("delete files: %w", err)
	}
	return nil
}

// walkFiles calls fn with every file under the table's data and metadata
// folders.
func walkFiles(ctx context.Context, tbl *table.Table, fn func(path string)) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return errors.New("the table's file IO cannot list files")
	}
	root := strings.TrimSuffix(tbl.Location(), "/")
	for _, dir := range []string{root + "/data", root + "/metadata"} {
		err := lister.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir
				}
				return err
			}
			if !d.IsDir() {
				fn(path)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
