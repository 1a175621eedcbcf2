package window

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/state"
)

// migTemporalReference is the temporal join's output after epoch e, row by
// row: every left row behind the watermark after epoch e (every left row
// after the last epoch) with the version valid at its time, the right row
// of its key with the largest time at or before its own (of two with one
// time, the later in the input); with JoinLeftOuter a left row without
// one is output padded, and a left row with a NULL key at once, in its
// epoch. (The watermark after each epoch is behind every later row, so no
// row is late and every version a left row can meet has come.)
func migTemporalReference(kind JoinKind, left, right []migRow, e, epochs int) [][]any {
	limit := int64(1<<62 - 1)
	if e < epochs-1 {
		limit = migWatermark(left, right, e)
	}
	nulls := make([]any, 3)
	var out [][]any
	for _, l := range left {
		if l.epoch > e {
			continue
		}
		if l.key == nil {
			if kind == JoinLeftOuter {
				out = append(out, append(append([]any{}, l.vals...), nulls...))
			}
			continue
		}
		if l.ts > limit {
			continue
		}
		best := -1
		for i, r := range right {
			if r.key != nil && r.key == l.key && r.ts <= l.ts && (best < 0 || r.ts >= right[best].ts) {
				best = i
			}
		}
		switch {
		case best >= 0:
			out = append(out, append(append([]any{}, l.vals...), right[best].vals...))
		case kind == JoinLeftOuter:
			out = append(out, append(append([]any{}, l.vals...), nulls...))
		}
	}
	return out
}

// TestTemporalJoinOptest runs the temporal join (on its row stores)
// through the operator harness: keyed at parallelism 1, 2 and 4 with
// restores and rescales, batch sizes 1 to 1000, random selections, a
// watermark per epoch, against the row-at-a-time reference. Versions of
// one key with one time occur (times have 10 ms steps and 60 ms of
// disorder), so the tie rule (the later arrival wins) is checked across
// batches, subtasks and restores too.
func TestTemporalJoinOptest(t *testing.T) {
	const epochs, perEpoch = 4, 60
	for i, tc := range []struct {
		kind JoinKind
		seed uint64
	}{{JoinLeftOuter, 31}, {JoinInner, 37}} {
		left, right := migInputs(tc.seed, epochs, perEpoch)
		var configs []optest.Config // the default ones
		if i > 0 {
			configs = migFewConfigs
		}
		j := TemporalJoin{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
			LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Kind: tc.kind, LeftPrefix: "l_", RightPrefix: "r_"}
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := len(migTemporalReference(tc.kind, left, right, epochs-1, epochs)); n < 100 {
			t.Fatalf("%s: the reference outputs only %d rows", tc.kind, n)
		}
		t.Run(tc.kind.String(), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "temporal join " + tc.kind.String(),
				Factory: j.Factory(),
				Inputs: []optest.Input{
					{Schema: migLeftSchema, KeyBy: []string{"k"}, Rows: migOptestRows(left)},
					{Schema: migRightSchema, KeyBy: []string{"k"}, Rows: migOptestRows(right)},
				},
				Want:       func(e int) [][]any { return migTemporalReference(tc.kind, left, right, e, epochs) },
				AppendOnly: true,
				Watermark: func(e int) (arrowflow.EventTime, bool) {
					return arrowflow.EventTime(migWatermark(left, right, e) * int64(time.Millisecond)), e < epochs-1
				},
				Configs: configs,
				Seed:    29,
			})
		})
	}
}

// A snapshot of the temporal join's layout before the row stores
// (_key_group, then the stored columns) fails to restore, naming the
// operator and the reason, on either side.
func TestTemporalJoinRefusesOldSnapshotLayout(t *testing.T) {
	j := TemporalJoin{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"k"}, RightKeys: []string{"k"}, RightPrefix: "r_"}
	c, err := j.compile()
	if err != nil {
		t.Fatal(err)
	}
	for side, table := range []string{tjLeftTable, tjRightTable} {
		t.Run(table, func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			r := migOldSnapshot(t, mem, table, []arrow.Field{
				{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
			}, c.sides[side].stored)
			defer r.Close()
			op := j.Factory()()
			if err := op.Open(&arrowflow.TaskInfo{Name: "q-temporal", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
				KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}); err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			err := op.RestoreState(r)
			if err == nil || !strings.Contains(err.Error(), "temporal join q-temporal") || !strings.Contains(err.Error(), "snapshot layout of an older weir version") {
				t.Fatalf("restoring an old-layout snapshot: %v", err)
			}
		})
	}
}
