package arrowflow_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/datagen"
	"github.com/weirflow/weir/state"
)

// emittedRows returns a row predicate: true for the rows a datagen source
// had emitted at the given split positions.
func emittedRows(t *testing.T, splits int, pos []arrowflow.SplitState) func(r int64) bool {
	t.Helper()
	next := make([]int64, splits)
	for _, p := range pos {
		s, err := strconv.Atoi(strings.TrimPrefix(p.Split, datagen.SplitPrefix))
		if err != nil {
			t.Fatalf("split id %q: %v", p.Split, err)
		}
		next[s] = 0
		if p.Position != nil {
			next[s] = int64(binary.BigEndian.Uint64(p.Position))
		}
	}
	return func(r int64) bool { return r < next[r%int64(splits)] }
}

// stateCounts reads the count operator's snapshots in a checkpoint and
// returns the count per key.
func stateCounts(store state.Store, mem memory.Allocator, oc *arrowflow.OperatorCheckpoint) (map[int64]int64, error) {
	out := make(map[int64]int64)
	for _, sc := range oc.Subtasks {
		if sc.State.IsZero() {
			continue
		}
		r, err := store.Open(sc.State, mem)
		if err != nil {
			return nil, err
		}
		err = r.Read("totals", func(rec arrow.RecordBatch) error {
			keys, counts := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			for i := 0; i < keys.Len(); i++ {
				if _, dup := out[keys.Value(i)]; dup {
					return fmt.Errorf("key %d in the state of two subtasks", keys.Value(i))
				}
				out[keys.Value(i)] = counts.Value(i)
			}
			return nil
		})
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Every checkpoint must be a consistent cut: the counts in the operator's
// snapshots are exactly those of the rows the sources had emitted at the
// positions recorded in the same checkpoint. Two sources feed one
// operator, one of them finishing early, so barrier alignment with an
// ended input is exercised too.
func TestCheckpointsAreConsistentCuts(t *testing.T) {
	mem := checkedAlloc(t)
	store := state.NewMemoryStore()
	const rowsA, rowsB = 30000, 100000
	srcA, err := datagen.New(datagen.Config{Seed: 1, Rows: rowsA, RowsPerSecond: 60000, BatchSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	// b is fast and ends early; a is slow and may sit up to 50ms in Next
	// before it sees a barrier request, while b keeps emitting rows of the
	// next epoch: without alignment those would leak into the snapshot.
	srcB, err := datagen.New(datagen.Config{Seed: 2, Rows: rowsB, RowsPerSecond: 500000, BatchSize: 64, Splits: 3})
	if err != nil {
		t.Fatal(err)
	}
	expected := func(cp *arrowflow.Checkpoint) map[int64]int64 {
		want := make(map[int64]int64)
		for _, s := range []struct {
			src   *datagen.Source
			name  string
			rows  int64
			split int
		}{{srcA, "a", rowsA, 8}, {srcB, "b", rowsB, 3}} {
			in := emittedRows(t, s.split, cp.Sources[s.name])
			for r := int64(0); r < s.rows; r++ {
				if in(r) {
					want[s.src.Row(r)[1].(int64)]++
				}
			}
		}
		return want
	}
	var checked atomic.Int64
	recorder := arrowflow.EpochRecorderFunc(func(_ context.Context, cp *arrowflow.Checkpoint) error {
		got, err := stateCounts(store, mem, cp.Operators["count"])
		if err != nil {
			return err
		}
		if cp.Final {
			return nil // the final epoch's state is taken after Finish; compared below via the sink
		}
		want := expected(cp)
		if len(got) != len(want) {
			return fmt.Errorf("epoch %d: state has %d keys, the sources' positions imply %d", cp.Epoch, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				return fmt.Errorf("epoch %d: key %d: state count %d, positions imply %d", cp.Epoch, k, got[k], w)
			}
		}
		checked.Add(1)
		return nil
	})
	g := arrowflow.NewGraph("cuts")
	a := g.Source("a", srcA, 2)
	b := g.Source("b", srcB, 1)
	c := g.Operator("count", ops.CountByKey{Key: "key", Value: "price"}.Factory(), 3, arrowflow.KeyBy(a, "key"), arrowflow.KeyBy(b, "key"))
	out := collect.New()
	g.Sink("out", out, 3, arrowflow.Forward(c))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 10 * time.Millisecond, StateStore: store, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if checked.Load() < 5 {
		t.Fatalf("only %d checkpoints were checked; the test needs several", checked.Load())
	}
	final := job.LatestCheckpoint()
	if final == nil || !final.Final {
		t.Fatalf("last checkpoint %+v is not final", final)
	}
	want := expected(final)
	got := make(map[int64]int64)
	for _, r := range out.Rows() {
		got[r[0].(int64)] = r[1].(int64)
	}
	if len(got) != len(want) {
		t.Fatalf("sink has %d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("key %d: sink count %d, want %d", k, got[k], w)
		}
	}
	epochs := out.Epochs()
	if !slices.IsSorted(epochs) || epochs[len(epochs)-1] != final.Epoch {
		t.Fatalf("committed epochs %v, final %d", epochs, final.Epoch)
	}
}

// failWhen passes batches through until cond holds, then fails.
func failWhen(cond func() bool) arrowflow.OperatorFactory {
	return ops.Map(func(b arrowflow.Batch, _ memory.Allocator) (arrowflow.Batch, error) {
		if cond() {
			b.Release()
			return arrowflow.Batch{}, errors.New("injected failure")
		}
		return b, nil
	})
}

// A job that fails is restored from its last checkpoint, with another
// parallelism each time (1 -> 4 -> 2): the committed output is exactly the
// oracle's, nothing lost and nothing twice, and epochs keep increasing.
func TestRestoreWithAnotherParallelismIsExactlyOnce(t *testing.T) {
	mem := checkedAlloc(t)
	store := state.NewMemoryStore()
	const rows = 40000
	src, err := datagen.New(datagen.Config{Seed: 9, Rows: rows, RowsPerSecond: 80000, BatchSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	a, b := collect.New(), collect.New()
	var restore *arrowflow.Checkpoint
	runs := []struct{ srcPar, par int }{{1, 1}, {3, 4}, {2, 2}}
	for i, run := range runs {
		last := i == len(runs)-1
		var recorded atomic.Int64
		var extra arrowflow.OperatorFactory
		if !last {
			extra = failWhen(func() bool { return recorded.Load() >= 3 })
		} else {
			extra = failWhen(func() bool { return false })
		}
		g := buildJob(src, run.srcPar, run.par, a, b, extra)
		job, err := g.Plan(arrowflow.Options{
			Allocator: mem, CheckpointInterval: 10 * time.Millisecond, StateStore: store, Restore: restore,
			Recorder: arrowflow.EpochRecorderFunc(func(context.Context, *arrowflow.Checkpoint) error {
				recorded.Add(1)
				return nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		err = job.Run(context.Background())
		if last {
			if err != nil {
				t.Fatalf("run %d: %v", i+1, err)
			}
			break
		}
		if err == nil || !strings.Contains(err.Error(), `operator "extra"`) || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("run %d: want the injected failure, got %v", i+1, err)
		}
		cp := job.LatestCheckpoint()
		if cp == nil || cp.Final {
			t.Fatalf("run %d: no usable checkpoint: %+v", i+1, cp)
		}
		if restore != nil && cp.Epoch <= restore.Epoch {
			t.Fatalf("run %d: epoch %d does not follow the restored %d", i+1, cp.Epoch, restore.Epoch)
		}
		if a.Staged() != 0 || b.Staged() != 0 {
			t.Fatalf("run %d: uncommitted output left staged after failure: %d, %d rows", i+1, a.Staged(), b.Staged())
		}
		restore = cp
	}
	wantRows, wantTotals := oracle(src, rows, nil)
	sameMultiset(t, "projected", collectedProjected(t, a), wantRows)
	sameTotals(t, "totals", collectedTotals(t, b), wantTotals)
	for _, s := range []*collect.Sink{a, b} {
		e := s.Epochs()
		for i := 1; i < len(e); i++ {
			if e[i] <= e[i-1] {
				t.Fatalf("committed epochs not increasing: %v", e)
			}
		}
	}
}

// When recording an epoch fails, nothing of that epoch is committed: the
// job fails naming the epoch, and the sinks abort what they pre-committed.
func TestRecorderFailureAbortsTheEpoch(t *testing.T) {
	mem := checkedAlloc(t)
	// Unbounded, fast enough that every 5 ms epoch has rows in each sink
	// subtask (batches of 1024 rows arrive about every millisecond).
	src, err := datagen.New(datagen.Config{Seed: 3, RowsPerSecond: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	out := collect.New()
	g := arrowflow.NewGraph("recorder-fails")
	s := g.Source("gen", src, 2)
	g.Sink("out", out, 2, arrowflow.Rebalance(s))
	job, err := g.Plan(arrowflow.Options{
		Allocator: mem, CheckpointInterval: 5 * time.Millisecond,
		Recorder: arrowflow.EpochRecorderFunc(func(_ context.Context, cp *arrowflow.Checkpoint) error {
			if cp.Epoch == 3 {
				return errors.New("disk full")
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "record checkpoint of epoch 3: disk full") {
		t.Fatalf("job error %v", err)
	}
	if e := out.Epochs(); len(e) != 2 || e[0] != 1 || e[1] != 2 {
		t.Fatalf("committed epochs %v, want [1 2]", e)
	}
	if out.Staged() != 0 {
		t.Fatalf("%d rows left staged", out.Staged())
	}
	if out.Aborted() == 0 {
		t.Fatal("no pre-committed output of epoch 3 was aborted")
	}
	// The rows visible are exactly those of epochs 1 and 2: the positions
	// of checkpoint 2 say how many rows the sources had emitted.
	cp := job.LatestCheckpoint()
	in := emittedRows(t, 8, cp.Sources["gen"])
	want := 0
	for r := int64(0); r < 1<<22; r++ {
		if in(r) {
			want++
		}
	}
	if got := len(out.Rows()); got != want {
		t.Fatalf("sink shows %d rows, checkpoint 2 positions imply %d", got, want)
	}
}

// Stop with a savepoint, resume from it with another parallelism, twice
// (1 -> 4 -> 2): the committed output is the oracle's, and each stop
// returns cleanly with the savepoint's epoch committed.
func TestStopWithSavepointAndResume(t *testing.T) {
	mem := checkedAlloc(t)
	store := state.NewMemoryStore()
	const rows = 40000
	src, err := datagen.New(datagen.Config{Seed: 5, Rows: rows, RowsPerSecond: 80000, BatchSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	a, b := collect.New(), collect.New()
	var restore *arrowflow.Checkpoint
	runs := []struct{ srcPar, par int }{{1, 1}, {3, 4}, {2, 2}}
	for i, run := range runs {
		last := i == len(runs)-1
		g := buildJob(src, run.srcPar, run.par, a, b, failWhen(func() bool { return false }))
		var recorded atomic.Int64
		job, err := g.Plan(arrowflow.Options{
			Allocator: mem, CheckpointInterval: 10 * time.Millisecond, StateStore: store, Restore: restore,
			Recorder: arrowflow.EpochRecorderFunc(func(context.Context, *arrowflow.Checkpoint) error {
				recorded.Add(1)
				return nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		spc := make(chan arrowflow.Savepoint, 1)
		errc := make(chan error, 1)
		if !last {
			go func() {
				for recorded.Load() < 2 {
					time.Sleep(time.Millisecond)
				}
				sp, err := job.TriggerSavepoint(context.Background(), true)
				spc <- sp
				errc <- err
			}()
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if last {
			break
		}
		sp := <-spc
		if err := <-errc; err != nil {
			t.Fatalf("run %d: savepoint: %v", i+1, err)
		}
		cp := sp.Checkpoint
		if !cp.Savepoint || cp.Final {
			t.Fatalf("run %d: savepoint checkpoint %+v", i+1, cp)
		}
		if latest := job.LatestCheckpoint(); latest.Epoch != cp.Epoch {
			t.Fatalf("run %d: epoch %d recorded after the stop savepoint %d", i+1, latest.Epoch, cp.Epoch)
		}
		if a.Staged() != 0 || b.Staged() != 0 {
			t.Fatalf("run %d: output left staged after the stop: %d, %d rows", i+1, a.Staged(), b.Staged())
		}
		restore = cp
	}
	wantRows, wantTotals := oracle(src, rows, nil)
	sameMultiset(t, "projected", collectedProjected(t, a), wantRows)
	sameTotals(t, "totals", collectedTotals(t, b), wantTotals)
}

// A checkpoint holding positions of splits the source no longer lists
// (its configuration changed) is refused, naming them, instead of their
// rows being silently lost or repeated.
func TestRestoreRefusesVanishedSplits(t *testing.T) {
	mem := checkedAlloc(t)
	rb := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil))
	rb.Field(0).(*array.Int64Builder).Append(1)
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	g := arrowflow.NewGraph("j")
	src := g.Source("in", &replaySource{rec: rec, splits: 2, per: 1}, 1)
	g.Sink("out", collect.New(), 1, arrowflow.Forward(src))
	pos := make([]byte, 8)
	restore := &arrowflow.Checkpoint{Job: "j", Epoch: 7, MaxParallelism: state.DefaultMaxParallelism,
		Sources: map[string][]arrowflow.SplitState{"in": {{Split: "replay-0", Position: pos}, {Split: "replay-1", Position: pos}, {Split: "replay-2", Position: pos}}}}
	job, err := g.Plan(arrowflow.Options{Allocator: mem, Restore: restore})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "replay-2") || !strings.Contains(err.Error(), "no longer lists") {
		t.Fatalf("want a refusal naming replay-2, got %v", err)
	}
	// Told to, or from a savepoint, it goes on without them.
	for _, o := range []arrowflow.Options{{DropVanishedSplits: true}, {}} {
		cp := *restore
		cp.Savepoint = !o.DropVanishedSplits
		o.Allocator, o.Restore = mem, &cp
		g := arrowflow.NewGraph("j")
		src := g.Source("in", &replaySource{rec: rec, splits: 2, per: 1}, 1)
		g.Sink("out", collect.New(), 1, arrowflow.Forward(src))
		job, err := g.Plan(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("savepoint %t, dropping %t: %v", cp.Savepoint, o.DropVanishedSplits, err)
		}
	}
}
