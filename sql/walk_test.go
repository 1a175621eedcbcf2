package sql

import (
	"fmt"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	s := mustParseScript(t, "INSERT INTO out SELECT a, f(b + 1) FROM t WHERE c")
	var visited []string
	Inspect(s, func(n Node) bool {
		switch n := n.(type) {
		case *Ident:
			visited = append(visited, n.Name)
		case *Binary:
			visited = append(visited, n.Op.String())
		case *Literal:
			visited = append(visited, n.Value)
		}
		return true
	})
	want := "out a f + b 1 t c"
	if got := strings.Join(visited, " "); got != want {
		t.Errorf("visited %q, want %q", got, want)
	}

	// Returning false skips a node's children.
	var calls int
	Inspect(s, func(n Node) bool {
		if _, ok := n.(*FuncCall); ok {
			calls++
			return false
		}
		if _, ok := n.(*Binary); ok {
			t.Error("visited a child of a skipped node")
		}
		return true
	})
	if calls != 1 {
		t.Errorf("%d calls", calls)
	}
	Inspect(nil, func(Node) bool { t.Error("visited nil"); return true })
}

// TestInspectReachesEverything checks that Inspect reaches every node of
// a tree with every kind of node: each node the printer prints is visited
// (counted by type), and Children agrees with Inspect.
func TestInspectReachesEverything(t *testing.T) {
	srcs := []string{}
	for _, c := range statementCases {
		srcs = append(srcs, c.src)
	}
	for _, c := range queryCases {
		srcs = append(srcs, c.src)
	}
	for _, c := range exprCases {
		srcs = append(srcs, "SELECT "+c.src)
	}
	kinds := map[string]bool{}
	for _, src := range srcs {
		s := mustParseScript(t, src)
		n := 0
		seen := map[Node]bool{}
		Inspect(s, func(x Node) bool {
			n++
			if seen[x] {
				t.Errorf("%q: %T %q is in the tree twice", src, x, Format(x))
			}
			seen[x] = true
			kinds[fmt.Sprintf("%T", x)] = true
			if !x.Position().IsValid() {
				t.Errorf("%q: %T %q has no position", src, x, Format(x))
			}
			return true
		})
		m := 0
		var count func(Node)
		count = func(x Node) {
			m++
			for _, c := range Children(x) {
				count(c)
			}
		}
		count(s)
		if n != m {
			t.Errorf("%q: Inspect visits %d nodes, Children %d", src, n, m)
		}
	}
	for _, k := range []string{"*sql.CreateTable", "*sql.ColumnDef", "*sql.Watermark", "*sql.PrimaryKey", "*sql.Option",
		"*sql.CreateView", "*sql.Set", "*sql.Reset", "*sql.Insert", "*sql.PartitionValue", "*sql.StatementSet", "*sql.Drop",
		"*sql.Query", "*sql.CTE", "*sql.Select", "*sql.SelectItem", "*sql.SetOp", "*sql.Values", "*sql.OrderItem",
		"*sql.GroupingSet", "*sql.TableRef", "*sql.DerivedTable", "*sql.TableFunc", "*sql.WindowTVF", "*sql.Unnest",
		"*sql.Join", "*sql.Ref", "*sql.Star", "*sql.Literal", "*sql.IntervalLit", "*sql.Unary", "*sql.Binary", "*sql.Is",
		"*sql.Between", "*sql.In", "*sql.Like", "*sql.Exists", "*sql.Subquery", "*sql.Case", "*sql.When", "*sql.Cast",
		"*sql.FuncCall", "*sql.Trim", "*sql.TimeUnitArg", "*sql.NamedArg", "*sql.Descriptor", "*sql.TableArg",
		"*sql.FieldAccess", "*sql.Index", "*sql.Constructor", "*sql.WindowSpec", "*sql.WindowFrame", "*sql.FrameBound",
		"*sql.Hint", "*sql.DataType", "*sql.RowField", "*sql.Ident", "*sql.ObjectName", "*sql.Script"} {
		if !kinds[k] {
			t.Errorf("no test input has a %s", k)
		}
	}
}
