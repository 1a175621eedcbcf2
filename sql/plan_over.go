package sql

// hasOverAggregate reports whether the select list has an aggregate
// function with OVER (not a ranking function of a Top-N).
func hasOverAggregate(sel *Select) bool {
	found := false
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(x Expr) {
			if f, ok := x.(*FuncCall); ok && f.Over != nil && isAggregate(f) {
				found = true
			}
		})
	}
	return found
}

// overAggregate plans a select list with OVER aggregations.
func (p *planner) overAggregate(sel *Select, r *relation) (*relation, error) {
	return nil, semErrorf(sel.Pos, "OVER aggregations are not supported yet")
}
