package sql

import "slices"

// Inspect walks the tree rooted at n depth-first, in source order, calling
// f for each node; when f returns false, Inspect skips that node's
// children. Every node reachable from n is visited, identifiers and types
// included. Nil children are skipped.
func Inspect(n Node, f func(Node) bool) {
	walk(n, f)
}

// Children returns the direct children of n in source order.
func Children(n Node) []Node {
	var out []Node
	eachChild(n, func(c Node) { out = append(out, c) })
	return out
}

// walk is Inspect. It keeps the nodes still to visit on a stack of its
// own instead of recursing, so that no tree is too deep for it (trees
// built by hand have no depth limit; see maxExprDepth for the parser's).
func walk(n Node, f func(Node) bool) {
	walkDepth(n, func(n Node, _ int) bool { return f(n) })
}

// walkItem is a node walkDepth has still to visit, with its depth.
type walkItem struct {
	n     Node
	depth int
}

// walkDepth is walk with each node's depth: root is at depth 1, its
// children at 2, and so on.
func walkDepth(root Node, f func(n Node, depth int) bool) {
	stack := []walkItem{{root, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if isNilNode(it.n) || !f(it.n, it.depth) {
			continue
		}
		// Push the children in reverse so that they pop in source order.
		first := len(stack)
		eachChild(it.n, func(c Node) { stack = append(stack, walkItem{c, it.depth + 1}) })
		slices.Reverse(stack[first:])
	}
}

// isNilNode reports whether n is nil or a typed nil pointer.
func isNilNode(n Node) bool {
	if n == nil {
		return true
	}
	switch v := n.(type) {
	case *Ident:
		return v == nil
	case *ObjectName:
		return v == nil
	case *Query:
		return v == nil
	case *DataType:
		return v == nil
	case *WindowSpec:
		return v == nil
	case *WindowFrame:
		return v == nil
	case *FrameBound:
		return v == nil
	case *Watermark:
		return v == nil
	case *PrimaryKey:
		return v == nil
	case *TableArg:
		return v == nil
	case *FuncCall:
		return v == nil
	}
	return false
}

// eachChild calls visit for each non-nil direct child of n.
func eachChild(n Node, visit func(Node)) {
	v := func(c Node) {
		if !isNilNode(c) {
			visit(c)
		}
	}
	exprs := func(es []Expr) {
		for _, e := range es {
			v(e)
		}
	}
	idents := func(ids []*Ident) {
		for _, id := range ids {
			v(id)
		}
	}
	hints := func(hs []*Hint) {
		for _, h := range hs {
			v(h)
		}
	}
	orders := func(os []*OrderItem) {
		for _, o := range os {
			v(o)
		}
	}
	options := func(os []*Option) {
		for _, o := range os {
			v(o)
		}
	}
	switch n := n.(type) {
	case *Script:
		for _, s := range n.Statements {
			v(s)
		}
	case *ObjectName:
		idents(n.Parts)
	case *CreateTable:
		v(n.Name)
		for _, c := range n.Columns {
			v(c)
		}
		v(n.Watermark)
		v(n.PrimaryKey)
		idents(n.PartitionedBy)
		options(n.Options)
	case *ColumnDef:
		v(n.Name)
		v(n.Type)
		v(n.Expr)
	case *Watermark:
		v(n.Column)
		v(n.Expr)
	case *PrimaryKey:
		v(n.Name)
		idents(n.Columns)
	case *CreateView:
		v(n.Name)
		idents(n.Columns)
		v(n.Query)
	case *Insert:
		v(n.Table)
		hints(n.Hints)
		for _, pv := range n.Partition {
			v(pv)
		}
		idents(n.Columns)
		v(n.Query)
	case *PartitionValue:
		v(n.Column)
		v(n.Value)
	case *StatementSet:
		for _, ins := range n.Inserts {
			v(ins)
		}
	case *Drop:
		v(n.Name)
	case *Query:
		for _, c := range n.With {
			v(c)
		}
		v(n.Body)
		orders(n.OrderBy)
		v(n.Limit)
		v(n.Offset)
	case *CTE:
		v(n.Name)
		idents(n.Columns)
		v(n.Query)
	case *Select:
		hints(n.Hints)
		for _, it := range n.Items {
			v(it)
		}
		v(n.From)
		v(n.Where)
		exprs(n.GroupBy)
		v(n.Having)
	case *SelectItem:
		v(n.Expr)
		v(n.Alias)
	case *SetOp:
		v(n.Left)
		v(n.Right)
	case *Values:
		for _, row := range n.Rows {
			exprs(row)
		}
	case *OrderItem:
		v(n.Expr)
	case *GroupingSet:
		for _, set := range n.Sets {
			exprs(set)
		}
	case *TableRef:
		v(n.Name)
		hints(n.Hints)
		v(n.SystemTime)
		v(n.Alias)
		idents(n.ColumnAliases)
	case *DerivedTable:
		v(n.Query)
		v(n.Alias)
		idents(n.ColumnAliases)
	case *TableFunc:
		v(n.Call)
		v(n.Alias)
		idents(n.ColumnAliases)
	case *WindowTVF:
		v(n.Data)
		v(n.TimeCol)
		switch n.Kind {
		case HopWindow:
			v(n.Slide)
		case CumulateWindow:
			v(n.Step)
		}
		v(n.Size)
		v(n.Gap)
		v(n.Offset)
		v(n.Alias)
		idents(n.ColumnAliases)
	case *Unnest:
		exprs(n.Args)
		v(n.Alias)
		idents(n.ColumnAliases)
	case *Join:
		v(n.Left)
		v(n.Right)
		v(n.On)
		idents(n.Using)
	case *Ref:
		idents(n.Parts)
	case *Star:
		idents(n.Qualifier)
	case *Unary:
		v(n.Expr)
	case *Binary:
		v(n.Left)
		v(n.Right)
	case *Is:
		v(n.Expr)
	case *Between:
		v(n.Expr)
		v(n.Low)
		v(n.High)
	case *In:
		v(n.Expr)
		exprs(n.List)
		v(n.Query)
	case *Like:
		v(n.Expr)
		v(n.Pattern)
		v(n.Escape)
	case *Exists:
		v(n.Query)
	case *Subquery:
		v(n.Query)
	case *Case:
		v(n.Operand)
		for _, w := range n.Whens {
			v(w)
		}
		v(n.Else)
	case *When:
		v(n.Cond)
		v(n.Result)
	case *Cast:
		v(n.Expr)
		v(n.Type)
	case *FuncCall:
		v(n.Name)
		exprs(n.Args)
		v(n.Filter)
		v(n.Over)
	case *Trim:
		v(n.Chars)
		v(n.Expr)
	case *NamedArg:
		v(n.Name)
		v(n.Value)
	case *Descriptor:
		idents(n.Columns)
	case *TableArg:
		v(n.Name)
		v(n.Query)
		exprs(n.PartitionBy)
	case *FieldAccess:
		v(n.Expr)
		v(n.Field)
	case *Index:
		v(n.Expr)
		v(n.Index)
	case *Constructor:
		exprs(n.Args)
	case *WindowSpec:
		exprs(n.PartitionBy)
		orders(n.OrderBy)
		v(n.Frame)
	case *WindowFrame:
		v(n.Start)
		v(n.End)
	case *FrameBound:
		v(n.Offset)
	case *Hint:
		v(n.Name)
		options(n.Options)
		idents(n.Args)
	case *DataType:
		for _, f := range n.Fields {
			v(f)
		}
		for _, e := range n.Elems {
			v(e)
		}
	case *RowField:
		v(n.Name)
		v(n.Type)
	}
}
