package window

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/state"
)

// snapshotSubtask writes subtask s's state into store as operator op's
// snapshot of epoch 1 and returns its handle.
func snapshotSubtask(t testing.TB, store state.Store, op string, s subtask) state.Handle {
	t.Helper()
	w, err := store.Create(state.SnapshotID{Job: "t", Epoch: 1, Operator: op, Subtask: s.info.Subtask}, s.info.KeyGroups)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.op.SnapshotState(1, w); err != nil {
		t.Fatal(err)
	}
	hd, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return hd
}

// restoreSubtask restores subtask s from the snapshots whose key groups
// overlap its own, reading only its key groups, or from every snapshot in
// full with openAll (the operator must then keep its own key groups).
func restoreSubtask(t testing.TB, store state.Store, mem memory.Allocator, handles []state.Handle, s subtask, openAll bool) {
	t.Helper()
	var readers []state.SnapshotReader
	for _, hd := range handles {
		if hd.IsZero() || (!openAll && !hd.KeyGroups.Overlaps(s.info.KeyGroups)) {
			continue
		}
		var r state.SnapshotReader
		var err error
		if openAll {
			r, err = store.Open(hd, mem)
		} else {
			r, err = state.OpenKeyGroups(store, hd, s.info.KeyGroups, mem)
		}
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	r := state.MultiReader(readers...)
	if err := s.op.RestoreState(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
