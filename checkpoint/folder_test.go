package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeState writes a one-table snapshot for (job, epoch, op, subtask)
// through the folder's real store and returns its handle.
func writeState(t *testing.T, f *Folder, epoch uint64, op string) state.Handle {
	t.Helper()
	w, err := f.StateStore().Create(state.SnapshotID{Job: "j", Epoch: epoch, Operator: op}, state.KeyGroupRange{Start: 0, End: 128})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write("t", testRecord()); err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func checkpointOf(epoch uint64, states map[string]state.Handle) *arrowflow.Checkpoint {
	cp := &arrowflow.Checkpoint{Job: "j", Epoch: epoch, MaxParallelism: 128, Operators: map[string]*arrowflow.OperatorCheckpoint{}}
	for op, h := range states {
		cp.Operators[op] = &arrowflow.OperatorCheckpoint{Subtasks: []arrowflow.SubtaskCheckpoint{{State: h}}}
	}
	return cp
}

func TestManifestsAreNeverOverwrittenAndCorruptionFallsBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := Open(dir, Options{Retain: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for e := uint64(1); e <= 3; e++ {
		if err := f.RecordEpoch(ctx, checkpointOf(e, nil)); err != nil {
			t.Fatal(err)
		}
	}
	// A second writer of epoch 3 is fenced.
	err = f.RecordEpoch(ctx, checkpointOf(3, nil))
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("re-recording epoch 3: want a fencing error, got %v", err)
	}
	cp, skipped, err := f.Latest(ctx)
	if err != nil || cp.Epoch != 3 || len(skipped) != 0 {
		t.Fatalf("latest: %+v %v %v", cp, skipped, err)
	}
	// Flip one byte of the newest manifest's checkpoint: it is reported
	// and the previous one is used.
	path := filepath.Join(dir, manifestName(3))
	data, _ := os.ReadFile(path)
	i := strings.Index(string(data), `"epoch":3`)
	data[i+len(`"epoch":`)] = '7'
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cp, skipped, err = f.Latest(ctx)
	if err != nil || cp.Epoch != 2 || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorruptManifest) || !strings.Contains(skipped[0].Error(), "checksum") {
		t.Fatalf("after corruption: %+v %v %v", cp, skipped, err)
	}
	// Truncated JSON is reported too.
	if err := os.WriteFile(filepath.Join(dir, manifestName(2)), data[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	cp, skipped, _ = f.Latest(ctx)
	if cp.Epoch != 1 || len(skipped) != 2 {
		t.Fatalf("after truncation: %+v %v", cp, skipped)
	}
}

func TestSecondInstanceIsLockedOut(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrFolderInUse) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second Open: want ErrFolderInUse naming the holder, got %v", err)
	}
	f.Close()
	g, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	g.Close()
}

// Retention keeps the newest manifests and the state files they refer to,
// including an old epoch's snapshot that a finished subtask still points
// at, and removes the rest.
func TestRetentionKeepsWhatRecoveryNeeds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := Open(dir, Options{Retain: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	finished := writeState(t, f, 1, "finished-early")
	var handles []state.Handle
	for e := uint64(1); e <= 5; e++ {
		h := writeState(t, f, e, "live")
		handles = append(handles, h)
		if err := f.RecordEpoch(ctx, checkpointOf(e, map[string]state.Handle{"live": h, "finished-early": finished})); err != nil {
			t.Fatal(err)
		}
	}
	epochs, _ := f.manifestEpochs(ctx)
	if len(epochs) != 2 || epochs[0] != 4 || epochs[1] != 5 {
		t.Fatalf("manifests kept: %v, want [4 5]", epochs)
	}
	exists := func(h state.Handle) bool {
		_, err := os.Stat(filepath.Join(dir, "state", filepath.FromSlash(h.ID)))
		return err == nil
	}
	if !exists(finished) {
		t.Fatal("the snapshot a kept manifest refers to was removed")
	}
	for i, h := range handles {
		if want := i >= 3; exists(h) != want {
			t.Fatalf("state of epoch %d: exists=%v, want %v", i+1, exists(h), want)
		}
	}
	// Restoring the kept checkpoints works: their state opens.
	cp, _, _ := f.Latest(ctx)
	for _, oc := range cp.Operators {
		r, err := f.StateStore().Open(oc.Subtasks[0].State, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

func TestSavepointIsSelfContained(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := Open(dir, Options{Retain: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := writeState(t, f, 1, "op")
	cp := checkpointOf(1, map[string]state.Handle{"op": h})
	cp.Savepoint = true
	if err := f.RecordEpoch(ctx, cp); err != nil {
		t.Fatal(err)
	}
	loc, err := f.WriteSavepoint(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	// Later epochs expire the checkpoint; the savepoint keeps its state.
	for e := uint64(2); e <= 4; e++ {
		if err := f.RecordEpoch(ctx, checkpointOf(e, map[string]state.Handle{"op": writeState(t, f, e, "op")})); err != nil {
			t.Fatal(err)
		}
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(loc, moved); err != nil {
		t.Fatal(err)
	}
	got, store, err := ReadSavepoint(moved)
	if err != nil {
		t.Fatal(err)
	}
	if got.Epoch != 1 || !got.Savepoint {
		t.Fatalf("savepoint checkpoint %+v", got)
	}
	r, err := store.Open(got.Operators["op"].Subtasks[0].State, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("savepoint state: %v", err)
	}
	n := 0
	if err := r.Read("t", func(rec arrowRecord) error { n += int(rec.NumRows()); return nil }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if n != 3 {
		t.Fatalf("savepoint state holds %d rows, want 3", n)
	}
}
