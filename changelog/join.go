package changelog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
	"github.com/weirflow/weir/window"
)

// Join configures Flink SQL's regular join: no window, no time bound; each
// side's rows are kept (until StateTTL) and every change on one side is
// joined at once with the other side's current rows, as Flink's
// StreamingJoinOperator does in retract mode.
//
// The operator has two inputs: input 0 is the left side, input 1 the
// right; put each behind arrowflow.KeyBy on its keys (LeftKeys,
// RightKeys), so that equal keys meet in one subtask. An insert-type row
// (Insert, UpdateAfter) is stored and emits +I for each match; a
// retraction (UpdateBefore, Delete) removes one stored row equal to it and
// emits -D for each match. Outer joins also emit a row padded with NULLs
// for a row of an outer side without match, and retract it (-D) when the
// row finds its first match, or re-emit it (+I) when its last match goes.
// The output carries +I and -D rows only (no Kinds when every row of a
// batch is an insert).
//
// State is each side's rows (its key columns and output columns: a
// retraction removes a row equal on those, which is what the output can
// tell apart) in a rowstore.Store, indexed by a kernels.GroupTable over
// the keys shared by both sides, and a match count per row of an outer
// side. Snapshots write the rows and counts by key group; restore rebuilds
// the index.
type Join struct {
	// Left and Right are the schemas of the two inputs' batches.
	Left, Right *arrow.Schema
	// LeftKeys and RightKeys name the equality key columns, pairwise of
	// equal types: rows l and r match when l[LeftKeys[i]] equals
	// r[RightKeys[i]] for every i (and Residual holds). A NULL key never
	// matches. Floating-point keys compare as in grouping: -0 equals +0
	// and NaN equals NaN.
	LeftKeys, RightKeys []string
	// Kind is window.JoinInner, JoinLeftOuter, JoinRightOuter or
	// JoinFullOuter; semi and anti joins are a Validate error.
	Kind window.JoinKind
	// LeftColumns and RightColumns name the input columns to output, in
	// that order; nil outputs every column of that side. The output is the
	// left columns, then the right ones.
	LeftColumns, RightColumns []string
	// LeftPrefix and RightPrefix are prepended to the output names of that
	// side's columns (as in window.Join). Every output name must be
	// unique.
	LeftPrefix, RightPrefix string
	// Residual, when set, is an extra boolean condition over the output
	// column names (prefixed): a pair matches only when the keys are equal
	// and Residual is TRUE (NULL counts as false). For outer joins it
	// decides which rows are padded, so it is evaluated inside the join.
	// The columns it reads must be output columns.
	Residual kernels.Expr
	// StateTTL, when positive, drops a stored row StateTTL of processing
	// time (TaskInfo.Clock; nil means arrowflow.SystemClock) after it was
	// stored, without output, as Flink's table.exec.state.ttl: the pairs
	// it was part of stay in the output, a later row no longer matches it,
	// and a later retraction of it is an unknown one. The output stays a
	// consistent changelog (nothing is retracted that was not emitted),
	// but it is no longer the join of the inputs. Zero keeps rows until
	// they are retracted.
	StateTTL time.Duration
}

// JoinStats are a regular join subtask's counters.
type JoinStats struct {
	// LeftRows and RightRows count the rows received on each input;
	// OutputRows the rows emitted.
	LeftRows, RightRows, OutputRows int64
	// UnknownRetractions counts retractions that found no stored row equal
	// to them (they are skipped: nothing is emitted). Rows of an inner side
	// with a NULL key are not stored and count in NullKeyRows instead, with
	// their retractions.
	UnknownRetractions, NullKeyRows int64
	// ExpiredRows counts rows dropped by StateTTL.
	ExpiredRows int64
	// StateRows is the number of rows held (both sides) and StateBytes the
	// memory they and their index retain (approximately).
	StateRows, StateBytes int64
}

// JoinStatsReporter is implemented by the operator instances a Join makes.
type JoinStatsReporter interface {
	JoinStats() JoinStats
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens, so a bad configuration fails the job naming
// the operator; call Validate to check it earlier.
func (j Join) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator {
		return &joinOp{cfg: j, bucketShift: joinBucketShift, candRows: joinCandRows}
	}
}

// Validate checks the configuration against the input schemas.
func (j Join) Validate() error {
	_, err := j.compile()
	return err
}

// OutputSchema is the schema of the rows the join emits: the left output
// columns, then the right ones; the columns of a side that may be padded
// with NULLs (the right side of a LEFT join, and so on) are nullable.
func (j Join) OutputSchema() (*arrow.Schema, error) {
	c, err := j.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// AppendOnlyOutput reports whether the join's output is append-only for
// inputs of the given modes: only an INNER join over two append-only
// inputs never retracts (an outer join retracts its padded rows).
func (j Join) AppendOnlyOutput(leftAppendOnly, rightAppendOnly bool) bool {
	return j.Kind == window.JoinInner && leftAppendOnly && rightAppendOnly
}

const (
	joinLeft, joinRight = 0, 1
	// joinCandRows bounds the candidate pairs (and so roughly the output
	// rows) one round of a batch builds; a batch with more is processed in
	// several rounds of consecutive rows.
	joinCandRows = 1 << 16
	// joinStoredAt names the column holding each stored row's storage
	// time (Unix nanoseconds of processing time) when StateTTL is set.
	joinStoredAt = "_stored_at"
)

// joinSideSpec is what compile derives for one input.
type joinSideSpec struct {
	name  string // "left" or "right", for errors
	input *arrow.Schema
	keys  []string
	// storeIdx lists, ascending, the input columns held in state: the keys
	// and the output columns. stored is the row store's schema: those
	// columns, then joinStoredAt when StateTTL is set.
	storeIdx []int
	stored   *arrow.Schema
	keyPos   []int // the key columns, by index in stored
	outPos   []int // the output columns, by index in stored
	// hashPos are the stored columns a row's identity hash covers (every
	// data column kernels.HashColumns supports); eqs compares each data
	// column of two stored rows.
	hashPos []int
	eqs     []joinValueEq
	// outer: the side's unmatched rows are output padded with NULLs, and
	// its rows keep a match count.
	outer bool
	table string
}

// joinResidual is the compiled residual: the schema of the columns it
// reads (a subset of the output) and where each comes from.
type joinResidual struct {
	expr   kernels.Expr
	schema *arrow.Schema
	side   []int // per column of schema: joinLeft or joinRight
	pos    []int // per column of schema: index in that side's stored schema
}

// joinCompiled is what Validate derives from a Join.
type joinCompiled struct {
	sides    [2]joinSideSpec
	keyTypes []arrow.DataType
	out      *arrow.Schema
	residual *joinResidual // nil without Residual
	ttl      int64         // StateTTL in nanoseconds; 0: none
}

func (j Join) compile() (*joinCompiled, error) {
	switch j.Kind {
	case window.JoinInner, window.JoinLeftOuter, window.JoinRightOuter, window.JoinFullOuter:
	default:
		return nil, fmt.Errorf("join: kind %s is not supported by the regular join; use INNER, LEFT, RIGHT or FULL", j.Kind)
	}
	if j.StateTTL < 0 {
		return nil, fmt.Errorf("join: state TTL %s is negative", j.StateTTL)
	}
	if len(j.LeftKeys) == 0 || len(j.LeftKeys) != len(j.RightKeys) {
		return nil, fmt.Errorf("join: need one or more equality key columns on each side, as many on the left (%d) as on the right (%d)", len(j.LeftKeys), len(j.RightKeys))
	}
	c := &joinCompiled{ttl: int64(j.StateTTL)}
	leftOuter := j.Kind == window.JoinLeftOuter || j.Kind == window.JoinFullOuter
	rightOuter := j.Kind == window.JoinRightOuter || j.Kind == window.JoinFullOuter
	specs := [2]struct {
		name, prefix  string
		schema        *arrow.Schema
		keys, cols    []string
		outer, padded bool
	}{
		{"left", j.LeftPrefix, j.Left, j.LeftKeys, j.LeftColumns, leftOuter, rightOuter},
		{"right", j.RightPrefix, j.Right, j.RightKeys, j.RightColumns, rightOuter, leftOuter},
	}
	names := map[string]bool{}
	var outFields []arrow.Field
	var outSide, outPos []int // per output column: its side and stored index
	for s, sp := range specs {
		if sp.schema == nil {
			return nil, fmt.Errorf("join: no %s input schema", sp.name)
		}
		col := func(what, name string) (int, error) {
			idx := sp.schema.FieldIndices(name)
			if len(idx) != 1 {
				return 0, fmt.Errorf("join: %s %s column %q not found (or ambiguous) among the %s columns (%s)", sp.name, what, name, sp.name, joinColumnNames(sp.schema))
			}
			return idx[0], nil
		}
		d := joinSideSpec{name: sp.name, input: sp.schema, keys: sp.keys, outer: sp.outer, table: "join_" + sp.name}
		var keyIdx, outIdx []int
		for _, k := range sp.keys {
			i, err := col("key", k)
			if err != nil {
				return nil, err
			}
			keyIdx = append(keyIdx, i)
		}
		if sp.cols == nil {
			for i := range sp.schema.NumFields() {
				outIdx = append(outIdx, i)
			}
		} else {
			for _, name := range sp.cols {
				i, err := col("output", name)
				if err != nil {
					return nil, err
				}
				if slices.Contains(outIdx, i) {
					return nil, fmt.Errorf("join: %s output column %q is listed twice", sp.name, name)
				}
				outIdx = append(outIdx, i)
			}
		}
		d.storeIdx = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(keyIdx), outIdx...))))
		fields := make([]arrow.Field, len(d.storeIdx))
		for p, i := range d.storeIdx {
			f := sp.schema.Field(i)
			if !rowstore.Storable(f.Type) {
				return nil, fmt.Errorf("join: %s column %q has type %s, which the join cannot store (nested types are not supported)", sp.name, f.Name, f.Type)
			}
			if f.Name == joinStoredAt && c.ttl > 0 {
				return nil, fmt.Errorf("join: %s column %q has the name the join uses for its TTL column; rename it", sp.name, f.Name)
			}
			fields[p] = f
			eq, err := joinValueEqOf(f.Type)
			if err != nil {
				return nil, fmt.Errorf("join: %s column %q: %w", sp.name, f.Name, err)
			}
			d.eqs = append(d.eqs, eq)
			if _, err := kernels.NewGroupTable([]arrow.DataType{f.Type}); err == nil {
				d.hashPos = append(d.hashPos, p)
			}
		}
		if c.ttl > 0 {
			fields = append(fields, arrow.Field{Name: joinStoredAt, Type: arrow.PrimitiveTypes.Int64})
		}
		d.stored = arrow.NewSchema(fields, nil)
		for _, i := range keyIdx {
			d.keyPos = append(d.keyPos, slices.Index(d.storeIdx, i))
		}
		for _, i := range outIdx {
			p := slices.Index(d.storeIdx, i)
			d.outPos = append(d.outPos, p)
			f := sp.schema.Field(i)
			f.Name = sp.prefix + f.Name
			f.Nullable = f.Nullable || sp.padded
			if names[f.Name] {
				return nil, fmt.Errorf("join: output column %q appears twice; set LeftPrefix or RightPrefix, or leave it out with LeftColumns or RightColumns", f.Name)
			}
			names[f.Name] = true
			outFields = append(outFields, f)
			outSide = append(outSide, s)
			outPos = append(outPos, p)
		}
		c.sides[s] = d
	}
	l, r := &c.sides[joinLeft], &c.sides[joinRight]
	for i := range l.keyPos {
		lt, rt := l.stored.Field(l.keyPos[i]).Type, r.stored.Field(r.keyPos[i]).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, fmt.Errorf("join: key %q (%s) and %q (%s) have different types; cast one side first", j.LeftKeys[i], lt, j.RightKeys[i], rt)
		}
		c.keyTypes = append(c.keyTypes, lt)
	}
	if _, err := kernels.NewGroupTable(c.keyTypes); err != nil {
		return nil, fmt.Errorf("join: keys %v: %w", j.LeftKeys, err)
	}
	c.out = arrow.NewSchema(outFields, nil)
	if j.Residual != nil {
		res, err := joinCompileResidual(j.Residual, c.out, outSide, outPos)
		if err != nil {
			return nil, err
		}
		c.residual = res
	}
	return c, nil
}

// joinCompileResidual checks the residual against the output schema and
// derives the schema of the columns it reads.
func joinCompileResidual(e kernels.Expr, out *arrow.Schema, outSide, outPos []int) (*joinResidual, error) {
	var refs []string
	joinColumnRefs(e, &refs)
	res := &joinResidual{expr: e}
	var fields []arrow.Field
	for _, name := range refs {
		i := out.FieldIndices(name)
		if len(i) != 1 {
			return nil, fmt.Errorf("join: residual condition %s reads column %q, which is not an output column of the join (%s); output it or filter after the join", e, name, joinColumnNames(out))
		}
		if slices.ContainsFunc(fields, func(f arrow.Field) bool { return f.Name == name }) {
			continue
		}
		fields = append(fields, out.Field(i[0]))
		res.side = append(res.side, outSide[i[0]])
		res.pos = append(res.pos, outPos[i[0]])
	}
	res.schema = arrow.NewSchema(fields, nil)
	if _, err := kernels.CompileFilter(e, res.schema); err != nil {
		return nil, fmt.Errorf("join: residual condition: %w", err)
	}
	return res, nil
}

// joinColumnRefs appends the names of the columns e reads to refs.
func joinColumnRefs(e kernels.Expr, refs *[]string) {
	switch e := e.(type) {
	case *kernels.ColumnExpr:
		*refs = append(*refs, e.Name)
	case *kernels.CallExpr:
		for _, a := range e.Args {
			joinColumnRefs(a, refs)
		}
	case *kernels.CastExpr:
		joinColumnRefs(e.Arg, refs)
	case *kernels.CaseExpr:
		for _, w := range e.Whens {
			joinColumnRefs(w.Cond, refs)
			joinColumnRefs(w.Then, refs)
		}
		if e.Else != nil {
			joinColumnRefs(e.Else, refs)
		}
	}
}

// joinColumnNames lists the column names of s, for errors.
func joinColumnNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
