// Package collect is a transactional sink that keeps committed rows in
// memory as plain Go values. Tests use it to compare a job's output with a
// reference implementation; programs embedding weir can use it to get
// results back from a bounded job.
//
// Rows become visible only when their epoch commits, exactly once per
// subtask and epoch however often Commit is repeated, and rows of aborted
// epochs are dropped: it follows the same protocol as the Kafka, Iceberg
// and Parquet sinks.
package collect

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/weirflow/weir/arrowflow"
)

// Sink collects committed rows. All subtasks share one Sink.
type Sink struct {
	mu        sync.Mutex
	staged    map[stageKey][][]any
	done      map[stageKey]bool
	committed [][]any
	epochs    []uint64
	epochSet  map[uint64]bool
	aborted   int
}

type stageKey struct {
	epoch   uint64
	subtask int
}

// New returns an empty collecting sink.
func New() *Sink {
	return &Sink{staged: make(map[stageKey][][]any), done: make(map[stageKey]bool), epochSet: make(map[uint64]bool)}
}

// Rows returns a copy of the committed rows, in commit order (subtask
// order within an epoch). Each row holds one value per column, as
// arrowflow.ValueAt converts it.
func (s *Sink) Rows() [][]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]any, len(s.committed))
	for i, r := range s.committed {
		out[i] = slices.Clone(r)
	}
	return out
}

// Epochs lists the epochs committed, in order.
func (s *Sink) Epochs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.epochs...)
}

// Staged is the number of rows pre-committed but neither committed nor
// aborted.
func (s *Sink) Staged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rows := range s.staged {
		n += len(rows)
	}
	return n
}

// Aborted is the number of subtask-epochs whose output was discarded.
func (s *Sink) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// Open implements arrowflow.Sink.
func (s *Sink) Open(info *arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	return &writer{s: s, subtask: info.Subtask}, nil
}

func encodeKey(k stageKey) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, k.epoch)
	binary.BigEndian.PutUint64(b[8:], uint64(k.subtask))
	return b
}

func decodeKey(b []byte) (stageKey, error) {
	if len(b) != 16 {
		return stageKey{}, fmt.Errorf("collect sink: malformed payload of %d bytes", len(b))
	}
	return stageKey{epoch: binary.BigEndian.Uint64(b), subtask: int(binary.BigEndian.Uint64(b[8:]))}, nil
}

// Commit implements arrowflow.Sink. It is idempotent per subtask and
// epoch, and all or nothing: every payload is checked before any row
// becomes visible.
func (s *Sink) Commit(_ context.Context, epoch uint64, payloads [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []stageKey
	for _, p := range payloads {
		if p == nil {
			continue
		}
		k, err := decodeKey(p)
		if err != nil {
			return err
		}
		if k.epoch != epoch {
			return fmt.Errorf("collect sink: payload of epoch %d committed as epoch %d", k.epoch, epoch)
		}
		if s.done[k] {
			continue
		}
		if _, ok := s.staged[k]; !ok {
			return fmt.Errorf("collect sink: no staged output for epoch %d subtask %d (it lives only in the memory of the process that wrote it)", k.epoch, k.subtask+1)
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		s.committed = append(s.committed, s.staged[k]...)
		delete(s.staged, k)
		s.done[k] = true
	}
	if !s.epochSet[epoch] {
		s.epochSet[epoch] = true
		s.epochs = append(s.epochs, epoch)
	}
	return nil
}

// Abort implements arrowflow.Sink.
func (s *Sink) Abort(_ context.Context, _ uint64, payloads [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range payloads {
		if p == nil {
			continue
		}
		k, err := decodeKey(p)
		if err != nil {
			return err
		}
		if _, ok := s.staged[k]; ok {
			delete(s.staged, k)
			s.aborted++
		}
	}
	return nil
}

type writer struct {
	s       *Sink
	subtask int
	rows    [][]any
}

func (w *writer) Write(_ context.Context, b arrowflow.Batch) error {
	defer b.Release()
	n := b.NumRows()
	for k := 0; k < n; k++ {
		w.rows = append(w.rows, b.RowValues(k))
	}
	return nil
}

func (w *writer) PreCommit(_ context.Context, epoch uint64) ([]byte, error) {
	if len(w.rows) == 0 {
		return nil, nil
	}
	k := stageKey{epoch: epoch, subtask: w.subtask}
	w.s.mu.Lock()
	w.s.staged[k] = w.rows
	w.s.mu.Unlock()
	w.rows = nil
	return encodeKey(k), nil
}

func (w *writer) Close() error {
	w.rows = nil
	return nil
}
