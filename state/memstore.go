package state

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MemoryStore keeps snapshots in process memory, serialised as Arrow IPC
// streams (so restoring exercises the same encode/decode path a file store
// does, and stored state holds no allocator memory). It is the default store
// of jobs without a checkpoint folder and is lost when the process exits.
type MemoryStore struct {
	mu        sync.Mutex
	snapshots map[string]*memSnapshot
}

type memSnapshot struct {
	order  []string
	tables map[string][]byte // table -> IPC stream
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{snapshots: make(map[string]*memSnapshot)}
}

// Create implements Store.
func (s *MemoryStore) Create(id SnapshotID, keyGroups KeyGroupRange) (SnapshotWriter, error) {
	return &memWriter{store: s, id: id, keyGroups: keyGroups, tables: make(map[string]*memTable)}, nil
}

// Open implements Store.
func (s *MemoryStore) Open(h Handle, mem memory.Allocator) (SnapshotReader, error) {
	s.mu.Lock()
	snap, ok := s.snapshots[h.ID]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("memory state store: no snapshot %q", h.ID)
	}
	return &memReader{snap: snap, mem: mem}, nil
}

// Len is the number of snapshots held.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.snapshots)
}

type memTable struct {
	buf bytes.Buffer
	w   *ipc.Writer
}

type memWriter struct {
	store     *MemoryStore
	id        SnapshotID
	keyGroups KeyGroupRange
	order     []string
	tables    map[string]*memTable
	done      bool
}

func (w *memWriter) Write(table string, rec arrow.RecordBatch) error {
	if w.done {
		return errors.New("memory state store: write after Finish or Abort")
	}
	t, ok := w.tables[table]
	if !ok {
		t = &memTable{}
		t.w = ipc.NewWriter(&t.buf, ipc.WithSchema(rec.Schema()))
		w.tables[table] = t
		w.order = append(w.order, table)
	}
	if err := t.w.Write(rec); err != nil {
		return fmt.Errorf("memory state store: snapshot %s table %q: %w", w.id, table, err)
	}
	return nil
}

func (w *memWriter) Finish() (Handle, error) {
	if w.done {
		return Handle{}, errors.New("memory state store: Finish called twice")
	}
	w.done = true
	if len(w.order) == 0 {
		return Handle{}, nil
	}
	snap := &memSnapshot{order: w.order, tables: make(map[string][]byte, len(w.order))}
	var size int64
	for _, name := range w.order {
		t := w.tables[name]
		if err := t.w.Close(); err != nil {
			return Handle{}, fmt.Errorf("memory state store: snapshot %s table %q: %w", w.id, name, err)
		}
		snap.tables[name] = t.buf.Bytes()
		size += int64(t.buf.Len())
	}
	h := Handle{ID: w.id.String(), Bytes: size, KeyGroups: w.keyGroups}
	w.store.mu.Lock()
	w.store.snapshots[h.ID] = snap
	w.store.mu.Unlock()
	return h, nil
}

func (w *memWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	for _, t := range w.tables {
		_ = t.w.Close()
	}
}

type memReader struct {
	snap *memSnapshot
	mem  memory.Allocator
}

func (r *memReader) Tables() []string { return append([]string(nil), r.snap.order...) }

func (r *memReader) Read(table string, fn func(rec arrow.RecordBatch) error) error {
	data, ok := r.snap.tables[table]
	if !ok {
		return fmt.Errorf("memory state store: snapshot has no table %q", table)
	}
	rd, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(r.mem))
	if err != nil {
		return fmt.Errorf("memory state store: table %q: %w", table, err)
	}
	defer rd.Release()
	for rd.Next() {
		if err := fn(rd.RecordBatch()); err != nil {
			return err
		}
	}
	return rd.Err()
}

func (r *memReader) Close() error { return nil }
