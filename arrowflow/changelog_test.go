package arrowflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
)

// kindMarker gives every row a row kind from its id (id % 4), as an
// updating operator would.
type kindMarker struct{ arrowflow.BaseOperator }

func (kindMarker) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	ids := b.Record.Column(0).(*array.Int64).Int64Values()
	kinds := make([]arrowflow.RowKind, len(ids))
	for i, id := range ids {
		kinds[i] = arrowflow.RowKind(id % 4)
	}
	b.Kinds = kinds
	// A selection, so that kinds stay indexed by physical row.
	var sel []int32
	for i := range ids {
		if i%3 != 0 {
			sel = append(sel, int32(i))
		}
	}
	b.Sel = sel
	return out.Emit(b)
}

// holder keeps every batch of an epoch and emits them when the epoch
// closes: the runtime must call FlushEpoch before the sink pre-commits.
type holder struct {
	arrowflow.BaseOperator
	held    []arrowflow.Batch
	flushes *int
	mu      *sync.Mutex
}

func (h *holder) ProcessBatch(_ int, b arrowflow.Batch, _ arrowflow.Emitter) error {
	h.held = append(h.held, b)
	return nil
}

func (h *holder) FlushEpoch(_ uint64, out arrowflow.Emitter) error {
	h.mu.Lock()
	*h.flushes++
	h.mu.Unlock()
	return h.emitHeld(out)
}

func (h *holder) emitHeld(out arrowflow.Emitter) error {
	for _, b := range h.held {
		if err := out.Emit(b); err != nil {
			return err
		}
	}
	h.held = nil
	return nil
}

// Finish emits what is held without counting a flush: the final epoch's
// FlushEpoch must still be called.
func (h *holder) Finish(out arrowflow.Emitter) error { return h.emitHeld(out) }

func (h *holder) Close() error {
	for _, b := range h.held {
		b.Release()
	}
	return nil
}

func TestRowKindsCrossExchangesAndEpochFlushes(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 100, 7)
	defer rec.Release()
	for _, par := range []int{1, 2, 4} {
		var mu sync.Mutex
		flushes := 0
		got := map[arrowflow.RowKind]int{}
		g := arrowflow.NewGraph("j")
		src := g.Source("in", &replaySource{rec: rec, splits: 3, per: 5}, 1)
		mark := g.Operator("mark", func() arrowflow.Operator { return kindMarker{} }, 2, arrowflow.Rebalance(src))
		hold := g.Operator("hold", func() arrowflow.Operator { return &holder{flushes: &flushes, mu: &mu} }, par, arrowflow.KeyBy(mark, "key"))
		g.Sink("out", &funcSink{write: func(b arrowflow.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			ids := b.Record.Column(0).(*array.Int64)
			for k := 0; k < b.NumRows(); k++ {
				id := ids.Value(b.Row(k))
				if b.Kind(k) != arrowflow.RowKind(id%4) {
					t.Errorf("row %d arrived as %s, sent as %s", id, b.Kind(k), arrowflow.RowKind(id%4))
				}
				got[b.Kind(k)]++
			}
			return nil
		}}, par, arrowflow.Forward(hold))
		job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := map[arrowflow.RowKind]int{}
		for i := 0; i < 100; i++ {
			if i%3 != 0 {
				want[arrowflow.RowKind(i%4)] += 15
			}
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("p%d: %d rows of kind %s, want %d", par, got[k], k, n)
			}
		}
		if flushes < par {
			t.Errorf("p%d: FlushEpoch called %d times", par, flushes)
		}
	}
}

func TestRowKindStrings(t *testing.T) {
	for k, want := range map[arrowflow.RowKind]string{arrowflow.Insert: "+I", arrowflow.UpdateBefore: "-U", arrowflow.UpdateAfter: "+U", arrowflow.Delete: "-D"} {
		if k.String() != want {
			t.Errorf("%d: %s, want %s", k, k, want)
		}
		if k.IsRetraction() != (want[0] == '-') {
			t.Errorf("%s: IsRetraction %v", k, k.IsRetraction())
		}
	}
}
