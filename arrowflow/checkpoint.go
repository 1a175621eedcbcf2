package arrowflow

import (
	"context"

	"github.com/weirflow/weir/state"
)

// Checkpoint is the consistent state of a job at the end of an epoch:
// where every source split stands, a handle to every operator subtask's
// state snapshot, and every sink subtask's pre-commit payload. Recording a
// Checkpoint (see EpochRecorder) is an epoch's commit point; restoring one
// (Options.Restore) resumes the job exactly after that epoch.
type Checkpoint struct {
	// Job is the job's name.
	Job string `json:"job"`
	// Epoch is the epoch the checkpoint closes.
	Epoch uint64 `json:"epoch"`
	// Savepoint is set when the checkpoint was requested as a savepoint.
	Savepoint bool `json:"savepoint,omitempty"`
	// Final is set on the last epoch of a bounded job: every source was
	// exhausted and every operator finished.
	Final bool `json:"final,omitempty"`
	// Shape is the job graph's Shape (see Graph.Shape), and Fingerprint
	// its hash; recovery refuses a checkpoint of another shape unless told
	// otherwise. Both are empty in checkpoints of older versions.
	Shape       []string `json:"shape,omitempty"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	// Owner is the ID of the checkpoint folder that recorded the
	// checkpoint, and Lineage the ID of the folder it descends from
	// through savepoints (see Owner); empty in checkpoints of older
	// versions.
	Owner   string `json:"owner,omitempty"`
	Lineage string `json:"lineage,omitempty"`
	// MaxParallelism is the job's number of key groups.
	MaxParallelism int `json:"max_parallelism"`
	// Sources holds, per source name, the position of every split.
	Sources map[string][]SplitState `json:"sources"`
	// Operators holds, per operator name, each subtask's state.
	Operators map[string]*OperatorCheckpoint `json:"operators"`
	// Sinks holds, per sink name, each subtask's pre-commit payload.
	Sinks map[string]*SinkCheckpoint `json:"sinks"`
}

// OperatorCheckpoint is the state of every subtask of one operator.
type OperatorCheckpoint struct {
	// Subtasks is indexed by subtask; its length is the operator's
	// parallelism when the checkpoint was taken.
	Subtasks []SubtaskCheckpoint `json:"subtasks"`
}

// SubtaskCheckpoint is one operator subtask's part of a checkpoint.
type SubtaskCheckpoint struct {
	// State is the snapshot's handle; zero when the subtask had no state.
	State state.Handle `json:"state"`
	// Finished is set when the subtask had already finished (all its
	// inputs ended and Finish ran): a restored subtask does not finish
	// twice.
	Finished bool `json:"finished,omitempty"`
}

// SinkCheckpoint holds the pre-commit payloads of one sink's subtasks for
// the checkpoint's epoch.
type SinkCheckpoint struct {
	// Payloads is indexed by subtask; nil where a subtask had nothing to
	// commit in this epoch.
	Payloads [][]byte `json:"payloads"`
}

// EpochRecorder makes a completed epoch's checkpoint durable. Recording is
// the epoch's commit point: sinks commit the epoch only after
// RecordEpoch returned nil, and a job restored later resumes from the last
// recorded checkpoint.
type EpochRecorder interface {
	RecordEpoch(ctx context.Context, cp *Checkpoint) error
}

// EpochRecorderFunc adapts a function to EpochRecorder.
type EpochRecorderFunc func(ctx context.Context, cp *Checkpoint) error

// RecordEpoch calls f.
func (f EpochRecorderFunc) RecordEpoch(ctx context.Context, cp *Checkpoint) error { return f(ctx, cp) }
