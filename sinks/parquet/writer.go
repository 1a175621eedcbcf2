package parquet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/fsx"
	"github.com/weirflow/weir/kernels"
)

// writer is one subtask's SinkWriter. Each batch is split by partition;
// each partition of the open epoch has at most one open file, which ends
// when it reaches the target size or at the epoch's pre-commit.
//
// Files of the open epoch live in an in-progress staging folder of the
// subtask; PreCommit finishes and syncs them and renames the folder to
// name the epoch (the writer learns the epoch's number only then).
type writer struct {
	s       *Sink
	job     string
	subtask int
	mem     memory.Allocator

	// Fixed by the first batch.
	schema     *arrow.Schema // the batches' schema
	dataSchema *arrow.Schema // schema without the partition columns: the files'
	dataIdx    []int         // columns of schema in dataSchema
	keyers     []partitionKeyer
	partIdx    []int // columns of schema that are partition columns
	meta       subtaskFiles
	format     fileFormat
	ext        string // the data files' extension
	now        func() time.Time

	// Rolling on processing time, and partition commits.
	lastCheck time.Time
	wm        arrowflow.EventTime // the last watermark ProcessWatermark gave
	sawWM     bool
	created   map[string]int64 // partition folder -> first file's time (Unix ms), this epoch

	// Per-batch scratch.
	dataCols []arrow.Array
	key      []byte
	lastKey  []byte
	touched  []*partition

	// The open epoch.
	parts   map[string]*partition // by partition key
	stage   string                // in-progress staging folder; "" before the epoch's first file
	stageID string                // "<subtask>-<random>", the staging folder's suffix
	seq     int                   // next file's sequence number
	done    []*dataFile           // finished files
	closed  bool
	failed  error // a file write failed: the epoch's output is broken
}

// partition is one partition's state in the open epoch.
type partition struct {
	dir  string  // slash-separated folder below the table; "" without PartitionBy
	rows []int32 // rows of the current batch
	file *dataFile
}

// dataFile is a file of the open epoch.
type dataFile struct {
	seq   int
	dir   string // the partition's folder
	f     *os.File
	bw    *bufio.Writer
	enc   fileEncoder
	rows  int64
	bytes int64
	// opened and written are when the file was started and last written
	// to (the rolling policy's rollover and inactivity intervals).
	opened, written time.Time
}

// size estimates the file's size (see fileEncoder.size).
func (d *dataFile) size() int64 { return d.enc.size() }

// finish completes the file and makes it durable.
func (d *dataFile) finish() error {
	n, err := d.enc.close()
	if err == nil {
		err = d.bw.Flush()
	}
	if err == nil {
		err = d.f.Sync()
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	d.bytes = n
	return err
}

// discard releases the file's memory and closes it; the caller removes it.
func (d *dataFile) discard() {
	d.enc.discard()
	_ = d.f.Close()
}

func (w *writer) errorf(format string, args ...any) error {
	return fmt.Errorf("parquet sink %s: "+format, append([]any{w.s.opts.Path}, args...)...)
}

// Write implements arrowflow.SinkWriter.
func (w *writer) Write(_ context.Context, b arrowflow.Batch) error {
	defer b.Release()
	switch {
	case w.closed:
		return w.errorf("write after Close")
	case w.failed != nil:
		return w.failed
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if b.Kinds != nil {
		for k := range n {
			if kind := b.Kind(k); kind != arrowflow.Insert {
				return w.errorf("a Parquet folder is append-only, but row %d of the batch is %s (an update or a delete); "+
					"write updating results to an Iceberg upsert table, upsert-kafka or Kafka with debezium-json", k, kind)
			}
		}
	}
	if w.schema == nil {
		if err := w.bindSchema(b.Schema()); err != nil {
			return err
		}
	} else if diff := schemaDiff(w.schema, b.Schema()); diff != "" {
		return w.errorf("the batches' schema changed: %s", diff)
	}
	if err := w.rollOnTime(); err != nil {
		return err
	}
	rec := b.Record
	for i, c := range w.dataIdx {
		w.dataCols[i] = rec.Column(c)
	}
	data := array.NewRecordBatch(w.dataSchema, w.dataCols, rec.NumRows())
	defer data.Release()
	clear(w.dataCols)

	if len(w.keyers) == 0 {
		p := w.parts[""]
		if p == nil {
			p = &partition{}
			w.parts[""] = p
		}
		return w.writeRows(p, data, b.Sel)
	}

	for i, k := range w.keyers {
		k.bind(rec.Column(w.partIdx[i]))
	}
	defer func() {
		for _, p := range w.touched {
			p.rows = p.rows[:0]
		}
		w.touched = w.touched[:0]
	}()
	var last *partition // the previous row's: runs of one partition skip the map
	for k := range n {
		row := b.Row(k)
		w.key = w.key[:0]
		for _, kr := range w.keyers {
			w.key = kr.appendKey(w.key, row)
		}
		p := last
		if p == nil || !bytes.Equal(w.key, w.lastKey) {
			p = w.parts[string(w.key)]
			if p == nil {
				var err error
				if p, err = w.newPartition(row); err != nil {
					return err
				}
				w.parts[string(w.key)] = p
			}
			last = p
			w.lastKey = append(w.lastKey[:0], w.key...)
		}
		if len(p.rows) == 0 {
			w.touched = append(w.touched, p)
		}
		p.rows = append(p.rows, int32(row))
	}
	for _, p := range w.touched {
		if err := w.writeRows(p, data, p.rows); err != nil {
			return err
		}
	}
	return nil
}

// newPartition makes the partition of row's values (the keyers are bound).
// With the partition-time trigger, a partition whose time cannot be
// extracted is an error, as in Flink: it could never be committed.
func (w *writer) newPartition(row int) (*partition, error) {
	segs := make([]string, len(w.keyers))
	for i, k := range w.keyers {
		v, null := k.format(row)
		segs[i] = partitionSegment(w.meta.PartitionBy[i].Name, v, null)
	}
	dir := strings.Join(segs, "/")
	if pc := &w.s.opts.PartitionCommit; pc.enabled() && pc.Trigger == TriggerPartitionTime {
		if _, err := pc.partitionTimeOf(dir); err != nil {
			return nil, w.errorf("partition %s: %w", dir, err)
		}
	}
	return &partition{dir: dir}, nil
}

// writeRows writes the rows sel of data (all rows when sel is nil) to
// p's file, opening one if needed and finishing it when it reaches the
// target size.
func (w *writer) writeRows(p *partition, data arrow.RecordBatch, sel []int32) error {
	var rec arrow.RecordBatch
	switch {
	case sel == nil:
		data.Retain()
		rec = data
	case int(sel[len(sel)-1]-sel[0]) == len(sel)-1:
		// Consecutive rows (sel is increasing): a zero-copy slice.
		rec = data.NewSlice(int64(sel[0]), int64(sel[len(sel)-1])+1)
	default:
		var err error
		if rec, err = kernels.TakeRecord(w.mem, data, sel); err != nil {
			return w.errorf("%w", err)
		}
	}
	defer rec.Release()
	if p.file == nil {
		if err := w.openFile(p); err != nil {
			return err
		}
	}
	if err := p.file.enc.write(rec); err != nil {
		w.failed = w.errorf("write %s: %w", p.file.f.Name(), err)
		return w.failed
	}
	p.file.rows += rec.NumRows()
	if w.s.opts.InactivityInterval > 0 {
		p.file.written = w.now()
	}
	if p.file.size() >= w.s.opts.TargetFileSize {
		if err := w.finishFile(p); err != nil {
			w.failed = err
			return err
		}
	}
	return nil
}

// openFile starts a new file for p in the epoch's staging folder.
func (w *writer) openFile(p *partition) error {
	if w.stage == "" {
		parent := w.s.layout.stagingJob(w.job)
		if err := w.s.dirs.mkdirAll(w.s.layout.root, parent); err != nil {
			return w.errorf("create staging folder: %w", err)
		}
		w.stageID = fmt.Sprintf("%05d-%016x", w.subtask, rand.Uint64())
		stage := filepath.Join(parent, inProgress+w.stageID)
		if err := os.Mkdir(stage, 0o755); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return w.errorf("create staging folder: %w (the job's staging folder %s was deleted while it ran: by another job's recovery on this output?)", err, parent)
			}
			return w.errorf("create staging folder: %w", err)
		}
		w.stage = stage
	}
	path := filepath.Join(w.stage, stagedFileName(w.seq, w.ext))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return w.errorf("%w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	enc, err := w.format.open(bw)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return w.errorf("start %s: %w", path, err)
	}
	now := w.now()
	p.file = &dataFile{seq: w.seq, dir: p.dir, f: f, bw: bw, enc: enc, opened: now, written: now}
	w.seq++
	if w.s.opts.PartitionCommit.enabled() {
		if _, ok := w.created[p.dir]; !ok {
			w.created[p.dir] = now.UnixMilli()
		}
	}
	return nil
}

// stagedFileName is a file's name in its staging folder. It does not end
// in the format's extension (.parquet, .csv, .json), so that a reader
// globbing **/*.parquet without skipping "_" folders still does not pick
// up staged files.
func stagedFileName(seq int, ext string) string {
	return fmt.Sprintf("%05d%s%s", seq, ext, stagedSuffix)
}

// rollOnTime finishes the open files that were open longer than the
// rollover interval or not written for the inactivity interval, checking
// at most once per check interval (Flink's rolling policy on processing
// time).
func (w *writer) rollOnTime() error {
	o := &w.s.opts
	if o.RolloverInterval <= 0 && o.InactivityInterval <= 0 {
		return nil
	}
	now := w.now()
	if now.Sub(w.lastCheck) < o.CheckInterval {
		return nil
	}
	w.lastCheck = now
	for _, p := range w.parts {
		d := p.file
		if d == nil {
			continue
		}
		if o.RolloverInterval > 0 && now.Sub(d.opened) >= o.RolloverInterval ||
			o.InactivityInterval > 0 && now.Sub(d.written) >= o.InactivityInterval {
			if err := w.finishFile(p); err != nil {
				w.failed = err
				return err
			}
		}
	}
	return nil
}

// ProcessWatermark tells the writer the watermark its input reached.
// With the partition-time commit trigger, each pre-commit's payload
// carries it, and a partition is committed once the watermark of a
// committed epoch (the lowest of the subtasks') passes the partition's
// time plus the delay; MaxEventTime, the end of a bounded input, commits
// every partition. The runtime calls it on sink writers that have it
// (see arrowflow.WatermarkWriter).
func (w *writer) ProcessWatermark(wm arrowflow.EventTime) error {
	if !w.sawWM || wm > w.wm {
		w.wm, w.sawWM = wm, true
	}
	return nil
}

// finishFile finishes p's open file.
func (w *writer) finishFile(p *partition) error {
	d := p.file
	p.file = nil
	if err := d.finish(); err != nil {
		return w.errorf("finish %s: %w", d.f.Name(), err)
	}
	w.done = append(w.done, d)
	return nil
}

// PreCommit implements arrowflow.SinkWriter: it finishes and syncs every
// file of the epoch, renames the staging folder to name the epoch, and
// returns the payload listing the files. An epoch without rows has no
// payload (nil).
func (w *writer) PreCommit(_ context.Context, epoch uint64) ([]byte, error) {
	switch {
	case w.closed:
		return nil, w.errorf("PreCommit after Close")
	case w.failed != nil:
		return nil, w.failed
	}
	var errs []error
	for _, p := range w.parts {
		if p.file != nil {
			errs = append(errs, w.finishFile(p))
		}
	}
	clear(w.parts) // partitions of the next epoch start afresh, so the map stays bounded
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	commits := w.s.opts.PartitionCommit.enabled()
	if len(w.done) == 0 {
		if !commits {
			return nil, nil
		}
		// No files, but the watermark may commit partitions of earlier
		// epochs: a payload without files carries it.
		p := payload{Version: formatVersion, Job: w.job, Epoch: epoch, subtaskFiles: subtaskFiles{Subtask: w.subtask}}
		w.stampPayload(&p)
		out, err := json.Marshal(&p)
		if err != nil {
			return nil, w.errorf("epoch %d: %w", epoch, err)
		}
		return out, nil
	}
	slices.SortFunc(w.done, func(a, b *dataFile) int { return a.seq - b.seq }) // finished in map order
	parent := filepath.Dir(w.stage)
	stage := filepath.Join(parent, epochName(epoch)+"-"+w.stageID)
	if err := os.Rename(w.stage, stage); err != nil {
		return nil, w.errorf("epoch %d: %w", epoch, err)
	}
	w.stage = ""
	if err := fsx.SyncDir(stage); err != nil {
		return nil, w.errorf("epoch %d: sync staging folder: %w", epoch, err)
	}
	if err := fsx.SyncDir(parent); err != nil {
		return nil, w.errorf("epoch %d: sync staging folder: %w", epoch, err)
	}
	stageRel, err := w.s.layout.rel(stage)
	if err != nil {
		return nil, w.errorf("%w", err)
	}
	p := payload{Version: formatVersion, Job: w.job, Epoch: epoch, Staging: stageRel, subtaskFiles: w.meta}
	p.Files = make([]fileEntry, len(w.done))
	for i, d := range w.done {
		name := dataFileNameExt(w.job, epoch, w.subtask, d.seq, w.ext)
		if d.dir != "" {
			name = d.dir + "/" + name
		}
		p.Files[i] = fileEntry{Staged: stageRel + "/" + stagedFileName(d.seq, w.ext), Path: name, Rows: d.rows, Bytes: d.bytes}
	}
	w.done = w.done[:0]
	w.seq = 0
	if commits {
		w.stampPayload(&p)
	}
	out, err := json.Marshal(&p)
	if err != nil {
		return nil, w.errorf("epoch %d: %w", epoch, err)
	}
	return out, nil
}

// stampPayload adds what partition commits need to p: the epoch's
// partitions with their creation times, and the watermark.
func (w *writer) stampPayload(p *payload) {
	if w.sawWM {
		wm := int64(w.wm)
		p.Watermark = &wm
	}
	if len(p.PartitionBy) == 0 {
		p.PartitionBy = w.meta.PartitionBy
	}
	p.Partitions = nil
	for _, dir := range slices.Sorted(maps.Keys(w.created)) {
		if dir != "" {
			p.Partitions = append(p.Partitions, partitionEntry{Dir: dir, Created: w.created[dir]})
		}
	}
	clear(w.created)
}

// Close implements arrowflow.SinkWriter: files not pre-committed are
// deleted.
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	for _, p := range w.parts {
		if p.file != nil {
			p.file.discard()
			p.file = nil
		}
	}
	w.done = nil
	if w.stage != "" {
		if err := os.RemoveAll(w.stage); err != nil {
			return w.errorf("remove staged files: %w", err)
		}
	}
	return nil
}

// bindSchema fixes the writer's schema from the first batch. It changes
// the writer only when it succeeds.
func (w *writer) bindSchema(sc *arrow.Schema) error {
	var (
		keyers  []partitionKeyer
		partIdx []int
		meta    = subtaskFiles{Subtask: w.subtask}
		isPart  = make(map[int]bool)
	)
	for _, name := range w.s.opts.PartitionBy {
		idx := sc.FieldIndices(name)
		switch len(idx) {
		case 0:
			names := make([]string, sc.NumFields())
			for i, f := range sc.Fields() {
				names[i] = fmt.Sprintf("%q", f.Name)
			}
			return w.errorf("partition column %q is not among the batches' columns (%s)", name, strings.Join(names, ", "))
		case 1:
		default:
			return w.errorf("partition column %q: the batches have %d columns of that name", name, len(idx))
		}
		f := sc.Field(idx[0])
		k, err := newPartitionKeyer(f.Type)
		if err != nil {
			return w.errorf("partition column %q: %w", name, err)
		}
		keyers = append(keyers, k)
		partIdx = append(partIdx, idx[0])
		meta.PartitionBy = append(meta.PartitionBy, PartitionColumn{Name: name, Type: f.Type.String(), Nullable: f.Nullable})
		isPart[idx[0]] = true
	}
	if len(isPart) == sc.NumFields() {
		return w.errorf("every column is a partition column; the files would have none")
	}
	var (
		fields  []arrow.Field
		dataIdx []int
	)
	for i, f := range sc.Fields() {
		meta.Columns = append(meta.Columns, f.Name)
		if isPart[i] {
			continue
		}
		dataIdx = append(dataIdx, i)
		fields = append(fields, f)
	}
	if w.s.opts.Format != FormatParquet {
		meta.Format = w.s.opts.Format
	}
	md := sc.Metadata()
	dataSchema := arrow.NewSchema(fields, &md)
	ff, err := w.s.newFileFormat(dataSchema, w.mem)
	if err != nil {
		return w.errorf("%w", err)
	}
	w.keyers, w.partIdx, w.meta, w.dataIdx = keyers, partIdx, meta, dataIdx
	w.dataSchema = dataSchema
	w.dataCols = make([]arrow.Array, len(fields))
	w.format = ff
	w.schema = sc
	return nil
}

// schemaDiff describes how got differs from want in column names, types
// and nullability ("" when it does not); metadata is not compared.
func schemaDiff(want, got *arrow.Schema) string {
	if want == got || want.Equal(got) {
		return ""
	}
	var diffs []string
	for i, f := range want.Fields() {
		idx := got.FieldIndices(f.Name)
		if len(idx) == 0 {
			diffs = append(diffs, fmt.Sprintf("column %q is missing", f.Name))
			continue
		}
		g := got.Field(idx[0])
		switch {
		case !arrow.TypeEqual(g.Type, f.Type):
			diffs = append(diffs, fmt.Sprintf("column %q is %s, was %s", f.Name, g.Type, f.Type))
		case g.Nullable != f.Nullable:
			diffs = append(diffs, fmt.Sprintf("column %q has nullable=%v, was %v", f.Name, g.Nullable, f.Nullable))
		case idx[0] != i:
			diffs = append(diffs, fmt.Sprintf("column %q moved from position %d to %d", f.Name, i+1, idx[0]+1))
		}
	}
	for _, g := range got.Fields() {
		if len(want.FieldIndices(g.Name)) == 0 {
			diffs = append(diffs, fmt.Sprintf("column %q (%s) is new", g.Name, g.Type))
		}
	}
	if len(diffs) == 0 && got.NumFields() != want.NumFields() {
		diffs = append(diffs, fmt.Sprintf("%d columns, was %d", got.NumFields(), want.NumFields()))
	}
	return strings.Join(diffs, "; ")
}
