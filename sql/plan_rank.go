package sql

import (
	"fmt"
	"strings"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// rankQuery is a ranking not within windows, as windowTopN found it:
//
//	SELECT <sel.Items> FROM (SELECT <passItems>, <over> AS <rowNumber>
//	FROM ... ) <dt.Alias> WHERE <rowNumber> <= <n> AND <rest>
//
// in is the inner query's FROM (with its WHERE applied), pruned.
type rankQuery struct {
	sel       *Select
	dt        *DerivedTable
	inner     *Select
	over      *FuncCall // ROW_NUMBER, RANK or DENSE_RANK
	rowNumber string
	n         int64
	rest      []Expr
	passItems []*SelectItem
	in        *relation
	withTies  bool
}

// rank plans deduplication and Top-N outside windows: changelog.Rank keyed
// by the PARTITION BY columns. ROW_NUMBER() ... = 1 ordered ascending by
// a processing-time attribute keeps each key's first row (append-only
// output, Flink's deduplication keeping the first row); every other
// ranking updates its results (a retract changelog).
func (p *planner) rank(q rankQuery) (*relation, error) {
	r := q.in
	sc := &scope{p: p, rel: r}
	cfg := changelog.Rank{N: q.n, Retracting: r.updating()}
	switch {
	case q.over.IsNamed("ROW_NUMBER"):
		cfg.Func = changelog.RowNumber
	case q.over.IsNamed("RANK"):
		cfg.Func = changelog.RankWithGaps
	default:
		cfg.Func = changelog.DenseRank
	}
	ttl, err := p.stateTTLFor(q.inner, r)
	if err != nil {
		return nil, err
	}
	cfg.StateTTL = ttl
	for _, e := range q.over.Over.PartitionBy {
		ref, ok := e.(*Ref)
		if !ok {
			return nil, semErrorf(e.Position(), "PARTITION BY takes columns")
		}
		k, err := sc.ref(ref)
		if err != nil {
			return nil, err
		}
		col, ok := k.(*kernels.ColumnExpr)
		if !ok {
			return nil, semErrorf(e.Position(), "PARTITION BY takes columns")
		}
		cfg.PartitionBy = append(cfg.PartitionBy, col.Name)
	}
	if len(q.over.Over.OrderBy) == 0 {
		return nil, semErrorf(q.over.Over.Pos, "%s needs ORDER BY", q.over.Name)
	}
	proctimeFirst := false // ORDER BY a processing-time attribute: arrival order
	proctimeLast := false  // ... DESC
	rowtimeDesc := false   // ORDER BY one event-time attribute DESC
	for _, o := range q.over.Over.OrderBy {
		ref, ok := o.Expr.(*Ref)
		if !ok {
			return nil, semErrorf(o.Pos, "ORDER BY takes columns here")
		}
		if c, path, err := sc.resolve(ref); err == nil && len(path) == 0 {
			if c.proctime {
				if len(q.over.Over.OrderBy) > 1 {
					return nil, semErrorf(o.Pos, "ORDER BY a processing-time attribute must be the only ORDER BY item")
				}
				proctimeFirst, proctimeLast = !o.Desc, o.Desc
				continue
			}
			rowtimeDesc = c.rowtime && o.Desc && len(q.over.Over.OrderBy) == 1
		}
		k, err := sc.ref(ref)
		if err != nil {
			return nil, err
		}
		col, ok := k.(*kernels.ColumnExpr)
		if !ok {
			return nil, semErrorf(o.Pos, "ORDER BY takes columns here")
		}
		nullsFirst := o.Nulls == NullsFirst || o.Nulls == NullsDefault && !o.Desc
		cfg.OrderBy = append(cfg.OrderBy, window.OrderKey{Column: col.Name, Desc: o.Desc, NullsFirst: nullsFirst})
	}
	if (proctimeFirst || proctimeLast) && (cfg.Func != changelog.RowNumber || q.n != 1) {
		return nil, semErrorf(q.over.Pos, "a ranking by processing time must be ROW_NUMBER() ... = 1 (deduplication)")
	}
	if cfg.Func == changelog.RowNumber && q.n == 1 && (rowtimeDesc && !r.updating() || proctimeLast) {
		// Deduplication keeping the last row (Flink's: ORDER BY a time
		// attribute DESC over an append-only input): of rows tied on the
		// time the later stays; by processing time the last to arrive.
		cfg.LaterFirstOnTies = true
	}
	constRank := false // deduplication: the row number is always 1
	if rankReferenced(q) {
		if proctimeFirst || proctimeLast {
			constRank = true
		} else {
			cfg.RankColumn = "rownum$"
		}
	}
	in := sc.extract(r)
	cfg.Input = in.schema
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(q.over.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(q.over.Pos, "%v", err)
	}
	what := "top-" + fmt.Sprint(q.n)
	if q.n == 1 && cfg.Func == changelog.RowNumber {
		what = "deduplicate"
	}
	node := p.keyed(p.nodeName(strings.ReplaceAll(what, " ", "-")), cfg.Factory(), in.node, cfg.PartitionBy)
	mode := arrowflow.Retract
	if cfg.KeepFirst() {
		mode = arrowflow.AppendOnly
	}
	p.explainf("%s (%s) by %s over %s input, parallelism %d, state TTL %s; emits %s",
		what, q.over.Name, Format(q.over.Over), modeName(r), node.Parallelism(), ttlName(ttl), mode)
	out := &relation{node: node, schema: outSchema}
	for _, c := range r.cols {
		if c.virtual != "" {
			continue
		}
		if mode != arrowflow.AppendOnly {
			c.rowtime = false // an updating result has no time attribute
		}
		out.cols = append(out.cols, c)
	}
	items := q.passItems
	if cfg.RankColumn != "" {
		out.cols = append(out.cols, column{name: cfg.RankColumn, phys: cfg.RankColumn, typ: fieldType(outSchema, cfg.RankColumn), hidden: true})
		items = append(items, &SelectItem{Pos: q.over.Pos, Expr: &Ref{Pos: q.over.Pos, Parts: []*Ident{{Name: cfg.RankColumn}}}, Alias: &Ident{Name: q.rowNumber}})
	}
	if constRank {
		one := &Cast{Pos: q.over.Pos, Expr: &Literal{Pos: q.over.Pos, Kind: LitInteger, Value: "1"}, Type: &DataType{Name: "BIGINT"}}
		items = append(items, &SelectItem{Pos: q.over.Pos, Expr: one, Alias: &Ident{Name: q.rowNumber}})
	}
	if mode != arrowflow.AppendOnly {
		updatingRelation(out, fmt.Sprintf("the %s at %s (a %s)", q.over.Name, q.over.Pos, what), nil)
	}
	res, err := p.project(out, items, "rank-columns", nil)
	if err != nil {
		return nil, err
	}
	if q.dt.Alias != nil {
		res = res.withQualifier(q.dt.Alias.Name)
	}
	if len(q.rest) > 0 {
		if res, err = p.filter(res, andAll(q.rest), "where", nil); err != nil {
			return nil, err
		}
	}
	return p.project(res, q.sel.Items, "select", nil)
}

// rankReferenced reports whether the query around a ranking reads its row
// number (a * of the subquery includes it): without, the ranking need not
// output it, and a change of rank alone is no change of a row.
func rankReferenced(q rankQuery) bool {
	found := false
	name := strings.ToLower(q.rowNumber)
	look := func(e Expr) {
		walkExpr(e, func(x Expr) {
			switch v := x.(type) {
			case *Star:
				if len(v.Qualifier) == 0 || q.dt.Alias != nil && strings.EqualFold(v.Qualifier[len(v.Qualifier)-1].Name, q.dt.Alias.Name) {
					found = true
				}
			case *Ref:
				if strings.ToLower(v.Parts[len(v.Parts)-1].Name) == name {
					found = true
				}
			}
		})
	}
	for _, it := range q.sel.Items {
		look(it.Expr)
	}
	for _, e := range q.rest {
		look(e)
	}
	return found
}
