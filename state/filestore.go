package state

import (
	"errors"
	"fmt"
	"github.com/weirflow/weir/internal/fsx"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FileStore keeps snapshots as files in a local folder, in the snapshot
// file format (see snapfile.go): one file per operator subtask and epoch,
//
//	<dir>/<job>/<epoch>/<operator>-<subtask>.snap
//
// where job and operator are escaped to safe file names (bytes other than
// ASCII letters, digits, '-', '_' and '.' become %XX, as does a leading
// '.'; an empty name becomes "%"). A Handle's ID is that path relative to
// dir, with forward slashes.
//
// A snapshot is written to a temporary file next to its final name; Finish
// syncs it and links it into place, so a final file is complete once it
// exists and is never overwritten: finishing a snapshot whose file already
// exists fails (another instance of the job is writing the same epoch). A
// crash leaves at most temporary files (<name>.snap.tmp-*), which no reader
// looks at. Folders are created on the first Write of their first snapshot,
// and synced into their parents.
//
// A FileStore is safe for concurrent use by all subtasks of a job.
// Deleting old snapshots is not its job yet.
type FileStore struct {
	dir          string
	mem          memory.Allocator
	minBlockRows int
	maxBlockRows int

	mu      sync.Mutex
	durable map[string]bool // folders this store created or found, and synced
}

var (
	_ Store          = (*FileStore)(nil)
	_ KeyGroupOpener = (*FileStore)(nil)
	_ KeyGroupOpener = (*MemoryStore)(nil)
)

// FileStoreOption configures a FileStore.
type FileStoreOption interface{ apply(*FileStore) }

type fileStoreOption func(*FileStore)

func (o fileStoreOption) apply(s *FileStore) { o(s) }

// WithWriteAllocator sets the allocator snapshot writers use while sorting
// keyed tables by key group and compressing blocks (by default
// memory.DefaultAllocator). Keyed tables are held in it until Finish.
func WithWriteAllocator(mem memory.Allocator) FileStoreOption {
	return fileStoreOption(func(s *FileStore) { s.mem = mem })
}

// NewFileStore returns a store over the folder dir, creating it if needed.
func NewFileStore(dir string, opts ...FileStoreOption) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("file state store: empty folder name")
	}
	s := &FileStore{
		dir:          filepath.Clean(dir),
		mem:          memory.DefaultAllocator,
		minBlockRows: defaultMinBlockRows,
		maxBlockRows: defaultMaxBlockRows,
		durable:      make(map[string]bool),
	}
	for _, o := range opts {
		o.apply(s)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("file state store: %w", err)
	}
	st, err := os.Stat(s.dir)
	if err != nil {
		return nil, fmt.Errorf("file state store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("file state store: %s is not a folder", s.dir)
	}
	return s, nil
}

// Create implements Store. Nothing touches the disk until the first Write:
// a subtask without state leaves no file, and Finish returns a zero Handle.
func (s *FileStore) Create(id SnapshotID, keyGroups KeyGroupRange) (SnapshotWriter, error) {
	if keyGroups.Start < 0 || keyGroups.End < keyGroups.Start || keyGroups.End > maxKeyGroups {
		return nil, fmt.Errorf("file state store: snapshot %s: invalid key groups %s (at most %d)", id, keyGroups, maxKeyGroups)
	}
	if id.Subtask < 0 {
		return nil, fmt.Errorf("file state store: snapshot %s: negative subtask", id)
	}
	rel := snapshotPath(id)
	return &fileWriter{store: s, id: id, keyGroups: keyGroups, rel: rel, final: filepath.Join(s.dir, filepath.FromSlash(rel))}, nil
}

// Open implements Store.
func (s *FileStore) Open(h Handle, mem memory.Allocator) (SnapshotReader, error) {
	return s.open(h, mem)
}

// OpenKeyGroups implements KeyGroupOpener: keyed tables yield only the rows
// of key groups r, and only the blocks holding them are read.
func (s *FileStore) OpenKeyGroups(h Handle, r KeyGroupRange, mem memory.Allocator) (SnapshotReader, error) {
	rd, err := s.open(h, mem)
	if err != nil {
		return nil, err
	}
	return rd.withKeyGroups(r), nil
}

func (s *FileStore) open(h Handle, mem memory.Allocator) (*snapReader, error) {
	if h.IsZero() {
		return nil, errors.New("file state store: cannot open a zero Handle (the subtask had no state)")
	}
	rel := filepath.FromSlash(h.ID)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("file state store: handle %q is not a path inside the store", h.ID)
	}
	path := filepath.Join(s.dir, rel)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("file state store: open snapshot: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("file state store: %w", err)
	}
	if h.Bytes != 0 && st.Size() != h.Bytes {
		f.Close()
		return nil, corrupt(path, "the file has %d bytes, its handle says %d: truncated or replaced", st.Size(), h.Bytes)
	}
	rd, err := openSnapFile(f, st.Size(), path, mem)
	if err != nil {
		f.Close()
		return nil, err
	}
	if rd.footer.keyGroups != h.KeyGroups {
		f.Close()
		return nil, fmt.Errorf("snapshot %s: the file holds key groups %s, its handle says %s: the handle is not this file's", path, rd.footer.keyGroups, h.KeyGroups)
	}
	rd.closer = f
	return rd, nil
}

// snapshotPath is the file of id relative to the store's folder, with
// forward slashes.
func snapshotPath(id SnapshotID) string {
	return escapeName(id.Job) + "/" + strconv.FormatUint(id.Epoch, 10) + "/" +
		escapeName(id.Operator) + "-" + strconv.Itoa(id.Subtask) + ".snap"
}

// escapeName maps a name to a file name, one to one: ASCII letters, digits,
// '-', '_' and '.' stay, except a leading '.'; other bytes become %XX; the
// empty name becomes "%", which no other name maps to.
func escapeName(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		safe := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' && i > 0
		if safe {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ensureFolder creates folder (inside the store's) and every missing
// parent, and syncs each one's entry into its parent, so that a snapshot
// linked into it survives a crash. It remembers folders already made
// durable.
func (s *FileStore) ensureFolder(folder string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.durable[folder] {
		return nil
	}
	rel, err := filepath.Rel(s.dir, folder)
	if err != nil {
		return err
	}
	path := s.dir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		parent := path
		path = filepath.Join(path, part)
		if s.durable[path] {
			continue
		}
		if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Sync also when the folder existed: whoever created it may not
		// have synced it yet.
		if err := fsx.SyncDir(parent); err != nil {
			return err
		}
		s.durable[path] = true
	}
	if len(s.durable) > 4096 {
		// One entry per epoch: forget old epochs now and then (syncing a
		// folder again is harmless).
		clear(s.durable)
	}
	return nil
}

// fileWriter writes one snapshot of a FileStore.
type fileWriter struct {
	store     *FileStore
	id        SnapshotID
	keyGroups KeyGroupRange
	rel       string // Handle.ID
	final     string // the file's final path

	f    *os.File // the temporary file, from the first Write on
	sw   *snapWriter
	done bool
}

func (w *fileWriter) errorf(format string, args ...any) error {
	return fmt.Errorf("file state store: snapshot %s: "+format, append([]any{w.id}, args...)...)
}

func (w *fileWriter) errExists() error {
	return w.errorf("%s already exists: a snapshot is written once (is another instance of the job running?)", w.final)
}

// Write implements SnapshotWriter.
func (w *fileWriter) Write(table string, rec arrow.RecordBatch) error {
	if w.done {
		return w.errorf("write after Finish or Abort")
	}
	if w.f == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	return w.sw.write(table, rec)
}

// start creates the temporary file.
func (w *fileWriter) start() error {
	if _, err := os.Lstat(w.final); err == nil {
		return w.errExists()
	}
	folder := filepath.Dir(w.final)
	if err := w.store.ensureFolder(folder); err != nil {
		return w.errorf("create folder: %w", err)
	}
	f, err := os.CreateTemp(folder, filepath.Base(w.final)+".tmp-*")
	if err != nil {
		return w.errorf("%w", err)
	}
	w.f = f
	w.sw = newSnapWriter(f, w.id, w.keyGroups, w.store.mem, w.store.minBlockRows, w.store.maxBlockRows)
	return nil
}

// Finish implements SnapshotWriter: it completes the file, syncs it, links
// it into place and syncs its folder.
func (w *fileWriter) Finish() (Handle, error) {
	if w.done {
		return Handle{}, w.errorf("Finish after Finish or Abort")
	}
	w.done = true
	if w.f == nil {
		return Handle{}, nil
	}
	if w.sw.empty() {
		w.sw.release()
		w.discard()
		return Handle{}, nil
	}
	size, err := w.sw.finish()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.publish()
	}
	if err != nil {
		_ = os.Remove(w.f.Name())
		return Handle{}, err
	}
	return Handle{ID: w.rel, Bytes: size, KeyGroups: w.keyGroups}, nil
}

// publish gives the finished temporary file its final name, never
// replacing an existing file, and syncs the folder.
func (w *fileWriter) publish() error {
	tmp := w.f.Name()
	err := os.Link(tmp, w.final)
	switch {
	case err == nil:
		_ = os.Remove(tmp) // a leftover temporary file is only litter
	case errors.Is(err, fs.ErrExist):
		return w.errExists()
	default:
		// No hard links on this file system: rename after checking the
		// name is free. Two writers of one snapshot could both pass the
		// check; only two instances of a job do that, and the checkpoint
		// manifest, created once, fences the second.
		if _, serr := os.Lstat(w.final); serr == nil {
			return w.errExists()
		}
		if err := os.Rename(tmp, w.final); err != nil {
			return w.errorf("%w", err)
		}
	}
	if err := fsx.SyncDir(filepath.Dir(w.final)); err != nil {
		return w.errorf("sync folder: %w", err)
	}
	return nil
}

// Abort implements SnapshotWriter: it removes the temporary file.
func (w *fileWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.f == nil {
		return
	}
	w.sw.release()
	w.discard()
}

func (w *fileWriter) discard() {
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}
