package sql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/window"
)

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

// regularJoin plans a regular (non-windowed) join, changelog.Join: each
// side's rows are kept and every change of one side is joined with the
// other side's current rows. Its output is append-only for an inner join
// of append-only inputs, a retract changelog otherwise.
//
// Conditions of an inner join that name one side only are applied to that
// side before the join (so its state holds only matching rows); the other
// non-equality conditions are the join's residual, evaluated inside it for
// outer joins (they decide which rows are padded) and after it for inner
// ones.
func (p *planner) regularJoin(q regularJoinQuery) (*relation, error) {
	l, r := q.l, q.r
	if len(q.pairs) == 0 {
		return nil, hinted(semErrorf(q.j.Pos, "a regular join needs an equality between the two sides (a key)"),
			"ON a.k = b.k, or join within windows")
	}
	if l.asOf != nil || r.asOf != nil {
		return nil, semErrorf(q.j.Pos, "FOR SYSTEM_TIME AS OF needs a time attribute of the other side")
	}
	var lOnly, rOnly, both []Expr
	for _, c := range q.residual {
		switch sides := q.sidesOf(c); {
		case q.kind == window.JoinInner && sides == 1:
			lOnly = append(lOnly, c)
		case q.kind == window.JoinInner && sides == 2:
			rOnly = append(rOnly, c)
		default:
			both = append(both, c)
		}
	}
	var err error
	if len(lOnly) > 0 {
		if l, err = p.filter(l, andAll(lOnly), "join-left-condition", nil); err != nil {
			return nil, err
		}
	}
	if len(rOnly) > 0 {
		if r, err = p.filter(r, andAll(rOnly), "join-right-condition", nil); err != nil {
			return nil, err
		}
	}
	var lKeys, rKeys []string
	for _, pr := range q.pairs {
		if pr.l.phys == "" || pr.r.phys == "" || len(pr.l.nested) > 0 || len(pr.r.nested) > 0 {
			return nil, semErrorf(q.j.On.Position(), "a regular join's keys must be columns (%s = %s); select nested fields into columns first", pr.l.name, pr.r.name)
		}
		if pr.l.typ != nil && pr.r.typ != nil && !arrow.TypeEqual(pr.l.typ, pr.r.typ) {
			return nil, semErrorf(q.j.On.Position(), "the join key %s is %s on the left and %s on the right; CAST one side", pr.l.name, pr.l.typ, pr.r.typ)
		}
		lKeys, rKeys = append(lKeys, pr.l.phys), append(rKeys, pr.r.phys)
	}
	lPrefix, rPrefix := prefixOf(l, "left"), prefixOf(r, "right")
	cols := joinedColumns(l, r, lPrefix, rPrefix, true)
	for i := range cols {
		// A regular join's output is not in step with the watermark: its
		// time columns are plain timestamps, as in Flink.
		cols[i].timeLike = false
	}
	cfg := changelog.Join{
		Left: l.schema, Right: r.schema, LeftKeys: lKeys, RightKeys: rKeys, Kind: q.kind,
		LeftColumns: physCols(l), RightColumns: physCols(r), LeftPrefix: lPrefix, RightPrefix: rPrefix,
		StateTTL: p.stateTTL,
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(q.j.Pos, "%v", err)
	}
	var after []Expr
	if len(both) > 0 {
		if q.kind == window.JoinInner {
			after = both
		} else {
			sc := &scope{p: p, rel: &relation{schema: outSchema, cols: cols}}
			e, _, err := sc.expr(andAll(both))
			if err != nil {
				return nil, err
			}
			if len(sc.fields) > 0 {
				return nil, semErrorf(both[0].Position(), "an outer join's condition may not read nested fields; select them into columns first")
			}
			cfg.Residual = e
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(q.j.Pos, "%v", err)
	}
	node := p.keyed2(p.nodeName("join"), cfg.Factory(), l.node, r.node, lKeys, rKeys)
	out := &relation{node: node, schema: outSchema, cols: cols}
	appendOnly := cfg.AppendOnlyOutput(!l.updating(), !r.updating())
	mode := arrowflow.AppendOnly
	if !appendOnly {
		mode = arrowflow.Retract
		updatingRelation(out, fmt.Sprintf("the %s JOIN at %s (a regular join)", q.kind, q.j.Pos), nil)
	}
	p.explainf("regular join (%s) on %s: %s and %s inputs, parallelism %d, state TTL %s; emits %s",
		q.kind, strings.Join(pairNames(q.pairs), ", "), modeName(l), modeName(r), node.Parallelism(), ttlName(p.stateTTL), mode)
	if len(after) > 0 {
		return p.filter(out, andAll(after), "join-condition", nil)
	}
	return out, nil
}

// sidesOf tells which sides of the join condition c reads: 1 the left
// only, 2 the right only, 3 both (or neither, or a column it cannot
// place).
func (q regularJoinQuery) sidesOf(c Expr) int {
	sides := 0
	ok := true
	walkExpr(c, func(x Expr) {
		switch e := x.(type) {
		case *Ref:
			_, sc := q.side(e)
			switch sc {
			case q.lsc:
				sides |= 1
			case q.rsc:
				sides |= 2
			default:
				ok = false
			}
		case *FuncCall:
			if isAggregate(e) || e.Over != nil {
				ok = false
			}
		case *Subquery:
			ok = false
		}
	})
	if !ok || sides == 0 {
		return 3
	}
	return sides
}

// pairNames formats equality pairs for --explain.
func pairNames(pairs []colPair) []string {
	out := make([]string, len(pairs))
	for i, pr := range pairs {
		out[i] = pr.l.name + " = " + pr.r.name
	}
	return out
}

// mergeJoinWhere moves the WHERE conditions of a FROM of comma (and
// cross) joins into the ON conditions of the joins they belong to and
// returns the FROM and what is left of the WHERE: FROM a, b, c WHERE
// a.x = b.x AND b.y = c.y AND c.z > 0 becomes (a JOIN b ON a.x = b.x) JOIN
// c ON b.y = c.y AND c.z > 0, as Flink's planner rewrites it. A condition
// goes to the lowest join whose two sides together name every table it
// reads; one with an unqualified column goes to the topmost join. The
// joins become inner joins; nothing is left of the WHERE.
func mergeJoinWhere(from TableExpr, where Expr) (TableExpr, Expr) {
	var conds []Expr
	if where != nil {
		conds = conjuncts(where)
	}
	out, rest := placeConds(from, conds)
	if len(rest) > 0 {
		return out, andAll(rest)
	}
	return out, nil
}

// placeConds rewrites the comma and cross joins of t into inner joins,
// attaching each condition of conds to the lowest of them whose sides name
// every table it reads. It returns the conditions it could not place
// (those of a t that is no comma or cross join), for the caller's join.
func placeConds(t TableExpr, conds []Expr) (TableExpr, []Expr) {
	j, ok := t.(*Join)
	if !ok || (j.Kind != CommaJoin && j.Kind != CrossJoin) {
		return t, conds
	}
	lq, rq := tableQualifiers(j.Left), tableQualifiers(j.Right)
	var here, toLeft, toRight []Expr
	for _, c := range conds {
		qs, known := exprQualifiers(c)
		switch {
		case known && len(qs) > 0 && subset(qs, lq) && isJoinOf(j.Left):
			toLeft = append(toLeft, c)
		case known && len(qs) > 0 && subset(qs, rq) && isJoinOf(j.Right):
			toRight = append(toRight, c)
		default:
			here = append(here, c)
		}
	}
	left, back := placeConds(j.Left, toLeft)
	here = append(here, back...)
	right, back := placeConds(j.Right, toRight)
	here = append(here, back...)
	joined := &Join{Pos: j.Pos, Kind: InnerJoin, Left: left, Right: right}
	if len(here) > 0 {
		joined.On = andAll(here)
	}
	return joined, nil
}

// isJoinOf reports whether t is a comma or cross join (conditions can go
// further down into it).
func isJoinOf(t TableExpr) bool {
	j, ok := t.(*Join)
	return ok && (j.Kind == CommaJoin || j.Kind == CrossJoin)
}

// subset reports whether every element of a is in b.
func subset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// tableQualifiers are the names (aliases, or table names) the FROM item t
// makes available to qualify columns, lower-cased.
func tableQualifiers(t TableExpr) map[string]bool {
	out := map[string]bool{}
	var walk func(TableExpr)
	walk = func(t TableExpr) {
		switch x := t.(type) {
		case *TableRef:
			if x.Alias != nil {
				out[strings.ToLower(x.Alias.Name)] = true
			} else if n := len(x.Name.Parts); n > 0 {
				out[strings.ToLower(x.Name.Parts[n-1].Name)] = true
			}
		case *DerivedTable:
			if x.Alias != nil {
				out[strings.ToLower(x.Alias.Name)] = true
			}
		case *TableFunc:
			if x.Alias != nil {
				out[strings.ToLower(x.Alias.Name)] = true
			}
		case *WindowTVF:
			if x.Alias != nil {
				out[strings.ToLower(x.Alias.Name)] = true
			}
		case *Join:
			walk(x.Left)
			walk(x.Right)
		}
	}
	walk(t)
	return out
}

// exprQualifiers are the (lower-cased) qualifiers of the columns e reads;
// known is false when a column is unqualified or e has a subquery.
func exprQualifiers(e Expr) (map[string]bool, bool) {
	out := map[string]bool{}
	known := true
	walkExpr(e, func(x Expr) {
		switch r := x.(type) {
		case *Ref:
			if len(r.Parts) < 2 {
				known = false
				return
			}
			out[strings.ToLower(r.Parts[0].Name)] = true
		case *Subquery:
			known = false
		}
	})
	return out, known
}
