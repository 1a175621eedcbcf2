package kafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/kafka"
)

// The owner of a transactional id prefix is recorded on the cluster: a
// second sink sees it, and after it claims the prefix the first one's
// commits fail with ErrFenced before they end any transaction.
func TestClaimFencesThePreviousOwner(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, kfake.SeedTopics(3, "out"))
	open := func() *kafka.Sink {
		s, err := kafka.New(kafka.Options{Brokers: c.ListenAddrs(), Topic: "out", Encoder: textEncoder{}, TransactionalIDPrefix: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := open()
	if o, err := a.Owner(ctx, "job"); err != nil || o.ID != "" {
		t.Fatalf("owner of a new prefix: %+v, %v", o, err)
	}
	if err := a.Claim(ctx, "job", arrowflow.Owner{ID: "aaaa", Folder: "/cp/a"}); err != nil {
		t.Fatal(err)
	}
	b := open()
	if o, err := b.Owner(ctx, "job"); err != nil || o.ID != "aaaa" || o.Folder != "/cp/a" {
		t.Fatalf("owner seen by a second sink: %+v, %v", o, err)
	}
	if err := b.Claim(ctx, "job", arrowflow.Owner{ID: "bbbb"}); err != nil {
		t.Fatal(err)
	}
	payload := [][]byte{[]byte(`{}`)}
	if err := a.Commit(ctx, 7, payload); !errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("commit after another owner's claim: %v, want ErrFenced", err)
	}
	if err := b.Commit(ctx, 7, payload); errors.Is(err, arrowflow.ErrFenced) {
		t.Fatalf("the owner's commit was fenced: %v", err)
	}
	// Another prefix has its own owner.
	other, err := kafka.New(kafka.Options{Brokers: c.ListenAddrs(), Topic: "out", Encoder: textEncoder{}, TransactionalIDPrefix: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if o, err := other.Owner(ctx, "job"); err != nil || o.ID != "" {
		t.Fatalf("owner of another prefix: %+v, %v", o, err)
	}
}
