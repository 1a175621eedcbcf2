// Package collect is a transactional sink that keeps committed rows in
// memory as plain Go values. Tests use it to compare a job's output with a
// reference implementation; programs embedding weir can use it to get
// results back from a bounded job.
//
// It accepts changelogs: every row keeps its arrowflow.RowKind (Changes),
// and Table materializes the committed changelog into the table it
// describes. Rows ignores the kinds.
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
	"strings"
	"sync"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// Change is one committed row with its kind.
type Change struct {
	// Kind is the row's kind (Insert for rows of append-only batches).
	Kind arrowflow.RowKind
	// Values holds one value per column, as arrowflow.ValueAt converts it.
	Values []any
}

// Sink collects committed rows. All subtasks share one Sink.
type Sink struct {
	mu        sync.Mutex
	staged    map[stageKey][]Change
	done      map[stageKey]bool
	committed []Change
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
	return &Sink{staged: make(map[stageKey][]Change), done: make(map[stageKey]bool), epochSet: make(map[uint64]bool)}
}

// Rows returns a copy of the committed rows, in commit order (subtask
// order within an epoch), whatever their kinds. Each row holds one value
// per column, as arrowflow.ValueAt converts it.
func (s *Sink) Rows() [][]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]any, len(s.committed))
	for i, c := range s.committed {
		out[i] = slices.Clone(c.Values)
	}
	return out
}

// Changes returns a copy of the committed rows with their kinds, in commit
// order (subtask order within an epoch).
func (s *Sink) Changes() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Change, len(s.committed))
	for i, c := range s.committed {
		out[i] = Change{Kind: c.Kind, Values: slices.Clone(c.Values)}
	}
	return out
}

// Table materializes the committed changelog: Insert and UpdateAfter add
// one copy of their row, UpdateBefore and Delete remove one copy of an
// equal row (every column equal; floats exactly). The rows left come back
// in the order they were added. A retraction of a row that is not in the
// table is an error naming the row and its position in Changes; Table
// then returns the rows as materialized without the failed retractions,
// together with the error.
func (s *Sink) Table() ([][]any, error) {
	changes := s.Changes()
	var (
		rows    [][]any
		live    []bool
		byKey   = make(map[string][]int) // row key -> indices of live copies, oldest first
		missing int
		first   error
	)
	for i, c := range changes {
		k := rowKey(c.Values)
		if !c.Kind.IsRetraction() {
			byKey[k] = append(byKey[k], len(rows))
			rows = append(rows, c.Values)
			live = append(live, true)
			continue
		}
		copies := byKey[k]
		if len(copies) == 0 {
			missing++
			if first == nil {
				first = fmt.Errorf("collect sink: committed change %d %s%v retracts a row that is not in the table", i, c.Kind, c.Values)
			}
			continue
		}
		live[copies[0]] = false
		if len(copies) == 1 {
			delete(byKey, k)
		} else {
			byKey[k] = copies[1:]
		}
	}
	out := make([][]any, 0, len(rows))
	for i, r := range rows {
		if live[i] {
			out = append(out, r)
		}
	}
	if first != nil && missing > 1 {
		first = fmt.Errorf("%w (and %d more such retractions)", first, missing-1)
	}
	return out, first
}

// rowKey encodes a row so that equal rows, and only those, share a key:
// each value typed and length-prefixed.
func rowKey(row []any) string {
	var sb strings.Builder
	for _, v := range row {
		var s string
		switch x := v.(type) {
		case nil:
			sb.WriteString("n;")
			continue
		case []byte:
			s = "b" + string(x)
		case time.Time:
			s = fmt.Sprintf("t%d", x.UnixNano())
		case float64:
			s = fmt.Sprintf("f%b", x) // exact: the binary exponent form
		default:
			s = fmt.Sprintf("%T:%v", v, v)
		}
		fmt.Fprintf(&sb, "%d:%s;", len(s), s)
	}
	return sb.String()
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
	rows    []Change // written since the last PreCommit, kinds with them
}

func (w *writer) Write(_ context.Context, b arrowflow.Batch) error {
	defer b.Release()
	n := b.NumRows()
	for k := 0; k < n; k++ {
		w.rows = append(w.rows, Change{Kind: b.Kind(k), Values: b.RowValues(k)})
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
