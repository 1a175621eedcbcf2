package state

import (
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
