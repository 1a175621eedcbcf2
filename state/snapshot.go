package state

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SnapshotID names one operator subtask's snapshot for one epoch.
type SnapshotID struct {
	Job      string // job name
	Epoch    uint64 // epoch the snapshot closes
	Operator string // operator name, unique in the job
	Subtask  int    // subtask index, from 0
}

// String formats the id as "job/epoch/operator/subtask".
func (id SnapshotID) String() string {
	return fmt.Sprintf("%s/%d/%s/%d", id.Job, id.Epoch, id.Operator, id.Subtask)
}

// Handle describes a finished snapshot. It is small and serialisable: a
// checkpoint manifest stores handles, never state itself.
type Handle struct {
	// ID locates the snapshot in its Store.
	ID string `json:"id"`
	// Bytes is the snapshot's size as stored.
	Bytes int64 `json:"bytes"`
	// KeyGroups is the key-group range of the subtask that wrote it.
	KeyGroups KeyGroupRange `json:"key_groups"`
}

// IsZero reports whether h refers to no snapshot (the operator wrote no
// state).
func (h Handle) IsZero() bool { return h.ID == "" }

// SnapshotWriter receives one operator subtask's state for one epoch as
// named tables of Arrow record batches. All batches of one table share a
// schema. The writer does not take ownership of the batches it is given.
type SnapshotWriter interface {
	// Write appends rec to the named table.
	Write(table string, rec arrow.RecordBatch) error
	// Finish makes the snapshot durable (as the store defines it) and
	// returns its handle. A snapshot with no tables returns a zero Handle.
	Finish() (Handle, error)
	// Abort discards a snapshot that will not be finished.
	Abort()
}

// SnapshotReader reads back a finished snapshot.
type SnapshotReader interface {
	// Tables lists the snapshot's tables in the order they were first
	// written.
	Tables() []string
	// Read calls fn with each batch of the named table in write order. The
	// batch is released when fn returns; fn must Retain it to keep it.
	Read(table string, fn func(rec arrow.RecordBatch) error) error
	// Close releases the reader's resources.
	Close() error
}

// Store creates and opens snapshots. Implementations must be safe for
// concurrent use by all subtasks of a job.
type Store interface {
	// Create starts a snapshot for id.
	Create(id SnapshotID, keyGroups KeyGroupRange) (SnapshotWriter, error)
	// Open reads a finished snapshot, allocating from mem.
	Open(h Handle, mem memory.Allocator) (SnapshotReader, error)
}

// KeyGroupColumn names the column by which a snapshot table declares the key
// group of each of its rows. Its type must be uint16 (so key groups, and a
// job's max parallelism, are limited to 65536; Flink's limit is 32768), it
// has no nulls, and every value lies in the writing subtask's KeyGroupRange.
//
// A store may use the column to lay a table out by key group, so that a
// subtask restored with another parallelism reads only the rows of its own
// key groups (see KeyGroupOpener); FileStore sorts such a table by key group
// (stably: rows of one key group keep their write order). Tables without the
// column are stored as written and every reader gets all of their rows.
const KeyGroupColumn = "_key_group"

// KeyGroupOpener is implemented by a Store that can read part of a snapshot:
// only the rows whose key group lies in a range. FileStore reads just the
// parts of the file that hold those key groups.
type KeyGroupOpener interface {
	// OpenKeyGroups reads a finished snapshot like Store.Open, except that
	// tables with a KeyGroupColumn yield only the rows whose key group is in
	// r. Tables without the column yield all their rows.
	OpenKeyGroups(h Handle, r KeyGroupRange, mem memory.Allocator) (SnapshotReader, error)
}

// OpenKeyGroups opens the rows of h whose key group is in r: through
// store's KeyGroupOpener if it has one, otherwise by opening all of h and
// filtering the rows of tables with a KeyGroupColumn. A subtask restored
// with another parallelism opens, with its own range, every old snapshot
// whose KeyGroups overlap it.
func OpenKeyGroups(store Store, h Handle, r KeyGroupRange, mem memory.Allocator) (SnapshotReader, error) {
	if o, ok := store.(KeyGroupOpener); ok {
		return o.OpenKeyGroups(h, r, mem)
	}
	rd, err := store.Open(h, mem)
	if err != nil {
		return nil, err
	}
	return filterKeyGroups(rd, r, mem), nil
}

// OpenKeyGroups implements KeyGroupOpener by filtering the rows of Open.
func (s *MemoryStore) OpenKeyGroups(h Handle, r KeyGroupRange, mem memory.Allocator) (SnapshotReader, error) {
	rd, err := s.Open(h, mem)
	if err != nil {
		return nil, err
	}
	return filterKeyGroups(rd, r, mem), nil
}

// ErrCorruptSnapshot is wrapped by the errors a store returns for a snapshot
// whose stored bytes fail a check (checksum, magic, length, structure). Its
// text ends such errors: "...: the file is corrupt". Recovery can test for
// it with errors.Is and fall back to an older checkpoint.
var ErrCorruptSnapshot = errors.New("the file is corrupt")
