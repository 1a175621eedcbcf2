package parquet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/fsx"
)

// ownersDir holds, per job, the owner of the job's output in the table:
// _weir/owners/<job>.json (see arrowflow.OwnedSink).
const ownersDir = "owners"

func (l layout) ownerFile(job string) string {
	return filepath.Join(l.root, weirDir, ownersDir, escapeJob(job)+".json")
}

var _ arrowflow.OwnedSink = (*Sink)(nil)

// Owner implements arrowflow.OwnedSink: the owner recorded in
// _weir/owners/<job>.json, zero when the table has none (written by an
// older weir, or new).
func (s *Sink) Owner(_ context.Context, job string) (arrowflow.Owner, error) {
	o, err := s.readOwner(job)
	if err != nil {
		return arrowflow.Owner{}, s.errorf("job %q: %w", job, err)
	}
	return o, nil
}

func (s *Sink) readOwner(job string) (arrowflow.Owner, error) {
	var o arrowflow.Owner
	path := s.layout.ownerFile(job)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(data, &o); err != nil || o.ID == "" {
		return o, fmt.Errorf("%s is damaged (%v): it names the checkpoint folder that owns the output; put it back, or take the output over with --take-over-output", path, err)
	}
	return o, nil
}

// Claim implements arrowflow.OwnedSink: it replaces _weir/owners/<job>.json
// atomically, and from then on this sink commits only while the file names
// owner.
func (s *Sink) Claim(_ context.Context, job string, owner arrowflow.Owner) error {
	data, err := json.MarshalIndent(owner, "", "  ")
	if err != nil {
		return err
	}
	path := s.layout.ownerFile(job)
	if err := s.dirs.mkdirAll(s.layout.root, filepath.Dir(path)); err != nil {
		return s.errorf("job %q: claim the output: %w", job, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".owner-*.tmp")
	if err != nil {
		return s.errorf("job %q: claim the output: %w", job, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return s.errorf("job %q: claim the output: %w", job, err)
	}
	if err := fsx.SyncDir(filepath.Dir(path)); err != nil {
		return s.errorf("job %q: claim the output: %w", job, err)
	}
	s.mu.Lock()
	if s.claimed == nil {
		s.claimed = map[string]string{}
	}
	s.claimed[job] = owner.ID
	s.mu.Unlock()
	return nil
}

// checkOwner fails with arrowflow.ErrFenced unless job's output is owned
// by the owner this sink claimed it as (or by nobody, when it claimed
// nothing).
func (s *Sink) checkOwner(job string) (string, error) {
	s.mu.Lock()
	mine := s.claimed[job]
	s.mu.Unlock()
	o, err := s.readOwner(job)
	if err != nil {
		return "", err
	}
	if err := arrowflow.CheckOwner(fmt.Sprintf("job %q's output", job), o, mine); err != nil {
		return "", err
	}
	return mine, nil
}
