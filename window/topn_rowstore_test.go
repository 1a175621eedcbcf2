package window

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/kernels"
)

// The optest cases rank rows of migRightSchema (k nullable int64, ts in
// ms, w nullable int64) by w, partitioned and keyed by k.

// topNOptestRank compares two values of w in rank order: larger first
// (desc) or smaller first, NULLs after every value.
func topNOptestRank(a, b any, desc bool) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	c := cmp.Compare(a.(int64), b.(int64))
	if desc {
		c = -c
	}
	return c
}

// topNOptestReference is the top-N's output after epoch e, row by row:
// for every window whose end is behind the watermark (every window after
// the last epoch) and every k (NULL is a partition too), the rows ranked
// in the first n by w, with the rows tied with the n-th, each with its
// rank (1 + the rows ranked strictly before it) last; windowed input
// (windowed) carries its window columns and no window columns are added.
func topNOptestReference(size, slide int64, n int, desc, windowed bool, rows []migRow, e, epochs int) [][]any {
	limit := int64(1<<62 - 1)
	if e < epochs-1 {
		limit = migWatermark(rows, rows, e)
	}
	type part struct {
		start int64
		key   any
	}
	groups := map[part][]migRow{}
	for _, r := range rows {
		for s := r.ts - r.ts%slide; s > r.ts-size; s -= slide {
			if s+size-1 <= limit {
				groups[part{s, r.key}] = append(groups[part{s, r.key}], r)
			}
		}
	}
	var out [][]any
	for p, rs := range groups {
		slices.SortFunc(rs, func(a, b migRow) int { return topNOptestRank(a.vals[2], b.vals[2], desc) })
		for i, r := range rs {
			rank := 1
			for rank-1 < i && topNOptestRank(rs[rank-1].vals[2], r.vals[2], desc) < 0 {
				rank++
			}
			if i >= n && topNOptestRank(rs[n-1].vals[2], r.vals[2], desc) != 0 {
				break
			}
			row := []any{}
			if !windowed {
				row = append(row, time.UnixMilli(p.start).UTC(), time.UnixMilli(p.start+size).UTC())
			}
			row = append(append(row, r.vals...), int64(rank))
			if windowed {
				row = append([]any{time.UnixMilli(p.start).UTC(), time.UnixMilli(p.start + size).UTC()}, row...)
			}
			out = append(out, row)
		}
	}
	return out
}

// topNWindowedRows gives each row its tumbling window of size ms as two
// leading timestamp columns, as a windowed aggregate's output has.
func topNWindowedRows(rows []migRow, size int64) []optest.Row {
	out := make([]optest.Row, len(rows))
	for i, r := range rows {
		s := r.ts - r.ts%size
		vals := append([]any{time.UnixMilli(s).UTC(), time.UnixMilli(s + size).UTC()}, r.vals...)
		out[i] = optest.Row{Values: vals, Epoch: r.epoch}
	}
	return out
}

// TestTopNOptest runs the window top-N (on its row stores) through the
// operator harness: keyed by its partition at parallelism 1, 2 and 4 with
// restores and rescales, batch sizes 1 to 1000, random selections, a
// watermark per epoch, against the row-at-a-time reference. Values repeat
// (ties, kept WithTies) and are sometimes NULL, as keys are.
func TestTopNOptest(t *testing.T) {
	const epochs, perEpoch = 4, 60
	_, rows := migInputs(11, epochs, perEpoch)
	for i := range rows {
		if w, ok := rows[i].vals[2].(int64); ok {
			rows[i].vals[2] = w % 40 // many ties
		}
	}
	winSchema := arrow.NewSchema(append([]arrow.Field{
		{Name: "ws", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "we", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, migRightSchema.Fields()...), nil)
	for i, tc := range []struct {
		size, slide int64
		n           int
		desc        bool
		windowed    bool
	}{{300, 100, 2, true, false}, {200, 200, 1, false, false}, {200, 200, 3, true, true}} {
		var configs []optest.Config // the default ones
		if i > 0 {
			configs = migFewConfigs
		}
		order := []OrderKey{{Column: "w", Desc: tc.desc}}
		cfg := TopN{Input: migRightSchema, Time: "ts", PartitionBy: []string{"k"}, KeyBy: []string{"k"},
			OrderBy: order, N: tc.n, WithTies: true, RowNumber: "rank", compactMin: 4}
		spec := Tumbling(time.Duration(tc.size) * time.Millisecond)
		if tc.slide != tc.size {
			spec = Hopping(time.Duration(tc.size)*time.Millisecond, time.Duration(tc.slide)*time.Millisecond)
		}
		cfg.Window = spec
		input := optest.Input{Schema: migRightSchema, KeyBy: []string{"k"}, Rows: migOptestRows(rows)}
		if tc.windowed {
			cfg.Input, cfg.Time, cfg.Window = winSchema, "", Spec{}
			cfg.WindowStart, cfg.WindowEnd = "ws", "we"
			cfg.KeyBy = []string{"ws", "k"}
			input = optest.Input{Schema: winSchema, KeyBy: []string{"ws", "k"}, Rows: topNWindowedRows(rows, tc.size)}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := len(topNOptestReference(tc.size, tc.slide, tc.n, tc.desc, tc.windowed, rows, epochs-1, epochs)); n < 50 {
			t.Fatalf("case %d: the reference outputs only %d rows", i, n)
		}
		name := spec.String()
		if tc.windowed {
			name = "windowed"
		}
		t.Run(fmt.Sprintf("%s/top=%d", name, tc.n), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "window top-n",
				Factory: cfg.Factory(),
				Inputs:  []optest.Input{input},
				Want: func(e int) [][]any {
					return topNOptestReference(tc.size, tc.slide, tc.n, tc.desc, tc.windowed, rows, e, epochs)
				},
				AppendOnly: true,
				Watermark: func(e int) (arrowflow.EventTime, bool) {
					return arrowflow.EventTime(migWatermark(rows, rows, e) * int64(time.Millisecond)), e < epochs-1
				},
				Configs: configs,
				Seed:    23,
			})
		})
	}
}

// Without KeyBy a subtask's snapshot rows carry a hash of its first key
// group: that hash must map back to exactly that group.
func TestTopNHashOfKeyGroup(t *testing.T) {
	for _, maxPar := range []int{1, 3, 128, 4096, 32768} {
		for kg := range maxPar {
			if got := kernels.KeyGroupOf(topNHashOfKeyGroup(kg, maxPar), maxPar); got != kg {
				t.Fatalf("max parallelism %d: the hash of key group %d is in key group %d", maxPar, kg, got)
			}
		}
	}
}

// TestTopNOptestUnkeyed: a top-N over whole windows (no partition, no
// KeyBy) at parallelism 1, restored, against the reference.
func TestTopNOptestUnkeyed(t *testing.T) {
	const epochs, perEpoch = 4, 60
	_, rows := migInputs(12, epochs, perEpoch)
	for i := range rows {
		rows[i].key = nil // one partition
	}
	cfg := TopN{Input: migRightSchema, Time: "ts", Window: Hopping(400*time.Millisecond, 200*time.Millisecond),
		OrderBy: []OrderKey{{Column: "w"}}, N: 5, WithTies: true, RowNumber: "rank", compactMin: 3}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	optest.Run(t, optest.Case{
		Name:    "window top-n unkeyed",
		Factory: cfg.Factory(),
		Inputs:  []optest.Input{{Schema: migRightSchema, Rows: migOptestRows(rows)}},
		Want: func(e int) [][]any {
			return topNOptestReference(400, 200, 5, false, false, rows, e, epochs)
		},
		AppendOnly: true,
		Watermark: func(e int) (arrowflow.EventTime, bool) {
			return arrowflow.EventTime(migWatermark(rows, rows, e) * int64(time.Millisecond)), e < epochs-1
		},
		Seed: 29,
	})
}
