package parquet_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// The owner claimed last is the one that commits: a sink whose output was
// claimed by another checkpoint folder fails its next commit with
// ErrFenced; a sink that claimed nothing cannot commit to an owned table.
func TestClaimFencesThePreviousOwner(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	a := newSink(t, parquet.Options{})
	dir := a.Options().Path
	g := newGen(1)
	if o, err := a.Owner(ctx, job); err != nil || o.ID != "" {
		t.Fatalf("owner of a new table: %+v, %v", o, err)
	}
	if err := a.Claim(ctx, job, arrowflow.Owner{ID: "aaaa", Folder: "/cp/a"}); err != nil {
		t.Fatal(err)
	}
	commit := func(s *parquet.Sink, epoch uint64) error {
		payloads, _ := writeEpoch(t, g, mem, epoch, openWriters(t, s, mem, 2), 2)
		return s.Commit(ctx, epoch, payloads)
	}
	if err := commit(a, 1); err != nil {
		t.Fatal(err)
	}
	b := newSink(t, parquet.Options{Path: dir})
	if o, err := b.Owner(ctx, job); err != nil || o.ID != "aaaa" || o.Folder != "/cp/a" {
		t.Fatalf("owner seen by a second sink: %+v, %v", o, err)
	}
	if err := b.Claim(ctx, job, arrowflow.Owner{ID: "bbbb"}); err != nil {
		t.Fatal(err)
	}
	if err := commit(a, 2); !errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("commit after another owner's claim: %v, want ErrFenced", err)
	}
	c := newSink(t, parquet.Options{Path: dir})
	if err := commit(c, 3); !errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("commit without a claim: %v, want ErrFenced", err)
	}
	if err := commit(b, 4); err != nil {
		t.Fatalf("the owner's commit: %v", err)
	}
	files, err := parquet.CommittedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var epochs []uint64
	for _, f := range files {
		if !slices.Contains(epochs, f.Epoch) {
			epochs = append(epochs, f.Epoch)
		}
	}
	if !slices.Equal(epochs, []uint64{1, 4}) {
		t.Fatalf("committed epochs %v, want [1 4]", epochs)
	}
}
