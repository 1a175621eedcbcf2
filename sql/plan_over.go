package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
	"github.com/weirflow/weir/window"
)

// isOverAggregate reports whether f is an aggregate function with OVER
// (COUNT, SUM, AVG, MIN, MAX, ... OVER (...)); isAggregate leaves those
// out.
func isOverAggregate(f *FuncCall) bool {
	if f.Over == nil || len(f.Name.Parts) != 1 {
		return false
	}
	_, ok := aggregateNames[strings.ToUpper(f.Name.Parts[0].Name)]
	return ok
}

// hasOverAggregate reports whether the select list has an aggregate
// function with OVER (not a ranking function of a Top-N).
func hasOverAggregate(sel *Select) bool {
	found := false
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(x Expr) {
			if f, ok := x.(*FuncCall); ok && isOverAggregate(f) {
				found = true
			}
		})
	}
	return found
}

// overAggregate plans a select list with OVER aggregations (Flink's OVER
// aggregation, over event time or processing time): a projection in front
// computes the partition keys k$i, the event time t$, the aggregates'
// arguments a$i and the columns the select list reads outside the OVER
// calls (c$i); a changelog.OverAggregate keyed by the partition keys adds
// one column per OVER call (agg$i); the select list is then projected
// over its output, each OVER call read from its column. A window is
// written inline, OVER (...), or named, OVER w with WINDOW w AS (...):
// overWindow resolves the name against the SELECT's WINDOW clause.
func (p *planner) overAggregate(sel *Select, r *relation) (*relation, error) {
	if sel.Having != nil {
		return nil, semErrorf(sel.Having.Position(), "HAVING without GROUP BY")
	}
	var calls []*FuncCall
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(x Expr) {
			if f, ok := x.(*FuncCall); ok && isOverAggregate(f) {
				calls = append(calls, f)
			}
		})
	}
	first := calls[0]
	if r.updating() {
		return nil, updatingInputError(first.Pos, "an OVER aggregation", r)
	}
	if r.tvf != nil {
		return nil, semErrorf(first.Pos, "an OVER aggregation over a window TVF is not supported; aggregate the windows first")
	}
	specs := make([]*WindowSpec, len(calls))
	for i, f := range calls {
		ws, err := overWindow(sel, f.Over)
		if err != nil {
			return nil, err
		}
		specs[i] = ws
	}
	spec := specs[0]
	frame, err := overFrame(spec)
	if err != nil {
		return nil, err
	}
	for i, f := range calls[1:] {
		fs := specs[i+1]
		fr, err := overFrame(fs)
		if err != nil {
			return nil, err
		}
		if fr != frame || overWindowKey(fs) != overWindowKey(spec) {
			return nil, hinted(semErrorf(f.Over.Pos, "OVER %s differs from OVER %s at %s: all OVER aggregations of a query must use the same window",
				overWindowText(f.Over, fs), overWindowText(first.Over, spec), first.Over.Pos), "compute the other window in a separate query and join, or use one window")
		}
	}
	sc := &scope{p: p, rel: r}
	var (
		preExprs []kernels.Expr
		preNames []string
		keyNames []string
	)
	add := func(e kernels.Expr, name string) {
		preExprs, preNames = append(preExprs, e), append(preNames, name)
	}
	// ORDER BY: one ascending event-time attribute.
	if len(spec.OrderBy) != 1 {
		return nil, hinted(semErrorf(spec.Pos, "an OVER aggregation must ORDER BY exactly one time attribute, ascending"),
			"OVER (PARTITION BY ... ORDER BY <rowtime column> ...)")
	}
	o := spec.OrderBy[0]
	ref, ok := o.Expr.(*Ref)
	if !ok {
		return nil, semErrorf(o.Pos, "the ORDER BY of an OVER aggregation must be a time attribute column")
	}
	tc, path, err := sc.resolve(ref)
	if err != nil {
		return nil, err
	}
	switch {
	case len(path) > 0 || tc.virtual != "":
		return nil, semErrorf(o.Pos, "the ORDER BY of an OVER aggregation must be a time attribute column")
	case tc.proctime && o.Desc:
		return nil, semErrorf(o.Pos, "an OVER aggregation must ORDER BY its time attribute ascending")
	case tc.proctime:
	case !tc.rowtime:
		return nil, hinted(semErrorf(o.Pos, "the ORDER BY of an OVER aggregation must be an event-time attribute, but %s is not one", Format(ref)),
			"declare a WATERMARK on the column, or order by one that has it")
	case o.Desc:
		return nil, semErrorf(o.Pos, "an OVER aggregation must ORDER BY its time attribute ascending")
	}
	proctime := tc.proctime
	if !proctime {
		te, err := sc.colExpr(tc, nil)
		if err != nil {
			return nil, semErrorf(o.Pos, "%v", err)
		}
		add(te, "t$")
	}
	for i, k := range spec.PartitionBy {
		e, _, err := sc.expr(k)
		if err != nil {
			return nil, err
		}
		n := fmt.Sprintf("k$%d", i)
		add(e, n)
		keyNames = append(keyNames, n)
	}
	// The aggregates and their arguments.
	var aggs []window.Agg
	subst := map[*FuncCall]Expr{}
	for i, f := range calls {
		fn := aggregateNames[strings.ToUpper(f.Name.Parts[0].Name)]
		out := fmt.Sprintf("agg$%d", i)
		subst[f] = &Ref{Pos: f.Pos, Parts: []*Ident{{Pos: f.Pos, Name: "over$" + strconv.Itoa(i)}}}
		switch {
		case f.Distinct:
			return nil, semErrorf(f.Pos, "%s(DISTINCT ...) OVER is not supported", f.Name)
		case f.Filter != nil:
			return nil, semErrorf(f.Pos, "FILTER on an OVER aggregation is not supported")
		case fn == kernels.AggFirst || fn == kernels.AggLast:
			return nil, semErrorf(f.Pos, "%s OVER is not supported; COUNT, SUM, AVG, MIN and MAX are", f.Name)
		case f.Star:
			if fn != kernels.AggCount {
				return nil, semErrorf(f.Pos, "%s(*) is not an aggregate", f.Name)
			}
			aggs = append(aggs, window.Agg{Func: kernels.AggCountStar, Name: out})
			continue
		case len(f.Args) != 1:
			return nil, semErrorf(f.Pos, "%s takes one argument", f.Name)
		}
		e, _, err := sc.expr(f.Args[0])
		if err != nil {
			return nil, err
		}
		n := fmt.Sprintf("a$%d", i)
		add(e, n)
		aggs = append(aggs, window.Agg{Func: fn, Args: []string{n}, Name: out})
	}
	// The columns the select list reads outside the OVER calls pass
	// through the operator.
	var pass []*column
	seen := map[*column]bool{}
	use := func(c *column, pos Pos) error {
		if seen[c] {
			return nil
		}
		if c.virtual != "" {
			return sc.virtualError(pos, *c)
		}
		if c.proctime {
			return semErrorf(pos, "%s: a processing-time attribute cannot pass through an OVER aggregation", c.name)
		}
		seen[c] = true
		pass = append(pass, c)
		return nil
	}
	for _, it := range sel.Items {
		var ierr error
		Inspect(it.Expr, func(n Node) bool {
			switch x := n.(type) {
			case *Subquery, *Exists, *Query:
				return false
			case *FuncCall:
				if x.Over != nil {
					return false
				}
			case *Star:
				for i := range r.cols {
					c := &r.cols[i]
					if c.hidden || c.virtual != "" {
						continue
					}
					if len(x.Qualifier) > 0 && !strings.EqualFold(c.qual, x.Qualifier[len(x.Qualifier)-1].Name) {
						continue
					}
					if err := use(c, x.Pos); err != nil && ierr == nil {
						ierr = err
					}
				}
			case *Ref:
				c, _, err := sc.resolve(x)
				if err != nil {
					if ierr == nil {
						ierr = err
					}
					return false
				}
				if err := use(c, x.Pos); err != nil && ierr == nil {
					ierr = err
				}
				return false
			}
			return true
		})
		if ierr != nil {
			return nil, ierr
		}
	}
	for i, c := range pass {
		e, err := sc.colExpr(c, nil)
		if err != nil {
			return nil, semErrorf(sel.Pos, "%s: %v", c.name, err)
		}
		add(e, fmt.Sprintf("c$%d", i))
	}
	in := sc.extract(r)
	proj, err := compileProjection(preExprs, preNames, in.schema)
	if err != nil {
		return nil, semErrorf(sel.Pos, "%v", err)
	}
	for i, c := range pass {
		if dt := proj.schema.Field(len(preNames) - len(pass) + i).Type; !rowstore.Storable(dt) {
			return nil, hinted(semErrorf(sel.Pos, "column %s of type %s cannot pass through an OVER aggregation", c.name, dt),
				"select its fields instead")
		}
	}
	pre := p.addOp(in, "over-columns", projectFactory(preExprs, preNames), proj.schema)
	cfg := changelog.OverAggregate{Input: pre.schema, PartitionBy: keyNames, Time: "t$", Frame: frame, Aggs: aggs}
	if proctime {
		cfg.Time, cfg.ProcessingTime = "", true
	}
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(first.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(first.Pos, "%v", err)
	}
	node := p.keyed(p.nodeName("over-aggregate"), cfg.Factory(), pre.node, keyNames)
	when := "as the watermark passes them"
	if proctime {
		when = "as they arrive (processing time)"
	}
	p.explainf("over aggregate OVER %s (%s) keyed by %s: %d aggregates over append-only input, parallelism %d; emits append-only rows %s",
		overWindowText(first.Over, spec), frame, keyList(spec.PartitionBy), len(aggs), node.Parallelism(), when)
	out := &relation{node: node, schema: outSchema}
	for i, c := range pass {
		phys := fmt.Sprintf("c$%d", i)
		out.cols = append(out.cols, column{qual: c.qual, name: c.name, phys: phys, typ: fieldType(outSchema, phys), rowtime: c.rowtime, pos: c.pos, timeLike: c.timeLike})
	}
	for i := range calls {
		phys := fmt.Sprintf("agg$%d", i)
		out.cols = append(out.cols, column{name: "over$" + strconv.Itoa(i), phys: phys, typ: fieldType(outSchema, phys), hidden: true})
	}
	items := make([]*SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		e, err := overSubst(it.Expr, subst)
		if err != nil {
			return nil, err
		}
		cp := *it
		cp.Expr = e
		if cp.Alias == nil {
			if _, ok := it.Expr.(*FuncCall); ok {
				cp.Alias = &Ident{Pos: it.Pos, Name: itemName(it, i)}
			}
		}
		items[i] = &cp
	}
	return p.project(out, items, "select", nil)
}

// overWindow is the window of an OVER call: ws itself when it is inline,
// else the window of sel's WINDOW clause that OVER name refers to (the
// parser has already copied its parts into ws; a tree built by hand may
// not have). An undefined name is an error at the reference.
func overWindow(sel *Select, ws *WindowSpec) (*WindowSpec, error) {
	if ws.Name == nil {
		return ws, nil
	}
	for _, nw := range sel.Windows {
		if strings.EqualFold(nw.Name.Name, ws.Name.Name) {
			return nw.Spec, nil
		}
	}
	return nil, hinted(semErrorf(ws.Pos, "window %s is not defined", ws.Name),
		"define it after FROM ... WHERE ... GROUP BY ... HAVING ...: WINDOW "+ws.Name.String()+" AS (PARTITION BY ... ORDER BY ...)")
}

// overWindowText is the OVER window ref for messages: the inline window,
// or for OVER name the name and the window it stands for.
func overWindowText(ref, spec *WindowSpec) string {
	if ref.Name == nil {
		return Format(spec)
	}
	inline := *spec
	inline.Name = nil
	return ref.Name.String() + " " + Format(&inline)
}

// overWindowKey is an OVER window's PARTITION BY and ORDER BY as text,
// to compare windows (their frames are compared as values).
func overWindowKey(w *WindowSpec) string {
	var b strings.Builder
	for _, e := range w.PartitionBy {
		b.WriteString(Format(e) + ",")
	}
	b.WriteString("|")
	for _, o := range w.OrderBy {
		b.WriteString(Format(o) + ",")
	}
	return b.String()
}

// overFrame is the frame of an OVER window: RANGE BETWEEN UNBOUNDED
// PRECEDING AND CURRENT ROW without one.
func overFrame(spec *WindowSpec) (changelog.OverFrame, error) {
	fr := spec.Frame
	if fr == nil {
		return changelog.OverRangeUnbounded(), nil
	}
	if fr.End != nil && fr.End.Kind != CurrentRow {
		return changelog.OverFrame{}, hinted(semErrorf(fr.End.Pos, "an OVER aggregation's frame must end at CURRENT ROW"),
			"ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW")
	}
	rng := fr.Unit == FrameRange
	switch b := fr.Start; b.Kind {
	case UnboundedPreceding:
		if rng {
			return changelog.OverRangeUnbounded(), nil
		}
		return changelog.OverRowsUnbounded(), nil
	case CurrentRow:
		if rng {
			return changelog.OverRange(0), nil
		}
		return changelog.OverRows(0), nil
	case Preceding:
		if rng {
			iv, ok := b.Offset.(*IntervalLit)
			if !ok {
				return changelog.OverFrame{}, hinted(semErrorf(b.Pos, "a RANGE frame's bound must be an INTERVAL literal"),
					"RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW")
			}
			d, err := iv.Duration()
			if err != nil || d < 0 {
				return changelog.OverFrame{}, semErrorf(b.Pos, "RANGE frame bound %s: want a non-negative day-time interval", Format(iv))
			}
			return changelog.OverRange(d), nil
		}
		lit, ok := b.Offset.(*Literal)
		if !ok || lit.Kind != LitInteger {
			return changelog.OverFrame{}, hinted(semErrorf(b.Pos, "a ROWS frame's bound must be a non-negative integer literal"),
				"ROWS BETWEEN 10 PRECEDING AND CURRENT ROW")
		}
		n, err := strconv.ParseInt(lit.Value, 10, 64)
		if err != nil || n < 0 {
			return changelog.OverFrame{}, semErrorf(b.Pos, "ROWS frame bound %s: want a non-negative integer", lit.Value)
		}
		return changelog.OverRows(n), nil
	}
	return changelog.OverFrame{}, hinted(semErrorf(fr.Start.Pos, "an OVER aggregation's frame must start at a PRECEDING bound"),
		"ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW")
}

// overSubst returns e with the OVER calls of m replaced (e itself when it
// has none). It copies the nodes on the way down; an OVER call inside an
// expression kind it does not copy is refused.
func overSubst(e Expr, m map[*FuncCall]Expr) (Expr, error) {
	if e == nil || !overContains(e, m) {
		return e, nil
	}
	var err error
	switch x := e.(type) {
	case *FuncCall:
		if r, ok := m[x]; ok {
			return r, nil
		}
		cp := *x
		cp.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			if cp.Args[i], err = overSubst(a, m); err != nil {
				return nil, err
			}
		}
		return &cp, nil
	case *Binary:
		cp := *x
		if cp.Left, err = overSubst(x.Left, m); err != nil {
			return nil, err
		}
		if cp.Right, err = overSubst(x.Right, m); err != nil {
			return nil, err
		}
		return &cp, nil
	case *Unary:
		cp := *x
		cp.Expr, err = overSubst(x.Expr, m)
		return &cp, err
	case *Cast:
		cp := *x
		cp.Expr, err = overSubst(x.Expr, m)
		return &cp, err
	case *Case:
		cp := *x
		if cp.Operand, err = overSubst(x.Operand, m); err != nil {
			return nil, err
		}
		if cp.Else, err = overSubst(x.Else, m); err != nil {
			return nil, err
		}
		cp.Whens = make([]*When, len(x.Whens))
		for i, w := range x.Whens {
			wc := *w
			if wc.Cond, err = overSubst(w.Cond, m); err != nil {
				return nil, err
			}
			if wc.Result, err = overSubst(w.Result, m); err != nil {
				return nil, err
			}
			cp.Whens[i] = &wc
		}
		return &cp, nil
	}
	return nil, hinted(semErrorf(e.Position(), "an OVER aggregation inside this expression is not supported"),
		"compute the OVER aggregation in a subquery and use its column")
}

func overContains(e Expr, m map[*FuncCall]Expr) bool {
	found := false
	walkExpr(e, func(x Expr) {
		if f, ok := x.(*FuncCall); ok {
			if _, ok := m[f]; ok {
				found = true
			}
		}
	})
	return found
}
