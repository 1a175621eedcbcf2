package iceberg_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

// The owner claimed last is the one that commits: a sink whose output was
// claimed by another checkpoint folder fails its next commit with
// ErrFenced, and commits nothing.
func TestClaimFencesThePreviousOwner(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	a := newSink(t, wh)
	if o, err := a.Owner(ctx, "job"); err != nil || o.ID != "" {
		t.Fatalf("owner of a new table: %+v, %v", o, err)
	}
	ownerA := arrowflow.Owner{ID: "aaaa", Lineage: "aaaa", Folder: "/cp/a"}
	if err := a.Claim(ctx, "job", ownerA); err != nil {
		t.Fatal(err)
	}
	ws := openWriters(t, a, "job", 2, 1)
	if err := a.Commit(ctx, 1, writeEpoch(t, ws, 1, 0, 100)); err != nil {
		t.Fatal(err)
	}
	if got := a.Table().CurrentSnapshot().Summary.Properties[iceberg.SummaryOwner]; got != "aaaa" {
		t.Fatalf("snapshot summary %s = %q, want the owner's ID", iceberg.SummaryOwner, got)
	}

	b := newSink(t, wh)
	if o, err := b.Owner(ctx, "job"); err != nil || o.ID != "aaaa" || o.Folder != "/cp/a" {
		t.Fatalf("owner seen by a second sink: %+v, %v", o, err)
	}
	if err := b.Claim(ctx, "job", arrowflow.Owner{ID: "bbbb", Lineage: "bbbb"}); err != nil {
		t.Fatal(err)
	}
	err := a.Commit(ctx, 2, writeEpoch(t, ws, 2, 100, 200))
	if !errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("commit after another owner's claim: %v, want ErrFenced", err)
	}
	if got := scanKeys(t, wh); !slices.Equal(got, keyRange(0, 100)) {
		t.Fatalf("the fenced commit changed the table: %d keys", len(got))
	}
	// A sink that never claimed (a job without the checkpoint folder)
	// cannot commit to an owned table either.
	c := newSink(t, wh)
	wc := openWriters(t, c, "job", 1, 5)
	if err := c.Commit(ctx, 5, writeEpoch(t, wc, 5, 500, 600)); !errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("commit without a claim: %v, want ErrFenced", err)
	}
}
