package sql

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// lookupCacheTTLOption is the filesystem connector's option for how long
// a lookup join uses the table it loaded before reading it again, and
// lookupCacheTTLDefault its default (Flink's FileSystemOptions
// LOOKUP_JOIN_CACHE_TTL).
const (
	lookupCacheTTLOption  = "lookup.join.cache.ttl"
	lookupCacheTTLDefault = 60 * time.Minute
)

// isLookupJoin reports whether the right side of a join is a table read
// FOR SYSTEM_TIME AS OF a processing-time attribute of the (planned) left
// side l: a lookup join. Anything else with FOR SYSTEM_TIME AS OF is an
// event-time temporal join, whose planning reports what is wrong.
func (p *planner) isLookupJoin(j *Join, l *relation) (*TableRef, bool) {
	tr, ok := j.Right.(*TableRef)
	if !ok || tr.SystemTime == nil {
		return nil, false
	}
	ref, ok := tr.SystemTime.(*Ref)
	if !ok {
		return nil, false
	}
	sc := &scope{p: p, rel: l}
	c, path, err := sc.resolve(ref)
	if err != nil || len(path) > 0 || c == nil || !c.proctime {
		return nil, false
	}
	return tr, true
}

// lookupJoin plans a lookup join (a processing-time temporal join): each
// row of the probe side l, as it arrives, joined with the rows of the
// bounded table tr whose key equals the probe row's, the table loaded by
// each subtask of the join (window.LookupJoin) and read again after the
// table's 'lookup.join.cache.ttl'. The ON clause equates table columns
// with expressions over the probe side (computed into columns before the
// join); other conditions of an inner join filter the joined rows.
func (p *planner) lookupJoin(j *Join, kind window.JoinKind, l *relation, tr *TableRef) (*relation, error) {
	if kind != window.JoinInner && kind != window.JoinLeftOuter {
		return nil, semErrorf(j.Pos, "a lookup join is an inner or LEFT join, not %s", j.Kind)
	}
	found, ok := p.lookupRelation(tr.Name.String())
	def, isTable := found.(*tableDef)
	if !ok {
		return nil, hinted(semErrorf(tr.Pos, "table %s does not exist", tr.Name), "declare it with CREATE TABLE ... WITH ('connector' = 'filesystem', ...)")
	}
	if !isTable {
		return nil, hinted(semErrorf(tr.Pos, "FOR SYSTEM_TIME AS OF: %s is a view; a lookup join reads a table", tr.Name),
			"declare the looked-up table with CREATE TABLE ... WITH ('connector' = 'filesystem', 'path' = ..., 'format' = 'csv')")
	}
	if def.connector != "filesystem" {
		return nil, hinted(semErrorf(tr.Pos, "lookup join of %s: the %s connector cannot be looked up; weir looks up bounded filesystem tables", tr.Name, def.connector),
			"declare the table WITH ('connector' = 'filesystem', 'path' = ..., 'format' = 'csv'), or join AS OF an event-time attribute (a temporal join)")
	}
	for _, c := range def.stmt.Columns {
		if c.Kind == ComputedColumn {
			return nil, semErrorf(c.Pos, "lookup join of %s: computed columns of a looked-up table are not supported", tr.Name)
		}
	}
	ttl, err := def.opts.duration(lookupCacheTTLOption, lookupCacheTTLDefault)
	if err != nil {
		return nil, err
	}
	if ttl < 0 {
		return nil, def.opts.errorf(lookupCacheTTLOption, "the TTL must not be negative")
	}
	src, err := openSource(p.ctx, def.connector, scanSpec{table: def.name, opts: def.opts, physical: def.physical, metadata: def.metadata, partitionBy: def.partitionBy})
	if err != nil {
		return nil, err
	}
	tschema := src.src.Schema()
	qual := tr.Name.Last().Name
	if tr.Alias != nil {
		qual = tr.Alias.Name
	}
	r := &relation{schema: tschema}
	for _, c := range def.stmt.Columns {
		r.cols = append(r.cols, column{qual: qual, name: c.Name.Name, phys: c.Name.Name, typ: fieldType(tschema, c.Name.Name)})
	}
	if r, err = renameColumns(r, tr.ColumnAliases, tr.Pos); err != nil {
		return nil, err
	}
	l = p.pruneForJoin(l)
	for q := range qualifiers(l) {
		if q == qual {
			return nil, semErrorf(j.Pos, "both sides of the join are called %s; give them different aliases", q)
		}
	}
	if j.On == nil {
		return nil, semErrorf(j.Pos, "a join needs ON conditions")
	}

	// Which side each conjunct's columns come from.
	both := &scope{p: p, rel: &relation{cols: append(append([]column(nil), l.cols...), r.cols...)}}
	sideOf := func(ref *Ref) int { // 1 probe, 2 table, 0 unknown
		c, _, err := both.resolve(ref)
		if err != nil {
			return 0
		}
		for i := range l.cols {
			if l.cols[i].qual == c.qual && l.cols[i].name == c.name && l.cols[i].phys == c.phys {
				return 1
			}
		}
		return 2
	}
	sides := func(e Expr) (mask int) {
		walkExpr(e, func(x Expr) {
			if ref, ok := x.(*Ref); ok {
				mask |= sideOf(ref)
			}
		})
		return mask
	}
	type keyPair struct {
		probe Expr
		table *column
	}
	var keys []keyPair
	var residual []Expr
	for _, c := range conjuncts(j.On) {
		if b, ok := c.(*Binary); ok && b.Op == OpEq {
			for _, pr := range [2][2]Expr{{b.Left, b.Right}, {b.Right, b.Left}} {
				ref, ok := pr[1].(*Ref)
				if !ok || sideOf(ref) != 2 || sides(pr[0]) != 1 {
					continue
				}
				tc, path, err := (&scope{p: p, rel: r}).resolve(ref)
				if err != nil || len(path) > 0 {
					continue
				}
				keys = append(keys, keyPair{probe: pr[0], table: tc})
				c = nil
				break
			}
		}
		if c != nil {
			residual = append(residual, c)
		}
	}
	if len(keys) == 0 {
		return nil, hinted(semErrorf(j.On.Position(), "a lookup join needs an equality of a column of %s and an expression over the other side", tr.Name),
			"ON mod(b.auction, 10000) = s.key")
	}
	if len(residual) > 0 && kind != window.JoinInner {
		return nil, semErrorf(residual[0].Position(), "a LEFT lookup join's ON may only equate columns of the table with expressions over the other side")
	}

	// The probe keys: bare columns of the table key's type as they are,
	// others computed into columns of that type.
	lsc := &scope{p: p, rel: l}
	var probeKeys, tableKeys []string
	var keyExprs []kernels.Expr
	var keyNames []string
	for i, k := range keys {
		e, typ, err := lsc.expr(k.probe)
		if err != nil {
			return nil, err
		}
		if typ == nil || k.table.typ == nil {
			return nil, semErrorf(k.probe.Position(), "lookup join: the key %s has no type", Format(k.probe))
		}
		tableKeys = append(tableKeys, k.table.phys)
		if ce, ok := e.(*kernels.ColumnExpr); ok && arrow.TypeEqual(typ, k.table.typ) {
			probeKeys = append(probeKeys, ce.Name)
			continue
		}
		if !arrow.TypeEqual(typ, k.table.typ) {
			e = kernels.Cast(e, k.table.typ)
		}
		name := fmt.Sprintf("$lookup_key%d", i)
		keyExprs, keyNames = append(keyExprs, e), append(keyNames, name)
		probeKeys = append(probeKeys, name)
	}
	probe := lsc.extract(l)
	if len(keyExprs) > 0 {
		var exprs []kernels.Expr
		var names []string
		for _, f := range probe.schema.Fields() {
			exprs, names = append(exprs, kernels.Col(f.Name)), append(names, f.Name)
		}
		exprs, names = append(exprs, keyExprs...), append(names, keyNames...)
		proj, err := compileProjection(exprs, names, probe.schema)
		if err != nil {
			return nil, semErrorf(keys[0].probe.Position(), "lookup join key: %v", err)
		}
		probe = p.addOp(probe, "lookup-keys", projectFactory(exprs, names), proj.schema)
	}

	pPrefix, tPrefix := prefixOf(l, "left"), prefixOf(r, "right")
	cfg := window.LookupJoin{Probe: probe.schema, ProbeKeys: probeKeys, Table: src.src, TableKeys: tableKeys,
		Kind: kind, TTL: ttl, ProbeColumns: physCols(l), TableColumns: physCols(r), ProbePrefix: pPrefix, TablePrefix: tPrefix}
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		return nil, semErrorf(j.Pos, "%v", err)
	}
	out := p.addOp(probe, "lookup-join", cfg.Factory(), outSchema)
	ttlText := "loaded once"
	if ttl > 0 {
		ttlText = "reloaded every " + ttl.String()
	}
	p.explainf("lookup join (%s) of %s on %s, the table %s per subtask, parallelism %d", kind, tr.Name, strings.Join(tableKeys, ", "), ttlText, out.node.Parallelism())
	// The probe side's columns keep their attributes (rows pass in
	// order, watermarks through); the table's are plain.
	out.cols = nil
	for _, c := range l.cols {
		if c.virtual != "" {
			continue
		}
		if !c.proctime {
			c.phys = pPrefix + c.phys
		}
		out.cols = append(out.cols, c)
	}
	for _, c := range r.cols {
		c.phys = tPrefix + c.phys
		out.cols = append(out.cols, c)
	}
	out.tvf, out.bounds, out.asOf, out.pk = nil, nil, nil, nil
	if len(residual) > 0 {
		return p.filter(out, andAll(residual), "join-condition", nil)
	}
	return out, nil
}
