package kernels

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Expr is a node of a scalar expression tree. Build trees with the
// constructors (Col, Lit, Add, Eq, And, Case, Cast, Like, Extract, ...) or by
// filling the node structs directly, then compile them against a schema
// with Compile, CompileFilter or CompileProjection.
//
// The node types are ColumnExpr, LiteralExpr, CallExpr, CastExpr and
// CaseExpr. Expr values are immutable once built and may be shared between
// trees and goroutines; compiled programs may not (see Program).
type Expr interface {
	// String renders the expression in SQL-like syntax, as error messages
	// quote it.
	String() string
	isExpr()
}

// ColumnExpr refers to a column of the input by name.
type ColumnExpr struct {
	Name string // column name in the schema the expression is compiled against
}

// LiteralExpr is a constant. Value is a Go value of the literal's type:
// bool, int32, int64, float64, string, []byte, time.Time (a timestamp),
// time.Duration (a duration), arrow.Timestamp, arrow.Date32 or nil for NULL.
// Type may be nil for every Value but nil; Lit chooses it.
type LiteralExpr struct {
	Value any
	Type  arrow.DataType
}

// CallExpr applies a function or operator, named as in FuncNames, to its
// arguments.
type CallExpr struct {
	Func string
	Args []Expr
}

// CastExpr converts its argument to another type. With Try set, a value
// that cannot be converted becomes NULL (SQL TRY_CAST) instead of failing
// the evaluation.
type CastExpr struct {
	Arg Expr
	To  arrow.DataType
	Try bool
}

// CaseExpr is a searched CASE: the value of the first When whose Cond is
// TRUE, else Else (NULL when Else is nil).
type CaseExpr struct {
	Whens []When
	Else  Expr
}

// When is one WHEN cond THEN value arm of a CaseExpr.
type When struct {
	Cond, Then Expr
}

func (*ColumnExpr) isExpr()  {}
func (*LiteralExpr) isExpr() {}
func (*CallExpr) isExpr()    {}
func (*CastExpr) isExpr()    {}
func (*CaseExpr) isExpr()    {}

// String implements Expr.
func (e *ColumnExpr) String() string { return e.Name }

// String implements Expr.
func (e *LiteralExpr) String() string {
	switch v := e.Value.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf("X'%x'", v)
	case time.Time:
		return "TIMESTAMP '" + v.UTC().Format("2006-01-02 15:04:05.999999999") + "'"
	case time.Duration:
		return "INTERVAL '" + v.String() + "'"
	case bool:
		if v {
			return "TRUE"
		}
		return "FALSE"
	default:
		return fmt.Sprint(v)
	}
}

// infix operators print as "a + b"; everything else as "f(a, b)".
var infixOps = map[string]string{
	"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
	"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
	"and": "AND", "or": "OR", "like": "LIKE", "concat": "||",
}

// String implements Expr.
func (e *CallExpr) String() string { return exprString(e) }

// String implements Expr.
func (e *CastExpr) String() string { return exprString(e) }

// String implements Expr.
func (e *CaseExpr) String() string { return exprString(e) }

// exprString renders e into one builder: the time and memory are linear
// in the length of the text. (Rendering each argument to a string of its
// own and joining them copied every subtree once per level above it:
// quadratic for a chain such as a + 1 + 1 + ...)
func exprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

// writeExpr appends e's String form to b.
func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *CallExpr:
		writeCall(b, e)
	case *CastExpr:
		if e.Try {
			b.WriteString("TRY_CAST(")
		} else {
			b.WriteString("CAST(")
		}
		writeExpr(b, e.Arg)
		b.WriteString(" AS ")
		if e.To != nil {
			b.WriteString(e.To.String())
		} else {
			b.WriteString("?")
		}
		b.WriteString(")")
	case *CaseExpr:
		b.WriteString("CASE")
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			writeExpr(b, w.Cond)
			b.WriteString(" THEN ")
			writeExpr(b, w.Then)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			writeExpr(b, e.Else)
		}
		b.WriteString(" END")
	case nil:
		b.WriteString("<nil>")
	default: // the leaves
		b.WriteString(e.String())
	}
}

// writeList appends args separated by sep.
func writeList(b *strings.Builder, args []Expr, sep string) {
	for i, a := range args {
		if i > 0 {
			b.WriteString(sep)
		}
		writeExpr(b, a)
	}
}

// writeCall appends a call: infix operators as (a op b), the predicates
// in their SQL syntax, other functions as f(a, b).
func writeCall(b *strings.Builder, e *CallExpr) {
	args := e.Args
	if op, ok := infixOps[e.Func]; ok && len(args) >= 2 && !(e.Func == "like" && len(args) > 2) {
		b.WriteString("(")
		writeList(b, args, " "+op+" ")
		b.WriteString(")")
		return
	}
	switch e.Func {
	case "not", "neg":
		if len(args) == 1 {
			if e.Func == "not" {
				b.WriteString("(NOT ")
			} else {
				b.WriteString("(-")
			}
			writeExpr(b, args[0])
			b.WriteString(")")
			return
		}
	case "is_null", "is_not_null":
		if len(args) == 1 {
			b.WriteString("(")
			writeExpr(b, args[0])
			b.WriteString(" " + strings.ToUpper(strings.ReplaceAll(e.Func, "_", " ")) + ")")
			return
		}
	case "between":
		if len(args) == 3 {
			b.WriteString("(")
			writeExpr(b, args[0])
			b.WriteString(" BETWEEN ")
			writeExpr(b, args[1])
			b.WriteString(" AND ")
			writeExpr(b, args[2])
			b.WriteString(")")
			return
		}
	case "in", "not_in":
		if len(args) >= 1 {
			b.WriteString("(")
			writeExpr(b, args[0])
			if e.Func == "not_in" {
				b.WriteString(" NOT IN (")
			} else {
				b.WriteString(" IN (")
			}
			writeList(b, args[1:], ", ")
			b.WriteString("))")
			return
		}
	}
	b.WriteString(e.Func)
	b.WriteString("(")
	writeList(b, args, ", ")
	b.WriteString(")")
}

// Col refers to the input column called name.
func Col(name string) Expr { return &ColumnExpr{Name: name} }

// Lit is a constant. Go ints become int64 literals, float32 and float64
// become float64, time.Time becomes a timestamp in microseconds (UTC) and
// time.Duration a duration in nanoseconds; other values keep their type
// (see LiteralExpr). Lit panics on a Go type it cannot represent, which
// is a programming error.
func Lit(v any) Expr {
	switch x := v.(type) {
	case nil:
		return &LiteralExpr{Type: arrow.Null}
	case bool:
		return &LiteralExpr{Value: x, Type: arrow.FixedWidthTypes.Boolean}
	case int:
		return &LiteralExpr{Value: int64(x), Type: arrow.PrimitiveTypes.Int64}
	case int32:
		return &LiteralExpr{Value: x, Type: arrow.PrimitiveTypes.Int32}
	case int64:
		return &LiteralExpr{Value: x, Type: arrow.PrimitiveTypes.Int64}
	case float32:
		return &LiteralExpr{Value: float64(x), Type: arrow.PrimitiveTypes.Float64}
	case float64:
		return &LiteralExpr{Value: x, Type: arrow.PrimitiveTypes.Float64}
	case string:
		return &LiteralExpr{Value: x, Type: arrow.BinaryTypes.String}
	case []byte:
		return &LiteralExpr{Value: x, Type: arrow.BinaryTypes.Binary}
	case time.Time:
		return &LiteralExpr{Value: arrow.Timestamp(x.UnixMicro()), Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}
	case time.Duration:
		return &LiteralExpr{Value: int64(x), Type: &arrow.DurationType{Unit: arrow.Nanosecond}}
	case arrow.Date32:
		return &LiteralExpr{Value: x, Type: arrow.FixedWidthTypes.Date32}
	}
	panic(fmt.Sprintf("kernels.Lit: unsupported Go type %T", v))
}

// Null is the NULL literal of type dt.
func Null(dt arrow.DataType) Expr { return &LiteralExpr{Type: dt} }

// Call applies the function or operator fn (see FuncNames) to args.
func Call(fn string, args ...Expr) Expr { return &CallExpr{Func: fn, Args: args} }

// Arithmetic. Integer results that overflow their type, and integer
// division or modulo by zero, fail the evaluation with an error naming the
// expression and row; floating point follows IEEE 754 (Inf, NaN).

// Add is a + b.
func Add(a, b Expr) Expr { return Call("add", a, b) }

// Sub is a - b.
func Sub(a, b Expr) Expr { return Call("sub", a, b) }

// Mul is a * b.
func Mul(a, b Expr) Expr { return Call("mul", a, b) }

// Div is a / b; integer division truncates toward zero.
func Div(a, b Expr) Expr { return Call("div", a, b) }

// Mod is a % b, with the sign of a.
func Mod(a, b Expr) Expr { return Call("mod", a, b) }

// Neg is -a.
func Neg(a Expr) Expr { return Call("neg", a) }

// Comparisons; NULL if either side is NULL.

// Eq is a = b.
func Eq(a, b Expr) Expr { return Call("eq", a, b) }

// NotEq is a <> b.
func NotEq(a, b Expr) Expr { return Call("ne", a, b) }

// Less is a < b.
func Less(a, b Expr) Expr { return Call("lt", a, b) }

// LessEq is a <= b.
func LessEq(a, b Expr) Expr { return Call("le", a, b) }

// Greater is a > b.
func Greater(a, b Expr) Expr { return Call("gt", a, b) }

// GreaterEq is a >= b.
func GreaterEq(a, b Expr) Expr { return Call("ge", a, b) }

// Between is lo <= a AND a <= hi.
func Between(a, lo, hi Expr) Expr { return Call("between", a, lo, hi) }

// In is a IN (list...): TRUE if a equals an element, else NULL if a or an
// element is NULL, else FALSE.
func In(a Expr, list ...Expr) Expr { return Call("in", append([]Expr{a}, list...)...) }

// Logic with SQL's three-valued semantics: FALSE AND NULL is FALSE,
// TRUE OR NULL is TRUE, NOT NULL is NULL.

// And is the conjunction of its arguments.
func And(args ...Expr) Expr { return Call("and", args...) }

// Or is the disjunction of its arguments.
func Or(args ...Expr) Expr { return Call("or", args...) }

// Not is NOT a.
func Not(a Expr) Expr { return Call("not", a) }

// IsNull is a IS NULL (never NULL itself).
func IsNull(a Expr) Expr { return Call("is_null", a) }

// IsNotNull is a IS NOT NULL (never NULL itself).
func IsNotNull(a Expr) Expr { return Call("is_not_null", a) }

// Case starts a searched CASE expression: Case(cond, then).When(c2, t2).Else(e).
func Case(cond, then Expr) *CaseExpr { return &CaseExpr{Whens: []When{{cond, then}}} }

// When adds an arm to the CASE expression and returns it.
func (e *CaseExpr) When(cond, then Expr) *CaseExpr {
	e.Whens = append(e.Whens, When{cond, then})
	return e
}

// Otherwise sets the ELSE value and returns the CASE expression.
func (e *CaseExpr) Otherwise(v Expr) *CaseExpr {
	e.Else = v
	return e
}

// Cast converts a to type to; a value that cannot be converted fails the
// evaluation.
func Cast(a Expr, to arrow.DataType) Expr { return &CastExpr{Arg: a, To: to} }

// TryCast converts a to type to; a value that cannot be converted becomes
// NULL.
func TryCast(a Expr, to arrow.DataType) Expr { return &CastExpr{Arg: a, To: to, Try: true} }

// Functions (see docs/kernels.md for their exact semantics). Every function
// is also reachable by name through Call.

// Coalesce is the first non-NULL argument.
func Coalesce(args ...Expr) Expr { return Call("coalesce", args...) }

// Like is s LIKE pattern, with % and _ wildcards; pattern is a constant.
func Like(s Expr, pattern string) Expr { return Call("like", s, Lit(pattern)) }

// Concat joins strings; NULL if any argument is NULL.
func Concat(args ...Expr) Expr { return Call("concat", args...) }

// Lower converts s to lower case.
func Lower(s Expr) Expr { return Call("lower", s) }

// Upper converts s to upper case.
func Upper(s Expr) Expr { return Call("upper", s) }

// Substring is SUBSTRING(s FROM start FOR length), 1-based, in characters.
func Substring(s, start, length Expr) Expr { return Call("substring", s, start, length) }

// CharLength is the number of characters of s.
func CharLength(s Expr) Expr { return Call("char_length", s) }

// FloorTime is FLOOR(ts TO unit), unit one of MILLISECOND, SECOND, MINUTE,
// HOUR, DAY, WEEK, MONTH, QUARTER, YEAR.
func FloorTime(ts Expr, unit string) Expr { return Call("floor_time", ts, Lit(unit)) }

// Extract is EXTRACT(unit FROM ts), unit one of YEAR, QUARTER, MONTH,
// WEEK, DAY, DOW, DOY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND,
// EPOCH.
func Extract(unit string, ts Expr) Expr { return Call("extract", Lit(unit), ts) }

// DateFormat formats ts with a Java DateTimeFormatter-style pattern such
// as "yyyy-MM-dd HH:mm:ss".
func DateFormat(ts Expr, pattern string) Expr { return Call("date_format", ts, Lit(pattern)) }
