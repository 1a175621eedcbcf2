package kernels

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// AggregateSpec is one aggregate of a GroupBy: a function, its argument
// columns and the name of its output column.
type AggregateSpec struct {
	// Func is the aggregate function.
	Func AggFunc
	// Args are column indexes in the input schema: none for count(*),
	// value and event time for first and last, the value for the others.
	Args []int
	// Name is the output column's name; empty means a name derived from
	// the function and argument names, such as "sum(price)". It also
	// prefixes the aggregate's state columns ("avg_price.sum").
	Name string
}

// GroupBy is a ready-made hash aggregation over record batches: a
// GroupTable over the key columns, one Accumulator per aggregate, and
// scratch reused across batches.
//
// Each Update runs the three passes of a vectorised hash aggregation:
// hash the keys, find or insert group ids (comparing keys), then let each
// accumulator scatter its input column into its per-group state. Once the
// number of groups stops growing, Update allocates nothing.
//
// With no key columns it is a global aggregation: exactly one group, which
// exists (and is reported by Finish) even before any row arrives, as in
// SQL.
//
// State is columnar: ExportState returns the keys and every accumulator's
// partial state as one record batch (see StateSchema), and Merge folds such
// batches back in, so a GroupBy can be snapshotted, restored, rescaled or
// combined from partial aggregations.
//
// A GroupBy is not safe for concurrent use.
type GroupBy struct {
	schema *arrow.Schema
	keyIdx []int
	specs  []AggregateSpec
	table  *GroupTable // nil for a global aggregation
	accs   []Accumulator

	outSchema   *arrow.Schema
	stateSchema *arrow.Schema
	stateStart  []int // index in stateSchema of each aggregate's first state column

	// Scratch, reused across batches; column references are dropped after
	// each call so a GroupBy never keeps a batch alive.
	keys      []arrow.Array
	args      [][]arrow.Array
	stateArgs [][]arrow.Array
	gids      []uint32
}

// NewGroupBy returns a GroupBy of rows of schema, grouped by the columns
// keys (indexes into schema; none for a global aggregation), computing
// aggs. It fails for an index out of range, an unsupported key type, or an
// aggregate that does not accept its argument types.
func NewGroupBy(schema *arrow.Schema, keys []int, aggs []AggregateSpec) (*GroupBy, error) {
	if schema == nil {
		return nil, fmt.Errorf("group by: no schema")
	}
	g := &GroupBy{schema: schema, keyIdx: append([]int(nil), keys...)}
	var outFields, stateFields []arrow.Field
	keyTypes := make([]arrow.DataType, len(keys))
	for i, c := range keys {
		if c < 0 || c >= schema.NumFields() {
			return nil, fmt.Errorf("group by: key %d: column %d out of range of %d columns", i, c, schema.NumFields())
		}
		f := schema.Field(c)
		keyTypes[i] = f.Type
		outFields = append(outFields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
	}
	if len(keys) > 0 {
		t, err := NewGroupTable(keyTypes)
		if err != nil {
			return nil, fmt.Errorf("group by: %w", err)
		}
		g.table = t
	}
	stateFields = append(stateFields, outFields...)
	for i, spec := range aggs {
		argTypes := make([]arrow.DataType, len(spec.Args))
		argNames := make([]string, len(spec.Args))
		for j, c := range spec.Args {
			if c < 0 || c >= schema.NumFields() {
				return nil, fmt.Errorf("group by: aggregate %d (%s): argument column %d out of range of %d columns", i, spec.Func, c, schema.NumFields())
			}
			argTypes[j] = schema.Field(c).Type
			argNames[j] = schema.Field(c).Name
		}
		if spec.Name == "" {
			spec.Name = defaultAggName(spec.Func, argNames)
		}
		acc, err := NewAccumulator(spec.Func, argTypes)
		if err != nil {
			return nil, fmt.Errorf("group by: aggregate %q: %w", spec.Name, err)
		}
		spec.Args = append([]int(nil), spec.Args...)
		g.specs = append(g.specs, spec)
		g.accs = append(g.accs, acc)
		outFields = append(outFields, arrow.Field{Name: spec.Name, Type: acc.ResultType(), Nullable: resultNullable(spec.Func)})
		g.stateStart = append(g.stateStart, len(stateFields))
		for _, f := range acc.StateFields() {
			f.Name = spec.Name + "." + f.Name
			stateFields = append(stateFields, f)
		}
		g.args = append(g.args, make([]arrow.Array, len(spec.Args)))
		g.stateArgs = append(g.stateArgs, make([]arrow.Array, len(acc.StateFields())))
	}
	g.outSchema = arrow.NewSchema(outFields, nil)
	g.stateSchema = arrow.NewSchema(stateFields, nil)
	g.keys = make([]arrow.Array, len(keys))
	g.growAccs()
	return g, nil
}

// defaultAggName names an aggregate after its function and arguments:
// "count(*)", "sum(price)", "count(distinct user)", "first(price, ts)".
func defaultAggName(f AggFunc, args []string) string {
	switch f {
	case AggCountStar:
		return "count(*)"
	case AggCountDistinct:
		return "count(distinct " + strings.Join(args, ", ") + ")"
	}
	return f.String() + "(" + strings.Join(args, ", ") + ")"
}

// resultNullable reports whether f's result can be null: counts cannot.
func resultNullable(f AggFunc) bool {
	switch f {
	case AggCountStar, AggCount, AggCountDistinct:
		return false
	}
	return true
}

// OutputSchema is the schema of Finish's result: the key fields, then one
// field per aggregate named by its Name.
func (g *GroupBy) OutputSchema() *arrow.Schema { return g.outSchema }

// StateSchema is the schema of ExportState's result and Merge's input: the
// key fields, then the state fields of every aggregate in order, each named
// "<aggregate name>.<state field>", e.g. "avg_price.sum".
func (g *GroupBy) StateSchema() *arrow.Schema { return g.stateSchema }

// Groups is the number of groups: distinct key tuples seen, or 1 for a
// global aggregation.
func (g *GroupBy) Groups() int {
	if g.table == nil {
		return 1
	}
	return g.table.Len()
}

// growAccs makes every accumulator hold every group.
func (g *GroupBy) growAccs() {
	n := g.Groups()
	for _, acc := range g.accs {
		acc.Grow(n)
	}
}

// Update folds the rows of rec selected by sel (nil: every row) into the
// groups. rec must have the types of the schema NewGroupBy was given in
// every column the GroupBy reads. After an error the GroupBy's state is
// unspecified: Reset it or drop it.
func (g *GroupBy) Update(rec arrow.RecordBatch, sel []int32) error {
	rows := int(rec.NumRows())
	if int(rec.NumCols()) != g.schema.NumFields() {
		return fmt.Errorf("group by: batch has %d columns, schema %d", rec.NumCols(), g.schema.NumFields())
	}
	for i, c := range g.keyIdx {
		g.keys[i] = rec.Column(c)
	}
	for a, spec := range g.specs {
		for j, c := range spec.Args {
			g.args[a][j] = rec.Column(c) // types are checked by the accumulator
		}
	}
	err := g.fold(g.keys, rows, sel, g.args, false)
	g.dropRefs()
	return err
}

// Merge folds exported state (a batch of StateSchema, rows selected by
// sel) into the groups: rebuilding a GroupBy from a snapshot, or combining
// partial aggregations. The result is the same as if the rows behind the
// state had gone through Update here, after the rows already folded in.
func (g *GroupBy) Merge(state arrow.RecordBatch, sel []int32) error {
	sch := g.stateSchema
	if int(state.NumCols()) != sch.NumFields() {
		return fmt.Errorf("group by: merge: state has %d columns, state schema %d", state.NumCols(), sch.NumFields())
	}
	for c := 0; c < sch.NumFields(); c++ {
		if !arrow.TypeEqual(state.Column(c).DataType(), sch.Field(c).Type) {
			return fmt.Errorf("group by: merge: state column %d (%s) has type %s, want %s",
				c, sch.Field(c).Name, state.Column(c).DataType(), sch.Field(c).Type)
		}
	}
	for i := range g.keyIdx {
		g.keys[i] = state.Column(i)
	}
	for a, cols := range g.stateArgs {
		for j := range cols {
			cols[j] = state.Column(g.stateStart[a] + j)
		}
	}
	err := g.fold(g.keys, int(state.NumRows()), sel, g.stateArgs, true)
	g.dropRefs()
	return err
}

// fold is the shared body of Update and Merge: assign group ids, then let
// every accumulator scatter its columns.
func (g *GroupBy) fold(keys []arrow.Array, rows int, sel []int32, cols [][]arrow.Array, merge bool) error {
	m := rows
	if sel != nil {
		m = len(sel)
	}
	if err := checkSel(rows, sel, m); err != nil {
		return fmt.Errorf("group by: %w", err)
	}
	g.gids = growUint32(g.gids, m)
	gids := g.gids[:m]
	if g.table == nil {
		clear(gids) // everything is group 0
	} else if err := g.table.FindOrInsert(keys, sel, gids); err != nil {
		return fmt.Errorf("group by: %w", err)
	}
	n := g.Groups()
	for a, acc := range g.accs {
		acc.Grow(n)
		var err error
		if merge {
			err = acc.Merge(cols[a], sel, gids)
		} else {
			err = acc.Update(cols[a], sel, gids)
		}
		if err != nil {
			return fmt.Errorf("group by: aggregate %q: %w", g.specs[a].Name, err)
		}
	}
	return nil
}

func (g *GroupBy) dropRefs() {
	clear(g.keys)
	for _, a := range g.args {
		clear(a)
	}
	for _, a := range g.stateArgs {
		clear(a)
	}
}

// ExportState returns the state of every group as one batch of
// StateSchema, in group-id order, allocated from mem; the caller releases
// it. Merging it into a fresh GroupBy of the same schema and aggregates
// rebuilds this one.
func (g *GroupBy) ExportState(mem memory.Allocator) (arrow.RecordBatch, error) {
	g.growAccs()
	var cols []arrow.Array
	if g.table != nil {
		cols = append(cols, g.table.Keys(mem)...)
	}
	for _, acc := range g.accs {
		cols = append(cols, acc.ExportState(mem)...)
	}
	return g.batch(g.stateSchema, cols)
}

// Finish returns the result, one row per group in group-id order (the
// order of first appearance): the keys, then each aggregate. It is
// allocated from mem and the caller releases it. The state is unchanged,
// so Finish can run again after more Updates.
func (g *GroupBy) Finish(mem memory.Allocator) (arrow.RecordBatch, error) {
	g.growAccs()
	var cols []arrow.Array
	if g.table != nil {
		cols = append(cols, g.table.Keys(mem)...)
	}
	for _, acc := range g.accs {
		cols = append(cols, acc.Finish(mem))
	}
	return g.batch(g.outSchema, cols)
}

// batch assembles cols into a record batch of schema, taking over the
// caller's references to cols.
func (g *GroupBy) batch(schema *arrow.Schema, cols []arrow.Array) (arrow.RecordBatch, error) {
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	n := g.Groups()
	for i, c := range cols {
		if c.Len() != n {
			return nil, fmt.Errorf("BUG: group by: column %q has %d rows, %d groups", schema.Field(i).Name, c.Len(), n)
		}
	}
	return array.NewRecordBatch(schema, cols, int64(n)), nil
}

// Reset forgets every group but keeps the memory, e.g. to reuse the
// GroupBy for the next window.
func (g *GroupBy) Reset() {
	if g.table != nil {
		g.table.Reset()
	}
	for _, acc := range g.accs {
		acc.Reset()
	}
	g.growAccs()
}

// SizeBytes approximates the memory the GroupBy retains (table,
// accumulators, scratch), for state budgets.
func (g *GroupBy) SizeBytes() int64 {
	n := int64(cap(g.gids)) * 4
	if g.table != nil {
		n += g.table.SizeBytes()
	}
	for _, acc := range g.accs {
		n += acc.SizeBytes()
	}
	return n
}

// AggregateBatches runs one GroupBy over batches, in order, and returns
// its Finish result, allocated from mem (the caller releases it). It is
// the whole of a batch group-by in one call, for tests, benchmarks and
// comparisons with other engines.
func AggregateBatches(mem memory.Allocator, schema *arrow.Schema, keys []int, aggs []AggregateSpec, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	g, err := NewGroupBy(schema, keys, aggs)
	if err != nil {
		return nil, err
	}
	for i, rec := range batches {
		if err := g.Update(rec, nil); err != nil {
			return nil, fmt.Errorf("batch %d: %w", i, err)
		}
	}
	return g.Finish(mem)
}
