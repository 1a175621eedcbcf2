package parquet

import (
	"encoding/json"
	"fmt"
)

// formatVersion is the version of payloads and commit log entries. A
// reader refuses versions it does not know.
const formatVersion = 1

// PartitionColumn describes a partition column: its values are in the
// folder names, not in the files, so readers need its type.
type PartitionColumn struct {
	// Name is the column's name.
	Name string `json:"name"`
	// Type is the Arrow type's name: int8 to int64, uint8 to uint64,
	// bool, utf8, large_utf8, date32 or date64.
	Type string `json:"type"`
	// Nullable is the column's nullability in the written batches.
	Nullable bool `json:"nullable"`
}

// fileEntry is one data file in a payload or a commit log entry.
type fileEntry struct {
	// Staged is where PreCommit left the file (payloads only).
	Staged string `json:"staged,omitempty"`
	// Path is the committed file's place.
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// subtaskFiles is what one subtask wrote in one epoch. Paths are relative
// to the table and slash-separated.
type subtaskFiles struct {
	Subtask int `json:"subtask"`
	// Columns are the batches' columns in order, partition columns
	// included, so that a reader can put the partition columns back.
	Columns     []string          `json:"columns"`
	PartitionBy []PartitionColumn `json:"partition_by,omitempty"`
	// Format is the data files' format; empty for Parquet.
	Format string      `json:"format,omitempty"`
	Files  []fileEntry `json:"files"`
	// Partitions are the partition folders the subtask started files in
	// during the epoch, with the processing time (Unix milliseconds) of
	// the first: with Options.PartitionCommit, the partitions to commit.
	Partitions []partitionEntry `json:"partitions,omitempty"`
}

// partitionEntry is a partition written in an epoch.
type partitionEntry struct {
	Dir     string `json:"dir"`
	Created int64  `json:"created"`
}

// payload is what PreCommit returns: one subtask's staged files of one
// epoch.
type payload struct {
	Version int    `json:"version"`
	Job     string `json:"job"`
	Epoch   uint64 `json:"epoch"`
	// Staging is the subtask's staging folder of the epoch; empty when
	// the payload has no files (only a watermark, for partition commits).
	Staging string `json:"staging,omitempty"`
	// Watermark is the subtask's watermark at the pre-commit, when it
	// had one (with Options.PartitionCommit).
	Watermark *int64 `json:"watermark,omitempty"`
	subtaskFiles
}

// commitLog is the commit log entry of one epoch of one job: the files
// it made part of the table.
type commitLog struct {
	Version int    `json:"version"`
	Job     string `json:"job"`
	// Owner is the ID of the checkpoint folder whose job committed the
	// epoch (see arrowflow.Owner); empty without one, or from older
	// versions.
	Owner    string         `json:"owner,omitempty"`
	Epoch    uint64         `json:"epoch"`
	Rows     int64          `json:"rows"`
	Subtasks []subtaskFiles `json:"subtasks"`
	// Watermark is the epoch's watermark (the lowest of its subtasks'),
	// when every subtask had one (with Options.PartitionCommit).
	Watermark *int64 `json:"watermark,omitempty"`
}

// decodePayload parses and checks a payload of the given epoch.
func decodePayload(b []byte, epoch uint64) (*payload, error) {
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("malformed payload: %w", err)
	}
	if p.Version != formatVersion {
		return nil, fmt.Errorf("payload version %d, want %d", p.Version, formatVersion)
	}
	if p.Epoch != epoch {
		return nil, fmt.Errorf("payload of epoch %d given for epoch %d", p.Epoch, epoch)
	}
	if p.Job == "" {
		return nil, fmt.Errorf("payload without a job name")
	}
	if p.Staging != "" || len(p.Files) > 0 {
		if err := checkRel(p.Staging); err != nil {
			return nil, fmt.Errorf("payload staging folder: %w", err)
		}
	}
	for _, pe := range p.Partitions {
		if err := checkRel(pe.Dir); err != nil {
			return nil, fmt.Errorf("payload partition: %w", err)
		}
	}
	for _, f := range p.Files {
		if err := checkRel(f.Staged); err != nil {
			return nil, fmt.Errorf("payload staged file: %w", err)
		}
		if err := checkRel(f.Path); err != nil {
			return nil, fmt.Errorf("payload file: %w", err)
		}
	}
	return &p, nil
}

// decodeCommitLog parses and checks a commit log entry.
func decodeCommitLog(b []byte) (*commitLog, error) {
	var l commitLog
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("malformed commit log entry: %w", err)
	}
	if l.Version != formatVersion {
		return nil, fmt.Errorf("commit log entry version %d, want %d", l.Version, formatVersion)
	}
	for _, s := range l.Subtasks {
		for _, f := range s.Files {
			if err := checkRel(f.Path); err != nil {
				return nil, fmt.Errorf("commit log entry: %w", err)
			}
		}
		for _, pe := range s.Partitions {
			if err := checkRel(pe.Dir); err != nil {
				return nil, fmt.Errorf("commit log entry: %w", err)
			}
		}
	}
	return &l, nil
}
