package checkpoint

import (
	"context"
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
)

// The folder's latest checkpoint restores only into a job of its shape
// (at any parallelism); another shape is refused with the differences,
// unless the folder allows changes or the restore is from a savepoint.
// Checkpoints without a recorded shape (older versions) restore as before.
func TestResumeRefusesAnotherShape(t *testing.T) {
	ctx := context.Background()
	recorded := graphOf(&ledgerSink{}, &ledgerSink{})
	rescaled := arrowflow.NewGraph("j")
	in := rescaled.Source("in", noSource{}, 2)
	rescaled.Sink("table", &ledgerSink{}, 2, arrowflow.Rebalance(in))
	rescaled.Sink("topic", &ledgerSink{}, 1, arrowflow.Forward(in))
	edited := arrowflow.NewGraph("j")
	in = edited.Source("in", noSource{}, 1)
	edited.Sink("table", &ledgerSink{}, 1, arrowflow.KeyBy(in, "k"))
	edited.Sink("topic2", &ledgerSink{}, 1, arrowflow.Forward(in))
	if recorded.Fingerprint() != rescaled.Fingerprint() {
		t.Fatalf("rescaling changed the fingerprint: %v vs %v", recorded.Shape(), rescaled.Shape())
	}
	for _, tc := range []struct {
		name    string
		g       *arrowflow.Graph
		allow   bool
		legacy  bool
		wantErr []string
	}{
		{name: "same shape, other parallelism", g: rescaled},
		{name: "edited", g: edited, wantErr: []string{`another graph`, `- sink "topic" <- "in"`, `+ sink "topic2" <- "in"`, `+ sink "table" <- "in" keyed by ["k"]`, `--allow-changed-job`}},
		{name: "edited, allowed", g: edited, allow: true},
		{name: "edited, legacy checkpoint", g: edited, legacy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(t.TempDir(), Options{Retain: 10, AllowChangedJob: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cp := checkpointOf(1, nil)
			if !tc.legacy {
				cp.Shape, cp.Fingerprint = recorded.Shape(), recorded.Fingerprint()
			}
			if err := f.RecordEpoch(ctx, cp); err != nil {
				t.Fatal(err)
			}
			r, err := f.Resume(ctx, tc.g, "")
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if r.Restore == nil || r.Restore.Epoch != 1 {
					t.Fatalf("restored %+v, want epoch 1", r.Restore)
				}
				return
			}
			if err == nil {
				t.Fatal("resumed a checkpoint of another shape")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
