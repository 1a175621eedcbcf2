package sql

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/window"
)

// groupAggregate plans GROUP BY without a window (and aggregates without
// GROUP BY): an updating aggregation, changelog.GroupAggregate keyed by
// the grouping keys, whose results are a retract changelog.
func (p *planner) groupAggregate(sel *Select, r *relation) (*relation, error) {
	sc := &scope{p: p, rel: r}
	keys := make([]Expr, 0, len(sel.GroupBy))
	for _, g := range sel.GroupBy {
		switch x := g.(type) {
		case *GroupingSet:
			return nil, semErrorf(x.Pos, "%s is not supported", x.Kind)
		case *Ref:
			if c, path, err := sc.resolve(x); err == nil && len(path) == 0 && c.virtual != "" {
				return nil, sc.virtualError(x.Pos, *c)
			}
		}
		keys = append(keys, g)
	}
	ai, err := p.aggregateInputs(sel, sc, "", keys)
	if err != nil {
		return nil, err
	}
	ttl, err := p.stateTTLFor(sel, r)
	if err != nil {
		return nil, err
	}
	in := sc.extract(r)
	proj, err := compileProjection(ai.preExprs, ai.preNames, in.schema)
	if err != nil {
		return nil, semErrorf(sel.Pos, "%v", err)
	}
	pre := p.addOp(in, "group-by-columns", projectFactory(ai.preExprs, ai.preNames), proj.schema)
	agg := changelog.GroupAggregate{Input: pre.schema, Keys: ai.keyNames, Aggs: ai.aggs, Retracting: r.updating(), StateTTL: ttl}
	if err := agg.Validate(); err != nil {
		return nil, semErrorf(sel.Pos, "%v", err)
	}
	outSchema, err := agg.OutputSchema()
	if err != nil {
		return nil, semErrorf(sel.Pos, "%v", err)
	}
	node, err := p.groupTwoPhase(agg, pre.node)
	if err != nil {
		return nil, semErrorf(sel.Pos, "%v", err)
	}
	if node != nil {
		p.explainf("group aggregate keyed by %s in two phases: partial aggregates per epoch at parallelism %d (append-only), merged keyed at parallelism %d; %d aggregates over %s input, state TTL %s; emits %s",
			keyList(keys), pre.node.Parallelism(), node.Parallelism(), len(ai.aggs), modeName(r), ttlName(ttl), arrowflow.Retract)
	} else {
		node = p.keyed(p.nodeName("group-aggregate"), agg.Factory(), pre.node, ai.keyNames)
		p.explainf("group aggregate keyed by %s: %d aggregates over %s input, parallelism %d, state TTL %s; emits %s",
			keyList(keys), len(ai.aggs), modeName(r), node.Parallelism(), ttlName(ttl), arrowflow.Retract)
	}
	out := &relation{node: node, schema: outSchema}
	tmpl := aggOutputKeys(out, sc, keys, ai.keyNames, ai.aggCols)
	for _, f := range ai.calls {
		c := ai.aggCols[f]
		out.cols = append(out.cols, column{name: c, phys: c, typ: fieldType(outSchema, c)})
	}
	updatingRelation(out, fmt.Sprintf("the GROUP BY at %s (a non-window aggregation)", sel.Pos), ai.keyNames)
	if sel.Having != nil {
		if out, err = p.filter(out, sel.Having, "having", tmpl); err != nil {
			return nil, err
		}
	}
	return p.project(out, sel.Items, "select", tmpl)
}

// groupTwoPhase plans a GROUP BY in two phases (Flink's local-global
// aggregation) and returns the final phase's node, or nil for one phase.
// SET 'table.optimizer.agg-phase-strategy' decides, as in Flink: AUTO (the
// default) splits an aggregate without keys whose input runs at more than
// one subtask (otherwise one subtask would see every row), TWO_PHASE
// splits keyed ones too (for skewed keys: each subtask folds its rows of a
// hot key into one partial row per epoch before the exchange), ONE_PHASE
// never splits. Aggregates without a two-phase form (COUNT DISTINCT, MIN
// and MAX over updating input) are computed in one phase.
func (p *planner) groupTwoPhase(agg changelog.GroupAggregate, in *arrowflow.Node) (*arrowflow.Node, error) {
	switch {
	case p.aggPhases == "ONE_PHASE", in.Parallelism() < 2:
		return nil, nil
	case len(agg.Keys) > 0 && p.aggPhases != "TWO_PHASE":
		return nil, nil
	}
	final, err := agg.Final()
	if errors.Is(err, window.ErrTwoPhaseUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	local := p.g.Operator(p.nodeName("group-aggregate-partial"), agg.Local().Factory(), in.Parallelism(), arrowflow.Forward(in))
	return p.keyed(p.nodeName("group-aggregate"), final.Factory(), local, agg.Keys), nil
}

// selectDistinct plans SELECT DISTINCT as Flink does: a GROUP BY of every
// selected expression without aggregates (a * expands to its columns).
func (p *planner) selectDistinct(sel *Select, r *relation) (*relation, error) {
	grouped := *sel
	grouped.Distinct = false
	grouped.Items = nil
	for _, it := range sel.Items {
		star, ok := it.Expr.(*Star)
		if !ok {
			grouped.Items = append(grouped.Items, it)
			grouped.GroupBy = append(grouped.GroupBy, it.Expr)
			continue
		}
		qual := ""
		if len(star.Qualifier) > 0 {
			qual = star.Qualifier[len(star.Qualifier)-1].Name
		}
		for _, c := range r.visible() {
			if qual != "" && !strings.EqualFold(c.qual, qual) {
				continue
			}
			parts := []*Ident{{Pos: star.Pos, Name: c.name, Quoted: true}}
			if c.qual != "" {
				parts = append([]*Ident{{Pos: star.Pos, Name: c.qual, Quoted: true}}, parts...)
			}
			ref := &Ref{Pos: star.Pos, Parts: parts}
			grouped.Items = append(grouped.Items, &SelectItem{Pos: it.Pos, Expr: ref})
			grouped.GroupBy = append(grouped.GroupBy, ref)
		}
	}
	out, err := p.groupAggregate(&grouped, r)
	if err != nil {
		return nil, err
	}
	out.updatedBy = fmt.Sprintf("the SELECT DISTINCT at %s", sel.Pos)
	return out, nil
}

// modeName is a relation's changelog mode as --explain shows it.
func modeName(r *relation) string { return r.mode.String() }

// stateTTLFor is the state TTL of an updating operator of sel over input
// r: Flink's STATE_TTL hint on sel naming one of r's tables or aliases,
// else SET 'table.exec.state.ttl' (0: keep state forever).
func (p *planner) stateTTLFor(sel *Select, rels ...*relation) (time.Duration, error) {
	for _, h := range sel.Hints {
		if !strings.EqualFold(h.Name.Name, "STATE_TTL") {
			continue
		}
		if len(h.Args) > 0 || len(h.Options) == 0 {
			return 0, hinted(semErrorf(h.Pos, "STATE_TTL takes 'table' = 'duration' pairs"), "SELECT /*+ STATE_TTL('orders' = '1d') */ ...")
		}
		for _, o := range h.Options {
			for _, r := range rels {
				if qualifiers(r)[o.Key] || qualifiersFold(r, o.Key) {
					v, perr := parseFlinkDuration(o.Value)
					if perr != nil || v < 0 {
						return 0, semErrorf(h.Pos, "STATE_TTL('%s' = '%s'): want a duration such as '1 d' or '12 h'", o.Key, o.Value)
					}
					return v, nil
				}
			}
		}
	}
	return p.stateTTL, nil
}

// qualifiersFold reports whether one of r's qualifiers equals q ignoring
// case.
func qualifiersFold(r *relation, q string) bool {
	for k := range qualifiers(r) {
		if strings.EqualFold(k, q) {
			return true
		}
	}
	return false
}

// ttlName formats a state TTL for --explain.
func ttlName(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
