package sql

import (
	"strconv"
	"strings"
)

// Pos is a position in a script: a 1-based line and a 1-based column that
// counts runes (a tab is one column). The zero Pos is "no position".
type Pos struct{ Line, Col int }

// String returns "line:col".
func (p Pos) String() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) }

// IsValid reports whether p is a position (not the zero Pos).
func (p Pos) IsValid() bool { return p.Line > 0 }

// Node is any node of the syntax tree. Every node records the position of
// its first token; for an operator (a + b, x IN (...)) that is the first
// token of its left operand.
type Node interface {
	Position() Pos
}

// Statement is a statement of a script: *CreateTable, *CreateView, *Set,
// *Reset, *Insert, *StatementSet, *Drop, *CreateFunction or *Query.
type Statement interface {
	Node
	statementNode()
}

// Expr is a scalar expression. See the types implementing exprNode.
type Expr interface {
	Node
	exprNode()
}

// TableExpr is an item of a FROM clause: *TableRef, *DerivedTable,
// *TableFunc, *WindowTVF, *Unnest or *Join.
type TableExpr interface {
	Node
	tableExprNode()
}

// QueryExpr is the body of a query: *Select, *SetOp, *Values, or a
// parenthesised *Query that has its own WITH, ORDER BY, LIMIT or OFFSET.
type QueryExpr interface {
	Node
	queryExprNode()
}

// ---------------------------------------------------------------------------
// Names

// Ident is an identifier as written: its spelling is kept (Flink names are
// case-sensitive), and whether it was quoted with backticks.
type Ident struct {
	Pos    Pos
	Name   string // without backticks, doubled backticks undone
	Quoted bool   // written as `name`
}

// String returns the identifier as SQL: backticked when it was quoted.
func (id *Ident) String() string {
	if id.Quoted {
		return "`" + strings.ReplaceAll(id.Name, "`", "``") + "`"
	}
	return id.Name
}

// ObjectName is a possibly qualified name of a table, view or function:
// name, db.name or catalog.db.name.
type ObjectName struct {
	Pos   Pos
	Parts []*Ident // at least one
}

// String returns the name as SQL, parts joined by dots.
func (n *ObjectName) String() string {
	s := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		s[i] = p.String()
	}
	return strings.Join(s, ".")
}

// Last returns the last part: the object's own name without qualifiers.
func (n *ObjectName) Last() *Ident { return n.Parts[len(n.Parts)-1] }

// ---------------------------------------------------------------------------
// Script and statements

// Script is a parsed script: its statements in order.
type Script struct {
	Pos        Pos // of the first statement (1:1 for an empty script)
	Statements []Statement
}

// CreateTable is CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (columns,
// watermark, primary key) [COMMENT '...'] [PARTITIONED BY (...)]
// [WITH (options)].
type CreateTable struct {
	Pos           Pos
	Temporary     bool
	IfNotExists   bool
	Name          *ObjectName
	Columns       []*ColumnDef // in declaration order
	Watermark     *Watermark   // nil without a WATERMARK clause
	PrimaryKey    *PrimaryKey  // nil without one; an inline key is moved here
	Comment       string       // table comment, "" without one
	PartitionedBy []*Ident     // PARTITIONED BY columns
	Options       []*Option    // the WITH options, in order
}

// ColumnKind says what kind of column a ColumnDef declares.
type ColumnKind int

const (
	// PhysicalColumn is name type: a column the connector reads or writes.
	PhysicalColumn ColumnKind = iota
	// ComputedColumn is name AS expr.
	ComputedColumn
	// MetadataColumn is name type METADATA [FROM 'key'] [VIRTUAL].
	MetadataColumn
)

// String returns "physical", "computed" or "metadata".
func (k ColumnKind) String() string {
	switch k {
	case PhysicalColumn:
		return "physical"
	case ComputedColumn:
		return "computed"
	case MetadataColumn:
		return "metadata"
	}
	return "ColumnKind(" + strconv.Itoa(int(k)) + ")"
}

// ColumnDef declares one column of a CREATE TABLE.
type ColumnDef struct {
	Pos         Pos
	Name        *Ident
	Kind        ColumnKind
	Type        *DataType // physical and metadata columns; nil for computed
	Expr        Expr      // computed columns; nil otherwise
	MetadataKey string    // METADATA FROM 'key'; "" means the column's name
	Virtual     bool      // METADATA ... VIRTUAL: read-only, not written by sinks
	Comment     string    // COMMENT '...', "" without one
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	Pos    Pos
	Column *Ident // the event-time (rowtime) column
	Expr   Expr   // the watermark strategy, e.g. ts - INTERVAL '5' SECOND
}

// PrimaryKey is [CONSTRAINT name] PRIMARY KEY (columns) NOT ENFORCED, either
// as a table constraint or written inline after a column's type. Flink only
// has NOT ENFORCED keys, so the parser requires it and the AST omits it.
type PrimaryKey struct {
	Pos     Pos
	Name    *Ident // the constraint name; nil without CONSTRAINT
	Columns []*Ident
}

// Option is one 'key' = 'value' pair of a WITH clause or a hint.
type Option struct {
	Pos   Pos
	Key   string
	Value string
}

// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(columns)]
// [COMMENT '...'] AS query.
type CreateView struct {
	Pos         Pos
	Temporary   bool
	IfNotExists bool
	Name        *ObjectName
	Columns     []*Ident // renames the query's columns; nil when not given
	Comment     string
	Query       *Query
}

// Set is SET 'key' = 'value'. The legacy unquoted form SET key = value is
// read as the same statement, with the key and value as written.
type Set struct {
	Pos   Pos
	Key   string
	Value string
}

// Reset is RESET ['key']; Key is "" for RESET of all keys.
type Reset struct {
	Pos Pos
	Key string
}

// Insert is INSERT { INTO | OVERWRITE } table [PARTITION (...)] [(columns)]
// query.
type Insert struct {
	Pos       Pos
	Overwrite bool // INSERT OVERWRITE
	Table     *ObjectName
	Hints     []*Hint           // /*+ OPTIONS(...) */ after the table name
	Partition []*PartitionValue // static partition values; nil without PARTITION
	Columns   []*Ident          // target columns; nil for all, in order
	Query     *Query            // SELECT ... or VALUES ...
}

// PartitionValue is column = value in INSERT ... PARTITION (...).
type PartitionValue struct {
	Pos    Pos
	Column *Ident
	Value  Expr // a literal
}

// StatementSet groups INSERT statements that run as one job: EXECUTE
// STATEMENT SET BEGIN ...; END, or BEGIN STATEMENT SET; ...; END.
type StatementSet struct {
	Pos     Pos
	Inserts []*Insert
}

// ObjectKind says what a DROP statement drops.
type ObjectKind int

const (
	// TableObject is DROP TABLE.
	TableObject ObjectKind = iota
	// ViewObject is DROP VIEW.
	ViewObject
	// FunctionObject is DROP FUNCTION.
	FunctionObject
)

// String returns "TABLE", "VIEW" or "FUNCTION".
func (k ObjectKind) String() string {
	switch k {
	case ViewObject:
		return "VIEW"
	case FunctionObject:
		return "FUNCTION"
	}
	return "TABLE"
}

// Drop is DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name, or DROP
// [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] name.
type Drop struct {
	Pos       Pos
	Kind      ObjectKind
	Temporary bool
	System    bool // DROP [TEMPORARY] SYSTEM FUNCTION
	IfExists  bool
	Name      *ObjectName
}

// CreateFunction is CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS]
// name AS 'identifier' [LANGUAGE JAVA|SCALA|PYTHON] [USING JAR 'path',
// ...], Flink's syntax. The identifier is a Java class name in Flink;
// weir binds the name to a built-in function the identifier names (see
// docs/sql.md, "CREATE FUNCTION").
type CreateFunction struct {
	Pos           Pos
	Temporary     bool
	System        bool
	IfNotExists   bool
	Name          *ObjectName
	Identifier    string   // the string after AS
	IdentifierPos Pos      // where it is written
	Language      string   // JAVA, SCALA or PYTHON; "" when not given
	Jars          []string // USING JAR paths; nil without USING
}

// ---------------------------------------------------------------------------
// Queries

// Query is a complete query: [WITH ...] body [ORDER BY ...] [LIMIT n]
// [OFFSET m]. As a statement it is a preview query (SELECT without INSERT).
//
// A query written in parentheses with nothing around it is the same as
// the query without them: the parser does not keep the parentheses.
type Query struct {
	Pos     Pos
	With    []*CTE // common table expressions, in order
	Body    QueryExpr
	OrderBy []*OrderItem
	Limit   Expr // LIMIT n or FETCH FIRST n ROWS ONLY; nil without
	Offset  Expr // OFFSET n; nil without
}

// CTE is one common table expression: name [(columns)] AS (query).
type CTE struct {
	Pos     Pos
	Name    *Ident
	Columns []*Ident // nil when not given
	Query   *Query
}

// Select is SELECT [DISTINCT] items [FROM ...] [WHERE ...] [GROUP BY ...]
// [HAVING ...].
type Select struct {
	Pos      Pos
	Hints    []*Hint // query hints: SELECT /*+ ... */
	Distinct bool
	Items    []*SelectItem
	From     TableExpr // nil for SELECT without FROM
	Where    Expr      // nil without WHERE
	GroupBy  []Expr    // expressions and *GroupingSet; nil without GROUP BY
	Having   Expr      // nil without HAVING
	// Windows is the WINDOW clause, WINDOW name AS (...) [, ...], after
	// HAVING; nil without. An OVER name of the select list (or of the
	// query's ORDER BY) refers to one of them; see WindowSpec.Name.
	Windows []*NamedWindow
}

// NamedWindow is one window of a WINDOW clause: name AS (window spec).
type NamedWindow struct {
	Pos  Pos
	Name *Ident
	Spec *WindowSpec
}

// SelectItem is one item of a select list: an expression with an optional
// alias, or a *Star.
type SelectItem struct {
	Pos   Pos
	Expr  Expr   // a *Star for * and t.*
	Alias *Ident // nil without alias
}

// SetOpKind is UNION, INTERSECT or EXCEPT.
type SetOpKind int

const (
	// Union is UNION.
	Union SetOpKind = iota
	// Intersect is INTERSECT.
	Intersect
	// Except is EXCEPT.
	Except
)

// String returns the operator's keyword.
func (k SetOpKind) String() string {
	switch k {
	case Intersect:
		return "INTERSECT"
	case Except:
		return "EXCEPT"
	}
	return "UNION"
}

// SetOp is left UNION|INTERSECT|EXCEPT [ALL] right. INTERSECT binds more
// tightly than UNION and EXCEPT; all are left-associative.
type SetOp struct {
	Pos   Pos // of the left operand
	OpPos Pos // of the operator keyword
	Op    SetOpKind
	All   bool
	Left  QueryExpr
	Right QueryExpr
}

// Values is VALUES (row), (row), ...
type Values struct {
	Pos  Pos
	Rows [][]Expr
}

// NullOrder says where an ORDER BY item puts nulls.
type NullOrder int

const (
	// NullsDefault is no NULLS clause.
	NullsDefault NullOrder = iota
	// NullsFirst is NULLS FIRST.
	NullsFirst
	// NullsLast is NULLS LAST.
	NullsLast
)

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	Pos   Pos
	Expr  Expr
	Desc  bool
	Nulls NullOrder
}

// GroupingKind says which grouping-set construct a GroupingSet is.
type GroupingKind int

const (
	// GroupingSets is GROUPING SETS (...).
	GroupingSets GroupingKind = iota
	// Rollup is ROLLUP (...).
	Rollup
	// Cube is CUBE (...).
	Cube
)

// String returns the construct's keywords.
func (k GroupingKind) String() string {
	switch k {
	case Rollup:
		return "ROLLUP"
	case Cube:
		return "CUBE"
	}
	return "GROUPING SETS"
}

// GroupingSet is GROUPING SETS, ROLLUP or CUBE in a GROUP BY clause (and
// only there). Sets holds its elements; each is a list of expressions
// (one for a plain expression, several for (a, b), none for ()). A bare ()
// in GROUP BY is GROUPING SETS (()).
type GroupingSet struct {
	Pos  Pos
	Kind GroupingKind
	Sets [][]Expr
}

// ---------------------------------------------------------------------------
// FROM items

// TableRef is a table or view named in FROM: name [/*+ hints */]
// [FOR SYSTEM_TIME AS OF expr] [[AS] alias [(columns)]].
type TableRef struct {
	Pos           Pos
	Name          *ObjectName
	Hints         []*Hint
	SystemTime    Expr   // FOR SYSTEM_TIME AS OF expr (temporal join); nil without
	Alias         *Ident // nil without alias
	ColumnAliases []*Ident
}

// DerivedTable is a subquery in FROM: [LATERAL] (query) [AS] alias
// [(columns)].
type DerivedTable struct {
	Pos           Pos
	Lateral       bool
	Query         *Query
	Alias         *Ident // nil without alias
	ColumnAliases []*Ident
}

// TableFunc is a call of a table function in FROM: [LATERAL] TABLE(f(args))
// [AS] alias [(columns)]. The window functions TUMBLE, HOP, CUMULATE and
// SESSION are parsed as *WindowTVF instead.
type TableFunc struct {
	Pos           Pos
	Lateral       bool
	Call          *FuncCall
	Alias         *Ident
	ColumnAliases []*Ident
}

// WindowKind is the kind of a windowing table-valued function.
type WindowKind int

const (
	// TumbleWindow is TUMBLE(data, timecol, size [, offset]).
	TumbleWindow WindowKind = iota
	// HopWindow is HOP(data, timecol, slide, size [, offset]).
	HopWindow
	// CumulateWindow is CUMULATE(data, timecol, step, size [, offset]).
	CumulateWindow
	// SessionWindow is SESSION(data [PARTITION BY keys], timecol, gap).
	SessionWindow
)

// String returns the function's name.
func (k WindowKind) String() string {
	switch k {
	case HopWindow:
		return "HOP"
	case CumulateWindow:
		return "CUMULATE"
	case SessionWindow:
		return "SESSION"
	}
	return "TUMBLE"
}

// WindowTVF is a windowing table-valued function in FROM:
// TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) and the
// like. Positional and named arguments (DATA => ..., TIMECOL => ..., SIZE
// => ...) give the same node. The fields a kind does not take are nil.
type WindowTVF struct {
	Pos           Pos // of the TABLE keyword
	Kind          WindowKind
	Data          *TableArg // the windowed table; for SESSION with PartitionBy
	TimeCol       *Ident    // DESCRIPTOR(column)
	Size          Expr      // TUMBLE, HOP, CUMULATE
	Slide         Expr      // HOP
	Step          Expr      // CUMULATE
	Gap           Expr      // SESSION
	Offset        Expr      // TUMBLE, HOP, CUMULATE; nil without
	Alias         *Ident
	ColumnAliases []*Ident
}

// Unnest is UNNEST(array, ...) [WITH ORDINALITY] [AS] alias [(columns)].
type Unnest struct {
	Pos            Pos
	Args           []Expr
	WithOrdinality bool
	Alias          *Ident
	ColumnAliases  []*Ident
}

// JoinKind is the kind of a join.
type JoinKind int

const (
	// InnerJoin is [INNER] JOIN.
	InnerJoin JoinKind = iota
	// LeftJoin is LEFT [OUTER] JOIN.
	LeftJoin
	// RightJoin is RIGHT [OUTER] JOIN.
	RightJoin
	// FullJoin is FULL [OUTER] JOIN.
	FullJoin
	// CrossJoin is CROSS JOIN.
	CrossJoin
	// CommaJoin is a comma between FROM items: a cross join that binds
	// less tightly than the JOIN keywords.
	CommaJoin
)

// String returns the join's keywords ("," for CommaJoin).
func (k JoinKind) String() string {
	switch k {
	case LeftJoin:
		return "LEFT JOIN"
	case RightJoin:
		return "RIGHT JOIN"
	case FullJoin:
		return "FULL JOIN"
	case CrossJoin:
		return "CROSS JOIN"
	case CommaJoin:
		return ","
	}
	return "JOIN"
}

// Join is left JOIN right [ON cond | USING (columns)]. Joins are
// left-deep: a JOIN b JOIN c is (a JOIN b) JOIN c.
type Join struct {
	Pos   Pos // of the left operand
	Kind  JoinKind
	Left  TableExpr
	Right TableExpr
	On    Expr     // nil for CROSS, comma and USING joins
	Using []*Ident // nil without USING
}

// ---------------------------------------------------------------------------
// Expressions

// Ref is a column reference: a, t.a, t.a.b or cat.db.t.a. The parser does
// not decide which parts name a table and which a (nested) field: that is
// the planner's job.
type Ref struct {
	Pos   Pos
	Parts []*Ident
}

// Star is * or t.* in a select list.
type Star struct {
	Pos       Pos
	Qualifier []*Ident // nil for a bare *
}

// LitKind is the kind of a Literal.
type LitKind int

const (
	// LitNull is NULL.
	LitNull LitKind = iota
	// LitBool is TRUE or FALSE; Value is "TRUE" or "FALSE".
	LitBool
	// LitUnknown is UNKNOWN (a null boolean).
	LitUnknown
	// LitInteger is an integer: 123.
	LitInteger
	// LitDecimal is an exact number with a point: 1.5, .5, 1.
	LitDecimal
	// LitFloat is an approximate number with an exponent: 1e3, 1.5E-2.
	LitFloat
	// LitString is a character string: 'it''s' has Value "it's".
	LitString
	// LitBinary is a binary string X'0FA3'; Value holds the hex digits.
	LitBinary
	// LitDate is DATE 'yyyy-mm-dd'.
	LitDate
	// LitTime is TIME 'hh:mm:ss[.fff]'.
	LitTime
	// LitTimestamp is TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.fff]'.
	LitTimestamp
)

// Literal is a literal value. Numbers keep their source text in Value
// (without sign: -1 is a Unary minus of 1); strings hold their contents.
type Literal struct {
	Pos   Pos
	Kind  LitKind
	Value string
}

// Bool returns the value of a LitBool literal.
func (l *Literal) Bool() bool { return l.Kind == LitBool && l.Value == "TRUE" }

// IntervalLit is an interval literal: INTERVAL [-]'value' qualifier, e.g.
// INTERVAL '10' SECOND, INTERVAL '1:30' MINUTE TO SECOND. Value is the
// string as written; Duration and Months convert it.
type IntervalLit struct {
	Pos       Pos
	Negative  bool // INTERVAL -'1' DAY
	Value     string
	Qualifier IntervalQualifier
}

// IntervalQualifier is the unit part of an interval: Start [(p [, f])]
// [TO End [(f)]].
type IntervalQualifier struct {
	Start          TimeUnit
	StartPrecision []int    // (p) or (p, f) after Start; nil when not written
	End            TimeUnit // UnitNone unless "Start TO End"
	EndPrecision   []int    // (f) after End; nil when not written
}

// YearMonth reports whether the qualifier is a year-month interval (YEAR,
// QUARTER, MONTH, YEAR TO MONTH), which has no fixed duration.
func (q IntervalQualifier) YearMonth() bool {
	switch q.Start {
	case UnitYear, UnitQuarter, UnitMonth:
		return true
	}
	return false
}

// TimeUnit is a unit of time in intervals and in EXTRACT, FLOOR/CEIL ... TO,
// TIMESTAMPADD and TIMESTAMPDIFF.
type TimeUnit int

// The time units. Intervals use YEAR to MILLISECOND; the others are for
// EXTRACT.
const (
	UnitNone TimeUnit = iota
	UnitYear
	UnitQuarter
	UnitMonth
	UnitWeek
	UnitDay
	UnitHour
	UnitMinute
	UnitSecond
	UnitMillisecond
	UnitMicrosecond
	UnitNanosecond
	UnitDOW
	UnitDOY
	UnitISODOW
	UnitISOYear
	UnitEpoch
	UnitDecade
	UnitCentury
	UnitMillennium
)

var timeUnitNames = [...]string{
	UnitNone: "", UnitYear: "YEAR", UnitQuarter: "QUARTER", UnitMonth: "MONTH",
	UnitWeek: "WEEK", UnitDay: "DAY", UnitHour: "HOUR", UnitMinute: "MINUTE",
	UnitSecond: "SECOND", UnitMillisecond: "MILLISECOND",
	UnitMicrosecond: "MICROSECOND", UnitNanosecond: "NANOSECOND",
	UnitDOW: "DOW", UnitDOY: "DOY", UnitISODOW: "ISODOW", UnitISOYear: "ISOYEAR",
	UnitEpoch: "EPOCH", UnitDecade: "DECADE", UnitCentury: "CENTURY",
	UnitMillennium: "MILLENNIUM",
}

// String returns the unit's keyword ("" for UnitNone).
func (u TimeUnit) String() string {
	if u >= 0 && int(u) < len(timeUnitNames) {
		return timeUnitNames[u]
	}
	return "TimeUnit(" + strconv.Itoa(int(u)) + ")"
}

// UnaryOp is a prefix operator.
type UnaryOp int

const (
	// OpNeg is unary minus.
	OpNeg UnaryOp = iota
	// OpPlus is unary plus.
	OpPlus
	// OpNot is NOT.
	OpNot
)

// String returns the operator as written.
func (op UnaryOp) String() string {
	switch op {
	case OpPlus:
		return "+"
	case OpNot:
		return "NOT"
	}
	return "-"
}

// Unary is a prefix operator applied to an expression: -x, +x, NOT x.
type Unary struct {
	Pos  Pos
	Op   UnaryOp
	Expr Expr
}

// BinaryOp is an infix operator.
type BinaryOp int

// The infix operators, from the loosest binding to the tightest: OR; AND;
// the comparisons; || + -; * / %.
const (
	OpOr BinaryOp = iota
	OpAnd
	OpEq                // =
	OpNe                // <> or !=
	OpLt                // <
	OpLe                // <=
	OpGt                // >
	OpGe                // >=
	OpIsDistinctFrom    // IS DISTINCT FROM
	OpIsNotDistinctFrom // IS NOT DISTINCT FROM
	OpConcat            // ||
	OpAdd               // +
	OpSub               // -
	OpMul               // *
	OpDiv               // /
	OpMod               // %
)

var binaryOpNames = [...]string{
	OpOr: "OR", OpAnd: "AND", OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=",
	OpGt: ">", OpGe: ">=", OpIsDistinctFrom: "IS DISTINCT FROM",
	OpIsNotDistinctFrom: "IS NOT DISTINCT FROM", OpConcat: "||", OpAdd: "+",
	OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%",
}

// String returns the operator as SQL (<> for both <> and !=).
func (op BinaryOp) String() string {
	if op >= 0 && int(op) < len(binaryOpNames) {
		return binaryOpNames[op]
	}
	return "BinaryOp(" + strconv.Itoa(int(op)) + ")"
}

// Binary is left op right.
type Binary struct {
	Pos   Pos // of the left operand
	OpPos Pos // of the operator
	Op    BinaryOp
	Left  Expr
	Right Expr
}

// IsTest is what an IS predicate tests.
type IsTest int

const (
	// IsNull is IS [NOT] NULL.
	IsNull IsTest = iota
	// IsTrue is IS [NOT] TRUE.
	IsTrue
	// IsFalse is IS [NOT] FALSE.
	IsFalse
	// IsUnknown is IS [NOT] UNKNOWN.
	IsUnknown
)

// String returns the tested keyword.
func (t IsTest) String() string {
	switch t {
	case IsTrue:
		return "TRUE"
	case IsFalse:
		return "FALSE"
	case IsUnknown:
		return "UNKNOWN"
	}
	return "NULL"
}

// Is is expr IS [NOT] NULL|TRUE|FALSE|UNKNOWN.
type Is struct {
	Pos  Pos
	Expr Expr
	Not  bool
	Test IsTest
}

// Between is expr [NOT] BETWEEN [ASYMMETRIC|SYMMETRIC] low AND high.
type Between struct {
	Pos       Pos
	Expr      Expr
	Not       bool
	Symmetric bool
	Low       Expr
	High      Expr
}

// In is expr [NOT] IN (list) or expr [NOT] IN (query); exactly one of List
// and Query is set.
type In struct {
	Pos   Pos
	Expr  Expr
	Not   bool
	List  []Expr
	Query *Query
}

// Like is expr [NOT] LIKE pattern [ESCAPE e], or SIMILAR TO when Similar.
type Like struct {
	Pos     Pos
	Expr    Expr
	Not     bool
	Similar bool
	Pattern Expr
	Escape  Expr // nil without ESCAPE
}

// Exists is EXISTS (query).
type Exists struct {
	Pos   Pos
	Query *Query
}

// Subquery is a scalar subquery: (query) used as an expression.
type Subquery struct {
	Pos   Pos
	Query *Query
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END. With an operand
// (a simple CASE) each When's Cond is a value compared with the operand;
// without, each Cond is a boolean condition.
type Case struct {
	Pos     Pos
	Operand Expr // nil for a searched CASE
	Whens   []*When
	Else    Expr // nil without ELSE
}

// When is one WHEN cond THEN result of a CASE.
type When struct {
	Pos    Pos
	Cond   Expr
	Result Expr
}

// Cast is CAST(expr AS type), or TRY_CAST when Try.
type Cast struct {
	Pos  Pos
	Try  bool
	Expr Expr
	Type *DataType
}

// FuncCall is a function call name(args), possibly an aggregate with
// DISTINCT and FILTER, or a window function with OVER.
//
// Functions with special argument syntax are calls too, with the arguments
// in this order: EXTRACT(unit FROM x) has Args [*TimeUnitArg, x];
// POSITION(a IN b) has [a, b]; SUBSTRING(s FROM a FOR b) has [s, a, b];
// OVERLAY(s PLACING r FROM a FOR b) has [s, r, a, b]; FLOOR(x TO unit) and
// CEIL(x TO unit) have [x, *TimeUnitArg]; TIMESTAMPADD(unit, n, t) and
// TIMESTAMPDIFF(unit, a, b) have a *TimeUnitArg first. Niladic functions
// written without parentheses (CURRENT_TIMESTAMP, CURRENT_DATE,
// CURRENT_TIME, LOCALTIMESTAMP, LOCALTIME) have NoParens.
type FuncCall struct {
	Pos      Pos
	Name     *ObjectName
	Args     []Expr // may hold *NamedArg, *TableArg, *Descriptor, *TimeUnitArg
	Star     bool   // COUNT(*)
	Distinct bool   // COUNT(DISTINCT x)
	NoParens bool   // CURRENT_TIMESTAMP, written without ()
	Filter   Expr   // FILTER (WHERE cond); nil without
	Over     *WindowSpec
}

// IsNamed reports whether the function's name is the unqualified name
// (compared case-insensitively).
func (f *FuncCall) IsNamed(name string) bool {
	return len(f.Name.Parts) == 1 && strings.EqualFold(f.Name.Parts[0].Name, name)
}

// TrimMode is the side TRIM removes characters from.
type TrimMode int

const (
	// TrimBoth is BOTH, the default.
	TrimBoth TrimMode = iota
	// TrimLeading is LEADING.
	TrimLeading
	// TrimTrailing is TRAILING.
	TrimTrailing
)

// String returns the mode's keyword.
func (m TrimMode) String() string {
	switch m {
	case TrimLeading:
		return "LEADING"
	case TrimTrailing:
		return "TRAILING"
	}
	return "BOTH"
}

// Trim is TRIM([BOTH|LEADING|TRAILING] [chars] FROM expr) or TRIM(expr).
type Trim struct {
	Pos   Pos
	Mode  TrimMode
	Chars Expr // nil: spaces
	Expr  Expr
}

// TimeUnitArg is a time unit used as a function argument (EXTRACT, FLOOR
// and CEIL ... TO, TIMESTAMPADD, TIMESTAMPDIFF).
type TimeUnitArg struct {
	Pos  Pos
	Unit TimeUnit
}

// NamedArg is a named function argument: name => value.
type NamedArg struct {
	Pos   Pos
	Name  *Ident
	Value Expr
}

// Descriptor is DESCRIPTOR(columns), naming columns of a table argument.
type Descriptor struct {
	Pos     Pos
	Columns []*Ident
}

// TableArg is a table passed to a function: TABLE name or TABLE (query),
// with PARTITION BY keys for SESSION windows. Exactly one of Name and
// Query is set.
type TableArg struct {
	Pos         Pos
	Name        *ObjectName
	Query       *Query
	PartitionBy []Expr
}

// FieldAccess is expr.field where expr is not a plain column reference
// (those are Refs): f(x).a, arr[1].a, (CAST(r AS ROW<a INT>)).a.
type FieldAccess struct {
	Pos   Pos
	Expr  Expr
	Field *Ident
}

// Index is expr[index]: an array element (1-based) or a map value.
type Index struct {
	Pos   Pos
	Expr  Expr
	Index Expr
}

// CtorKind is the kind of a value constructor.
type CtorKind int

const (
	// ArrayCtor is ARRAY[a, b, ...].
	ArrayCtor CtorKind = iota
	// MapCtor is MAP[k1, v1, k2, v2, ...].
	MapCtor
	// RowCtor is ROW(a, b, ...).
	RowCtor
)

// String returns the constructor's keyword.
func (k CtorKind) String() string {
	switch k {
	case MapCtor:
		return "MAP"
	case RowCtor:
		return "ROW"
	}
	return "ARRAY"
}

// Constructor builds a value: ARRAY[...], MAP[...] or ROW(...).
type Constructor struct {
	Pos  Pos
	Kind CtorKind
	Args []Expr
}

// WindowSpec is the window of OVER (PARTITION BY ... ORDER BY ... frame),
// or of OVER name, which refers to a window of the enclosing SELECT's
// WINDOW clause (Select.Windows).
type WindowSpec struct {
	Pos Pos
	// Name is set for OVER name. The parser resolves the reference: it
	// sets PartitionBy, OrderBy and Frame to the named window's (shared
	// with Select.Windows, not copied), so that planners read OVER name
	// and the inline OVER (...) alike; the formatter writes the name
	// alone. An undefined name is a parse error.
	Name        *Ident
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *WindowFrame // nil without ROWS/RANGE
}

// FrameUnit is ROWS or RANGE.
type FrameUnit int

const (
	// FrameRows is ROWS.
	FrameRows FrameUnit = iota
	// FrameRange is RANGE.
	FrameRange
)

// String returns the unit's keyword.
func (u FrameUnit) String() string {
	if u == FrameRange {
		return "RANGE"
	}
	return "ROWS"
}

// WindowFrame is ROWS|RANGE BETWEEN start AND end, or ROWS|RANGE start
// (End nil).
type WindowFrame struct {
	Pos   Pos
	Unit  FrameUnit
	Start *FrameBound
	End   *FrameBound // nil without BETWEEN
}

// BoundKind is the kind of a window frame bound.
type BoundKind int

const (
	// UnboundedPreceding is UNBOUNDED PRECEDING.
	UnboundedPreceding BoundKind = iota
	// Preceding is n PRECEDING.
	Preceding
	// CurrentRow is CURRENT ROW.
	CurrentRow
	// Following is n FOLLOWING.
	Following
	// UnboundedFollowing is UNBOUNDED FOLLOWING.
	UnboundedFollowing
)

// FrameBound is one bound of a window frame.
type FrameBound struct {
	Pos    Pos
	Kind   BoundKind
	Offset Expr // for Preceding and Following: a number or an interval
}

// Hint is one hint of a /*+ ... */ comment: NAME, NAME('k' = 'v', ...) or
// NAME(a, b, ...).
type Hint struct {
	Pos     Pos
	Name    *Ident
	Options []*Option // key-value form, e.g. OPTIONS('k' = 'v')
	Args    []*Ident  // list form, e.g. BROADCAST(t1, t2)
}

// ---------------------------------------------------------------------------
// Types

// DataType is a SQL data type. Name is the canonical upper-case name:
// BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, CHAR,
// VARCHAR, STRING, BINARY, VARBINARY, BYTES, DATE, TIME, TIMESTAMP,
// TIMESTAMP_LTZ, ROW, ARRAY, MAP or MULTISET. Synonyms are mapped to these:
// INTEGER to INT, REAL to FLOAT, DOUBLE PRECISION to DOUBLE, DEC and NUMERIC
// to DECIMAL, CHARACTER to CHAR, CHARACTER VARYING to VARCHAR, TIMESTAMP
// WITHOUT TIME ZONE to TIMESTAMP, TIMESTAMP WITH LOCAL TIME ZONE to
// TIMESTAMP_LTZ.
type DataType struct {
	Pos    Pos
	Name   string
	Params []int       // length, precision [, scale] as written; nil when omitted
	Fields []*RowField // ROW fields
	Elems  []*DataType // ARRAY and MULTISET: the element type; MAP: key and value
	// NotNull is true for NOT NULL; types are nullable by default.
	NotNull bool
}

// RowField is one field of a ROW type: name type ['description'].
type RowField struct {
	Pos     Pos
	Name    *Ident
	Type    *DataType
	Comment string
}

// ---------------------------------------------------------------------------
// Interface implementations

// Position returns the position of the Script.
func (n *Script) Position() Pos { return n.Pos }

// Position returns the position of the Ident.
func (n *Ident) Position() Pos { return n.Pos }

// Position returns the position of the ObjectName.
func (n *ObjectName) Position() Pos { return n.Pos }

// Position returns the position of the CreateTable.
func (n *CreateTable) Position() Pos { return n.Pos }

// Position returns the position of the ColumnDef.
func (n *ColumnDef) Position() Pos { return n.Pos }

// Position returns the position of the Watermark.
func (n *Watermark) Position() Pos { return n.Pos }

// Position returns the position of the PrimaryKey.
func (n *PrimaryKey) Position() Pos { return n.Pos }

// Position returns the position of the Option.
func (n *Option) Position() Pos { return n.Pos }

// Position returns the position of the CreateView.
func (n *CreateView) Position() Pos { return n.Pos }

// Position returns the position of the Set.
func (n *Set) Position() Pos { return n.Pos }

// Position returns the position of the Reset.
func (n *Reset) Position() Pos { return n.Pos }

// Position returns the position of the Insert.
func (n *Insert) Position() Pos { return n.Pos }

// Position returns the position of the PartitionValue.
func (n *PartitionValue) Position() Pos { return n.Pos }

// Position returns the position of the StatementSet.
func (n *StatementSet) Position() Pos { return n.Pos }

// Position returns the position of the Drop.
func (n *Drop) Position() Pos { return n.Pos }

// Position returns the position of the CreateFunction.
func (n *CreateFunction) Position() Pos { return n.Pos }

// Position returns the position of the Query.
func (n *Query) Position() Pos { return n.Pos }

// Position returns the position of the CTE.
func (n *CTE) Position() Pos { return n.Pos }

// Position returns the position of the Select.
func (n *Select) Position() Pos { return n.Pos }

// Position returns the position of the SelectItem.
func (n *SelectItem) Position() Pos { return n.Pos }

// Position returns the position of the SetOp.
func (n *SetOp) Position() Pos { return n.Pos }

// Position returns the position of the Values.
func (n *Values) Position() Pos { return n.Pos }

// Position returns the position of the OrderItem.
func (n *OrderItem) Position() Pos { return n.Pos }

// Position returns the position of the GroupingSet.
func (n *GroupingSet) Position() Pos { return n.Pos }

// Position returns the position of the TableRef.
func (n *TableRef) Position() Pos { return n.Pos }

// Position returns the position of the DerivedTable.
func (n *DerivedTable) Position() Pos { return n.Pos }

// Position returns the position of the TableFunc.
func (n *TableFunc) Position() Pos { return n.Pos }

// Position returns the position of the WindowTVF.
func (n *WindowTVF) Position() Pos { return n.Pos }

// Position returns the position of the Unnest.
func (n *Unnest) Position() Pos { return n.Pos }

// Position returns the position of the Join.
func (n *Join) Position() Pos { return n.Pos }

// Position returns the position of the Ref.
func (n *Ref) Position() Pos { return n.Pos }

// Position returns the position of the Star.
func (n *Star) Position() Pos { return n.Pos }

// Position returns the position of the Literal.
func (n *Literal) Position() Pos { return n.Pos }

// Position returns the position of the IntervalLit.
func (n *IntervalLit) Position() Pos { return n.Pos }

// Position returns the position of the Unary.
func (n *Unary) Position() Pos { return n.Pos }

// Position returns the position of the Binary.
func (n *Binary) Position() Pos { return n.Pos }

// Position returns the position of the Is.
func (n *Is) Position() Pos { return n.Pos }

// Position returns the position of the Between.
func (n *Between) Position() Pos { return n.Pos }

// Position returns the position of the In.
func (n *In) Position() Pos { return n.Pos }

// Position returns the position of the Like.
func (n *Like) Position() Pos { return n.Pos }

// Position returns the position of the Exists.
func (n *Exists) Position() Pos { return n.Pos }

// Position returns the position of the Subquery.
func (n *Subquery) Position() Pos { return n.Pos }

// Position returns the position of the Case.
func (n *Case) Position() Pos { return n.Pos }

// Position returns the position of the When.
func (n *When) Position() Pos { return n.Pos }

// Position returns the position of the Cast.
func (n *Cast) Position() Pos { return n.Pos }

// Position returns the position of the FuncCall.
func (n *FuncCall) Position() Pos { return n.Pos }

// Position returns the position of the Trim.
func (n *Trim) Position() Pos { return n.Pos }

// Position returns the position of the TimeUnitArg.
func (n *TimeUnitArg) Position() Pos { return n.Pos }

// Position returns the position of the NamedArg.
func (n *NamedArg) Position() Pos { return n.Pos }

// Position returns the position of the Descriptor.
func (n *Descriptor) Position() Pos { return n.Pos }

// Position returns the position of the TableArg.
func (n *TableArg) Position() Pos { return n.Pos }

// Position returns the position of the FieldAccess.
func (n *FieldAccess) Position() Pos { return n.Pos }

// Position returns the position of the Index.
func (n *Index) Position() Pos { return n.Pos }

// Position returns the position of the Constructor.
func (n *Constructor) Position() Pos { return n.Pos }

// Position returns the position of the WindowSpec.
func (n *WindowSpec) Position() Pos { return n.Pos }

// Position returns the position of the NamedWindow.
func (n *NamedWindow) Position() Pos { return n.Pos }

// Position returns the position of the WindowFrame.
func (n *WindowFrame) Position() Pos { return n.Pos }

// Position returns the position of the FrameBound.
func (n *FrameBound) Position() Pos { return n.Pos }

// Position returns the position of the Hint.
func (n *Hint) Position() Pos { return n.Pos }

// Position returns the position of the DataType.
func (n *DataType) Position() Pos { return n.Pos }

// Position returns the position of the RowField.
func (n *RowField) Position() Pos { return n.Pos }

func (*CreateTable) statementNode()    {}
func (*CreateView) statementNode()     {}
func (*Set) statementNode()            {}
func (*Reset) statementNode()          {}
func (*Insert) statementNode()         {}
func (*StatementSet) statementNode()   {}
func (*Drop) statementNode()           {}
func (*CreateFunction) statementNode() {}
func (*Query) statementNode()          {}

func (*Query) queryExprNode()  {}
func (*Select) queryExprNode() {}
func (*SetOp) queryExprNode()  {}
func (*Values) queryExprNode() {}

func (*TableRef) tableExprNode()     {}
func (*DerivedTable) tableExprNode() {}
func (*TableFunc) tableExprNode()    {}
func (*WindowTVF) tableExprNode()    {}
func (*Unnest) tableExprNode()       {}
func (*Join) tableExprNode()         {}

func (*Ref) exprNode()         {}
func (*Star) exprNode()        {}
func (*Literal) exprNode()     {}
func (*IntervalLit) exprNode() {}
func (*Unary) exprNode()       {}
func (*Binary) exprNode()      {}
func (*Is) exprNode()          {}
func (*Between) exprNode()     {}
func (*In) exprNode()          {}
func (*Like) exprNode()        {}
func (*Exists) exprNode()      {}
func (*Subquery) exprNode()    {}
func (*Case) exprNode()        {}
func (*Cast) exprNode()        {}
func (*FuncCall) exprNode()    {}
func (*Trim) exprNode()        {}
func (*TimeUnitArg) exprNode() {}
func (*NamedArg) exprNode()    {}
func (*Descriptor) exprNode()  {}
func (*TableArg) exprNode()    {}
func (*FieldAccess) exprNode() {}
func (*Index) exprNode()       {}
func (*Constructor) exprNode() {}
func (*GroupingSet) exprNode() {}
