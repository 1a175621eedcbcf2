package changelog

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// GroupAggregate configures Flink SQL's non-window GROUP BY aggregation (and
// SELECT DISTINCT, which is a GroupAggregate with Keys and no Aggs) over an
// append-only or retract changelog.
//
// The operator folds the rows of an epoch into per-group state (columnar:
// a kernels.GroupTable on the keys hands out group ids that index the
// state's slices) and emits nothing while it folds. When the epoch closes
// (FlushEpoch) and at Finish it emits, for every group changed since the
// last flush, at most one change: +I of the group's first result, -U of the
// previous result and +U of the new one, -D when the group's last row was
// retracted, or nothing when the result did not change. More than
// aggMaxDirty changed groups make it flush early, so that an unbounded job
// without periodic epochs still makes progress.
//
// The operator is keyed: put it behind arrowflow.KeyBy on all of Keys, in
// order (snapshots assign groups to key groups by the hash of every key,
// so a job restores into another parallelism). Without keys there is one
// global group, which belongs to subtask 0 on restore: run it at
// parallelism 1, or split it with Local and Final.
type GroupAggregate struct {
	// Input is the schema of the batches the operator receives.
	Input *arrow.Schema
	// Keys are the grouping columns; none means one global group.
	Keys []string
	// Aggs are the aggregates: kernels.AggCountStar, AggCount, AggSum,
	// AggMin, AggMax, AggAvg and AggCountDistinct (others are a Validate
	// error). FILTER (WHERE c) arrives as an argument that is NULL where c
	// is not true.
	Aggs []window.Agg
	// Retracting says the input may carry UpdateBefore and Delete rows.
	// When false, a retraction in the input is an error naming the
	// operator, and MIN/MAX keep only each group's running value. When
	// true MIN/MAX keep each group's multiset of values (value -> count),
	// so that retracting the current minimum finds the next one. COUNT
	// DISTINCT always keeps value -> count per group.
	Retracting bool
	// StateTTL, when positive, drops a group not updated for StateTTL of
	// processing time (TaskInfo.Clock; nil means arrowflow.SystemClock)
	// without output, as Flink's table.exec.state.ttl: a later row of that
	// key starts a new group (+I). Zero keeps state forever.
	StateTTL time.Duration
}

// GroupAggregateStats are a group aggregate subtask's counters.
type GroupAggregateStats struct {
	// InputRows counts rows received; OutputRows rows emitted.
	InputRows, OutputRows int64
	// PerRowOutputRows counts the rows an operator emitting one change per
	// input row would have emitted (1 for a row that creates or deletes a
	// group, 2 for one that updates it), to measure what folding saves.
	PerRowOutputRows int64
	// IgnoredRetractions counts retractions of rows of a group that held
	// none (after a TTL expiry, say), which are dropped as Flink does.
	IgnoredRetractions int64
	// ExpiredGroups counts groups dropped by StateTTL.
	ExpiredGroups int64
	// Flushes counts flushes that emitted something; Compactions the
	// rebuilds of the state without the ids of groups that are gone.
	Flushes, Compactions int64
	// Groups is the number of groups held; StateBytes approximates the
	// memory their state retains.
	Groups, StateBytes int64
}

// GroupAggregateStatsReporter is implemented by the operator instances a
// GroupAggregate makes.
type GroupAggregateStatsReporter interface {
	GroupAggregateStats() GroupAggregateStats
}

// aggCompiled is what Validate derives from a GroupAggregate.
type aggCompiled struct {
	keyIdx   []int
	keyTypes []arrow.DataType
	keys     *arrow.Schema // the key columns, as in the input
	argIdx   [][]int       // input columns of each aggregate
	results  []arrow.DataType
	out      *arrow.Schema
}

// Validate checks the configuration against its input schema.
func (a GroupAggregate) Validate() error {
	_, err := a.compile()
	return err
}

// OutputSchema is the schema of the rows the operator emits: the keys
// (with their input types), then one column per aggregate, named by its
// Name, of the type kernels' accumulator of that function gives.
func (a GroupAggregate) OutputSchema() (*arrow.Schema, error) {
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (a GroupAggregate) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &aggOp{cfg: a} }
}

func (a GroupAggregate) compile() (*aggCompiled, error) {
	if a.Input == nil {
		return nil, fmt.Errorf("group aggregate: no input schema")
	}
	if a.StateTTL < 0 {
		return nil, fmt.Errorf("group aggregate: state TTL %s is negative", a.StateTTL)
	}
	col := func(what, name string) (int, error) {
		idx := a.Input.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("group aggregate: %s column %q not found (or ambiguous) in the input (%s)", what, name, a.Input)
		}
		return idx[0], nil
	}
	c := &aggCompiled{}
	var fields []arrow.Field
	seen := map[string]bool{}
	for _, k := range a.Keys {
		i, err := col("key", k)
		if err != nil {
			return nil, err
		}
		f := a.Input.Field(i)
		if !aggKeyType(f.Type) {
			return nil, fmt.Errorf("group aggregate: key column %q has unsupported type %s", k, f.Type)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("group aggregate: key column %q listed twice", k)
		}
		seen[f.Name] = true
		c.keyIdx = append(c.keyIdx, i)
		c.keyTypes = append(c.keyTypes, f.Type)
		fields = append(fields, f)
	}
	c.keys = arrow.NewSchema(append([]arrow.Field(nil), fields...), nil)
	for n, ag := range a.Aggs {
		switch ag.Func {
		case kernels.AggCountStar, kernels.AggCount, kernels.AggSum, kernels.AggMin, kernels.AggMax,
			kernels.AggAvg, kernels.AggCountDistinct:
		default:
			return nil, fmt.Errorf("group aggregate: aggregate %d (%q): %s is not supported over a changelog", n, ag.Name, ag.Func)
		}
		if ag.Name == "" {
			return nil, fmt.Errorf("group aggregate: aggregate %d (%s) has no name", n, ag.Func)
		}
		if seen[ag.Name] {
			return nil, fmt.Errorf("group aggregate: output column %q named twice", ag.Name)
		}
		seen[ag.Name] = true
		var idx []int
		var types []arrow.DataType
		for _, arg := range ag.Args {
			i, err := col(fmt.Sprintf("%s argument", ag.Name), arg)
			if err != nil {
				return nil, err
			}
			idx = append(idx, i)
			types = append(types, a.Input.Field(i).Type)
		}
		acc, err := kernels.NewAccumulator(ag.Func, types)
		if err != nil {
			return nil, fmt.Errorf("group aggregate: aggregate %q: %w", ag.Name, err)
		}
		// The changelog accumulators must support what kernels does.
		if _, err := newAggAcc(ag.Func, types, acc.ResultType(), a.Retracting); err != nil {
			return nil, fmt.Errorf("group aggregate: aggregate %q: %w", ag.Name, err)
		}
		c.argIdx = append(c.argIdx, idx)
		c.results = append(c.results, acc.ResultType())
		fields = append(fields, arrow.Field{Name: ag.Name, Type: acc.ResultType(), Nullable: ag.Func != kernels.AggCountStar && ag.Func != kernels.AggCount && ag.Func != kernels.AggCountDistinct})
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("group aggregate: no keys and no aggregates")
	}
	c.out = arrow.NewSchema(fields, nil)
	return c, nil
}

// aggKeyType reports whether dt can be a grouping key (what
// kernels.GroupTable and HashColumns take).
func aggKeyType(dt arrow.DataType) bool {
	_, err := kernels.NewGroupTable([]arrow.DataType{dt})
	return err == nil
}
