package sql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
)

// scope translates SQL expressions over a relation into kernels
// expressions over its batches. Nested ROW fields it meets become
// columns that extract adds in front of the operator evaluating them.
type scope struct {
	p      *planner
	rel    *relation
	fields []ops.FieldPath
	extra  []arrow.Field // the extracted fields' columns
	// aggs maps the aggregate calls of an aggregating SELECT to the
	// physical columns holding their results.
	aggs map[*FuncCall]string
	// groups maps GROUP BY expressions (by their SQL text) to the
	// physical columns holding them, after the aggregate.
	groups map[string]string
	// windowFuncs maps TUMBLE_START(...) and the like (by their SQL text)
	// to the columns holding them, after a legacy group window.
	windowFuncs map[string]string
}

// schema is the relation's schema with the extracted fields.
func (sc *scope) schema() *arrow.Schema {
	if len(sc.extra) == 0 {
		return sc.rel.schema
	}
	md := sc.rel.schema.Metadata()
	return arrow.NewSchema(append(append([]arrow.Field(nil), sc.rel.schema.Fields()...), sc.extra...), &md)
}

// extract returns r with the nested fields the expressions used added as
// columns (an ExtractFields operator), or r itself when there are none.
func (sc *scope) extract(r *relation) *relation {
	if len(sc.fields) == 0 {
		return r
	}
	out := sc.p.addOp(r, "fields", ops.ExtractFields(sc.fields), sc.schema())
	sc.fields, sc.extra = nil, nil
	return out
}

func (sc *scope) virtualError(pos Pos, c column) error {
	return hinted(semErrorf(pos, "%s of a window TVF can only be grouped by (window aggregation), ranked (window Top-N) or joined on (window join)", c.name),
		"GROUP BY window_start, window_end, ... over TABLE(TUMBLE(...)), or ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY ...)")
}

// resolve finds the column a reference names and the nested field path
// after it: t.c.f or c.f (Flink's rule: a leading part that names a
// table qualifies).
func (sc *scope) resolve(ref *Ref) (*column, []string, error) {
	parts := make([]string, len(ref.Parts))
	for i, id := range ref.Parts {
		parts[i] = id.Name
	}
	cols := sc.rel.cols
	find := func(qual, name string) []*column {
		var out []*column
		for _, fold := range []bool{false, true} {
			for i := range cols {
				c := &cols[i]
				nameOK := c.name == name || fold && strings.EqualFold(c.name, name)
				qualOK := qual == "" || c.qual == qual || fold && strings.EqualFold(c.qual, qual)
				if nameOK && qualOK {
					out = append(out, c)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
		return nil
	}
	if len(parts) >= 2 {
		if m := find(parts[0], parts[1]); len(m) > 0 && sc.hasQualifier(parts[0]) {
			if len(m) > 1 && !samePhys(m) {
				return nil, nil, semErrorf(ref.Pos, "column %s.%s is ambiguous", parts[0], parts[1])
			}
			return m[0], parts[2:], nil
		}
	}
	m := find("", parts[0])
	if len(m) == 0 {
		return nil, nil, hinted(semErrorf(ref.Pos, "column %s not found", strings.Join(parts, ".")),
			"the input has "+sc.columnList())
	}
	if len(m) > 1 && !samePhys(m) {
		return nil, nil, hinted(semErrorf(ref.Pos, "column %s is ambiguous", parts[0]), "qualify it with its table's name or alias")
	}
	return m[0], parts[1:], nil
}

func samePhys(cs []*column) bool {
	for _, c := range cs[1:] {
		if c.phys != cs[0].phys || c.virtual != cs[0].virtual || strings.Join(c.nested, ".") != strings.Join(cs[0].nested, ".") {
			return false
		}
	}
	return true
}

func (sc *scope) hasQualifier(q string) bool {
	for _, c := range sc.rel.cols {
		if strings.EqualFold(c.qual, q) {
			return true
		}
	}
	return false
}

func (sc *scope) columnList() string {
	var names []string
	for _, c := range sc.rel.cols {
		n := c.name
		if c.qual != "" {
			n = c.qual + "." + n
		}
		names = append(names, n)
	}
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	return strings.Join(names, ", ")
}

// ref translates a column reference.
func (sc *scope) ref(ref *Ref) (kernels.Expr, error) {
	c, path, err := sc.resolve(ref)
	if err != nil {
		return nil, err
	}
	if c.virtual != "" {
		return nil, sc.virtualError(ref.Pos, *c)
	}
	if c.proctime {
		return nil, hinted(semErrorf(ref.Pos, "%s is a processing-time attribute (PROCTIME()): it has no values to compute with", c.name),
			"use it as the DESCRIPTOR of a window TVF")
	}
	e, err := sc.colExpr(c, path)
	if err != nil {
		return nil, semErrorf(ref.Pos, "%s: %v", Format(ref), err)
	}
	return e, nil
}

// colExpr is the expression reading column c, or its nested field path.
func (sc *scope) colExpr(c *column, path []string) (kernels.Expr, error) {
	if c.derived != nil && len(path) == 0 {
		return c.derived, nil
	}
	full := append(append([]string(nil), c.nested...), path...)
	if len(full) == 0 {
		return kernels.Col(c.phys), nil
	}
	// A nested field: walk the ROW types from the struct column.
	typ := fieldType(sc.rel.schema, c.phys)
	if typ == nil {
		typ = c.typ
	}
	for i, f := range full {
		st, ok := typ.(*arrow.StructType)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not a ROW", strings.Join(append([]string{c.phys}, full[:i]...), "."), typ)
		}
		j, ok := st.FieldIdx(f)
		if !ok {
			for k, sf := range st.Fields() {
				if strings.EqualFold(sf.Name, f) {
					j, ok, full[i] = k, true, sf.Name
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("the ROW has no field %s", f)
		}
		typ = st.Field(j).Type
	}
	as := c.phys + "." + strings.Join(full, ".")
	for _, f := range sc.fields {
		if f.As == as {
			return kernels.Col(as), nil
		}
	}
	if fieldType(sc.rel.schema, as) != nil { // extracted upstream already
		return kernels.Col(as), nil
	}
	sc.fields = append(sc.fields, ops.FieldPath{Path: append([]string{c.phys}, full...), As: as})
	sc.extra = append(sc.extra, arrow.Field{Name: as, Type: typ, Nullable: true})
	return kernels.Col(as), nil
}

// expr translates e and returns its type.
func (sc *scope) expr(e Expr) (kernels.Expr, arrow.DataType, error) {
	k, err := sc.translate(e)
	if err != nil {
		return nil, nil, err
	}
	if c, ok := k.(*kernels.ColumnExpr); ok {
		// A bare column: its type, also one kernels do not compute with
		// (ROW, ARRAY, MAP pass through projections as they are).
		if t := fieldType(sc.schema(), c.Name); t != nil {
			return k, t, nil
		}
	}
	prog, err := kernels.Compile(k, sc.schema())
	if err != nil {
		return nil, nil, semErrorf(e.Position(), "%s: %v", Format(e), err)
	}
	return k, prog.Type(), nil
}

// translate maps the SQL expression to a kernels expression.
func (sc *scope) translate(e Expr) (kernels.Expr, error) {
	if sc.groups != nil {
		if col, ok := sc.groups[Format(e)]; ok {
			return kernels.Col(col), nil
		}
	}
	switch x := e.(type) {
	case *Literal:
		return literal(x)
	case *IntervalLit:
		d, err := x.Duration()
		if err != nil {
			return nil, semErrorf(x.Pos, "%v", err)
		}
		return kernels.Lit(d), nil
	case *Ref:
		return sc.ref(x)
	case *Unary:
		a, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case OpNeg:
			return kernels.Neg(a), nil
		case OpNot:
			return kernels.Not(a), nil
		}
		return a, nil
	case *Binary:
		return sc.binary(x)
	case *Is:
		a, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		var r kernels.Expr
		switch x.Test {
		case IsNull, IsUnknown:
			if x.Not {
				return kernels.IsNotNull(a), nil
			}
			return kernels.IsNull(a), nil
		case IsTrue:
			r = kernels.Call("is_true", a)
		case IsFalse:
			r = kernels.Call("is_false", a)
		}
		if x.Not {
			r = kernels.Not(r)
		}
		return r, nil
	case *Between:
		a, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		lo, err := sc.translate(x.Low)
		if err != nil {
			return nil, err
		}
		hi, err := sc.translate(x.High)
		if err != nil {
			return nil, err
		}
		r := kernels.Between(a, lo, hi)
		if x.Symmetric {
			r = kernels.Or(r, kernels.Between(a, hi, lo))
		}
		if x.Not {
			r = kernels.Not(r)
		}
		return r, nil
	case *In:
		if x.Query != nil {
			return nil, hinted(semErrorf(x.Pos, "IN (subquery) is not supported"), "list the values, or join")
		}
		a, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		list := []kernels.Expr{a}
		for _, it := range x.List {
			v, err := sc.translate(it)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if x.Not {
			return kernels.Call("not_in", list...), nil
		}
		return kernels.Call("in", list...), nil
	case *Like:
		if x.Similar {
			return nil, hinted(semErrorf(x.Pos, "SIMILAR TO is not supported"), "use LIKE or REGEXP_EXTRACT")
		}
		s, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		pat, err := sc.translate(x.Pattern)
		if err != nil {
			return nil, err
		}
		args := []kernels.Expr{s, pat}
		if x.Escape != nil {
			esc, err := sc.translate(x.Escape)
			if err != nil {
				return nil, err
			}
			args = append(args, esc)
		}
		r := kernels.Call("like", args...)
		if x.Not {
			r = kernels.Not(r)
		}
		return r, nil
	case *Case:
		return sc.caseExpr(x)
	case *Cast:
		a, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		t, err := arrowType(x.Type)
		if err != nil {
			return nil, err
		}
		if x.Try {
			return kernels.TryCast(a, t), nil
		}
		return kernels.Cast(a, t), nil
	case *FuncCall:
		return sc.call(x)
	case *TimeUnitArg:
		return kernels.Lit(x.Unit.String()), nil
	case *Trim:
		s, err := sc.translate(x.Expr)
		if err != nil {
			return nil, err
		}
		fn := map[TrimMode]string{TrimBoth: "trim", TrimLeading: "ltrim", TrimTrailing: "rtrim"}[x.Mode]
		if !kernelsFuncs[fn] {
			return nil, semErrorf(x.Pos, "TRIM is not supported yet")
		}
		if x.Chars != nil { // TRIM(BOTH 'xy' FROM s): any of the characters
			chars, err := sc.translate(x.Chars)
			if err != nil {
				return nil, err
			}
			return kernels.Call(fn, s, chars), nil
		}
		return kernels.Call(fn, s), nil
	case *Subquery, *Exists:
		return nil, hinted(semErrorf(e.Position(), "subqueries in expressions are not supported"), "join instead")
	}
	return nil, semErrorf(e.Position(), "%s: this kind of expression is not supported", Format(e))
}

// literal maps a SQL literal as Calcite types it: integers are INT when
// they fit, else BIGINT, else DECIMAL(p, 0); exact numbers with a point
// are DECIMAL(p, s) with p the digits written and s those after the
// point (0.908 is DECIMAL(4, 3)); numbers with an exponent are DOUBLE.
func literal(l *Literal) (kernels.Expr, error) {
	switch l.Kind {
	case LitNull, LitUnknown:
		return kernels.Null(arrow.Null), nil
	case LitBool:
		return kernels.Lit(l.Bool()), nil
	case LitInteger:
		n, err := strconv.ParseInt(l.Value, 10, 64)
		if err != nil {
			return decimalLiteral(l)
		}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return kernels.Lit(int32(n)), nil
		}
		return kernels.Lit(n), nil
	case LitDecimal:
		return decimalLiteral(l)
	case LitFloat:
		f, err := strconv.ParseFloat(l.Value, 64)
		if err != nil {
			return nil, semErrorf(l.Pos, "number %s: %v", l.Value, err)
		}
		return kernels.Lit(f), nil
	case LitString:
		return kernels.Lit(l.Value), nil
	case LitTimestamp:
		t, err := parseTimestampLiteral(l.Value)
		if err != nil {
			return nil, semErrorf(l.Pos, "TIMESTAMP '%s': %v", l.Value, err)
		}
		return &kernels.LiteralExpr{Value: arrow.Timestamp(t.UnixMilli()), Type: &arrow.TimestampType{Unit: arrow.Millisecond}}, nil
	case LitDate:
		t, err := time.Parse("2006-01-02", strings.TrimSpace(l.Value))
		if err != nil {
			return nil, semErrorf(l.Pos, "DATE '%s': want yyyy-mm-dd", l.Value)
		}
		return kernels.Lit(arrow.Date32FromTime(t)), nil
	}
	return nil, semErrorf(l.Pos, "%s literals are not supported", Format(l))
}

// decimalLiteral is an exact number as DECIMAL(p, s), or as INT or
// BIGINT when it has no digits after the point (1. is an INT, as in
// Calcite).
func decimalLiteral(l *Literal) (kernels.Expr, error) {
	d, p, err := kernels.ParseDecimal(l.Value)
	if err != nil {
		return nil, hinted(semErrorf(l.Pos, "number %s: %v", l.Value, err), "write it as a DOUBLE with an exponent (1.5E40)")
	}
	if d.Scale == 0 {
		if n, err := strconv.ParseInt(strings.TrimSuffix(l.Value, "."), 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return kernels.Lit(int32(n)), nil
			}
			return kernels.Lit(n), nil
		}
	}
	return &kernels.LiteralExpr{Value: d, Type: &arrow.Decimal128Type{Precision: p, Scale: d.Scale}}, nil
}

func parseTimestampLiteral(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want 'yyyy-mm-dd hh:mm:ss[.fff]'")
}

var binaryFuncs = map[BinaryOp]string{
	OpOr: "or", OpAnd: "and", OpEq: "eq", OpNe: "ne", OpLt: "lt", OpLe: "le", OpGt: "gt", OpGe: "ge",
	OpConcat: "concat", OpAdd: "add", OpSub: "sub", OpMul: "mul", OpDiv: "div", OpMod: "mod",
}

func (sc *scope) binary(x *Binary) (kernels.Expr, error) {
	a, err := sc.translate(x.Left)
	if err != nil {
		return nil, err
	}
	b, err := sc.translate(x.Right)
	if err != nil {
		return nil, err
	}
	switch x.Op {
	case OpIsDistinctFrom, OpIsNotDistinctFrom:
		// NULL-safe comparison: never NULL.
		notDistinct := &kernels.CaseExpr{
			Whens: []kernels.When{
				{Cond: kernels.And(kernels.IsNull(a), kernels.IsNull(b)), Then: kernels.Lit(true)},
				{Cond: kernels.Or(kernels.IsNull(a), kernels.IsNull(b)), Then: kernels.Lit(false)},
			},
			Else: kernels.Eq(a, b),
		}
		if x.Op == OpIsDistinctFrom {
			return kernels.Not(notDistinct), nil
		}
		return notDistinct, nil
	}
	fn, ok := binaryFuncs[x.Op]
	if !ok {
		return nil, semErrorf(x.OpPos, "operator %s is not supported", x.Op)
	}
	return kernels.Call(fn, a, b), nil
}

func (sc *scope) caseExpr(x *Case) (kernels.Expr, error) {
	var operand kernels.Expr
	if x.Operand != nil {
		var err error
		if operand, err = sc.translate(x.Operand); err != nil {
			return nil, err
		}
	}
	out := &kernels.CaseExpr{}
	for _, w := range x.Whens {
		c, err := sc.translate(w.Cond)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			c = kernels.Eq(operand, c)
		}
		r, err := sc.translate(w.Result)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, kernels.When{Cond: c, Then: r})
	}
	if x.Else != nil {
		el, err := sc.translate(x.Else)
		if err != nil {
			return nil, err
		}
		out.Else = el
	}
	return out, nil
}

// aggregateNames are the aggregate functions weir computes.
var aggregateNames = map[string]kernels.AggFunc{
	"COUNT": kernels.AggCount, "SUM": kernels.AggSum, "MIN": kernels.AggMin, "MAX": kernels.AggMax, "AVG": kernels.AggAvg,
	"FIRST_VALUE": kernels.AggFirst, "LAST_VALUE": kernels.AggLast,
}

func isAggregate(f *FuncCall) bool {
	if f.Over != nil || len(f.Name.Parts) != 1 {
		return false
	}
	_, ok := aggregateNames[strings.ToUpper(f.Name.Parts[0].Name)]
	return ok
}

// sameArgFuncs are Flink functions computed by the kernels function of
// the same (lower-case) name with the same arguments.
var sameArgFuncs = map[string]string{
	"MOD": "mod", "LOWER": "lower", "UPPER": "upper", "CHAR_LENGTH": "char_length", "CHARACTER_LENGTH": "char_length",
	"SUBSTRING": "substring", "SUBSTR": "substring", "CONCAT": "concat", "CONCAT_WS": "concat_ws", "COALESCE": "coalesce",
	"NULLIF": "nullif", "IF": "if", "REGEXP_EXTRACT": "regexp_extract", "SPLIT_INDEX": "split_index",
	"DATE_FORMAT": "date_format",
}

// extractFuncs are Flink's shorthands for EXTRACT(unit FROM ts).
var extractFuncs = map[string]string{
	"YEAR": "YEAR", "QUARTER": "QUARTER", "MONTH": "MONTH", "WEEK": "WEEK", "DAYOFMONTH": "DAY", "DAYOFYEAR": "DOY",
	"DAYOFWEEK": "DOW", "HOUR": "HOUR", "MINUTE": "MINUTE", "SECOND": "SECOND",
}

func (sc *scope) call(f *FuncCall) (kernels.Expr, error) {
	if fn := strings.ToUpper(f.Name.String()); strings.HasPrefix(fn, "TUMBLE_") || strings.HasPrefix(fn, "HOP_") || strings.HasPrefix(fn, "SESSION_") {
		// The legacy group window's bounds: TUMBLE_START(ts, size), ...
		part := fn[strings.IndexByte(fn, '_')+1:]
		if col, ok := sc.windowFuncs[part]; ok {
			return kernels.Col(col), nil
		}
		if end, ok := sc.windowFuncs["END"]; ok && part == "ROWTIME" {
			return kernels.Call("sub", kernels.Col(end), kernels.Lit(time.Millisecond)), nil // the window's last instant
		}
		if part == "ROWTIME" || part == "PROCTIME" {
			return nil, semErrorf(f.Pos, "%s is not supported; use %s_END", fn, fn[:strings.IndexByte(fn, '_')])
		}
		return nil, hinted(semErrorf(f.Pos, "%s needs the query to GROUP BY the matching group window", fn),
			"GROUP BY ..., "+fn[:strings.IndexByte(fn, '_')]+"(ts, ...)")
	}
	if isAggregate(f) {
		if col, ok := sc.aggs[f]; ok {
			return kernels.Col(col), nil
		}
		return nil, hinted(semErrorf(f.Pos, "aggregate %s is not allowed here", Format(f)),
			"aggregates go in the SELECT list or HAVING of a query with GROUP BY window_start, window_end, ...")
	}
	if f.Over != nil {
		return nil, hinted(semErrorf(f.Pos, "%s OVER (...) is only supported as Flink's window Top-N", Format(f.Name)),
			"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY x DESC) AS rn FROM ...) WHERE rn <= N")
	}
	name := strings.ToUpper(f.Name.String())
	args := func() ([]kernels.Expr, error) {
		out := make([]kernels.Expr, 0, len(f.Args))
		for _, a := range f.Args {
			k, err := sc.translate(a)
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		return out, nil
	}
	if fn, ok := sameArgFuncs[name]; ok {
		as, err := args()
		if err != nil {
			return nil, err
		}
		return kernels.Call(fn, as...), nil
	}
	if unit, ok := extractFuncs[name]; ok && len(f.Args) == 1 {
		as, err := args()
		if err != nil {
			return nil, err
		}
		return kernels.Extract(unit, as[0]), nil
	}
	switch name {
	case "EXTRACT":
		if len(f.Args) == 2 {
			if u, ok := f.Args[0].(*TimeUnitArg); ok {
				a, err := sc.translate(f.Args[1])
				if err != nil {
					return nil, err
				}
				return kernels.Extract(u.Unit.String(), a), nil
			}
		}
	case "FLOOR", "CEIL":
		if len(f.Args) == 2 {
			if u, ok := f.Args[1].(*TimeUnitArg); ok {
				a, err := sc.translate(f.Args[0])
				if err != nil {
					return nil, err
				}
				return kernels.Call(strings.ToLower(name)+"_time", a, kernels.Lit(u.Unit.String())), nil
			}
		}
	case "PROCTIME":
		return nil, hinted(semErrorf(f.Pos, "PROCTIME() only declares a processing-time column"),
			"select it as a column (SELECT *, PROCTIME() AS p FROM t) and use it as a window TVF's DESCRIPTOR")
	}
	// Any other kernels function of the same name, with Flink's
	// arguments in Flink's order (the kernels follow Flink's semantics).
	if len(f.Name.Parts) == 1 && kernelsFuncs[strings.ToLower(name)] && !f.Star && !f.Distinct && f.Filter == nil {
		as, err := args()
		if err != nil {
			return nil, err
		}
		return kernels.Call(strings.ToLower(name), as...), nil
	}
	return nil, hinted(semErrorf(f.Pos, "function %s is not supported", f.Name.String()),
		"docs/sql.md lists the functions weir computes")
}

// kernelsFuncs are the kernels' function names.
var kernelsFuncs = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range kernels.FuncNames() {
		m[n] = true
	}
	// Operators and internal names are not SQL functions.
	for _, op := range []string{"add", "sub", "mul", "div", "neg", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
		"in", "not_in", "between", "is_null", "is_not_null", "is_true", "is_false", "like", "extract", "floor_time", "ceil_time"} {
		delete(m, op)
	}
	return m
}()
