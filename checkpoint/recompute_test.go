package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// DESIGN.md step 8 at the checkpoint level: an expiring sink (Kafka) finds
// the restored epoch aborted; Resume moves the restore point back to the
// manifest before, as long as nothing of the epoch is visible anywhere.

// noSource is a graph's source for Resume, which never opens it.
type noSource struct{}

func (noSource) Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
}
func (noSource) Splits(context.Context) ([]string, error) { return []string{"0"}, nil }
func (noSource) Open(*arrowflow.TaskInfo, []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	return nil, errors.New("not opened by Resume")
}

// ledgerSink records commits, recoveries and aborted epochs like an
// external system would: an epoch in aborted fails its Commit with an
// AbortedEpochError (subtasks in committedSubtasks had made it visible).
type ledgerSink struct {
	expires           bool
	aborted           map[uint64]bool
	committedSubtasks []int
	last              uint64 // LastCommittedEpoch's answer
	commits           []uint64
	recovered         []uint64
}

func (s *ledgerSink) Open(*arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	return nil, errors.New("not opened by Resume")
}
func (s *ledgerSink) Commit(_ context.Context, epoch uint64, _ [][]byte) error {
	if s.aborted[epoch] {
		return &arrowflow.AbortedEpochError{Epoch: epoch, Aborted: []int{0}, Committed: s.committedSubtasks, Reason: errors.New("INVALID_TXN_STATE")}
	}
	s.commits = append(s.commits, epoch)
	return nil
}
func (s *ledgerSink) Abort(context.Context, uint64, [][]byte) error { return nil }
func (s *ledgerSink) PreCommitsExpire() bool                        { return s.expires }
func (s *ledgerSink) LastCommittedEpoch(context.Context, string) (uint64, error) {
	return s.last, nil
}
func (s *ledgerSink) Recover(_ context.Context, _ string, committed uint64) error {
	s.recovered = append(s.recovered, committed)
	return nil
}

// folderWithEpochs opens a folder holding manifests of epochs 1..n, each
// with a payload for both sinks of the graph.
func folderWithEpochs(t *testing.T, n uint64) *Folder {
	t.Helper()
	f, err := Open(t.TempDir(), Options{Retain: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for e := uint64(1); e <= n; e++ {
		cp := checkpointOf(e, nil)
		cp.Sources = map[string][]arrowflow.SplitState{"in": {{Split: "0", Position: []byte(fmt.Sprint(e * 100))}}}
		cp.Sinks = map[string]*arrowflow.SinkCheckpoint{
			"table": {Payloads: [][]byte{[]byte("files")}},
			"topic": {Payloads: [][]byte{[]byte("txn")}},
		}
		if err := f.RecordEpoch(context.Background(), cp); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// graphOf declares the table sink before the topic sink: commit order must
// still put the expiring topic first.
func graphOf(table, topic *ledgerSink) *arrowflow.Graph {
	g := arrowflow.NewGraph("j")
	in := g.Source("in", noSource{}, 1)
	g.Sink("table", table, 1, arrowflow.Forward(in))
	g.Sink("topic", topic, 1, arrowflow.Forward(in))
	return g
}

func TestResumeRecomputesAnEpochAbortedOutsideTheJob(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		aborted     []uint64
		wantRestore uint64 // 0: the job's start
		recomputed  []uint64
	}{
		{"the last epoch", []uint64{4}, 3, []uint64{4}},
		{"two epochs in a row", []uint64{4, 3}, 2, []uint64{4, 3}},
		{"back to the start", []uint64{1, 2, 3, 4}, 0, []uint64{4, 3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := folderWithEpochs(t, 4)
			table := &ledgerSink{}
			topic := &ledgerSink{expires: true, aborted: map[uint64]bool{}}
			for _, e := range tc.aborted {
				topic.aborted[e] = true
			}
			r, err := f.Resume(ctx, graphOf(table, topic), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := r.restoredEpoch(); got != tc.wantRestore {
				t.Fatalf("restore point %d, want %d", got, tc.wantRestore)
			}
			if !slices.Equal(r.Recomputed, tc.recomputed) {
				t.Fatalf("recomputed %v, want %v", r.Recomputed, tc.recomputed)
			}
			if tc.wantRestore > 0 && string(r.Restore.Sources["in"][0].Position) != fmt.Sprint(tc.wantRestore*100) {
				t.Fatalf("restored source position %q, want the epoch %d manifest's", r.Restore.Sources["in"][0].Position, tc.wantRestore)
			}
			// The table never saw an aborted epoch committed: the expiring
			// sink commits first and stops the commit.
			for _, e := range table.commits {
				if slices.Contains(tc.aborted, e) {
					t.Fatalf("the table committed aborted epoch %d (commits %v)", e, table.commits)
				}
			}
			if tc.wantRestore > 0 && !slices.Contains(table.commits, tc.wantRestore) {
				t.Fatalf("the restore point %d was not committed again on the table (commits %v)", tc.wantRestore, table.commits)
			}
			if !slices.Equal(table.recovered, []uint64{tc.wantRestore}) || !slices.Equal(topic.recovered, []uint64{tc.wantRestore}) {
				t.Fatalf("Recover called with %v and %v, want %d", table.recovered, topic.recovered, tc.wantRestore)
			}
			// Epoch numbers never go backwards: the recomputed output gets
			// new epochs above every recorded one.
			if r.FirstEpoch <= 4 {
				t.Fatalf("first epoch %d reuses a recorded epoch number", r.FirstEpoch)
			}
		})
	}
}

func TestResumeRefusesToRecomputeAnEpochPartlyVisible(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(table, topic *ledgerSink)
		want  string
	}{
		{"a subtask of the aborted sink committed", func(_, topic *ledgerSink) { topic.committedSubtasks = []int{1} }, "subtasks [1] of that sink had committed it"},
		{"another sink committed the epoch", func(table, _ *ledgerSink) { table.last = 4 }, `sink "table" committed epoch 4 already`},
		{"a non-expiring sink is aborted after an expiring one committed", func(table, topic *ledgerSink) {
			table.aborted = map[uint64]bool{4: true}
			topic.aborted = nil
		}, `sinks ["topic"] had committed it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := folderWithEpochs(t, 4)
			table := &ledgerSink{}
			topic := &ledgerSink{expires: true, aborted: map[uint64]bool{4: true}}
			tc.setup(table, topic)
			_, err := f.Resume(ctx, graphOf(table, topic), "")
			if !errors.Is(err, arrowflow.ErrEpochAborted) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "transaction timeout") {
				t.Fatalf("got %v, want an aborted-epoch error saying %q with the remedy", err, tc.want)
			}
		})
	}
}
