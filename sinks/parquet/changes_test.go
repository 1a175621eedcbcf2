package parquet_test

import (
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// A Parquet folder is append-only: a batch with an update or a delete
// among its selected rows is refused with an error naming the row kind,
// instead of appending the retracted row as if it were new. A changelog
// batch whose selected rows are all inserts is written.
func TestChangelogRowsAreRefused(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	ws := openWriters(t, s, mem, 1)
	g := newGen(7)
	for _, kind := range []arrowflow.RowKind{arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete} {
		b, _ := g.batch(mem, 5)
		b.Sel = nil
		b.Kinds = make([]arrowflow.RowKind, b.Record.NumRows())
		b.Kinds[3] = kind
		err := ws[0].Write(ctx, b)
		if err == nil || !strings.Contains(err.Error(), "append-only") || !strings.Contains(err.Error(), kind.String()) {
			t.Errorf("%s row: error %v, want the append-only refusal naming %s", kind, err, kind)
		}
		ws = openWriters(t, s, mem, 1) // a failed writer stays failed
	}
	b, _ := g.batch(mem, 5)
	b.Sel = []int32{0, 1, 2}
	b.Kinds = make([]arrowflow.RowKind, b.Record.NumRows())
	b.Kinds[4] = arrowflow.Delete // not selected
	if err := ws[0].Write(ctx, b); err != nil {
		t.Fatalf("inserts only: %v", err)
	}
}
