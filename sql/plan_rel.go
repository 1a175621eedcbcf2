package sql

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// column is one column of a relation as SQL sees it.
type column struct {
	qual     string         // the alias or table name that qualifies it ("" for none)
	name     string         // its SQL name
	phys     string         // its name in the batches ("" for a virtual window column)
	typ      arrow.DataType //
	rowtime  bool           // an event-time attribute (WATERMARK'd, or window_time)
	proctime bool           // a PROCTIME() attribute: no values, windows use the clock
	virtual  string         // window_start, window_end or window_time of a window TVF not yet applied
	// nested, when set, is the path of ROW fields below the struct column
	// phys that the column is (a view selecting bid.price): it is taken
	// out of the struct only where it is used (ExtractFields, which
	// copies nothing).
	nested []string
	pos    Pos  // where a select list named it (for errors about it later)
	hidden bool // not part of *: a helper column such as the row number
	// timeLike marks a window aggregation's window_start and window_end:
	// timestamps in step with the watermark (an interval join may use
	// them as the time of their rows), though not time attributes.
	timeLike bool
	// derived, when set, computes the column from the relation's others
	// (a window aggregation's window_time, window_end - 1 ms): it has no
	// batch column (phys is empty) and is only read by expressions.
	derived kernels.Expr
}

// relation is a planned FROM item or query: a node whose batches carry
// the columns.
type relation struct {
	node   *arrowflow.Node
	schema *arrow.Schema // the batches' schema
	cols   []column
	tvf    *tvfInfo    // the rows of a window TVF; windows not yet assigned
	bounds *boundsInfo // each row carries its window's bounds
	// asOf is the FOR SYSTEM_TIME AS OF expression of a versioned table
	// read for a temporal join, and pk its primary key (SQL names).
	asOf Expr
	pk   []string
	// mode is the changelog mode of the relation's rows (append-only
	// unless an updating operator is below), updatedBy names that
	// operator for errors ("the GROUP BY at 3:1 (non-window aggregation)"),
	// and upsertKey, when known, is a set of columns (phys names) that
	// identifies a row of the dynamic table: every change of one key
	// comes from one subtask, in order.
	mode      arrowflow.ChangelogMode
	updatedBy string
	upsertKey []string
}

// updating reports whether the relation's rows are a changelog with
// retractions.
func (r *relation) updating() bool { return r.mode != arrowflow.AppendOnly }

// tvfInfo is a window TVF whose windows the consumer assigns (aggregate,
// top-N, window join).
type tvfInfo struct {
	pos      Pos
	spec     window.Spec
	timeCol  string // physical event-time column; "" for processing time
	proctime bool
}

// boundsInfo names the physical columns holding each row's window bounds
// (window_start, window_end of a window aggregate, possibly renamed).
type boundsInfo struct {
	start, end string
}

// withQualifier returns r with every column qualified by q.
func (r *relation) withQualifier(q string) *relation {
	out := *r
	out.cols = make([]column, len(r.cols))
	for i, c := range r.cols {
		c.qual = q
		out.cols[i] = c
	}
	return &out
}

// visible lists the columns a * expands to.
func (r *relation) visible() []column {
	var out []column
	for _, c := range r.cols {
		if (c.virtual == "" || r.tvf != nil) && !c.hidden {
			out = append(out, c)
		}
	}
	return out
}

// rowtimeCol returns the physical name of the relation's event-time
// attribute, if it has one.
func (r *relation) rowtimeCol() string {
	for _, c := range r.cols {
		if c.rowtime && c.phys != "" {
			return c.phys
		}
	}
	return ""
}

// addOp appends an operator behind r's node (a forward edge: chained into
// the same task) and returns the new relation with the given schema.
func (p *planner) addOp(r *relation, name string, f arrowflow.OperatorFactory, schema *arrow.Schema) *relation {
	out := *r
	out.node = p.g.Operator(p.nodeName(name), f, r.node.Parallelism(), arrowflow.Forward(r.node))
	out.node.SetChangelogMode(r.mode)
	out.schema = schema
	return &out
}

// scan plans the read of a source table: the connector's source, the
// computed columns, the watermark. Each table is read once; every
// reference shares the scan.
func (p *planner) scan(t *tableDef, pos Pos) (*relation, error) {
	if r, ok := p.scans[t]; ok {
		return r, nil
	}
	s := t.stmt
	spec := scanSpec{table: t.name, opts: t.opts, physical: t.physical, metadata: t.metadata, partitionBy: t.partitionBy, primaryKey: t.pk}
	var wmCol string
	if s.Watermark != nil {
		wmCol = s.Watermark.Column.Name
		if _, physical := t.types[wmCol]; physical {
			if d, ok := simpleDelay(s.Watermark.Expr, wmCol); ok {
				spec.eventTime, spec.delay = wmCol, d
			}
		}
	}
	src, err := openSource(p.ctx, t.connector, spec)
	if err != nil {
		return nil, err
	}
	if s.Watermark != nil && !src.watermarked {
		// Any other WATERMARK is generated per split inside the source
		// (Flink's watermark push-down): over interleaved splits one
		// watermark would run ahead of the slower ones.
		ws, err := p.splitWatermark(t, src.src.Schema())
		if err != nil {
			return nil, err
		}
		src.src = window.SplitWatermarkSource(src.src, ws)
	}
	node := p.g.Source(p.nodeName(t.name), src.src, p.par)
	r := &relation{node: node, schema: src.src.Schema()}
	p.explainf("source %s: %s connector, parallelism %d", t.name, t.connector, p.par)
	if src.changes {
		r, err = p.changeSource(t, r, src)
		if err != nil {
			return nil, err
		}
		node = r.node
	}
	// The declared columns, in order; computed ones come from a
	// projection over the physical and metadata columns.
	var computed bool
	for _, c := range s.Columns {
		if c.Kind == ComputedColumn {
			computed = true
		}
	}
	if computed {
		base := &relation{node: node, schema: r.schema}
		for _, c := range s.Columns {
			if c.Kind != ComputedColumn {
				base.cols = append(base.cols, column{qual: t.name, name: c.Name.Name, phys: c.Name.Name, typ: fieldType(r.schema, c.Name.Name)})
			}
		}
		var exprs []*SelectItem
		for _, c := range s.Columns {
			if c.Kind == ComputedColumn {
				exprs = append(exprs, &SelectItem{Pos: c.Pos, Expr: c.Expr, Alias: c.Name})
			} else {
				exprs = append(exprs, &SelectItem{Pos: c.Pos, Expr: &Ref{Pos: c.Pos, Parts: []*Ident{c.Name}}})
			}
		}
		r, err = p.project(base, exprs, "computed-columns", nil)
		if err != nil {
			return nil, err
		}
	} else {
		for _, c := range s.Columns {
			r.cols = append(r.cols, column{qual: t.name, name: c.Name.Name, phys: c.Name.Name, typ: fieldType(r.schema, c.Name.Name)})
		}
	}
	for i := range r.cols {
		r.cols[i].qual = t.name
	}
	if s.Watermark != nil {
		idx := -1
		for i, c := range r.cols {
			if c.name == wmCol {
				idx = i
			}
		}
		if _, ok := r.cols[idx].typ.(*arrow.TimestampType); !ok {
			return nil, semErrorf(s.Watermark.Pos, "table %s: WATERMARK FOR %s: the column is %s, not a TIMESTAMP(3) or TIMESTAMP_LTZ(3)", t.name, wmCol, r.cols[idx].typ)
		}
		r.cols[idx].rowtime = true
		p.explainf("  watermark %s, generated by the source per split", Format(s.Watermark.Expr))
	}
	p.scans[t] = r
	return r, nil
}

// splitWatermark compiles t's WATERMARK expression over the source's own
// columns (schema), with the computed columns it reads inlined, for
// window.SplitWatermarkSource to evaluate per split.
func (p *planner) splitWatermark(t *tableDef, schema *arrow.Schema) (window.SplitWatermarkSpec, error) {
	s := t.stmt
	base := &relation{schema: schema}
	for _, c := range s.Columns {
		if c.Kind != ComputedColumn {
			base.cols = append(base.cols, column{qual: t.name, name: c.Name.Name, phys: c.Name.Name, typ: fieldType(schema, c.Name.Name)})
		}
	}
	sc := &scope{p: p, rel: base}
	for _, c := range s.Columns {
		if c.Kind == ComputedColumn {
			k, typ, err := sc.expr(c.Expr)
			if err != nil {
				return window.SplitWatermarkSpec{}, err
			}
			base.cols = append(base.cols, column{qual: t.name, name: c.Name.Name, typ: typ, derived: k})
		}
	}
	e, typ, err := sc.expr(s.Watermark.Expr)
	if err != nil {
		return window.SplitWatermarkSpec{}, err
	}
	if _, ok := typ.(*arrow.TimestampType); !ok {
		return window.SplitWatermarkSpec{}, semErrorf(s.Watermark.Expr.Position(), "table %s: WATERMARK FOR %s AS %s: the expression is %s, not a timestamp",
			t.name, s.Watermark.Column.Name, Format(s.Watermark.Expr), typ)
	}
	idle, err := t.opts.duration("scan.watermark.idle-timeout", p.idleTimeout)
	if err != nil {
		return window.SplitWatermarkSpec{}, err
	}
	return window.SplitWatermarkSpec{Fields: sc.fields, Expr: e, IdleTimeout: idle}, nil
}

// simpleDelay recognises `col` and `col - INTERVAL ...` watermarks.
func simpleDelay(e Expr, col string) (time.Duration, bool) {
	switch x := e.(type) {
	case *Ref:
		return 0, len(x.Parts) == 1 && x.Parts[0].Name == col
	case *Binary:
		ref, ok := x.Left.(*Ref)
		iv, ok2 := x.Right.(*IntervalLit)
		if x.Op != OpSub || !ok || !ok2 || len(ref.Parts) != 1 || ref.Parts[0].Name != col {
			return 0, false
		}
		d, err := iv.Duration()
		return d, err == nil && d >= 0
	}
	return 0, false
}

func fieldType(s *arrow.Schema, name string) arrow.DataType {
	if idx := s.FieldIndices(name); len(idx) == 1 {
		return s.Field(idx[0]).Type
	}
	return nil
}

// project plans a projection of r: each item's expression, named by its
// alias (or its column's name). Columns that only pass through keep their
// attributes (event time, window bounds).
func (p *planner) project(r *relation, items []*SelectItem, name string, tmpl *scope) (*relation, error) {
	sc := &scope{p: p, rel: r}
	if tmpl != nil {
		sc.aggs, sc.groups, sc.windowFuncs = tmpl.aggs, tmpl.groups, tmpl.windowFuncs
	}
	if out, ok := p.renameOnly(sc, items); ok {
		return out, nil
	}
	var (
		exprs []kernels.Expr
		names []string
		cols  []column
	)
	used := map[string]int{}
	add := func(e kernels.Expr, c column) {
		phys := c.name
		if used[phys] > 0 {
			phys = fmt.Sprintf("%s$%d", c.name, used[phys])
		}
		used[c.name]++
		c.phys = phys
		exprs, names, cols = append(exprs, e), append(names, phys), append(cols, c)
	}
	for _, it := range items {
		if star, ok := it.Expr.(*Star); ok {
			matched := false
			for _, c := range r.visible() {
				if len(star.Qualifier) > 0 && !strings.EqualFold(c.qual, star.Qualifier[len(star.Qualifier)-1].Name) {
					continue
				}
				matched = true
				if c.virtual != "" {
					return nil, sc.virtualError(star.Pos, c)
				}
				if c.proctime {
					add(nil, column{name: c.name, proctime: true})
					continue
				}
				e, err := sc.colExpr(&c, nil)
				if err != nil {
					return nil, err
				}
				add(e, column{name: c.name, typ: c.typ, rowtime: c.rowtime})
			}
			if !matched {
				return nil, semErrorf(star.Pos, "%s.*: no such table in FROM", identPath(star.Qualifier))
			}
			continue
		}
		colName := itemName(it, len(cols))
		if ref, ok := it.Expr.(*Ref); ok {
			c, _, _ := sc.resolve(ref) // errors are reported by the translation
			if c != nil && c.proctime {
				add(nil, column{name: colName, proctime: true})
				continue
			}
			if c != nil && c.virtual != "" {
				return nil, sc.virtualError(ref.Pos, *c)
			}
		}
		if fc, ok := it.Expr.(*FuncCall); ok && fc.IsNamed("PROCTIME") && len(fc.Args) == 0 {
			add(nil, column{name: colName, proctime: true})
			continue
		}
		e, typ, err := sc.expr(it.Expr)
		if err != nil {
			return nil, err
		}
		c := column{name: colName, typ: typ}
		if ref, ok := it.Expr.(*Ref); ok {
			if rc, path, _ := sc.resolve(ref); rc != nil && len(path) == 0 {
				c.rowtime, c.timeLike = rc.rowtime, rc.timeLike
			}
		}
		add(e, c)
	}
	// Proctime columns have no values: drop them from the projection.
	var pe []kernels.Expr
	var pn []string
	for i, e := range exprs {
		if e != nil {
			pe, pn = append(pe, e), append(pn, names[i])
		}
	}
	in := sc.extract(r)
	proj, err := compileProjection(pe, pn, in.schema)
	if err != nil {
		return nil, semErrorf(items[0].Pos, "%v", err)
	}
	out := p.addOp(in, name, projectFactory(pe, pn), proj.schema)
	for i := range cols {
		if cols[i].proctime {
			cols[i].phys = ""
		}
	}
	out.cols = cols
	out.tvf = nil
	out.bounds = nil
	if r.bounds != nil {
		// Window bounds passed through (perhaps renamed) keep their role.
		var start, end string
		for i, it := range items {
			if ref, ok := it.Expr.(*Ref); ok {
				if c, _, _ := sc.resolve(ref); c != nil && len(ref.Parts) <= 2 {
					if c.phys == r.bounds.start {
						start = cols[i].phys
					}
					if c.phys == r.bounds.end {
						end = cols[i].phys
					}
				}
			}
		}
		if start != "" && end != "" {
			out.bounds = &boundsInfo{start: start, end: end}
		}
	}
	return out, nil
}

// itemName is the name of a select item: its alias, the last part of a
// column reference, else EXPR$i as Flink names them.
func itemName(it *SelectItem, i int) string {
	if it.Alias != nil {
		return it.Alias.Name
	}
	switch x := it.Expr.(type) {
	case *Ref:
		return x.Parts[len(x.Parts)-1].Name
	case *FieldAccess:
		return x.Field.Name
	}
	return fmt.Sprintf("EXPR$%d", i)
}

func identPath(ids []*Ident) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.Name
	}
	return strings.Join(parts, ".")
}

// filter plans WHERE cond over r.
func (p *planner) filter(r *relation, cond Expr, name string, tmpl *scope) (*relation, error) {
	sc := &scope{p: p, rel: r}
	if tmpl != nil {
		sc.aggs, sc.groups, sc.windowFuncs = tmpl.aggs, tmpl.groups, tmpl.windowFuncs
	}
	e, typ, err := sc.expr(cond)
	if err != nil {
		return nil, err
	}
	if typ.ID() != arrow.BOOL && typ.ID() != arrow.NULL {
		return nil, semErrorf(cond.Position(), "%s: the condition is %s, not BOOLEAN", name, typ)
	}
	in := sc.extract(r)
	out := p.addOp(in, name, ops.Where(e), in.schema)
	return out, nil
}

// memAlloc is the allocator type operator functions receive.
type memAlloc = memory.Allocator

// renameOnly plans a SELECT list of bare column references (a view
// choosing and naming columns, nested fields among them) without an
// operator: the relation keeps its node and batches, only the columns
// SQL sees change. Nothing is copied until a consumer computes with the
// columns (and then only the columns it uses). ok is false for lists
// with expressions.
func (p *planner) renameOnly(sc *scope, items []*SelectItem) (*relation, bool) {
	if sc.groups != nil || sc.aggs != nil {
		return nil, false
	}
	r := sc.rel
	var cols []column
	for i, it := range items {
		switch x := it.Expr.(type) {
		case *Star:
			if len(x.Qualifier) > 0 {
				return nil, false
			}
			for _, c := range r.visible() {
				c.qual = ""
				cols = append(cols, c)
			}
		case *Ref:
			c, path, err := sc.resolve(x)
			if err != nil || c.virtual != "" && len(path) > 0 {
				return nil, false
			}
			out := *c
			out.qual, out.name, out.pos, out.hidden = "", itemName(it, i), x.Pos, false
			if len(path) > 0 {
				typ, err := nestedType(c.typ, path)
				if err != nil {
					return nil, false
				}
				out.typ, out.rowtime = typ, false
				out.nested = append(append([]string(nil), c.nested...), path...)
			}
			cols = append(cols, out)
		default:
			return nil, false
		}
	}
	out := *r
	out.cols = cols
	if r.tvf != nil {
		// The rows of a window TVF, still to be windowed: their time
		// column is in the batches whatever SQL selects.
		keep := false
		for _, c := range cols {
			keep = keep || c.virtual != ""
		}
		if !keep {
			out.tvf = nil
		}
	}
	if r.bounds != nil {
		var start, end bool
		for _, c := range cols {
			start = start || c.phys == r.bounds.start && c.nested == nil
			end = end || c.phys == r.bounds.end && c.nested == nil
		}
		if !start || !end {
			out.bounds = nil
		}
	}
	return &out, true
}

// nestedType walks ROW types down path.
func nestedType(t arrow.DataType, path []string) (arrow.DataType, error) {
	for _, f := range path {
		st, ok := t.(*arrow.StructType)
		if !ok {
			return nil, fmt.Errorf("%s is not a ROW", t)
		}
		i, ok := st.FieldIdx(f)
		if !ok {
			return nil, fmt.Errorf("the ROW has no field %s", f)
		}
		t = st.Field(i).Type
	}
	return t, nil
}

// materialize returns r with its nested columns taken out of their
// structs as columns of their own (for operators that pass columns on by
// name: joins, unions, sinks).
func (p *planner) materialize(r *relation) *relation {
	sc := &scope{p: p, rel: r}
	out := *r
	out.cols = append([]column(nil), r.cols...)
	for i, c := range out.cols {
		if c.nested == nil {
			continue
		}
		e, err := sc.colExpr(&out.cols[i], nil)
		if err != nil {
			continue
		}
		out.cols[i].phys, out.cols[i].nested = e.(*kernels.ColumnExpr).Name, nil
	}
	res := sc.extract(&out)
	return res
}

// prune returns r with its batches narrowed to the columns SQL can still
// see (nested ones taken out of their structs) and keep (time columns):
// for stateful operators that hold every column of their input.
func (p *planner) prune(r *relation, keep ...string) *relation {
	r = p.materialize(r)
	var exprs []kernels.Expr
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] && fieldType(r.schema, name) != nil {
			seen[name] = true
			exprs, names = append(exprs, kernels.Col(name)), append(names, name)
		}
	}
	for _, c := range r.cols {
		if c.virtual == "" && !c.proctime {
			add(c.phys)
		}
	}
	for _, k := range keep {
		add(k)
	}
	if len(names) == r.schema.NumFields() {
		return r
	}
	proj, err := compileProjection(exprs, names, r.schema)
	if err != nil {
		return r // the operator reports what it cannot hold
	}
	return p.addOp(r, "columns", projectFactory(exprs, names), proj.schema)
}
