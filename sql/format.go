package sql

import (
	"strconv"
	"strings"
)

// Format returns canonical SQL for a node: a script, a statement, a query,
// a FROM item, an expression, a type or any other node. Parsing the output
// gives back an equal tree (positions aside).
//
// The canonical form has upper-case keywords, one space between tokens,
// the parentheses that precedence needs and no others, AS before every
// alias, and one spelling for each construct: <> for !=, LIMIT for FETCH
// FIRST, SET 'key' = 'value', positional window function arguments, the
// canonical names of types, and the comma forms of SUBSTRING. Identifiers
// keep their spelling and their backticks. A script prints one statement
// per line, each ending with ";".
func Format(n Node) string {
	var w writer
	w.node(n)
	return w.b.String()
}

// writer accumulates formatted SQL.
type writer struct{ b strings.Builder }

func (w *writer) s(parts ...string) {
	for _, p := range parts {
		w.b.WriteString(p)
	}
}

// quoteString returns s as a SQL string literal.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func (w *writer) node(n Node) {
	switch n := n.(type) {
	case nil:
		return
	case *Script:
		for _, st := range n.Statements {
			w.statement(st)
			w.s(";\n")
		}
	case *Query:
		w.query(n)
	case Statement:
		w.statement(n)
	case QueryExpr:
		w.queryExpr(n)
	case TableExpr:
		w.table(n)
	case Expr:
		w.expr(n, 0)
	case *Ident:
		w.s(n.String())
	case *ObjectName:
		w.s(n.String())
	case *ColumnDef:
		w.column(n)
	case *Watermark:
		w.watermark(n)
	case *PrimaryKey:
		w.primaryKey(n)
	case *Option:
		w.s(quoteString(n.Key), " = ", quoteString(n.Value))
	case *PartitionValue:
		w.s(n.Column.String(), " = ")
		w.expr(n.Value, precAdd)
	case *CTE:
		w.cte(n)
	case *SelectItem:
		w.selectItem(n)
	case *OrderItem:
		w.orderItem(n)
	case *When:
		w.s("WHEN ")
		w.expr(n.Cond, 0)
		w.s(" THEN ")
		w.expr(n.Result, 0)
	case *WindowSpec:
		w.windowSpec(n)
	case *NamedWindow:
		w.namedWindow(n)
	case *WindowFrame:
		w.frame(n)
	case *FrameBound:
		w.bound(n)
	case *Hint:
		w.hint(n)
	case *DataType:
		w.dataType(n)
	case *RowField:
		w.rowField(n)
	}
}

// ---------------------------------------------------------------------------
// Statements

func (w *writer) statement(st Statement) {
	switch n := st.(type) {
	case *CreateTable:
		w.createTable(n)
	case *CreateView:
		w.s("CREATE ")
		if n.Temporary {
			w.s("TEMPORARY ")
		}
		w.s("VIEW ")
		if n.IfNotExists {
			w.s("IF NOT EXISTS ")
		}
		w.s(n.Name.String())
		if len(n.Columns) > 0 {
			w.s(" (")
			w.idents(n.Columns)
			w.s(")")
		}
		if n.Comment != "" {
			w.s(" COMMENT ", quoteString(n.Comment))
		}
		w.s(" AS ")
		w.query(n.Query)
	case *Set:
		w.s("SET ", quoteString(n.Key), " = ", quoteString(n.Value))
	case *Reset:
		w.s("RESET")
		if n.Key != "" {
			w.s(" ", quoteString(n.Key))
		}
	case *Insert:
		w.insert(n)
	case *StatementSet:
		w.s("EXECUTE STATEMENT SET BEGIN ")
		for _, ins := range n.Inserts {
			w.insert(ins)
			w.s("; ")
		}
		w.s("END")
	case *Drop:
		w.s("DROP ")
		if n.Temporary {
			w.s("TEMPORARY ")
		}
		if n.System {
			w.s("SYSTEM ")
		}
		w.s(n.Kind.String(), " ")
		if n.IfExists {
			w.s("IF EXISTS ")
		}
		w.s(n.Name.String())
	case *CreateFunction:
		w.s("CREATE ")
		if n.Temporary {
			w.s("TEMPORARY ")
		}
		if n.System {
			w.s("SYSTEM ")
		}
		w.s("FUNCTION ")
		if n.IfNotExists {
			w.s("IF NOT EXISTS ")
		}
		w.s(n.Name.String(), " AS ", quoteString(n.Identifier))
		if n.Language != "" {
			w.s(" LANGUAGE ", n.Language)
		}
		for i, jar := range n.Jars {
			if i == 0 {
				w.s(" USING ")
			} else {
				w.s(", ")
			}
			w.s("JAR ", quoteString(jar))
		}
	case *Query:
		w.query(n)
	}
}

func (w *writer) createTable(n *CreateTable) {
	w.s("CREATE ")
	if n.Temporary {
		w.s("TEMPORARY ")
	}
	w.s("TABLE ")
	if n.IfNotExists {
		w.s("IF NOT EXISTS ")
	}
	w.s(n.Name.String())
	if len(n.Columns) > 0 || n.Watermark != nil || n.PrimaryKey != nil {
		w.s(" (")
		sep := ""
		for _, c := range n.Columns {
			w.s(sep)
			w.column(c)
			sep = ", "
		}
		if n.Watermark != nil {
			w.s(sep)
			w.watermark(n.Watermark)
			sep = ", "
		}
		if n.PrimaryKey != nil {
			w.s(sep)
			w.primaryKey(n.PrimaryKey)
		}
		w.s(")")
	}
	if n.Comment != "" {
		w.s(" COMMENT ", quoteString(n.Comment))
	}
	if len(n.PartitionedBy) > 0 {
		w.s(" PARTITIONED BY (")
		w.idents(n.PartitionedBy)
		w.s(")")
	}
	if len(n.Options) > 0 {
		w.s(" WITH (")
		w.options(n.Options)
		w.s(")")
	}
}

func (w *writer) options(opts []*Option) {
	for i, o := range opts {
		if i > 0 {
			w.s(", ")
		}
		w.s(quoteString(o.Key), " = ", quoteString(o.Value))
	}
}

func (w *writer) column(c *ColumnDef) {
	w.s(c.Name.String())
	if c.Kind == ComputedColumn {
		w.s(" AS ")
		w.expr(c.Expr, 0)
	} else {
		w.s(" ")
		w.dataType(c.Type)
		if c.Kind == MetadataColumn {
			w.s(" METADATA")
			if c.MetadataKey != "" {
				w.s(" FROM ", quoteString(c.MetadataKey))
			}
			if c.Virtual {
				w.s(" VIRTUAL")
			}
		}
	}
	if c.Comment != "" {
		w.s(" COMMENT ", quoteString(c.Comment))
	}
}

func (w *writer) watermark(wm *Watermark) {
	w.s("WATERMARK FOR ", wm.Column.String(), " AS ")
	w.expr(wm.Expr, 0)
}

func (w *writer) primaryKey(pk *PrimaryKey) {
	if pk.Name != nil {
		w.s("CONSTRAINT ", pk.Name.String(), " ")
	}
	w.s("PRIMARY KEY (")
	w.idents(pk.Columns)
	w.s(") NOT ENFORCED")
}

func (w *writer) insert(n *Insert) {
	w.s("INSERT ")
	if n.Overwrite {
		w.s("OVERWRITE ")
	} else {
		w.s("INTO ")
	}
	w.s(n.Table.String())
	w.hints(n.Hints)
	if len(n.Partition) > 0 {
		w.s(" PARTITION (")
		for i, pv := range n.Partition {
			if i > 0 {
				w.s(", ")
			}
			w.node(pv)
		}
		w.s(")")
	}
	if len(n.Columns) > 0 {
		w.s(" (")
		w.idents(n.Columns)
		w.s(")")
	}
	w.s(" ")
	w.query(n.Query)
}

func (w *writer) idents(ids []*Ident) {
	for i, id := range ids {
		if i > 0 {
			w.s(", ")
		}
		w.s(id.String())
	}
}

// hints writes " /*+ ... */" when there are hints.
func (w *writer) hints(hs []*Hint) {
	if len(hs) == 0 {
		return
	}
	w.s(" /*+ ")
	for i, h := range hs {
		if i > 0 {
			w.s(", ")
		}
		w.hint(h)
	}
	w.s(" */")
}

func (w *writer) hint(h *Hint) {
	w.s(h.Name.String())
	switch {
	case len(h.Options) > 0:
		w.s("(")
		w.options(h.Options)
		w.s(")")
	case len(h.Args) > 0:
		w.s("(")
		w.idents(h.Args)
		w.s(")")
	}
}

// ---------------------------------------------------------------------------
// Queries

func (w *writer) query(q *Query) {
	if q == nil {
		return
	}
	if len(q.With) > 0 {
		w.s("WITH ")
		for i, c := range q.With {
			if i > 0 {
				w.s(", ")
			}
			w.cte(c)
		}
		w.s(" ")
	}
	w.queryExpr(q.Body)
	if len(q.OrderBy) > 0 {
		w.s(" ORDER BY ")
		w.orderItems(q.OrderBy)
	}
	if q.Limit != nil {
		w.s(" LIMIT ")
		w.expr(q.Limit, precAdd)
	}
	if q.Offset != nil {
		w.s(" OFFSET ")
		w.expr(q.Offset, precAdd)
	}
}

func (w *writer) cte(c *CTE) {
	w.s(c.Name.String())
	if len(c.Columns) > 0 {
		w.s(" (")
		w.idents(c.Columns)
		w.s(")")
	}
	w.s(" AS (")
	w.query(c.Query)
	w.s(")")
}

// setPrec is the binding strength of a set operator.
func setPrec(k SetOpKind) int {
	if k == Intersect {
		return 2
	}
	return 1
}

func (w *writer) queryExpr(e QueryExpr) {
	switch n := e.(type) {
	case *Select:
		w.selectExpr(n)
	case *Values:
		w.s("VALUES ")
		for i, row := range n.Rows {
			if i > 0 {
				w.s(", ")
			}
			w.s("(")
			w.exprs(row)
			w.s(")")
		}
	case *SetOp:
		prec := setPrec(n.Op)
		w.setOperand(n.Left, func(o *SetOp) bool { return setPrec(o.Op) < prec })
		w.s(" ", n.Op.String())
		if n.All {
			w.s(" ALL")
		}
		w.s(" ")
		w.setOperand(n.Right, func(o *SetOp) bool { return setPrec(o.Op) <= prec })
	case *Query:
		w.s("(")
		w.query(n)
		w.s(")")
	}
}

// setOperand writes an operand of a set operation, in parentheses when it
// is a set operation that needs them.
func (w *writer) setOperand(e QueryExpr, needParens func(*SetOp) bool) {
	if o, ok := e.(*SetOp); ok && needParens(o) {
		w.s("(")
		w.queryExpr(o)
		w.s(")")
		return
	}
	w.queryExpr(e)
}

func (w *writer) selectExpr(n *Select) {
	w.s("SELECT")
	w.hints(n.Hints)
	if n.Distinct {
		w.s(" DISTINCT")
	}
	w.s(" ")
	for i, it := range n.Items {
		if i > 0 {
			w.s(", ")
		}
		w.selectItem(it)
	}
	if n.From != nil {
		w.s(" FROM ")
		w.table(n.From)
	}
	if n.Where != nil {
		w.s(" WHERE ")
		w.expr(n.Where, 0)
	}
	if len(n.GroupBy) > 0 {
		w.s(" GROUP BY ")
		for i, e := range n.GroupBy {
			if i > 0 {
				w.s(", ")
			}
			// An expression starting with a call of a function named
			// ROLLUP or CUBE would read as the grouping construct.
			if f, ok := leftmost(e).(*FuncCall); ok && !f.NoParens && len(f.Name.Parts) == 1 && !f.Name.Parts[0].Quoted &&
				(strings.EqualFold(f.Name.Parts[0].Name, "ROLLUP") || strings.EqualFold(f.Name.Parts[0].Name, "CUBE")) {
				w.s("(")
				w.expr(e, 0)
				w.s(")")
				continue
			}
			w.expr(e, 0)
		}
	}
	if n.Having != nil {
		w.s(" HAVING ")
		w.expr(n.Having, 0)
	}
	for i, nw := range n.Windows {
		if i == 0 {
			w.s(" WINDOW ")
		} else {
			w.s(", ")
		}
		w.namedWindow(nw)
	}
}

func (w *writer) namedWindow(nw *NamedWindow) {
	w.s(nw.Name.String(), " AS ")
	w.windowSpec(nw.Spec)
}

func (w *writer) selectItem(it *SelectItem) {
	w.expr(it.Expr, 0)
	if it.Alias != nil {
		w.s(" AS ", it.Alias.String())
	}
}

func (w *writer) orderItems(items []*OrderItem) {
	for i, it := range items {
		if i > 0 {
			w.s(", ")
		}
		w.orderItem(it)
	}
}

func (w *writer) orderItem(it *OrderItem) {
	w.expr(it.Expr, 0)
	if it.Desc {
		w.s(" DESC")
	}
	switch it.Nulls {
	case NullsFirst:
		w.s(" NULLS FIRST")
	case NullsLast:
		w.s(" NULLS LAST")
	}
}

// ---------------------------------------------------------------------------
// FROM items

func (w *writer) table(t TableExpr) {
	switch n := t.(type) {
	case *TableRef:
		w.s(n.Name.String())
		w.hints(n.Hints)
		if n.SystemTime != nil {
			w.s(" FOR SYSTEM_TIME AS OF ")
			w.expr(n.SystemTime, precAdd)
		}
		w.alias(n.Alias, n.ColumnAliases)
	case *DerivedTable:
		if n.Lateral {
			w.s("LATERAL ")
		}
		w.s("(")
		w.query(n.Query)
		w.s(")")
		w.alias(n.Alias, n.ColumnAliases)
	case *TableFunc:
		if n.Lateral {
			w.s("LATERAL ")
		}
		w.s("TABLE(")
		w.expr(n.Call, 0)
		w.s(")")
		w.alias(n.Alias, n.ColumnAliases)
	case *WindowTVF:
		w.s("TABLE(", n.Kind.String(), "(")
		w.expr(n.Data, 0)
		w.s(", DESCRIPTOR(", identString(n.TimeCol), ")")
		var args []Expr
		switch n.Kind {
		case TumbleWindow:
			args = []Expr{n.Size, n.Offset}
		case HopWindow:
			args = []Expr{n.Slide, n.Size, n.Offset}
		case CumulateWindow:
			args = []Expr{n.Step, n.Size, n.Offset}
		case SessionWindow:
			args = []Expr{n.Gap}
		}
		for i, a := range args {
			if a == nil && i == len(args)-1 && n.Kind != SessionWindow {
				break // no offset
			}
			w.s(", ")
			w.expr(a, 0)
		}
		w.s("))")
		w.alias(n.Alias, n.ColumnAliases)
	case *Unnest:
		w.s("UNNEST(")
		w.exprs(n.Args)
		w.s(")")
		if n.WithOrdinality {
			w.s(" WITH ORDINALITY")
		}
		w.alias(n.Alias, n.ColumnAliases)
	case *Join:
		// Comma joins bind less tightly than JOIN; joins are left-deep.
		if l, ok := n.Left.(*Join); ok && l.Kind == CommaJoin && n.Kind != CommaJoin {
			w.s("(")
			w.table(l)
			w.s(")")
		} else {
			w.table(n.Left)
		}
		if n.Kind == CommaJoin {
			w.s(", ")
		} else {
			w.s(" ", n.Kind.String(), " ")
		}
		if r, ok := n.Right.(*Join); ok && (n.Kind != CommaJoin || r.Kind == CommaJoin) {
			w.s("(")
			w.table(r)
			w.s(")")
		} else {
			w.table(n.Right)
		}
		if n.On != nil {
			w.s(" ON ")
			w.expr(n.On, 0)
		}
		if len(n.Using) > 0 {
			w.s(" USING (")
			w.idents(n.Using)
			w.s(")")
		}
	}
}

func identString(id *Ident) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func (w *writer) alias(a *Ident, cols []*Ident) {
	if a == nil {
		return
	}
	w.s(" AS ", a.String())
	if len(cols) > 0 {
		w.s(" (")
		w.idents(cols)
		w.s(")")
	}
}

// ---------------------------------------------------------------------------
// Expressions

// exprPrec returns the precedence level of an expression's top operator.
func exprPrec(e Expr) int {
	switch n := e.(type) {
	case *Binary:
		switch n.Op {
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		case OpConcat, OpAdd, OpSub:
			return precAdd
		case OpMul, OpDiv, OpMod:
			return precMul
		}
		return precCmp
	case *Unary:
		if n.Op == OpNot {
			return precNot
		}
		return precUnary
	case *Is, *Between, *In, *Like:
		return precCmp
	}
	return precPrimary
}

func (w *writer) exprs(es []Expr) {
	for i, e := range es {
		if i > 0 {
			w.s(", ")
		}
		w.expr(e, 0)
	}
}

// expr writes e, in parentheses when its precedence is below minPrec.
func (w *writer) expr(e Expr, minPrec int) {
	if e == nil {
		w.s("<nil>")
		return
	}
	if exprPrec(e) < minPrec {
		w.s("(")
		w.exprInner(e)
		w.s(")")
		return
	}
	w.exprInner(e)
}

func (w *writer) exprInner(e Expr) {
	switch n := e.(type) {
	case *Ref:
		for i, p := range n.Parts {
			if i > 0 {
				w.s(".")
			}
			w.s(p.String())
		}
	case *Star:
		for _, q := range n.Qualifier {
			w.s(q.String(), ".")
		}
		w.s("*")
	case *Literal:
		w.literal(n)
	case *IntervalLit:
		w.s("INTERVAL ")
		if n.Negative {
			w.s("-")
		}
		w.s(quoteString(n.Value), " ", n.Qualifier.String())
	case *Unary:
		if n.Op == OpNot {
			w.s("NOT ")
			w.expr(n.Expr, precNot)
			return
		}
		w.s(n.Op.String())
		if u, ok := n.Expr.(*Unary); ok && u.Op != OpNot {
			// "- -a", never "--a" (a comment) nor "-(-a)", which nests
			// deeper than the input may have.
			w.s(" ")
		}
		w.expr(n.Expr, precUnary)
	case *Binary:
		prec := exprPrec(n)
		w.expr(n.Left, prec)
		w.s(" ", n.Op.String(), " ")
		w.expr(n.Right, prec+1)
	case *Is:
		w.expr(n.Expr, precCmp)
		w.s(" IS ")
		if n.Not {
			w.s("NOT ")
		}
		w.s(n.Test.String())
	case *Between:
		w.expr(n.Expr, precCmp)
		if n.Not {
			w.s(" NOT")
		}
		w.s(" BETWEEN ")
		if n.Symmetric {
			w.s("SYMMETRIC ")
		}
		w.expr(n.Low, precAdd)
		w.s(" AND ")
		w.expr(n.High, precAdd)
	case *In:
		w.expr(n.Expr, precCmp)
		if n.Not {
			w.s(" NOT")
		}
		w.s(" IN (")
		if n.Query != nil {
			w.query(n.Query)
		} else {
			w.exprs(n.List)
		}
		w.s(")")
	case *Like:
		w.expr(n.Expr, precCmp)
		if n.Not {
			w.s(" NOT")
		}
		if n.Similar {
			w.s(" SIMILAR TO ")
		} else {
			w.s(" LIKE ")
		}
		w.expr(n.Pattern, precAdd)
		if n.Escape != nil {
			w.s(" ESCAPE ")
			w.expr(n.Escape, precAdd)
		}
	case *Exists:
		w.s("EXISTS (")
		w.query(n.Query)
		w.s(")")
	case *Subquery:
		w.s("(")
		w.query(n.Query)
		w.s(")")
	case *Case:
		w.s("CASE")
		if n.Operand != nil {
			w.s(" ")
			w.expr(n.Operand, 0)
		}
		for _, wh := range n.Whens {
			w.s(" ")
			w.node(wh)
		}
		if n.Else != nil {
			w.s(" ELSE ")
			w.expr(n.Else, 0)
		}
		w.s(" END")
	case *Cast:
		if n.Try {
			w.s("TRY_CAST(")
		} else {
			w.s("CAST(")
		}
		w.expr(n.Expr, 0)
		w.s(" AS ")
		w.dataType(n.Type)
		w.s(")")
	case *FuncCall:
		w.funcCall(n)
	case *Trim:
		w.s("TRIM(")
		if n.Mode != TrimBoth || n.Chars != nil {
			w.s(n.Mode.String(), " ")
			if n.Chars != nil {
				w.expr(n.Chars, 0)
				w.s(" ")
			}
			w.s("FROM ")
		}
		w.expr(n.Expr, 0)
		w.s(")")
	case *TimeUnitArg:
		w.s(n.Unit.String())
	case *NamedArg:
		w.s(n.Name.String(), " => ")
		w.expr(n.Value, 0)
	case *Descriptor:
		w.s("DESCRIPTOR(")
		w.idents(n.Columns)
		w.s(")")
	case *TableArg:
		w.s("TABLE ")
		if n.Query != nil {
			w.s("(")
			w.query(n.Query)
			w.s(")")
		} else if n.Name != nil {
			w.s(n.Name.String())
		}
		if len(n.PartitionBy) > 0 {
			w.s(" PARTITION BY (")
			w.exprs(n.PartitionBy)
			w.s(")")
		}
	case *FieldAccess:
		// A number before the dot would absorb it ("1.x"): parenthesise.
		if l, ok := n.Expr.(*Literal); ok && (l.Kind == LitInteger || l.Kind == LitDecimal || l.Kind == LitFloat) {
			w.s("(")
			w.exprInner(l)
			w.s(")")
		} else {
			w.expr(n.Expr, precPrimary)
		}
		w.s(".", n.Field.String())
	case *Index:
		// ARRAY[1] and MAP['k'] would read as constructors.
		if r, ok := n.Expr.(*Ref); ok && len(r.Parts) == 1 && !r.Parts[0].Quoted &&
			(strings.EqualFold(r.Parts[0].Name, "ARRAY") || strings.EqualFold(r.Parts[0].Name, "MAP")) {
			w.s("(")
			w.exprInner(r)
			w.s(")")
		} else {
			w.expr(n.Expr, precPrimary)
		}
		w.s("[")
		w.expr(n.Index, 0)
		w.s("]")
	case *Constructor:
		switch n.Kind {
		case RowCtor:
			w.s("ROW(")
			w.exprs(n.Args)
			w.s(")")
		default:
			w.s(n.Kind.String(), "[")
			w.exprs(n.Args)
			w.s("]")
		}
	case *GroupingSet:
		w.s(n.Kind.String(), " (")
		for i, set := range n.Sets {
			if i > 0 {
				w.s(", ")
			}
			w.s("(")
			w.exprs(set)
			w.s(")")
		}
		w.s(")")
	}
}

func (w *writer) literal(l *Literal) {
	switch l.Kind {
	case LitNull:
		w.s("NULL")
	case LitBool:
		if l.Bool() {
			w.s("TRUE")
		} else {
			w.s("FALSE")
		}
	case LitUnknown:
		w.s("UNKNOWN")
	case LitInteger, LitDecimal, LitFloat:
		w.s(l.Value)
	case LitString:
		w.s(quoteString(l.Value))
	case LitBinary:
		w.s("X'", l.Value, "'")
	case LitDate:
		w.s("DATE ", quoteString(l.Value))
	case LitTime:
		w.s("TIME ", quoteString(l.Value))
	case LitTimestamp:
		w.s("TIMESTAMP ", quoteString(l.Value))
	default:
		w.s("<literal kind ", strconv.Itoa(int(l.Kind)), ">")
	}
}

func (w *writer) funcCall(f *FuncCall) {
	name := f.Name.String()
	if f.NoParens {
		w.s(name)
		return
	}
	plain := len(f.Name.Parts) == 1 && !f.Name.Parts[0].Quoted && !f.Star && !f.Distinct &&
		f.Filter == nil && f.Over == nil
	for _, a := range f.Args {
		switch a.(type) {
		case *NamedArg, *TableArg: // only in the comma form
			plain = false
		}
	}
	up := ""
	if plain {
		up = strings.ToUpper(f.Name.Parts[0].Name)
	}
	a := f.Args
	unitAt := func(i int) bool {
		_, ok := a[i].(*TimeUnitArg)
		return ok
	}
	switch {
	case up == "EXTRACT" && len(a) == 2 && unitAt(0):
		w.s(name, "(")
		w.expr(a[0], 0)
		w.s(" FROM ")
		w.expr(a[1], 0)
		w.s(")")
		return
	case up == "POSITION" && (len(a) == 2 || len(a) == 3):
		w.s(name, "(")
		w.expr(a[0], precAdd)
		w.s(" IN ")
		w.expr(a[1], 0)
		if len(a) == 3 {
			w.s(" FROM ")
			w.expr(a[2], 0)
		}
		w.s(")")
		return
	case up == "OVERLAY" && (len(a) == 3 || len(a) == 4):
		w.s(name, "(")
		w.expr(a[0], 0)
		w.s(" PLACING ")
		w.expr(a[1], 0)
		w.s(" FROM ")
		w.expr(a[2], 0)
		if len(a) == 4 {
			w.s(" FOR ")
			w.expr(a[3], 0)
		}
		w.s(")")
		return
	case (up == "FLOOR" || up == "CEIL" || up == "CEILING") && len(a) == 2 && unitAt(1):
		w.s(name, "(")
		if endsWithOpenInterval(a[0]) {
			// INTERVAL '1' DAY TO HOUR would read as one interval.
			w.s("(")
			w.expr(a[0], 0)
			w.s(")")
		} else {
			w.expr(a[0], 0)
		}
		w.s(" TO ")
		w.expr(a[1], 0)
		w.s(")")
		return
	}
	w.s(name, "(")
	switch {
	case f.Star:
		w.s("*")
	case (up == "TIMESTAMPADD" || up == "TIMESTAMPDIFF") && len(a) > 0 && isUnitRef(a[0]):
		// A column named like a unit would read as the unit.
		w.s("(")
		w.expr(a[0], 0)
		w.s(")")
		for _, e := range a[1:] {
			w.s(", ")
			w.expr(e, 0)
		}
	case len(a) > 0 && !f.Distinct && len(f.Name.Parts) == 1 && !f.Name.Parts[0].Quoted &&
		strings.EqualFold(f.Name.Parts[0].Name, "POSITION"):
		// A first argument starting "x IN" would read as POSITION(x IN
		// b); one starting with NOT does not parse there.
		if leadingInOrNot(a[0]) {
			w.s("(")
			w.expr(a[0], 0)
			w.s(")")
		} else {
			w.expr(a[0], 0)
		}
		for _, e := range a[1:] {
			w.s(", ")
			w.expr(e, 0)
		}
	default:
		if f.Distinct {
			w.s("DISTINCT ")
		}
		w.exprs(a)
	}
	w.s(")")
	if f.Filter != nil {
		w.s(" FILTER (WHERE ")
		w.expr(f.Filter, 0)
		w.s(")")
	}
	if f.Over != nil {
		w.s(" OVER ")
		w.windowSpec(f.Over)
	}
}

// windowSpec writes (PARTITION BY ... ORDER BY ... frame), or the name
// alone for OVER name.
func (w *writer) windowSpec(ws *WindowSpec) {
	if ws.Name != nil {
		w.s(ws.Name.String())
		return
	}
	w.s("(")
	sep := ""
	if len(ws.PartitionBy) > 0 {
		w.s("PARTITION BY ")
		w.exprs(ws.PartitionBy)
		sep = " "
	}
	if len(ws.OrderBy) > 0 {
		w.s(sep, "ORDER BY ")
		w.orderItems(ws.OrderBy)
		sep = " "
	}
	if ws.Frame != nil {
		w.s(sep)
		w.frame(ws.Frame)
	}
	w.s(")")
}

func (w *writer) frame(fr *WindowFrame) {
	w.s(fr.Unit.String(), " ")
	if fr.End != nil {
		w.s("BETWEEN ")
		w.bound(fr.Start)
		w.s(" AND ")
		w.bound(fr.End)
		return
	}
	w.bound(fr.Start)
}

func (w *writer) bound(b *FrameBound) {
	if b == nil {
		return
	}
	switch b.Kind {
	case UnboundedPreceding:
		w.s("UNBOUNDED PRECEDING")
	case UnboundedFollowing:
		w.s("UNBOUNDED FOLLOWING")
	case CurrentRow:
		w.s("CURRENT ROW")
	case Preceding, Following:
		// A column named UNBOUNDED would read as the keyword.
		if r, ok := b.Offset.(*Ref); ok && len(r.Parts) == 1 && !r.Parts[0].Quoted && strings.EqualFold(r.Parts[0].Name, "UNBOUNDED") {
			w.s("(")
			w.exprInner(r)
			w.s(")")
		} else {
			w.expr(b.Offset, precAdd)
		}
		if b.Kind == Preceding {
			w.s(" PRECEDING")
		} else {
			w.s(" FOLLOWING")
		}
	}
}

// leftmost returns the operand e starts with when printed without
// parentheses: a for a + b, x for x IS NULL or x.f.
func leftmost(e Expr) Expr {
	for {
		switch n := e.(type) {
		case *Binary:
			e = n.Left
		case *Is:
			e = n.Expr
		case *Between:
			e = n.Expr
		case *In:
			e = n.Expr
		case *Like:
			e = n.Expr
		case *FieldAccess:
			e = n.Expr
		case *Index:
			e = n.Expr
		default:
			return e
		}
	}
}

// leadingInOrNot reports whether e, printed, starts with an additive
// operand followed by IN, or with NOT.
func leadingInOrNot(e Expr) bool {
	for {
		switch n := e.(type) {
		case *Binary:
			if exprPrec(n) >= precAdd {
				return false
			}
			e = n.Left
		case *Is:
			e = n.Expr
		case *Between:
			e = n.Expr
		case *Like:
			e = n.Expr
		case *In:
			if !n.Not && exprPrec(n.Expr) >= precAdd {
				return true
			}
			e = n.Expr
		case *Unary:
			return n.Op == OpNot
		default:
			return false
		}
	}
}

// endsWithOpenInterval reports whether e, printed, ends with an interval
// literal of a single unit, which a following "TO unit" would extend.
func endsWithOpenInterval(e Expr) bool {
	for {
		switch n := e.(type) {
		case *IntervalLit:
			return n.Qualifier.End == UnitNone
		case *Binary:
			e = n.Right
		case *Unary:
			e = n.Expr
		case *Between:
			e = n.High
		case *Like:
			if n.Escape != nil {
				e = n.Escape
			} else {
				e = n.Pattern
			}
		default:
			return false
		}
	}
}

// isUnitRef reports whether e is an unquoted one-part column reference
// spelled like a time unit.
func isUnitRef(e Expr) bool {
	r, ok := e.(*Ref)
	if !ok || len(r.Parts) != 1 || r.Parts[0].Quoted {
		return false
	}
	_, unit := timeUnitWords[strings.ToUpper(r.Parts[0].Name)]
	return unit
}

// ---------------------------------------------------------------------------
// Types

func (w *writer) dataType(dt *DataType) {
	if dt == nil {
		w.s("<nil>")
		return
	}
	switch dt.Name {
	case "ROW":
		w.s("ROW<")
		for i, f := range dt.Fields {
			if i > 0 {
				w.s(", ")
			}
			w.rowField(f)
		}
		w.s(">")
	case "ARRAY", "MULTISET", "MAP":
		w.s(dt.Name, "<")
		for i, e := range dt.Elems {
			if i > 0 {
				w.s(", ")
			}
			w.dataType(e)
		}
		w.s(">")
	default:
		w.s(dt.Name)
		if len(dt.Params) > 0 {
			w.s("(")
			for i, p := range dt.Params {
				if i > 0 {
					w.s(", ")
				}
				w.s(strconv.Itoa(p))
			}
			w.s(")")
		}
	}
	if dt.NotNull {
		w.s(" NOT NULL")
	}
}

func (w *writer) rowField(f *RowField) {
	w.s(f.Name.String(), " ")
	w.dataType(f.Type)
	if f.Comment != "" {
		w.s(" ", quoteString(f.Comment))
	}
}
