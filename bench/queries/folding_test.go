package queries

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
	"github.com/weirflow/weir/window"
)

// `weir bench nexmark` reports what folding saves on q15, q16 and q17
// from the sink's changelog alone, as 2 * bids - groups rows for one
// change per bid (the SQL job's operators are not reachable from the
// bench). This checks that figure against the operator's own counters:
// a changelog.GroupAggregate over the bids, its instances captured by
// their factory, emits exactly the sink's rows, and its PerRowOutputRows
// is 2 * bids - (the sink's +I - -D).
func TestFoldingFigureFromTheSinkIsTheOperators(t *testing.T) {
	for _, iv := range []time.Duration{20 * time.Millisecond, time.Hour} {
		t.Run(iv.String(), func(t *testing.T) {
			src := testSource(t)
			out := collect.New()
			var mu sync.Mutex
			var ops []changelog.GroupAggregateStatsReporter
			agg := changelog.GroupAggregate{Input: nexmark.BidSchema(), Keys: []string{"auction"},
				Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"price"}, Name: "max_price"}}}
			if err := agg.Validate(); err != nil {
				t.Fatal(err)
			}
			factory := agg.Factory()
			g := arrowflow.NewGraph("folding")
			c := Config{Source: src, Parallelism: 2, Sink: out}
			bids := events(g, c, nexmark.BidEvent)
			node := g.Operator("agg", func() arrowflow.Operator {
				op := factory()
				mu.Lock()
				ops = append(ops, op.(changelog.GroupAggregateStatsReporter))
				mu.Unlock()
				return op
			}, 2, arrowflow.KeyBy(bids, "auction"))
			node.SetChangelogMode(arrowflow.Retract)
			g.Sink("sink", out, 2, arrowflow.Forward(node))
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: iv})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			mem.AssertSize(t, 0)
			var st changelog.GroupAggregateStats
			for _, op := range ops {
				s := op.GroupAggregateStats()
				st.InputRows += s.InputRows
				st.OutputRows += s.OutputRows
				st.PerRowOutputRows += s.PerRowOutputRows
			}
			var kinds [4]int64
			changes := out.Changes()
			for _, ch := range changes {
				kinds[ch.Kind]++
			}
			bidsN := nexmark.CountOf(nexmark.BidEvent, testEvents)
			groups := kinds[arrowflow.Insert] - kinds[arrowflow.Delete]
			t.Logf("%s: %d bids, %d groups, %d epochs: %d rows emitted (+I %d, -U %d, +U %d), %d per row", iv, bidsN, groups,
				job.EpochsCompleted(), st.OutputRows, kinds[0], kinds[1], kinds[2], st.PerRowOutputRows)
			if st.InputRows != bidsN || st.OutputRows != int64(len(changes)) {
				t.Fatalf("the operators read %d rows and emitted %d; the source made %d bids and the sink got %d rows", st.InputRows, st.OutputRows, bidsN, len(changes))
			}
			if want := 2*bidsN - groups; st.PerRowOutputRows != want {
				t.Fatalf("the operators' PerRowOutputRows %d, the bench's figure 2 * bids - groups = %d", st.PerRowOutputRows, want)
			}
			if st.OutputRows >= st.PerRowOutputRows {
				t.Fatalf("folding emitted %d rows, one change per bid %d", st.OutputRows, st.PerRowOutputRows)
			}
		})
	}
}
