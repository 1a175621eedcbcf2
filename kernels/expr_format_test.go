package kernels

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// oracleString is the String of an expression as it was written first,
// each argument rendered on its own and joined (quadratic in the depth,
// plain to read): the oracle of TestExprStringMatchesOracle.
func oracleString(e Expr) string {
	switch e := e.(type) {
	case *CallExpr:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = oracleString(a)
		}
		if op, ok := infixOps[e.Func]; ok && len(args) >= 2 && !(e.Func == "like" && len(args) > 2) {
			return "(" + strings.Join(args, " "+op+" ") + ")"
		}
		switch e.Func {
		case "not":
			if len(args) == 1 {
				return "(NOT " + args[0] + ")"
			}
		case "neg":
			if len(args) == 1 {
				return "(-" + args[0] + ")"
			}
		case "is_null", "is_not_null":
			if len(args) == 1 {
				return "(" + args[0] + " " + strings.ToUpper(strings.ReplaceAll(e.Func, "_", " ")) + ")"
			}
		case "between":
			if len(args) == 3 {
				return "(" + args[0] + " BETWEEN " + args[1] + " AND " + args[2] + ")"
			}
		case "in", "not_in":
			if len(args) >= 1 {
				kw := " IN ("
				if e.Func == "not_in" {
					kw = " NOT IN ("
				}
				return "(" + args[0] + kw + strings.Join(args[1:], ", ") + "))"
			}
		}
		return e.Func + "(" + strings.Join(args, ", ") + ")"
	case *CastExpr:
		kw := "CAST("
		if e.Try {
			kw = "TRY_CAST("
		}
		to := "?"
		if e.To != nil {
			to = e.To.String()
		}
		return kw + oracleString(e.Arg) + " AS " + to + ")"
	case *CaseExpr:
		s := "CASE"
		for _, w := range e.Whens {
			s += " WHEN " + oracleString(w.Cond) + " THEN " + oracleString(w.Then)
		}
		if e.Else != nil {
			s += " ELSE " + oracleString(e.Else)
		}
		return s + " END"
	}
	return e.String()
}

// randomExpr builds a random tree of every node kind, with every function
// name String treats specially and argument counts around the special
// cases (a LIKE with an escape, a BETWEEN with two arguments, an empty
// IN list).
func randomExpr(rng *rand.Rand, depth int) Expr {
	leaves := []func() Expr{
		func() Expr { return Col(fmt.Sprintf("c%d", rng.IntN(5))) },
		func() Expr { return Lit(rng.Int64N(100) - 50) },
		func() Expr { return Lit("it's") },
		func() Expr { return Lit(nil) },
		func() Expr { return Lit(rng.IntN(2) == 0) },
		func() Expr { return Lit(2.5) },
		func() Expr { return Lit([]byte{1, 0xab}) },
		func() Expr { return Lit(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)) },
		func() Expr { return Lit(1500 * time.Millisecond) },
	}
	if depth == 0 || rng.IntN(4) == 0 {
		return leaves[rng.IntN(len(leaves))]()
	}
	args := func(n int) []Expr {
		out := make([]Expr, n)
		for i := range out {
			out[i] = randomExpr(rng, depth-1)
		}
		return out
	}
	switch rng.IntN(5) {
	case 0:
		return &CastExpr{Arg: randomExpr(rng, depth-1), To: []arrow.DataType{nil, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String}[rng.IntN(3)], Try: rng.IntN(2) == 0}
	case 1:
		c := &CaseExpr{}
		for range rng.IntN(3) {
			c.Whens = append(c.Whens, When{Cond: randomExpr(rng, depth-1), Then: randomExpr(rng, depth-1)})
		}
		if rng.IntN(2) == 0 {
			c.Else = randomExpr(rng, depth-1)
		}
		return c
	}
	names := []string{"add", "sub", "mul", "div", "mod", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "like", "concat",
		"not", "neg", "is_null", "is_not_null", "between", "in", "not_in", "upper", "coalesce"}
	return &CallExpr{Func: names[rng.IntN(len(names))], Args: args(rng.IntN(5))}
}

// String renders every kind of tree exactly as the oracle does.
func TestExprStringMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 5000 {
		e := randomExpr(rng, 1+i%6)
		if got, want := e.String(), oracleString(e); got != want {
			t.Fatalf("String:\n got %s\nwant %s", got, want)
		}
	}
	if got := Add(Col("a"), Sub(Lit(1), Col("b"))).String(); got != "(a + (1 - b))" {
		t.Errorf("got %s", got)
	}
}

// chain is a + 1 + 1 + ... with n additions: a left spine n calls deep.
func chain(n int) Expr {
	e := Col("a")
	for range n {
		e = Add(e, Lit(1))
	}
	return e
}

// BenchmarkCallExprString renders a chain of additions: the time per
// term stays flat as the chain grows (it grew with the chain's length
// when each level re-rendered its children).
func BenchmarkCallExprString(b *testing.B) {
	for _, n := range []int{1000, 10_000, 50_000} {
		e := chain(n)
		b.Run(fmt.Sprintf("terms=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(e.String())))
			for b.Loop() {
				_ = e.String()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/term")
		})
	}
}
