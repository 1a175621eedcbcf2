package sql

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/window"
)

// query plans a query.
func (p *planner) query(q *Query) (*relation, error) {
	if len(q.With) > 0 {
		saved := map[string]*viewDef{}
		for _, cte := range q.With {
			name := cte.Name.Name
			if old, ok := p.views[name]; ok {
				saved[name] = old
			} else {
				saved[name] = nil
			}
			p.views[name] = &viewDef{name: name, columns: cte.Columns, query: cte.Query}
		}
		defer func() {
			for name, old := range saved {
				if old == nil {
					delete(p.views, name)
				} else {
					p.views[name] = old
				}
			}
		}()
	}
	if len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
		return nil, hinted(semErrorf(q.Pos, "ORDER BY, LIMIT and OFFSET have no meaning on an unbounded stream"),
			"rank within windows instead: ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY ...) <= N")
	}
	return p.queryExpr(q.Body)
}

func (p *planner) queryExpr(b QueryExpr) (*relation, error) {
	switch x := b.(type) {
	case *Select:
		return p.selectQuery(x)
	case *Query:
		return p.query(x)
	case *SetOp:
		return p.union(x)
	case *Values:
		return nil, hinted(semErrorf(x.Pos, "VALUES is not supported as a source"), "use the datagen connector")
	}
	return nil, semErrorf(b.Position(), "query not supported")
}

// union plans UNION ALL: the right side's columns are cast to the left's
// types and names, and an operator merges both streams.
func (p *planner) union(x *SetOp) (*relation, error) {
	if x.Op != Union || !x.All {
		return nil, hinted(semErrorf(x.OpPos, "%s without ALL needs to remember every row; not supported", x.Op), "use UNION ALL")
	}
	l, err := p.queryExpr(x.Left)
	if err != nil {
		return nil, err
	}
	r, err := p.queryExpr(x.Right)
	if err != nil {
		return nil, err
	}
	l, r = p.materialize(l), p.materialize(r)
	lc, rc := l.visible(), r.visible()
	if len(lc) != len(rc) {
		return nil, semErrorf(x.OpPos, "UNION ALL: the left query has %d columns, the right %d", len(lc), len(rc))
	}
	var le, re []kernels.Expr
	var names []string
	for i := range lc {
		if lc[i].virtual != "" || rc[i].virtual != "" || lc[i].proctime || rc[i].proctime {
			return nil, semErrorf(x.OpPos, "UNION ALL: column %s is a window or processing-time attribute", lc[i].name)
		}
		names = append(names, lc[i].name)
		le = append(le, kernels.Col(lc[i].phys))
		var e kernels.Expr = kernels.Col(rc[i].phys)
		if !arrow.TypeEqual(lc[i].typ, rc[i].typ) {
			e = kernels.Cast(e, lc[i].typ)
		}
		re = append(re, e)
	}
	lp, err := compileProjection(le, names, l.schema)
	if err != nil {
		return nil, semErrorf(x.OpPos, "UNION ALL: %v", err)
	}
	if _, err := compileProjection(re, names, r.schema); err != nil {
		return nil, semErrorf(x.OpPos, "UNION ALL: %v", err)
	}
	ln := p.g.Operator(p.nodeName("union-left"), projectFactory(le, names), l.node.Parallelism(), arrowflow.Forward(l.node))
	rn := p.g.Operator(p.nodeName("union-right"), projectFactory(re, names), r.node.Parallelism(), arrowflow.Forward(r.node))
	pass := ops.Map(func(b arrowflow.Batch, _ memAlloc) (arrowflow.Batch, error) { return b, nil })
	node := p.g.Operator(p.nodeName("union"), pass, p.par, arrowflow.Rebalance(ln), arrowflow.Rebalance(rn))
	out := &relation{node: node, schema: lp.schema}
	for i, c := range lc {
		out.cols = append(out.cols, column{name: c.name, phys: names[i], typ: lp.schema.Field(i).Type, rowtime: c.rowtime && rc[i].rowtime})
	}
	return out, nil
}

// selectQuery plans a SELECT.
func (p *planner) selectQuery(sel *Select) (*relation, error) {
	if sel.From == nil {
		return nil, hinted(semErrorf(sel.Pos, "SELECT without FROM has no rows to stream"), "read from a table")
	}
	if top, ok, err := p.windowTopN(sel); ok || err != nil {
		return top, err
	}
	from, where := joinConditions(sel.From, sel.Where)
	r, err := p.from(from)
	if err != nil {
		return nil, err
	}
	if where != nil {
		if r, err = p.filter(r, where, "where", nil); err != nil {
			return nil, err
		}
	}
	if len(sel.GroupBy) > 0 || hasAggregate(sel) {
		return p.aggregate(sel, r)
	}
	if sel.Distinct {
		return p.selectDistinct(sel, r) // plan_groupagg.go
	}
	if hasOverAggregate(sel) {
		return p.overAggregate(sel, r) // plan_over.go
	}
	if sel.Having != nil {
		return nil, semErrorf(sel.Having.Position(), "HAVING without GROUP BY")
	}
	return p.project(r, sel.Items, "select", nil)
}

// joinConditions moves a WHERE's conditions into the joins of the FROM
// where they are join conditions, and returns the FROM and what is left
// of the WHERE.
func joinConditions(from TableExpr, where Expr) (TableExpr, Expr) {
	if j, ok := from.(*Join); ok && j.Kind == InnerJoin && where != nil && j.On != nil {
		// An inner join's WHERE conditions are join conditions too (the
		// interval of an interval join is often written there).
		joined := *j
		joined.On = &Binary{Pos: j.On.Position(), OpPos: where.Position(), Op: OpAnd, Left: j.On, Right: where}
		from, where = &joined, nil
	}
	if j, ok := from.(*Join); ok && (j.Kind == CommaJoin || j.Kind == CrossJoin) {
		// FROM a, b WHERE a.k = b.k: the WHERE's conditions become the
		// ON conditions of the joins they belong to (plan_join_regular.go).
		from, where = mergeJoinWhere(from, where)
	}
	return from, where
}

// hasAggregate reports whether the select list or HAVING has an
// aggregate call.
func hasAggregate(sel *Select) bool {
	found := false
	visit := func(e Expr) {
		walkExpr(e, func(x Expr) {
			if f, ok := x.(*FuncCall); ok && isAggregate(f) {
				found = true
			}
		})
	}
	for _, it := range sel.Items {
		visit(it.Expr)
	}
	if sel.Having != nil {
		visit(sel.Having)
	}
	return found
}

// walkExpr calls fn for e and every expression inside it, not inside
// subqueries.
func walkExpr(e Expr, fn func(Expr)) {
	if e == nil {
		return
	}
	Inspect(e, func(n Node) bool {
		switch n.(type) {
		case *Subquery, *Exists, *Query:
			return false
		}
		if x, ok := n.(Expr); ok {
			fn(x)
		}
		return true
	})
}

// from plans a FROM item.
func (p *planner) from(t TableExpr) (*relation, error) {
	switch x := t.(type) {
	case *TableRef:
		r, err := p.named(x.Name, x.Pos)
		if err != nil {
			return nil, err
		}
		if x.SystemTime != nil {
			// A versioned table, for a temporal join.
			t, ok := p.lookupRelation(x.Name.String())
			def, isTable := t.(*tableDef)
			if !ok || !isTable {
				return nil, hinted(semErrorf(x.Pos, "FOR SYSTEM_TIME AS OF: %s is a view; only a table can be versioned here", x.Name),
					"declare the versioned table with CREATE TABLE ... (..., PRIMARY KEY (k) NOT ENFORCED, WATERMARK FOR ts AS ...)")
			}
			v := *r
			v.asOf, v.pk = x.SystemTime, def.pk
			r = &v
		}
		qual := x.Name.Last().Name
		if x.Alias != nil {
			qual = x.Alias.Name
		}
		return renameColumns(r.withQualifier(qual), x.ColumnAliases, x.Pos)
	case *DerivedTable:
		if x.Lateral {
			return nil, semErrorf(x.Pos, "LATERAL is not supported")
		}
		r, err := p.query(x.Query)
		if err != nil {
			return nil, err
		}
		qual := ""
		if x.Alias != nil {
			qual = x.Alias.Name
		}
		return renameColumns(r.withQualifier(qual), x.ColumnAliases, x.Pos)
	case *WindowTVF:
		return p.windowTVF(x)
	case *Join:
		return p.join(x)
	case *TableFunc, *Unnest:
		return nil, semErrorf(t.Position(), "table functions and UNNEST are not supported")
	}
	return nil, semErrorf(t.Position(), "FROM item not supported")
}

// named plans a table or view by name.
func (p *planner) named(name *ObjectName, pos Pos) (*relation, error) {
	found, ok := p.lookupRelation(name.String())
	if !ok {
		return nil, hinted(semErrorf(pos, "table or view %s does not exist", name), "declare it with CREATE TABLE ... WITH ('connector' = ...) or CREATE VIEW")
	}
	switch d := found.(type) {
	case *tableDef:
		return p.scan(d, pos)
	case *viewDef:
		// A view is planned once; every reference reads the same node
		// (as Flink reuses common sub-plans).
		if r, ok := p.viewRels[d]; ok {
			return r, nil
		}
		r, err := p.query(d.query)
		if err != nil {
			return nil, err
		}
		r, err = renameColumns(r, d.columns, pos)
		if err != nil {
			return nil, err
		}
		p.viewRels[d] = r
		return r, nil
	}
	return nil, semErrorf(pos, "%s is not a table", name)
}

// renameColumns applies a column alias list.
func renameColumns(r *relation, names []*Ident, pos Pos) (*relation, error) {
	if len(names) == 0 {
		return r, nil
	}
	vis := r.visible()
	if len(vis) != len(names) {
		return nil, semErrorf(pos, "%d column names for %d columns", len(names), len(vis))
	}
	out := *r
	out.cols = nil
	for i, c := range vis {
		c.name = names[i].Name
		out.cols = append(out.cols, c)
	}
	return &out, nil
}

// duration evaluates a constant interval argument.
func duration(e Expr, what string) (time.Duration, error) {
	iv, ok := e.(*IntervalLit)
	if !ok {
		return 0, semErrorf(e.Position(), "%s must be an INTERVAL literal, e.g. INTERVAL '10' SECOND", what)
	}
	d, err := iv.Duration()
	if err != nil {
		return 0, semErrorf(e.Position(), "%s: %v", what, err)
	}
	if d <= 0 {
		return 0, semErrorf(e.Position(), "%s must be positive", what)
	}
	return d, nil
}

// windowTVF plans TABLE(TUMBLE|HOP|SESSION(TABLE t, DESCRIPTOR(ts), ...)):
// the input rows with virtual window columns that the consumer assigns.
func (p *planner) windowTVF(x *WindowTVF) (*relation, error) {
	var in *relation
	var err error
	if x.Data.Query != nil {
		in, err = p.query(x.Data.Query)
	} else {
		in, err = p.named(x.Data.Name, x.Data.Pos)
		if err == nil {
			in = in.withQualifier(x.Data.Name.Last().Name)
		}
	}
	if err != nil {
		return nil, err
	}
	info := &tvfInfo{pos: x.Pos}
	sc := &scope{p: p, rel: in}
	tc, path, err := sc.resolve(&Ref{Pos: x.TimeCol.Pos, Parts: []*Ident{x.TimeCol}})
	if err != nil {
		return nil, err
	}
	switch {
	case len(path) > 0:
		return nil, semErrorf(x.TimeCol.Pos, "DESCRIPTOR(%s): a nested field cannot be a time attribute", x.TimeCol.Name)
	case tc.proctime:
		info.proctime = true
	case tc.rowtime && len(tc.nested) > 0:
		// A time attribute read from a ROW field (a computed column
		// `ts AS r.ts`): take it out of the struct once, here, so that
		// the window operators see a plain timestamp column.
		name := tc.name
		e, err := sc.colExpr(tc, nil)
		if err != nil {
			return nil, semErrorf(x.TimeCol.Pos, "DESCRIPTOR(%s): %v", x.TimeCol.Name, err)
		}
		info.timeCol = e.(*kernels.ColumnExpr).Name
		in = sc.extract(in)
		in.cols = slices.Clone(in.cols)
		for i := range in.cols {
			if c := &in.cols[i]; c.name == name && c.rowtime && len(c.nested) > 0 {
				c.phys, c.nested = info.timeCol, nil
			}
		}
	case tc.rowtime:
		info.timeCol = tc.phys
	default:
		return nil, hinted(semErrorf(x.TimeCol.Pos, "DESCRIPTOR(%s): the column is not a time attribute", x.TimeCol.Name),
			"declare WATERMARK FOR "+x.TimeCol.Name+" AS ... on the table, or use a PROCTIME() column")
	}
	switch x.Kind {
	case TumbleWindow:
		size, err := duration(x.Size, "the window size")
		if err != nil {
			return nil, err
		}
		info.spec = window.Tumbling(size)
	case HopWindow:
		slide, err := duration(x.Slide, "the slide")
		if err != nil {
			return nil, err
		}
		size, err := duration(x.Size, "the window size")
		if err != nil {
			return nil, err
		}
		info.spec = window.Hopping(size, slide)
	case CumulateWindow:
		step, err := duration(x.Step, "the step")
		if err != nil {
			return nil, err
		}
		size, err := duration(x.Size, "the maximum window size")
		if err != nil {
			return nil, err
		}
		info.spec = window.Cumulate(size, step)
	case SessionWindow:
		gap, err := duration(x.Gap, "the session gap")
		if err != nil {
			return nil, err
		}
		if info.proctime {
			return nil, semErrorf(x.Pos, "SESSION windows over processing time are not supported")
		}
		info.spec = window.Session(gap)
	default:
		return nil, hinted(semErrorf(x.Pos, "%s windows are not supported", x.Kind), "use TUMBLE, HOP, CUMULATE or SESSION")
	}
	if x.Offset != nil {
		off, err := duration(x.Offset, "the offset")
		if err != nil {
			return nil, err
		}
		info.spec.Offset = off
	}
	if err := info.spec.Validate(); err != nil {
		return nil, semErrorf(x.Pos, "%v", err)
	}
	out := *in
	out.tvf = info
	out.bounds = nil
	out.cols = append([]column(nil), in.cols...)
	qual := ""
	if len(in.cols) > 0 {
		qual = in.cols[0].qual
	}
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	for _, v := range []string{"window_start", "window_end", "window_time"} {
		out.cols = append(out.cols, column{qual: qual, name: v, typ: ts, virtual: v})
	}
	var r *relation = &out
	if x.Alias != nil {
		r = r.withQualifier(x.Alias.Name)
	}
	return renameColumns(r, x.ColumnAliases, x.Pos)
}

// aggregate plans an aggregating SELECT: GROUP BY window_start,
// window_end of a window TVF, a legacy group window (TUMBLE(ts, ...) in
// GROUP BY), or the window bounds of an already windowed input.
func (p *planner) aggregate(sel *Select, r *relation) (*relation, error) {
	sc := &scope{p: p, rel: r}
	var (
		spec      window.Spec
		haveSpec  bool
		timeCol   string
		proctime  bool
		keys      []Expr
		startKey  Expr // for windowed input: the bounds' GROUP BY items
		endKey    Expr
		legacy    string // TUMBLE, HOP, SESSION
		gotStart  bool
		gotEnd    bool
		regrouped bool
	)
	for _, g := range sel.GroupBy {
		switch x := g.(type) {
		case *GroupingSet:
			return nil, semErrorf(x.Pos, "%s is not supported", x.Kind)
		case *FuncCall:
			name := strings.ToUpper(x.Name.String())
			if name == "TUMBLE" || name == "HOP" || name == "SESSION" {
				if haveSpec {
					return nil, semErrorf(x.Pos, "a second group window")
				}
				s, tc, pt, err := legacyWindow(sc, x, name)
				if err != nil {
					return nil, err
				}
				spec, timeCol, proctime, haveSpec, legacy = s, tc, pt, true, name
				continue
			}
		case *Ref:
			if c, path, err := sc.resolve(x); err == nil && len(path) == 0 {
				switch {
				case c.virtual == "window_start":
					gotStart = true
					continue
				case c.virtual == "window_end":
					gotEnd = true
					continue
				case c.virtual == "window_time":
					return nil, semErrorf(x.Pos, "GROUP BY window_time: group by window_start, window_end instead")
				case r.bounds != nil && c.phys == r.bounds.start:
					startKey = x
				case r.bounds != nil && c.phys == r.bounds.end:
					endKey = x
				}
			}
		}
		keys = append(keys, g)
	}
	switch {
	case haveSpec:
	case r.tvf != nil:
		if !gotStart || !gotEnd {
			return nil, hinted(semErrorf(sel.Pos, "a window aggregation must GROUP BY both window_start and window_end"),
				"GROUP BY window_start, window_end, <keys>")
		}
		spec, timeCol, proctime, haveSpec = r.tvf.spec, r.tvf.timeCol, r.tvf.proctime, true
	case startKey != nil && endKey != nil:
		// Windowed input grouped by its window bounds: its rows, each at
		// its window's end, go into 1 ms windows, so that every window's
		// rows meet; the bounds are keys.
		spec, timeCol, haveSpec, regrouped = window.Tumbling(time.Millisecond), r.bounds.end, true, true
	default:
		// No window: an updating aggregation (plan_groupagg.go).
		return p.groupAggregate(sel, r)
	}
	if r.updating() {
		return nil, updatingInputError(sel.Pos, "a window aggregation", r)
	}

	ai, err := p.aggregateInputs(sel, sc, timeCol, keys)
	if err != nil {
		return nil, err
	}
	calls, preExprs, preNames, keyNames, aggs, aggCols := ai.calls, ai.preExprs, ai.preNames, ai.keyNames, ai.aggs, ai.aggCols
	in := sc.extract(r)
	// The same aggregation of the same input (q5 counts bids twice, in
	// two subqueries) is computed once.
	reuseKey := fmt.Sprintf("%p|%s|%s|%v|%v", in.node, spec, timeCol, proctime, preExprs)
	for _, a := range aggs {
		reuseKey += fmt.Sprintf("|%s%v", a.Func, a.Args)
	}
	var (
		node      *arrowflow.Node
		outSchema *arrow.Schema
	)
	if prev, ok := p.aggs[reuseKey]; ok {
		node, outSchema = prev.node, prev.schema
	} else {
		proj, err := compileProjection(preExprs, preNames, in.schema)
		if err != nil {
			return nil, semErrorf(sel.Pos, "%v", err)
		}
		pre := p.addOp(in, "group-by-columns", projectFactory(preExprs, preNames), proj.schema)
		tc := "t$"
		if timeCol == "" {
			tc = ""
		}
		agg := window.Aggregate{Input: pre.schema, Time: tc, Window: spec, Keys: keyNames, Aggs: aggs, ProcessingTime: proctime}
		if err := agg.Validate(); err != nil {
			return nil, semErrorf(sel.Pos, "%v", err)
		}
		if outSchema, err = agg.OutputSchema(); err != nil {
			return nil, semErrorf(sel.Pos, "%v", err)
		}
		if node, err = p.twoPhase(agg, pre.node); err != nil {
			return nil, semErrorf(sel.Pos, "%v", err)
		}
		if node != nil {
			p.explainf("window aggregate %s without keys, in two phases: partial aggregates at parallelism %d, merged at parallelism 1", spec, pre.node.Parallelism())
		} else {
			node = p.keyed(p.nodeName("window-aggregate"), agg.Factory(), pre.node, keyNames)
			p.explainf("window aggregate %s keyed by %s: %d aggregates, parallelism %d", spec, keyList(keys), len(aggs), node.Parallelism())
		}
		p.aggs[reuseKey] = &relation{node: node, schema: outSchema}
	}

	// The aggregate's output as SQL sees it.
	out := &relation{node: node, schema: outSchema}
	tmpl := aggOutputKeys(out, sc, keys, keyNames, aggCols)
	if !regrouped {
		qual := ""
		if len(r.cols) > 0 {
			qual = r.cols[len(r.cols)-1].qual
		}
		ts := fieldType(outSchema, "window_start")
		out.cols = append(out.cols, column{qual: qual, name: "window_start", phys: "window_start", typ: ts, timeLike: true},
			column{qual: qual, name: "window_end", phys: "window_end", typ: ts, timeLike: true},
			// Flink's window_time: the window's last instant, a time
			// attribute of the results. The window fired when the watermark
			// reached that instant, and its rows go out before the
			// watermark does, so windows over it downstream (cascading
			// windows) see none of them late.
			column{qual: qual, name: "window_time", typ: ts, hidden: true, rowtime: true,
				derived: kernels.Call("sub", kernels.Col("window_end"), kernels.Lit(time.Millisecond))})
		out.bounds = &boundsInfo{start: "window_start", end: "window_end"}
		if legacy != "" {
			tmpl.windowFuncs["START"], tmpl.windowFuncs["END"] = "window_start", "window_end"
		}
	} else {
		out.bounds = &boundsInfo{start: tmpl.groups[Format(startKey)], end: tmpl.groups[Format(endKey)]}
	}
	for _, f := range calls {
		c := aggCols[f]
		out.cols = append(out.cols, column{name: c, phys: c, typ: fieldType(outSchema, c)})
	}
	if sel.Having != nil {
		var err error
		if out, err = p.filter(out, sel.Having, "having", tmpl); err != nil {
			return nil, err
		}
	}
	return p.project(out, sel.Items, "select", tmpl)
}

// aggOutputKeys adds the grouping keys to an aggregation's output
// relation as SQL sees them (a key that is a column keeps its name and
// qualifier) and returns the scope template that resolves the select
// list's keys and aggregate calls to the output's columns.
func aggOutputKeys(out *relation, sc *scope, keys []Expr, keyNames []string, aggCols map[*FuncCall]string) *scope {
	tmpl := &scope{aggs: aggCols, groups: map[string]string{}, windowFuncs: map[string]string{}}
	for i, k := range keys {
		name := fmt.Sprintf("EXPR$%d", i)
		qual := ""
		if ref, ok := k.(*Ref); ok {
			c, _, _ := sc.resolve(ref)
			name = ref.Parts[len(ref.Parts)-1].Name
			if c != nil {
				qual = c.qual
			}
		}
		typ := fieldType(out.schema, keyNames[i])
		out.cols = append(out.cols, column{qual: qual, name: name, phys: keyNames[i], typ: typ})
		tmpl.groups[Format(k)] = keyNames[i]
	}
	return tmpl
}

// aggInputs is what an aggregation computes from its input: the aggregate
// calls of the select list and HAVING, the projection in front (the time
// column when windowed, the keys k$i, the arguments a$i) and the
// aggregates (agg$i) over it.
type aggInputs struct {
	calls    []*FuncCall
	preExprs []kernels.Expr
	preNames []string
	keyNames []string
	aggs     []window.Agg
	aggCols  map[*FuncCall]string
}

// aggregateInputs plans the projection in front of an aggregation, window
// (timeCol set) or not.
func (p *planner) aggregateInputs(sel *Select, sc *scope, timeCol string, keys []Expr) (aggInputs, error) {
	// The aggregate calls.
	var calls []*FuncCall
	collect := func(e Expr) {
		walkExpr(e, func(x Expr) {
			if f, ok := x.(*FuncCall); ok && isAggregate(f) && !slices.Contains(calls, f) {
				calls = append(calls, f)
			}
		})
	}
	for _, it := range sel.Items {
		collect(it.Expr)
	}
	if sel.Having != nil {
		collect(sel.Having)
	}

	// A projection in front computes the keys and the aggregates'
	// arguments (only what the aggregate needs crosses the exchange).
	var (
		preExprs []kernels.Expr
		preNames []string
		keyNames []string
		aggs     []window.Agg
	)
	if timeCol != "" {
		preExprs, preNames = append(preExprs, kernels.Col(timeCol)), append(preNames, "t$")
	}
	for i, k := range keys {
		e, _, err := sc.expr(k)
		if err != nil {
			return aggInputs{}, err
		}
		n := fmt.Sprintf("k$%d", i)
		preExprs, preNames, keyNames = append(preExprs, e), append(preNames, n), append(keyNames, n)
	}
	aggCols := map[*FuncCall]string{}
	for i, f := range calls {
		fn := aggregateNames[strings.ToUpper(f.Name.Parts[0].Name)]
		out := fmt.Sprintf("agg$%d", i)
		aggCols[f] = out
		var arg Expr
		switch {
		case f.Star:
			if fn != kernels.AggCount {
				return aggInputs{}, semErrorf(f.Pos, "%s(*) is not an aggregate", f.Name)
			}
			if f.Filter == nil {
				aggs = append(aggs, window.Agg{Func: kernels.AggCountStar, Name: out})
				continue
			}
			arg = &Literal{Pos: f.Pos, Kind: LitInteger, Value: "1"} // COUNT(*) FILTER: count the matching rows
		case len(f.Args) == 1:
			arg = f.Args[0]
		case len(f.Args) == 2 && (fn == kernels.AggFirst || fn == kernels.AggLast):
			return aggInputs{}, semErrorf(f.Pos, "%s with an order argument is not supported", f.Name)
		default:
			return aggInputs{}, semErrorf(f.Pos, "%s takes one argument", f.Name)
		}
		if f.Distinct {
			if fn != kernels.AggCount {
				if fn == kernels.AggMin || fn == kernels.AggMax {
					f.Distinct = false // MIN/MAX(DISTINCT x) = MIN/MAX(x)
				} else {
					return aggInputs{}, semErrorf(f.Pos, "%s(DISTINCT ...) is not supported; COUNT(DISTINCT ...) is", f.Name)
				}
			} else {
				fn = kernels.AggCountDistinct
			}
		}
		if fn == kernels.AggFirst || fn == kernels.AggLast {
			return aggInputs{}, hinted(semErrorf(f.Pos, "%s needs an event time to order by", f.Name), "not supported yet")
		}
		e, _, err := sc.expr(arg)
		if err != nil {
			return aggInputs{}, err
		}
		if f.Filter != nil {
			cond, _, err := sc.expr(f.Filter)
			if err != nil {
				return aggInputs{}, err
			}
			e = &kernels.CaseExpr{Whens: []kernels.When{{Cond: cond, Then: e}}}
		}
		n := fmt.Sprintf("a$%d", i)
		preExprs, preNames = append(preExprs, e), append(preNames, n)
		aggs = append(aggs, window.Agg{Func: fn, Args: []string{n}, Name: out})
	}
	return aggInputs{calls: calls, preExprs: preExprs, preNames: preNames, keyNames: keyNames, aggs: aggs, aggCols: aggCols}, nil
}

// twoPhase plans a window aggregation without keys in two phases when
// its input runs at more than one subtask (Flink's local-global
// aggregation): each subtask aggregates its own rows, and one subtask
// merges their partial results per window, instead of every row going to
// one subtask. It returns nil when one phase is planned instead (keys,
// one input subtask, or a window or function without a two-phase form).
func (p *planner) twoPhase(agg window.Aggregate, in *arrowflow.Node) (*arrowflow.Node, error) {
	if len(agg.Keys) > 0 || in.Parallelism() < 2 {
		return nil, nil
	}
	final, err := agg.Final()
	if errors.Is(err, window.ErrTwoPhaseUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	local := p.g.Operator(p.nodeName("window-aggregate-partial"), agg.Local().Factory(), in.Parallelism(), arrowflow.Forward(in))
	return p.g.Operator(p.nodeName("window-aggregate"), final.Factory(), 1, final.Edge(local)), nil
}

func keyList(keys []Expr) string {
	if len(keys) == 0 {
		return "(nothing)"
	}
	var s []string
	for _, k := range keys {
		s = append(s, Format(k))
	}
	return strings.Join(s, ", ")
}

// keyed adds an operator behind a keyed exchange on keys; without keys
// every row goes to one subtask.
func (p *planner) keyed(name string, f arrowflow.OperatorFactory, in *arrowflow.Node, keys []string) *arrowflow.Node {
	if len(keys) == 0 {
		return p.g.Operator(name, f, 1, arrowflow.Rebalance(in))
	}
	return p.g.Operator(name, f, p.par, arrowflow.KeyBy(in, keys...))
}

// keyed2 adds a two-input operator behind keyed exchanges on lKeys and
// rKeys; without keys every row of both goes to one subtask.
func (p *planner) keyed2(name string, f arrowflow.OperatorFactory, l, r *arrowflow.Node, lKeys, rKeys []string) *arrowflow.Node {
	if len(lKeys) == 0 {
		return p.g.Operator(name, f, 1, arrowflow.Rebalance(l), arrowflow.Rebalance(r))
	}
	return p.g.Operator(name, f, p.par, arrowflow.KeyBy(l, lKeys...), arrowflow.KeyBy(r, rKeys...))
}

// joinedColumns are a join's output columns: the left's then the
// right's, renamed by their prefixes. A window join's window_start and
// window_end become its output's; an interval join (interval) has none,
// and its sides' time columns stay timestamps in step with the watermark.
func joinedColumns(l, r *relation, lPrefix, rPrefix string, interval bool) []column {
	var out []column
	for _, sd := range []struct {
		rel    *relation
		prefix string
	}{{l, lPrefix}, {r, rPrefix}} {
		for _, c := range sd.rel.cols {
			switch {
			case !interval && (c.virtual == "window_start" || c.virtual == "window_end"):
				c.phys, c.virtual = c.virtual, ""
			case c.virtual != "" || c.proctime:
				continue
			default:
				c.phys = sd.prefix + c.phys
			}
			if interval {
				c.timeLike = c.timeLike || c.rowtime
			}
			c.rowtime = false
			out = append(out, c)
		}
	}
	return out
}

// legacyWindow reads GROUP BY TUMBLE(ts, size), HOP(ts, slide, size) or
// SESSION(ts, gap).
func legacyWindow(sc *scope, f *FuncCall, name string) (window.Spec, string, bool, error) {
	want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2}[name]
	if len(f.Args) != want {
		return window.Spec{}, "", false, semErrorf(f.Pos, "%s takes %d arguments", name, want)
	}
	ref, ok := f.Args[0].(*Ref)
	if !ok {
		return window.Spec{}, "", false, semErrorf(f.Pos, "%s: the first argument must be a time attribute column", name)
	}
	c, path, err := sc.resolve(ref)
	if err != nil {
		return window.Spec{}, "", false, err
	}
	if len(path) > 0 || !c.rowtime && !c.proctime {
		return window.Spec{}, "", false, semErrorf(ref.Pos, "%s: %s is not a time attribute", name, Format(ref))
	}
	var spec window.Spec
	switch name {
	case "TUMBLE":
		d, err := duration(f.Args[1], "the window size")
		if err != nil {
			return spec, "", false, err
		}
		spec = window.Tumbling(d)
	case "HOP":
		slide, err := duration(f.Args[1], "the slide")
		if err != nil {
			return spec, "", false, err
		}
		size, err := duration(f.Args[2], "the window size")
		if err != nil {
			return spec, "", false, err
		}
		spec = window.Hopping(size, slide)
	case "SESSION":
		d, err := duration(f.Args[1], "the session gap")
		if err != nil {
			return spec, "", false, err
		}
		if c.proctime {
			return spec, "", false, semErrorf(f.Pos, "SESSION windows over processing time are not supported")
		}
		spec = window.Session(d)
	}
	if c.proctime {
		return spec, "", true, nil
	}
	return spec, c.phys, false, nil
}

// windowTopN plans Flink's window Top-N:
//
//	SELECT ... FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start,
//	window_end [, keys] ORDER BY ...) AS rownum FROM windowed) WHERE rownum <= N
//
// over a window TVF or a windowed aggregate. ok is false when sel does
// not have that shape.
func (p *planner) windowTopN(sel *Select) (*relation, bool, error) {
	dt, isDerived := sel.From.(*DerivedTable)
	if !isDerived || sel.Where == nil || len(dt.Query.With) > 0 {
		return nil, false, nil
	}
	inner, isSel := dt.Query.Body.(*Select)
	if !isSel {
		return nil, false, nil
	}
	var over *FuncCall
	var rnName string
	var passItems []*SelectItem
	for _, it := range inner.Items {
		if f, ok := it.Expr.(*FuncCall); ok && f.Over != nil {
			if over != nil {
				return nil, true, semErrorf(f.Pos, "only one ranking function per query")
			}
			over, rnName = f, itemName(it, 0)
			continue
		}
		passItems = append(passItems, it)
	}
	if over == nil {
		return nil, false, nil
	}
	withTies := false
	switch {
	case over.IsNamed("ROW_NUMBER"):
	case over.IsNamed("RANK"):
		withTies = true
	case over.IsNamed("DENSE_RANK"):
		withTies = true // window Top-N refuses it below; the updating Top-N takes it
	default:
		return nil, true, semErrorf(over.Pos, "%s OVER (...): only ROW_NUMBER and RANK are supported (window Top-N)", over.Name)
	}
	// WHERE rownum <= N (or < N, = 1) and the rest.
	var n int64
	var rest []Expr
	for _, c := range conjuncts(sel.Where) {
		if b, ok := c.(*Binary); ok && n == 0 {
			if ref, ok := b.Left.(*Ref); ok && strings.EqualFold(ref.Parts[len(ref.Parts)-1].Name, rnName) {
				if lit, ok := b.Right.(*Literal); ok && lit.Kind == LitInteger {
					var v int64
					fmt.Sscan(lit.Value, &v)
					switch b.Op {
					case OpLe:
						n = v
					case OpLt:
						n = v - 1
					case OpEq:
						if v == 1 {
							n = 1
						}
					}
					if n > 0 {
						continue
					}
				}
			}
		}
		rest = append(rest, c)
	}
	if n < 1 && !partitionsByWindow(over) {
		return nil, false, nil // an OVER aggregation (plan_over.go) or an error there
	}
	if n < 1 {
		return nil, true, hinted(semErrorf(sel.Where.Position(), "a ranking without a bound on %s keeps every row", rnName),
			"filter WHERE "+rnName+" <= N (window Top-N)")
	}
	innerFrom, innerWhere := joinConditions(inner.From, inner.Where)
	r, err := p.from(innerFrom)
	if err != nil {
		return nil, true, err
	}
	if innerWhere != nil {
		if r, err = p.filter(r, innerWhere, "where", nil); err != nil {
			return nil, true, err
		}
	}
	if r.tvf != nil {
		r = p.prune(r, r.tvf.timeCol)
	} else {
		r = p.prune(r)
	}
	if len(inner.GroupBy) > 0 || hasAggregate(inner) {
		return nil, true, hinted(semErrorf(inner.Pos, "aggregate in a subquery first, then rank it in the query around"),
			"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (...) AS rn FROM (SELECT ... GROUP BY ...)) WHERE rn <= N")
	}
	sc := &scope{p: p, rel: r}
	cfg := window.TopN{N: int(n), WithTies: withTies, RowNumber: "rownum$"}
	var gotStart, gotEnd bool
	for _, e := range over.Over.PartitionBy {
		ref, ok := e.(*Ref)
		if !ok {
			return nil, true, semErrorf(e.Position(), "PARTITION BY takes columns")
		}
		c, path, err := sc.resolve(ref)
		if err != nil {
			return nil, true, err
		}
		switch {
		case c.virtual == "window_start" || r.bounds != nil && c.phys == r.bounds.start && len(path) == 0:
			gotStart = true
		case c.virtual == "window_end" || r.bounds != nil && c.phys == r.bounds.end && len(path) == 0:
			gotEnd = true
		default:
			k, err := sc.ref(ref)
			if err != nil {
				return nil, true, err
			}
			cfg.PartitionBy = append(cfg.PartitionBy, k.(*kernels.ColumnExpr).Name)
		}
	}
	if !gotStart && !gotEnd {
		// Not within windows: deduplication or an updating Top-N
		// (plan_rank.go).
		res, err := p.rank(rankQuery{sel: sel, dt: dt, inner: inner, over: over, rowNumber: rnName,
			n: n, rest: rest, passItems: passItems, in: r, withTies: withTies})
		return res, true, err
	}
	if over.IsNamed("DENSE_RANK") {
		return nil, true, semErrorf(over.Pos, "DENSE_RANK is not supported within windows; ROW_NUMBER and RANK are")
	}
	if r.updating() {
		return nil, true, updatingInputError(over.Pos, "a window Top-N", r)
	}
	if !gotStart || !gotEnd || r.tvf == nil && r.bounds == nil {
		return nil, true, hinted(semErrorf(over.Over.Pos, "a ranking over a stream must be within windows: PARTITION BY window_start, window_end"),
			"rank the rows of a window TVF or of a window aggregation")
	}
	if len(over.Over.OrderBy) == 0 {
		return nil, true, semErrorf(over.Over.Pos, "the ranking needs ORDER BY")
	}
	for _, o := range over.Over.OrderBy {
		ref, ok := o.Expr.(*Ref)
		if !ok {
			return nil, true, semErrorf(o.Pos, "ORDER BY takes columns here")
		}
		k, err := sc.ref(ref)
		if err != nil {
			return nil, true, err
		}
		cfg.OrderBy = append(cfg.OrderBy, window.OrderKey{Column: k.(*kernels.ColumnExpr).Name, Desc: o.Desc})
	}
	in := sc.extract(r)
	cfg.Input = in.schema
	var node *arrowflow.Node
	if r.tvf != nil {
		if r.tvf.proctime {
			return nil, true, semErrorf(over.Pos, "window Top-N over processing time is not supported")
		}
		if r.tvf.spec.Kind == window.KindCumulate {
			return nil, true, hinted(semErrorf(over.Pos, "window Top-N directly over CUMULATE windows is not supported yet"),
				"aggregate the CUMULATE windows first (GROUP BY window_start, window_end, ...) and rank the aggregated rows")
		}
		cfg.Time, cfg.Window = r.tvf.timeCol, r.tvf.spec
		if len(cfg.PartitionBy) > 0 {
			cfg.KeyBy = cfg.PartitionBy
			if err := cfg.Validate(); err != nil {
				return nil, true, semErrorf(over.Pos, "%v", err)
			}
			node = p.keyed(p.nodeName("window-top-n"), cfg.Factory(), in.node, cfg.KeyBy)
		} else {
			// Two phases: each subtask keeps its candidates, a final phase
			// keyed by window ranks them.
			if err := cfg.Validate(); err != nil {
				return nil, true, semErrorf(over.Pos, "%v", err)
			}
			final, err := cfg.Final()
			if err != nil {
				return nil, true, semErrorf(over.Pos, "%v", err)
			}
			local := p.g.Operator(p.nodeName("window-top-n-local"), cfg.Local().Factory(), in.node.Parallelism(), arrowflow.Forward(in.node))
			node = p.keyed(p.nodeName("window-top-n"), final.Factory(), local, final.KeyBy)
			cfg = final
		}
	} else {
		cfg.WindowStart, cfg.WindowEnd = r.bounds.start, r.bounds.end
		cfg.KeyBy = append([]string{r.bounds.start, r.bounds.end}, cfg.PartitionBy...)
		if err := cfg.Validate(); err != nil {
			return nil, true, semErrorf(over.Pos, "%v", err)
		}
		node = p.keyed(p.nodeName("window-top-n"), cfg.Factory(), in.node, cfg.KeyBy)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, true, semErrorf(over.Pos, "%v", err)
	}
	p.explainf("window top-%d (%s) by %s, parallelism %d", n, over.Name, Format(over.Over), node.Parallelism())
	out := &relation{node: node, schema: outSchema}
	for _, c := range r.cols {
		if c.virtual != "" {
			if c.virtual == "window_time" {
				continue
			}
			c.phys, c.virtual = c.virtual, ""
		}
		out.cols = append(out.cols, c)
	}
	out.cols = append(out.cols, column{name: "rownum$", phys: "rownum$", typ: fieldType(outSchema, "rownum$"), hidden: true})
	if r.tvf != nil {
		out.bounds = &boundsInfo{start: "window_start", end: "window_end"}
	} else {
		out.bounds = r.bounds
	}
	// The inner select's other items (usually *), then the row number.
	inner2, err := p.project(out, append(passItems, &SelectItem{Pos: over.Pos, Expr: &Ref{Pos: over.Pos, Parts: []*Ident{{Name: "rownum$"}}}, Alias: &Ident{Name: rnName}}), "rank-columns", nil)
	if err != nil {
		return nil, true, err
	}
	res := inner2
	if dt.Alias != nil {
		res = res.withQualifier(dt.Alias.Name)
	}
	if len(rest) > 0 {
		if res, err = p.filter(res, andAll(rest), "where", nil); err != nil {
			return nil, true, err
		}
	}
	res, err = p.project(res, sel.Items, "select", nil)
	return res, true, err
}

// conjuncts splits a condition at its top-level ANDs.
func conjuncts(e Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == OpAnd {
		return append(conjuncts(b.Left), conjuncts(b.Right)...)
	}
	return []Expr{e}
}

func andAll(es []Expr) Expr {
	out := es[0]
	for _, e := range es[1:] {
		out = &Binary{Pos: out.Position(), OpPos: e.Position(), Op: OpAnd, Left: out, Right: e}
	}
	return out
}

// join plans a window join (two window TVFs joined on window_start and
// window_end) or a join of windowed results on their window bounds.
func (p *planner) join(j *Join) (*relation, error) {
	var kind window.JoinKind
	switch j.Kind {
	case InnerJoin:
		kind = window.JoinInner
	case LeftJoin:
		kind = window.JoinLeftOuter
	case RightJoin:
		kind = window.JoinRightOuter
	case FullJoin:
		kind = window.JoinFullOuter
	default:
		return nil, hinted(semErrorf(j.Pos, "%s joins every row with every other; not supported on streams", j.Kind),
			"join with ON conditions within windows")
	}
	if len(j.Using) > 0 {
		return nil, semErrorf(j.Pos, "JOIN ... USING is not supported; write ON a.x = b.x")
	}
	l, err := p.from(j.Left)
	if err != nil {
		return nil, err
	}
	if tr, ok := p.isLookupJoin(j, l); ok {
		// FOR SYSTEM_TIME AS OF a processing-time attribute: a lookup
		// join (plan_lookup.go); the table is not scanned as a stream.
		return p.lookupJoin(j, kind, l, tr)
	}
	r, err := p.from(j.Right)
	if err != nil {
		return nil, err
	}
	l, r = p.pruneForJoin(l), p.pruneForJoin(r)
	lq, rq := qualifiers(l), qualifiers(r)
	for q := range lq {
		if rq[q] {
			return nil, semErrorf(j.Pos, "both sides of the join are called %s; give them different aliases", q)
		}
	}
	both := &relation{cols: append(append([]column(nil), l.cols...), r.cols...)}
	lsc, rsc := &scope{p: p, rel: l}, &scope{p: p, rel: r}
	var pairs []colPair
	var residual []Expr
	var lKeys, rKeys []string
	if j.On == nil {
		return nil, semErrorf(j.Pos, "a join needs ON conditions")
	}
	side := func(ref *Ref) (*column, *scope) {
		bs := &scope{p: p, rel: both}
		c, path, err := bs.resolve(ref)
		if err != nil || len(path) > 0 {
			return nil, nil
		}
		for i := range l.cols {
			if l.cols[i].qual == c.qual && l.cols[i].name == c.name && l.cols[i].phys == c.phys {
				return &l.cols[i], lsc
			}
		}
		for i := range r.cols {
			if r.cols[i].qual == c.qual && r.cols[i].name == c.name && r.cols[i].phys == c.phys {
				return &r.cols[i], rsc
			}
		}
		return nil, nil
	}
	for _, c := range conjuncts(j.On) {
		if b, ok := c.(*Binary); ok && b.Op == OpEq {
			a, aok := b.Left.(*Ref)
			bb, bok := b.Right.(*Ref)
			if aok && bok {
				ca, sa := side(a)
				cb, sb := side(bb)
				if ca != nil && cb != nil && sa != sb {
					if sa == rsc {
						ca, cb = cb, ca
					}
					pairs = append(pairs, colPair{ca, cb})
					continue
				}
			}
		}
		residual = append(residual, c)
	}
	outerResidual := func() error {
		if len(residual) > 0 && kind != window.JoinInner {
			return semErrorf(residual[0].Position(), "an outer join's ON may only equate columns of both sides")
		}
		return nil
	}
	if l.asOf != nil {
		return nil, hinted(semErrorf(j.Pos, "FOR SYSTEM_TIME AS OF belongs to the join's right side, the versioned table"),
			"FROM probe p JOIN versioned FOR SYSTEM_TIME AS OF p.ts AS v ON p.k = v.k")
	}
	if r.asOf != nil {
		if err := outerResidual(); err != nil {
			return nil, err
		}
		return p.temporalJoin(j, kind, l, r, lsc, side, pairs, residual)
	}
	cfg := window.Join{Kind: kind}
	var winStart, winEnd bool
	switch {
	case l.tvf != nil && r.tvf != nil:
		if l.tvf.spec != r.tvf.spec || l.tvf.proctime || r.tvf.proctime {
			return nil, semErrorf(j.Pos, "a window join needs the same event-time window on both sides (%s and %s)", l.tvf.spec, r.tvf.spec)
		}
		if l.tvf.spec.Kind == window.KindCumulate {
			return nil, hinted(semErrorf(j.Pos, "a window join of CUMULATE windows is not supported yet"),
				"aggregate each side's CUMULATE windows first, then join the results on window_start and window_end")
		}
		cfg.Window, cfg.LeftTime, cfg.RightTime = l.tvf.spec, l.tvf.timeCol, r.tvf.timeCol
		for _, pr := range pairs {
			switch {
			case pr.l.virtual == "window_start" && pr.r.virtual == "window_start":
				winStart = true
			case pr.l.virtual == "window_end" && pr.r.virtual == "window_end":
				winEnd = true
			case pr.l.virtual != "" || pr.r.virtual != "":
				return nil, semErrorf(j.On.Position(), "a window join equates window_start with window_start and window_end with window_end")
			default:
				lKeys, rKeys = append(lKeys, pr.l.phys), append(rKeys, pr.r.phys)
			}
		}
		if !winStart || !winEnd {
			return nil, hinted(semErrorf(j.Pos, "a window join must equate both sides' window_start and window_end"),
				"ON L.window_start = R.window_start AND L.window_end = R.window_end AND ...")
		}
	case l.bounds != nil && r.bounds != nil:
		for _, pr := range pairs {
			if pr.l.phys == l.bounds.start && pr.r.phys == r.bounds.start {
				winStart = true
			}
			if pr.l.phys == l.bounds.end && pr.r.phys == r.bounds.end {
				winEnd = true
			}
			lKeys, rKeys = append(lKeys, pr.l.phys), append(rKeys, pr.r.phys)
		}
		if !winStart || !winEnd {
			return nil, hinted(semErrorf(j.Pos, "windowed results join on their window bounds"),
				"ON L.window_start = R.window_start AND L.window_end = R.window_end AND ...")
		}
		// Each row at its window's end, in 1 ms windows: rows of one
		// window meet; the bounds are keys.
		cfg.Window, cfg.LeftTime, cfg.RightTime = window.Tumbling(time.Millisecond), l.bounds.end, r.bounds.end
	default:
		if l.updating() || r.updating() {
			// No window and no time interval: a regular join
			// (plan_join_regular.go).
			return p.regularJoin(regularJoinQuery{j: j, kind: kind, l: l, r: r, lsc: lsc, rsc: rsc,
				side: side, pairs: pairs, residual: residual})
		}
		return p.intervalJoin(j, kind, l, r, lsc, rsc, side, pairs, residual)
	}
	if err := outerResidual(); err != nil {
		return nil, err
	}
	if l.updating() || r.updating() {
		return nil, updatingInputError(j.Pos, "a window join", map[bool]*relation{true: l, false: r}[l.updating()])
	}
	lPrefix, rPrefix := prefixOf(l, "left"), prefixOf(r, "right")
	cfg.Left, cfg.Right = l.schema, r.schema
	cfg.LeftKeys, cfg.RightKeys = lKeys, rKeys
	cfg.LeftPrefix, cfg.RightPrefix = lPrefix, rPrefix
	cfg.LeftColumns, cfg.RightColumns = physCols(l), physCols(r)
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	node := p.keyed2(p.nodeName("window-join"), cfg.Factory(), l.node, r.node, lKeys, rKeys)
	p.explainf("window join (%s) %s on %s, parallelism %d", j.Kind, cfg.Window, Format(j.On), node.Parallelism())
	out := &relation{node: node, schema: outSchema, cols: joinedColumns(l, r, lPrefix, rPrefix, false)}
	if l.tvf != nil {
		out.bounds = &boundsInfo{start: "window_start", end: "window_end"}
	} else {
		out.bounds = &boundsInfo{start: lPrefix + l.bounds.start, end: lPrefix + l.bounds.end}
	}
	if len(residual) > 0 {
		return p.filter(out, andAll(residual), "join-condition", nil)
	}
	return out, nil
}

// pruneForJoin narrows a join input to its visible columns and time.
func (p *planner) pruneForJoin(r *relation) *relation {
	if r.tvf != nil {
		return p.prune(r, r.tvf.timeCol)
	}
	return p.prune(r)
}

func qualifiers(r *relation) map[string]bool {
	out := map[string]bool{}
	for _, c := range r.cols {
		if c.qual != "" {
			out[c.qual] = true
		}
	}
	return out
}

func prefixOf(r *relation, def string) string {
	for _, c := range r.cols {
		if c.qual != "" {
			return c.qual + "."
		}
	}
	return def + "."
}

// physCols lists the physical columns a join passes on.
func physCols(r *relation) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.cols {
		if c.virtual == "" && !c.proctime && !seen[c.phys] {
			seen[c.phys] = true
			out = append(out, c.phys)
		}
	}
	return out
}

// insert plans INSERT INTO table query.
func (p *planner) insert(ins *Insert) error {
	found, ok := p.lookupRelation(ins.Table.String())
	if !ok {
		return hinted(semErrorf(ins.Table.Pos, "table %s does not exist", ins.Table), "declare it with CREATE TABLE ... WITH ('connector' = ...)")
	}
	t, ok := found.(*tableDef)
	if !ok {
		return semErrorf(ins.Table.Pos, "%s is a view; INSERT INTO a table", ins.Table)
	}
	if t.sink != nil {
		return semErrorf(ins.Pos, "a second INSERT INTO %s: write each table from one INSERT (UNION ALL the queries)", t.name)
	}
	if ins.Overwrite {
		return semErrorf(ins.Pos, "INSERT OVERWRITE is not supported on streams")
	}
	if len(ins.Partition) > 0 || len(ins.Hints) > 0 {
		return semErrorf(ins.Pos, "static PARTITION values and hints in INSERT are not supported")
	}
	for _, m := range t.metadata {
		for _, c := range t.stmt.Columns {
			if c.Kind == MetadataColumn && c.Name.Name == m.name && !c.Virtual {
				return semErrorf(c.Pos, "table %s: writing METADATA columns is not supported; declare %s VIRTUAL", t.name, m.name)
			}
		}
	}
	p.explainf("insert into %s (%s connector)", t.name, t.connector)
	r, err := p.query(ins.Query)
	if err != nil {
		return err
	}
	if err := p.checkSinkTakesChanges(ins, t, r); err != nil {
		return err
	}
	r = p.materialize(r)
	// The target columns: all physical ones, or the listed ones (the
	// others are NULL).
	targets := t.physical
	vis := r.visible()
	var exprs []kernels.Expr
	var names []string
	if len(ins.Columns) > 0 {
		if len(ins.Columns) != len(vis) {
			return semErrorf(ins.Pos, "INSERT INTO %s lists %d columns, the query gives %d", t.name, len(ins.Columns), len(vis))
		}
		given := map[string]int{}
		for i, c := range ins.Columns {
			given[c.Name] = i
		}
		for _, f := range targets {
			i, ok := given[f.Name]
			if !ok {
				if !f.Nullable {
					return semErrorf(ins.Pos, "INSERT INTO %s: column %s is NOT NULL and not given", t.name, f.Name)
				}
				exprs, names = append(exprs, kernels.Null(f.Type)), append(names, f.Name)
				continue
			}
			e, err := insertColumn(vis[i], f, ins)
			if err != nil {
				return err
			}
			exprs, names = append(exprs, e), append(names, f.Name)
		}
	} else {
		if len(targets) != len(vis) {
			return hinted(semErrorf(ins.Pos, "INSERT INTO %s: the table has %d columns, the query gives %d", t.name, len(targets), len(vis)),
				"the query's columns go to the table's in order: "+fieldNames(arrow.NewSchema(targets, nil)))
		}
		for i, f := range targets {
			e, err := insertColumn(vis[i], f, ins)
			if err != nil {
				return err
			}
			exprs, names = append(exprs, e), append(names, f.Name)
		}
	}
	proj, err := compileProjection(exprs, names, r.schema)
	if err != nil {
		return semErrorf(ins.Pos, "INSERT INTO %s: %v", t.name, err)
	}
	out := p.addOp(r, "to-"+t.name, projectFactory(exprs, names), proj.schema)
	sink, ok := p.opts.Sinks[t.name]
	if !ok && p.opts.DryRun {
		sink, ok = blackhole.New(), true
	}
	if !ok {
		sink, err = openSink(p.ctx, t.connector, sinkSpec{table: t.name, opts: t.opts, schema: arrow.NewSchema(targets, nil),
			primaryKey: t.pk, partitionBy: t.partitionBy, job: p.g.Name(), ownTxnPrefix: p.kafkaSinksShareJob})
		if err != nil {
			return err
		}
	}
	t.sink = sink
	// The table's nullability; a NULL into a NOT NULL column is an error.
	var check []int
	for i, f := range targets {
		if !f.Nullable && proj.schema.Field(i).Nullable {
			check = append(check, i)
		}
	}
	if !sameNullability(proj.schema, targets) {
		out = p.addOp(out, "not-null-"+t.name, sinkShapeFactory(t.name, targets, check), arrow.NewSchema(targets, nil))
	}
	// A sink with a PRIMARY KEY receives all changes of a key on one
	// subtask, in order: keyed by the key (DESIGN.md, changelog streams).
	edge := arrowflow.Forward(out.node)
	if len(t.pk) > 0 {
		edge = arrowflow.KeyBy(out.node, t.pk...)
		p.explainf("  sink %s keyed by its primary key (%s)", t.name, strings.Join(t.pk, ", "))
	}
	sinkNode := p.g.Sink(p.nodeName(t.name), sink, out.node.Parallelism(), edge)
	sinkNode.SetChangelogMode(out.mode)
	return nil
}

// sameNullability reports whether s's columns have the nullability of
// fields, in order.
func sameNullability(s *arrow.Schema, fields []arrow.Field) bool {
	for i, f := range fields {
		if s.Field(i).Nullable != f.Nullable {
			return false
		}
	}
	return true
}

// insertColumn is the expression writing query column c into table
// column f: c itself, or c cast to f's type.
func insertColumn(c column, f arrow.Field, ins *Insert) (kernels.Expr, error) {
	pos := ins.Pos
	if c.pos.IsValid() {
		pos = c.pos
	}
	if c.virtual != "" {
		return nil, (&scope{}).virtualError(pos, c)
	}
	if c.proctime {
		return nil, hinted(semErrorf(pos, "column %s is a processing-time attribute: it has no values to write", c.name),
			"write window_start or window_end of a window over it instead")
	}
	e := kernels.Expr(kernels.Col(c.phys))
	if !arrow.TypeEqual(c.typ, f.Type) {
		e = kernels.Cast(e, f.Type)
	}
	return e, nil
}

// temporalJoin plans an event-time temporal join: each left row joined
// with the version of the right (versioned) table valid at its time,
// FOR SYSTEM_TIME AS OF left.t, on the right table's primary key.
func (p *planner) temporalJoin(j *Join, kind window.JoinKind, l, r *relation, lsc *scope,
	side func(*Ref) (*column, *scope), pairs []colPair, residual []Expr) (*relation, error) {
	if kind != window.JoinInner && kind != window.JoinLeftOuter {
		return nil, semErrorf(j.Pos, "a temporal join is an inner or LEFT join, not %s", j.Kind)
	}
	var lt *column
	if ref, ok := r.asOf.(*Ref); ok {
		if c, sc := side(ref); sc == lsc {
			lt = c
		}
	}
	switch {
	case lt == nil:
		return nil, hinted(semErrorf(r.asOf.Position(), "FOR SYSTEM_TIME AS OF takes a time attribute of the join's left side"),
			"FOR SYSTEM_TIME AS OF o.order_time")
	case lt.proctime:
		return nil, hinted(semErrorf(r.asOf.Position(), "a processing-time temporal join (a lookup join) reads a table directly, FOR SYSTEM_TIME AS OF a processing-time column of the left side"),
			"JOIN t FOR SYSTEM_TIME AS OF b.p_time AS s ON b.k = s.key, with p_time AS PROCTIME() on the left")
	case !lt.rowtime:
		return nil, hinted(semErrorf(r.asOf.Position(), "FOR SYSTEM_TIME AS OF %s: the column is not a time attribute", lt.name),
			"declare WATERMARK FOR "+lt.name+" AS ... on the left table")
	}
	var rt *column
	for i := range r.cols {
		if r.cols[i].rowtime {
			rt = &r.cols[i]
		}
	}
	if rt == nil {
		return nil, hinted(semErrorf(j.Right.Position(), "the versioned table has no event-time attribute: a version is valid from its time on"),
			"declare WATERMARK FOR update_time AS ... on the versioned table")
	}
	if len(r.pk) == 0 {
		return nil, hinted(semErrorf(j.Right.Position(), "the versioned table needs a PRIMARY KEY: each row is the new version of its key"),
			"PRIMARY KEY (k) NOT ENFORCED")
	}
	var lKeys, rKeys []string
	for _, pr := range pairs {
		lKeys, rKeys = append(lKeys, pr.l.phys), append(rKeys, pr.r.phys)
	}
	for _, k := range r.pk {
		found := false
		for _, pr := range pairs {
			found = found || strings.EqualFold(pr.r.name, k)
		}
		if !found {
			return nil, hinted(semErrorf(j.Pos, "a temporal join must equate the versioned table's primary key column %s", k),
				"ON ... AND probe.x = versioned."+k)
		}
	}
	lPrefix, rPrefix := prefixOf(l, "left"), prefixOf(r, "right")
	cfg := window.TemporalJoin{Left: l.schema, Right: r.schema, LeftTime: lt.phys, RightTime: rt.phys,
		LeftKeys: lKeys, RightKeys: rKeys, Kind: kind, LeftColumns: physCols(l), RightColumns: physCols(r),
		LeftPrefix: lPrefix, RightPrefix: rPrefix}
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	node := p.keyed2(p.nodeName("temporal-join"), cfg.Factory(), l.node, r.node, lKeys, rKeys)
	p.explainf("temporal join (%s) as of %s on %s, parallelism %d", j.Kind, lt.name, strings.Join(rKeys, ", "), node.Parallelism())
	out := &relation{node: node, schema: outSchema, cols: joinedColumns(l, r, lPrefix, rPrefix, true)}
	// The left side's time attribute stays one: a left row goes out when
	// the watermark reaches its time, before that watermark does.
	for i := range out.cols {
		if c := &out.cols[i]; c.qual == lt.qual && c.name == lt.name && c.phys == lPrefix+lt.phys {
			c.rowtime, c.timeLike = true, false
		}
	}
	if len(residual) > 0 {
		return p.filter(out, andAll(residual), "join-condition", nil)
	}
	return out, nil
}

// colPair is an equality of a left and a right column in a join's ON.
type colPair struct{ l, r *column }

// intervalJoin plans an inner or outer join whose conditions bound one
// side's time by the other's: L.t BETWEEN R.t - INTERVAL a AND R.t +
// INTERVAL b, or a lower and an upper bound in comparisons (L.t >= R.t -
// INTERVAL a AND L.t < R.t + INTERVAL b; any side on either hand, with
// strict bounds exclusive), with equalities as keys.
func (p *planner) intervalJoin(j *Join, kind window.JoinKind, l, r *relation, lsc, rsc *scope,
	side func(*Ref) (*column, *scope), pairs []colPair, residual []Expr) (*relation, error) {
	// term reads `col` or `col ± INTERVAL`.
	term := func(e Expr) (*column, *scope, time.Duration, bool) {
		var off time.Duration
		if b, ok := e.(*Binary); ok && (b.Op == OpAdd || b.Op == OpSub) {
			iv, ok := b.Right.(*IntervalLit)
			if !ok {
				return nil, nil, 0, false
			}
			d, err := iv.Duration()
			if err != nil {
				return nil, nil, 0, false
			}
			if b.Op == OpSub {
				d = -d
			}
			off, e = d, b.Left
		}
		ref, ok := e.(*Ref)
		if !ok {
			return nil, nil, 0, false
		}
		c, sc := side(ref)
		if c == nil || !c.rowtime && !c.timeLike {
			return nil, nil, 0, false
		}
		return c, sc, off, true
	}
	cfg := window.IntervalJoin{Kind: kind}
	// bound is one side of the interval: L.t op R.t + d, op one of <, <=,
	// >, >= (lower bounds are > and >=).
	type bound struct {
		lt, rt *column
		d      time.Duration
		lower  bool
		excl   bool
	}
	// cmp reads a comparison of two time terms of different sides as a
	// bound on L.t.
	cmp := func(x Expr, op BinaryOp, y Expr) (bound, bool) {
		if op != OpLt && op != OpLe && op != OpGt && op != OpGe {
			return bound{}, false
		}
		c1, s1, off1, ok1 := term(x)
		c2, s2, off2, ok2 := term(y)
		if !ok1 || !ok2 || s1 == s2 {
			return bound{}, false
		}
		b := bound{lower: op == OpGt || op == OpGe, excl: op == OpLt || op == OpGt}
		if s1 == lsc { // L.t + off1 op R.t + off2
			b.lt, b.rt, b.d = c1, c2, off2-off1
		} else { // R.t + off1 op L.t + off2: L.t flipped-op R.t + off1 - off2
			b.lt, b.rt, b.d, b.lower = c2, c1, off1-off2, !b.lower
		}
		return b, true
	}
	var lower, upper *bound
	var used []int
	take := func(i int, b bound) {
		if b.lower && lower == nil {
			lower = &b
			used = append(used, i)
		} else if !b.lower && upper == nil && (lower == nil || lower.lt == b.lt && lower.rt == b.rt) {
			upper = &b
			used = append(used, i)
		}
	}
	for i, c := range residual {
		if lower != nil && upper != nil {
			break
		}
		switch c := c.(type) {
		case *Between:
			if c.Not || c.Symmetric || lower != nil || upper != nil {
				continue
			}
			lo, ok1 := cmp(c.Expr, OpGe, c.Low)
			hi, ok2 := cmp(c.Expr, OpLe, c.High)
			if !ok1 || !ok2 || lo.lt != hi.lt || lo.rt != hi.rt {
				continue
			}
			if !lo.lower { // the BETWEEN bounds the right side's time: swap
				lo, hi = hi, lo
			}
			lower, upper, used = &lo, &hi, []int{i}
		case *Binary:
			if b, ok := cmp(c.Left, c.Op, c.Right); ok {
				take(i, b)
			}
		}
	}
	if lower == nil || upper == nil || lower.lt != upper.lt || lower.rt != upper.rt {
		// No time interval between the two sides' time attributes: a
		// regular join (plan_join_regular.go), which keeps its state until
		// the state TTL expires it.
		return p.regularJoin(regularJoinQuery{j: j, kind: kind, l: l, r: r, lsc: lsc, rsc: rsc,
			side: side, pairs: pairs, residual: residual})
	}
	cfg.LeftTime, cfg.RightTime = lower.lt.phys, lower.rt.phys
	cfg.Lower, cfg.Upper = lower.d, upper.d
	cfg.LowerExclusive, cfg.UpperExclusive = lower.excl, upper.excl
	rest := residual[:0:0]
	for i, c := range residual {
		if !slices.Contains(used, i) {
			rest = append(rest, c)
		}
	}
	residual = rest
	if len(residual) > 0 && kind != window.JoinInner {
		return nil, semErrorf(residual[0].Position(), "an outer join's ON may only equate columns and bound the times")
	}
	for _, pr := range pairs {
		cfg.LeftKeys, cfg.RightKeys = append(cfg.LeftKeys, pr.l.phys), append(cfg.RightKeys, pr.r.phys)
	}
	lPrefix, rPrefix := prefixOf(l, "left"), prefixOf(r, "right")
	cfg.Left, cfg.Right = l.schema, r.schema
	cfg.LeftPrefix, cfg.RightPrefix = lPrefix, rPrefix
	cfg.LeftColumns, cfg.RightColumns = physCols(l), physCols(r)
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	node := p.keyed2(p.nodeName("interval-join"), cfg.Factory(), l.node, r.node, cfg.LeftKeys, cfg.RightKeys)
	p.explainf("interval join (%s) %s in [%s + %s, %s + %s], parallelism %d", j.Kind, cfg.LeftTime, cfg.RightTime, cfg.Lower, cfg.RightTime, cfg.Upper, node.Parallelism())
	out := &relation{node: node, schema: outSchema, cols: joinedColumns(l, r, lPrefix, rPrefix, true)}
	if len(residual) > 0 {
		return p.filter(out, andAll(residual), "join-condition", nil)
	}
	return out, nil
}
