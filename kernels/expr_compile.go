package kernels

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ExprError is a compile-time or evaluation error of an expression. Expr is
// the (sub-)expression at fault, in SQL-like syntax; Row is the input row
// an evaluation failed on, or -1.
type ExprError struct {
	Expr string
	Row  int
	Err  error
}

// Error implements error.
func (e *ExprError) Error() string {
	if e.Row >= 0 {
		return fmt.Sprintf("expression %s: row %d: %v", e.Expr, e.Row, e.Err)
	}
	return fmt.Sprintf("expression %s: %v", e.Expr, e.Err)
}

// Unwrap returns the underlying error.
func (e *ExprError) Unwrap() error { return e.Err }

func compileErr(e Expr, format string, args ...any) error {
	return &ExprError{Expr: e.String(), Row: -1, Err: fmt.Errorf(format, args...)}
}

func rowErr(e Expr, row int32, format string, args ...any) error {
	return &ExprError{Expr: e.String(), Row: int(row), Err: fmt.Errorf(format, args...)}
}

// node is a compiled expression: it evaluates its source expression for
// the selected rows of a batch into a vector it owns (or views). A node
// keeps scratch space between batches, so a compiled tree is used by one
// goroutine at a time.
type node interface {
	eval(ctx *evalCtx, sel []int32) (*vec, error)
	// dtype is the evaluator type of the result (see evalType).
	dtype() arrow.DataType
	// source is the expression the node was compiled from.
	source() Expr
}

// evalCtx is the batch being evaluated.
type evalCtx struct {
	rec arrow.RecordBatch
	n   int
}

// nodeBase carries what every node has.
type nodeBase struct {
	src Expr
	dt  arrow.DataType
}

func (b *nodeBase) dtype() arrow.DataType { return b.dt }
func (b *nodeBase) source() Expr          { return b.src }

// funcCompiler type-checks a call's compiled arguments and returns the
// node that evaluates it.
type funcCompiler func(c *compiler, call *CallExpr, args []node) (node, error)

// funcs is the function registry, filled by init functions of the files
// that implement each family.
var funcs = map[string]funcCompiler{}

func registerFunc(name string, f funcCompiler) {
	if _, dup := funcs[name]; dup {
		panic("BUG: function registered twice: " + name)
	}
	funcs[name] = f
}

// FuncNames lists the function and operator names CallExpr accepts, in
// alphabetical order.
func FuncNames() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type compiler struct {
	schema *arrow.Schema
}

func (c *compiler) compile(e Expr) (node, error) {
	switch e := e.(type) {
	case nil:
		return nil, errors.New("nil expression")
	case *ColumnExpr:
		idx := c.schema.FieldIndices(e.Name)
		if len(idx) == 0 {
			return nil, compileErr(e, "no column %q in the input (columns: %s)", e.Name, columnNames(c.schema))
		}
		if len(idx) > 1 {
			return nil, compileErr(e, "column name %q is ambiguous: it appears %d times in the input", e.Name, len(idx))
		}
		f := c.schema.Field(idx[0])
		if _, ok := exprKind(f.Type); !ok {
			return nil, compileErr(e, "column %q has type %s, which expressions do not support", e.Name, f.Type)
		}
		return &colNode{nodeBase: nodeBase{src: e, dt: evalType(f.Type)}, idx: idx[0], colType: f.Type}, nil
	case *LiteralExpr:
		return newLitNode(e)
	case *CallExpr:
		fc, ok := funcs[e.Func]
		if !ok {
			return nil, compileErr(e, "unknown function %q", e.Func)
		}
		args := make([]node, len(e.Args))
		for i, a := range e.Args {
			n, err := c.compile(a)
			if err != nil {
				return nil, err
			}
			args[i] = n
		}
		return fc(c, e, args)
	case *CastExpr:
		arg, err := c.compile(e.Arg)
		if err != nil {
			return nil, err
		}
		return compileCast(e, arg, e.To, e.Try)
	case *CaseExpr:
		return c.compileCase(e)
	}
	return nil, fmt.Errorf("unknown expression node %T", e)
}

func columnNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// colNode reads an input column.
type colNode struct {
	nodeBase
	idx     int
	colType arrow.DataType
	s       scratch
}

func (n *colNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	col := ctx.rec.Column(n.idx)
	if !arrow.TypeEqual(col.DataType(), n.colType) {
		return nil, rowErr(n.src, -1, "column has type %s in this batch, the expression was compiled for %s", col.DataType(), n.colType)
	}
	if d, ok := col.(*array.Decimal128); ok {
		return loadDecimal(d, sel, &n.s), nil
	}
	v, err := loadColumn(col, sel, &n.s)
	if err != nil {
		return nil, &ExprError{Expr: n.src.String(), Row: -1, Err: err}
	}
	return v, nil
}

// Program is an expression compiled against a schema. It evaluates whole
// batches at a time; type dispatch happened at compile time. A Program
// reuses scratch memory between calls, so it must not be used by several
// goroutines at once: compile one per goroutine (compiling is cheap).
type Program struct {
	root   node
	schema *arrow.Schema
	ctx    evalCtx
}

// Compile type-checks e against schema and returns its evaluator. Errors
// are *ExprError values naming the sub-expression and the types involved.
func Compile(e Expr, schema *arrow.Schema) (*Program, error) {
	c := &compiler{schema: schema}
	root, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	return &Program{root: root, schema: schema}, nil
}

// Type is the Arrow type of the values Eval returns.
func (p *Program) Type() arrow.DataType { return p.root.dtype() }

// String renders the compiled expression.
func (p *Program) String() string { return p.root.source().String() }

// Eval evaluates the expression for the rows of rec selected by sel (every
// row when sel is nil) and returns a new array with one value per selected
// row, allocated from mem. The caller releases it.
func (p *Program) Eval(mem memory.Allocator, rec arrow.RecordBatch, sel []int32) (arrow.Array, error) {
	v, err := p.run(rec, sel)
	if err != nil {
		return nil, err
	}
	if v.typ.ID() == arrow.NULL {
		rows := p.ctx.n
		if sel != nil {
			rows = len(sel)
		}
		return array.NewNull(rows), nil
	}
	if isDecimal(v.typ) {
		return decToArray(mem, v, sel, p.ctx.n), nil
	}
	return v.toArray(mem, sel, p.ctx.n), nil
}

func (p *Program) run(rec arrow.RecordBatch, sel []int32) (*vec, error) {
	if rec.NumCols() != int64(p.schema.NumFields()) {
		return nil, fmt.Errorf("expression %s: batch has %d columns, compiled for %d", p.String(), rec.NumCols(), p.schema.NumFields())
	}
	p.ctx = evalCtx{rec: rec, n: int(rec.NumRows())}
	return p.root.eval(&p.ctx, sel)
}

// litNode is a constant, expanded once to a full-length vector so that
// every kernel can treat it as a column (refilled only when a longer batch
// arrives).
type litNode struct {
	nodeBase
	filled int
	v      vec
	isNull bool
	// the constant itself, in evaluator form
	b   bool
	i32 int32
	i64 int64
	f64 float64
	by  []byte
}

func (n *litNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	if ctx.n <= n.filled {
		return &n.v, nil
	}
	size := max(ctx.n, 1024)
	v := &n.v
	if n.isNull {
		v.nulls = make([]bool, size)
		for i := range v.nulls {
			v.nulls[i] = true
		}
	}
	switch v.kind {
	case kindBool:
		v.b = fill(make([]bool, size), n.b)
	case kindInt32:
		v.i32 = fill(make([]int32, size), n.i32)
	case kindInt64:
		v.i64 = fill(make([]int64, size), n.i64)
	case kindFloat64:
		v.f64 = fill(make([]float64, size), n.f64)
	case kindBytes:
		v.data = n.by
		v.so = make([]int32, size)
		v.eo = fill(make([]int32, size), int32(len(n.by)))
	}
	n.filled = size
	return v, nil
}

func fill[T any](s []T, x T) []T {
	for i := range s {
		s[i] = x
	}
	return s
}

// newLitNode converts a literal to its evaluator form, checking that the
// Go value fits the declared type.
func newLitNode(e *LiteralExpr) (node, error) {
	dt := e.Type
	if dt == nil {
		if e.Value == nil {
			dt = arrow.Null
		} else {
			l, ok := safeLit(e.Value)
			if !ok {
				return nil, compileErr(e, "literal of Go type %T is not supported", e.Value)
			}
			dt = l.Type
		}
	}
	n := &litNode{nodeBase: nodeBase{src: e, dt: evalType(dt)}}
	if dt.ID() == arrow.NULL {
		if e.Value != nil {
			return nil, compileErr(e, "a literal of type null must have a nil value")
		}
		n.isNull = true
		n.v = vec{typ: arrow.Null, kind: kindBool}
		return n, nil
	}
	kind, ok := exprKind(dt)
	if !ok {
		return nil, compileErr(e, "literal type %s is not supported", dt)
	}
	n.v = vec{typ: n.dt, kind: kind}
	if e.Value == nil {
		n.isNull = true
		return n, nil
	}
	bad := func() (node, error) {
		return nil, compileErr(e, "literal value %v (Go type %T) does not fit type %s", e.Value, e.Value, dt)
	}
	switch kind {
	case kindBool:
		b, ok := e.Value.(bool)
		if !ok {
			return bad()
		}
		n.b = b
	case kindInt32, kindInt64:
		var x int64
		switch v := e.Value.(type) {
		case int:
			x = int64(v)
		case int8:
			x = int64(v)
		case int16:
			x = int64(v)
		case int32:
			x = int64(v)
		case int64:
			x = v
		case uint8:
			x = int64(v)
		case uint16:
			x = int64(v)
		case uint32:
			x = int64(v)
		case arrow.Date32:
			x = int64(v)
		case arrow.Date64:
			x = int64(v)
		case arrow.Timestamp:
			x = int64(v)
		case arrow.Duration:
			x = int64(v)
		case arrow.Time32:
			x = int64(v)
		case arrow.Time64:
			x = int64(v)
		case time.Time:
			ts, ok := dt.(*arrow.TimestampType)
			if !ok {
				return bad()
			}
			x = timeToUnit(v, ts.Unit)
		case time.Duration:
			d, ok := dt.(*arrow.DurationType)
			if !ok {
				return bad()
			}
			x = int64(v) / unitNanos(d.Unit)
		default:
			return bad()
		}
		if kind == kindInt32 {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return bad()
			}
			n.i32 = int32(x)
		}
		n.i64 = x
	case kindFloat64:
		switch v := e.Value.(type) {
		case float64:
			n.f64 = v
		case float32:
			n.f64 = float64(v)
		default:
			return bad()
		}
	case kindBytes:
		if d, ok := decType(dt); ok {
			by, err := decLiteral(e, d)
			if err != nil {
				return nil, err
			}
			n.by = by
			break
		}
		switch v := e.Value.(type) {
		case string:
			n.by = []byte(v)
		case []byte:
			n.by = append([]byte(nil), v...)
		default:
			return bad()
		}
	}
	return n, nil
}

// safeLit is Lit without the panic.
func safeLit(v any) (l *LiteralExpr, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return Lit(v).(*LiteralExpr), true
}

// unitNanos is the number of nanoseconds in one tick of unit.
func unitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1e9
	case arrow.Millisecond:
		return 1e6
	case arrow.Microsecond:
		return 1e3
	}
	return 1
}

func timeToUnit(t time.Time, u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return t.Unix()
	case arrow.Millisecond:
		return t.UnixMilli()
	case arrow.Microsecond:
		return t.UnixMicro()
	}
	return t.UnixNano()
}

// isNullLit reports whether n is an untyped NULL: the NULL literal, or an
// expression made only of untyped NULLs (such as CASE WHEN c THEN NULL
// END). Operators give it the type the other operands call for.
func isNullLit(n node) bool { return n.dtype().ID() == arrow.NULL }

func typedNull(src Expr, dt arrow.DataType) node {
	kind, _ := exprKind(dt)
	return &litNode{nodeBase: nodeBase{src: src, dt: dt}, isNull: true, v: vec{typ: dt, kind: kind}}
}

// constValue returns the value of a constant argument (a literal, possibly
// wrapped by casts folded at compile time) and whether it is one. NULL is
// reported as (nil, true).
func constValue(n node) (any, bool) {
	l, ok := n.(*litNode)
	if !ok {
		return nil, false
	}
	if l.isNull {
		return nil, true
	}
	switch l.v.kind {
	case kindBool:
		return l.b, true
	case kindInt32:
		return l.i32, true
	case kindInt64:
		return l.i64, true
	case kindFloat64:
		return l.f64, true
	}
	if l.dt.ID() == arrow.STRING {
		return string(l.by), true
	}
	return l.by, true
}
