package sql

import (
	"strings"
)

// query parses [WITH ...] body [ORDER BY ...] [LIMIT n] [OFFSET m] [FETCH
// ...]. A parenthesised query with nothing around it comes back as the
// inner query itself.
func (p *parser) query() (*Query, error) {
	if err := p.enterFrame(); err != nil {
		return nil, err
	}
	defer p.leaveFrame()
	start := p.tok()
	q := &Query{Pos: start.pos}
	var err error
	if p.acceptKw("WITH") {
		for {
			cte, err := p.cte()
			if err != nil {
				return nil, err
			}
			q.With = append(q.With, cte)
			if !p.accept(tokComma) {
				break
			}
		}
	}
	if q.Body, err = p.setExpr(0); err != nil {
		return nil, err
	}
	if p.acceptKws("ORDER", "BY") {
		if q.OrderBy, err = p.orderItems(); err != nil {
			return nil, err
		}
	}
	// ORDER BY may use the windows of the SELECT it orders.
	var windows []*NamedWindow
	if sel, ok := q.Body.(*Select); ok {
		windows = sel.Windows
	}
	for _, o := range q.OrderBy {
		if err := p.resolveWindowRefs(windows, o); err != nil {
			return nil, err
		}
	}
	if err := p.limitOffset(q); err != nil {
		return nil, err
	}
	if q.With == nil && q.OrderBy == nil && q.Limit == nil && q.Offset == nil {
		if inner, ok := q.Body.(*Query); ok {
			return inner, nil
		}
	}
	return q, nil
}

// limitOffset parses LIMIT n [OFFSET m], or OFFSET m [ROW|ROWS] [FETCH
// FIRST|NEXT [n] ROW|ROWS ONLY].
func (p *parser) limitOffset(q *Query) error {
	var err error
	if p.acceptKw("LIMIT") {
		if p.isKw("ALL") {
			return p.errAt(p.tok().pos, "LIMIT ALL is not supported", "leave out the LIMIT")
		}
		if q.Limit, err = p.additive(); err != nil {
			return err
		}
	}
	if p.acceptKw("OFFSET") {
		if q.Offset, err = p.additive(); err != nil {
			return err
		}
		if !p.acceptKw("ROWS") {
			p.acceptKw("ROW")
		}
	}
	if q.Limit == nil && p.isKw("FETCH") {
		p.next()
		if !p.acceptKw("FIRST") && !p.acceptKw("NEXT") {
			return p.errExpected("FIRST or NEXT")
		}
		if p.isKw("ROW") || p.isKw("ROWS") {
			q.Limit = &Literal{Pos: p.tok().pos, Kind: LitInteger, Value: "1"}
		} else if q.Limit, err = p.additive(); err != nil {
			return err
		}
		if !p.acceptKw("ROWS") && !p.acceptKw("ROW") {
			return p.errExpected("ROWS")
		}
		if _, err := p.expectKw("ONLY"); err != nil {
			return err
		}
	}
	if p.isKw("LIMIT") {
		return p.errAt(p.tok().pos, "LIMIT must come before OFFSET", "write LIMIT n OFFSET m")
	}
	return nil
}

// cte parses name [(columns)] AS (query).
func (p *parser) cte() (*CTE, error) {
	name, err := p.ident("query name")
	if err != nil {
		return nil, err
	}
	c := &CTE{Pos: name.Pos, Name: name}
	if p.accept(tokLParen) {
		if c.Columns, err = p.identList("column name"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if !p.is(tokLParen) {
		return nil, p.errAt(p.tok().pos, "expected \"(\", found "+describe(p.tok()), "write WITH name AS (SELECT ...)")
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	if c.Query, err = p.query(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	return c, nil
}

// setExpr parses query terms joined by UNION, EXCEPT (precedence 1) and
// INTERSECT (precedence 2), left-associatively, with operators of at least
// minPrec.
func (p *parser) setExpr(minPrec int) (QueryExpr, error) {
	left, err := p.queryPrimary()
	if err != nil {
		return nil, err
	}
	for {
		var op SetOpKind
		prec := 0
		switch {
		case p.isKw("UNION"):
			op, prec = Union, 1
		case p.isKw("EXCEPT"):
			op, prec = Except, 1
		case p.isKw("INTERSECT"):
			op, prec = Intersect, 2
		}
		if prec == 0 || prec < minPrec {
			return left, nil
		}
		opTok := p.next()
		all := p.acceptKw("ALL")
		if !all {
			p.acceptKw("DISTINCT")
		}
		right, err := p.setExpr(prec + 1)
		if err != nil {
			return nil, err
		}
		left = &SetOp{Pos: left.Position(), OpPos: opTok.pos, Op: op, All: all, Left: left, Right: right}
	}
}

// queryPrimary parses SELECT ..., VALUES ... or (query).
func (p *parser) queryPrimary() (QueryExpr, error) {
	t := p.tok()
	switch {
	case t.kind == tokIdent && t.upper == "SELECT":
		return p.selectExpr()
	case t.kind == tokIdent && t.upper == "VALUES":
		return p.values()
	case t.kind == tokLParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
		if q.With == nil && q.OrderBy == nil && q.Limit == nil && q.Offset == nil {
			return q.Body, nil
		}
		return q, nil
	case t.kind == tokIdent && t.upper == "TABLE":
		return nil, p.errAt(t.pos, "TABLE name as a query is not supported", "write SELECT * FROM name")
	}
	return nil, p.errExpected("SELECT")
}

// selectExpr parses SELECT ... up to (not including) ORDER BY.
func (p *parser) selectExpr() (*Select, error) {
	t := p.next() // SELECT
	s := &Select{Pos: t.pos}
	var err error
	if s.Hints, err = p.hints(); err != nil {
		return nil, err
	}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		item, err := p.selectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, item)
		if !p.accept(tokComma) {
			break
		}
	}
	if p.acceptKw("FROM") {
		if s.From, err = p.from(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKws("GROUP", "BY") {
		if s.GroupBy, err = p.groupBy(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("HAVING") {
		if s.Having, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("WINDOW") {
		if s.Windows, err = p.windowClause(); err != nil {
			return nil, err
		}
	}
	if p.isKw("QUALIFY") {
		return nil, p.errAt(p.tok().pos, "QUALIFY is not supported",
			"filter in an outer query: SELECT * FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn FROM t) WHERE rn <= N")
	}
	if err := p.resolveWindowRefs(s.Windows, s); err != nil {
		return nil, err
	}
	return s, nil
}

// windowClause parses name AS (window spec) [, name AS (...)] after
// WINDOW, as Calcite does; a name defined twice is an error.
func (p *parser) windowClause() ([]*NamedWindow, error) {
	var ws []*NamedWindow
	for {
		name, err := p.ident("window name")
		if err != nil {
			return nil, err
		}
		for _, o := range ws {
			if strings.EqualFold(o.Name.Name, name.Name) {
				return nil, p.errAt(name.Pos, "window "+name.String()+" is defined twice in this WINDOW clause", "")
			}
		}
		if _, err := p.expectKw("AS"); err != nil {
			return nil, err
		}
		if !p.is(tokLParen) {
			return nil, p.errExpected("\"(\"")
		}
		spec, err := p.windowSpec()
		if err != nil {
			return nil, err
		}
		ws = append(ws, &NamedWindow{Pos: name.Pos, Name: name, Spec: spec})
		if !p.accept(tokComma) {
			return ws, nil
		}
	}
}

// resolveWindowRefs resolves the OVER name references under n (not those
// of nested queries, which their own SELECT resolved) against windows, a
// SELECT's WINDOW clause: it sets each reference's PartitionBy, OrderBy and
// Frame to those of the window of that name. A name windows does not
// define is an error at the reference.
func (p *parser) resolveWindowRefs(windows []*NamedWindow, n Node) error {
	var err error
	Inspect(n, func(x Node) bool {
		if err != nil {
			return false
		}
		switch x := x.(type) {
		case *Subquery, *Exists, *Query:
			return false // resolved by its own SELECT
		case *WindowSpec:
			if x.Name == nil {
				return true
			}
			for _, nw := range windows {
				if strings.EqualFold(nw.Name.Name, x.Name.Name) {
					x.PartitionBy, x.OrderBy, x.Frame = nw.Spec.PartitionBy, nw.Spec.OrderBy, nw.Spec.Frame
					return true
				}
			}
			hint := "define it after FROM ... WHERE ... GROUP BY ... HAVING ...: WINDOW " + x.Name.String() +
				" AS (PARTITION BY ... ORDER BY ...), or write the window inline: OVER (PARTITION BY ... ORDER BY ...)"
			if len(windows) > 0 {
				var names []string
				for _, nw := range windows {
					names = append(names, nw.Name.String())
				}
				hint = "this SELECT's WINDOW clause defines " + strings.Join(names, ", ")
			}
			err = p.errAt(x.Pos, "window "+x.Name.String()+" is not defined", hint)
			return false
		}
		return true
	})
	return err
}

// selectItem parses *, t.*, or expr [[AS] alias].
func (p *parser) selectItem() (*SelectItem, error) {
	t := p.tok()
	if t.kind == tokStar {
		p.next()
		return &SelectItem{Pos: t.pos, Expr: &Star{Pos: t.pos}}, nil
	}
	// t.* and db.t.*: names separated by dots, then a star.
	if isName(t) {
		n := 0
		for p.peekIs(n+1, tokDot) && (p.peekIs(n+2, tokIdent) || p.peekIs(n+2, tokQIdent)) {
			n += 2
		}
		if p.peekIs(n+1, tokDot) && p.peekIs(n+2, tokStar) {
			star := &Star{Pos: t.pos}
			for i := 0; i <= n; i += 2 {
				star.Qualifier = append(star.Qualifier, identFrom(p.peek(i)))
			}
			for i := 0; i < n+3; i++ {
				p.next()
			}
			return &SelectItem{Pos: t.pos, Expr: star}, nil
		}
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	item := &SelectItem{Pos: e.Position(), Expr: e}
	if item.Alias, err = p.optAlias(); err != nil {
		return nil, err
	}
	return item, nil
}

// optAlias parses an optional [AS] alias. QUALIFY, which other dialects
// have after FROM, is not taken as an alias without AS, so that it gets
// its own error.
func (p *parser) optAlias() (*Ident, error) {
	if p.acceptKw("AS") {
		return p.ident("alias")
	}
	if t := p.tok(); isName(t) && !(t.kind == tokIdent && t.upper == "QUALIFY") {
		return identFrom(p.next()), nil
	}
	return nil, nil
}

// tableAlias parses an optional [AS] alias [(columns)] of a FROM item.
func (p *parser) tableAlias() (*Ident, []*Ident, error) {
	alias, err := p.optAlias()
	if err != nil || alias == nil {
		return nil, nil, err
	}
	if !p.accept(tokLParen) {
		return alias, nil, nil
	}
	cols, err := p.identList("column alias")
	if err != nil {
		return nil, nil, err
	}
	return alias, cols, nil
}

// orderItems parses expr [ASC|DESC] [NULLS FIRST|LAST], ...
func (p *parser) orderItems() ([]*OrderItem, error) {
	var items []*OrderItem
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		it := &OrderItem{Pos: e.Position(), Expr: e}
		if p.acceptKw("DESC") {
			it.Desc = true
		} else {
			p.acceptKw("ASC")
		}
		if p.acceptKws("NULLS", "FIRST") {
			it.Nulls = NullsFirst
		} else if p.acceptKws("NULLS", "LAST") {
			it.Nulls = NullsLast
		}
		items = append(items, it)
		if !p.accept(tokComma) {
			return items, nil
		}
	}
}

// groupBy parses the items of GROUP BY.
func (p *parser) groupBy() ([]Expr, error) {
	var items []Expr
	for {
		t := p.tok()
		var kind GroupingKind
		grouping := true
		switch {
		case t.kind == tokIdent && t.upper == "GROUPING" && p.isKwAt(1, "SETS"):
			p.next()
			kind = GroupingSets
		case t.kind == tokIdent && t.upper == "ROLLUP" && p.peekIs(1, tokLParen):
			kind = Rollup
		case t.kind == tokIdent && t.upper == "CUBE" && p.peekIs(1, tokLParen):
			kind = Cube
		default:
			grouping = false
		}
		switch {
		case grouping:
			p.next()
			gs := &GroupingSet{Pos: t.pos, Kind: kind}
			if _, err := p.expect(tokLParen, "\"(\""); err != nil {
				return nil, err
			}
			for {
				set, err := p.groupingElement(kind == GroupingSets)
				if err != nil {
					return nil, err
				}
				gs.Sets = append(gs.Sets, set)
				if !p.accept(tokComma) {
					break
				}
			}
			if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
				return nil, err
			}
			items = append(items, gs)
		case t.kind == tokLParen && p.peekIs(1, tokRParen):
			p.next()
			p.next()
			items = append(items, &GroupingSet{Pos: t.pos, Kind: GroupingSets, Sets: [][]Expr{{}}})
		default:
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		if !p.accept(tokComma) {
			return items, nil
		}
	}
}

// groupingElement parses one element of GROUPING SETS, ROLLUP or CUBE: an
// expression, (a, b, ...), or () when allowEmpty.
func (p *parser) groupingElement(allowEmpty bool) ([]Expr, error) {
	t := p.tok()
	if t.kind == tokIdent && ((t.upper == "ROLLUP" || t.upper == "CUBE") && p.peekIs(1, tokLParen) || t.upper == "GROUPING" && p.isKwAt(1, "SETS")) {
		return nil, p.errAt(t.pos, "nested "+t.upper+" is not supported", "list the grouping sets explicitly")
	}
	// (a, b) is a set when its ")" ends the element; ((a + b) * 2) is an
	// expression.
	if m := p.matchOffset(p.i); t.kind == tokLParen && m > 0 && !p.parenIsQuery(p.i) {
		if after := p.peek(m + 1); after.kind == tokComma || after.kind == tokRParen {
			p.next()
			if p.is(tokRParen) {
				if !allowEmpty {
					return nil, p.errAt(p.tok().pos, "() is only allowed in GROUPING SETS", "")
				}
				p.next()
				return []Expr{}, nil
			}
			list, err := p.exprList()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
				return nil, err
			}
			return list, nil
		}
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	return []Expr{e}, nil
}

// values parses VALUES (row), (row), ...
func (p *parser) values() (*Values, error) {
	t := p.next() // VALUES
	v := &Values{Pos: t.pos}
	for {
		if p.isKw("ROW") && p.peekIs(1, tokLParen) {
			p.next()
		}
		if _, err := p.expect(tokLParen, "\"(\""); err != nil {
			return nil, err
		}
		row, err := p.exprList()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
			return nil, err
		}
		v.Rows = append(v.Rows, row)
		if !p.accept(tokComma) {
			return v, nil
		}
	}
}

// ---------------------------------------------------------------------------
// FROM

// from parses FROM items separated by commas.
func (p *parser) from() (TableExpr, error) {
	left, err := p.joinChain()
	if err != nil {
		return nil, err
	}
	for p.is(tokComma) {
		p.next()
		right, err := p.joinChain()
		if err != nil {
			return nil, err
		}
		left = &Join{Pos: left.Position(), Kind: CommaJoin, Left: left, Right: right}
	}
	return left, nil
}

// joinChain parses a FROM item followed by any number of joins.
func (p *parser) joinChain() (TableExpr, error) {
	left, err := p.tablePrimary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		kind := InnerJoin
		switch {
		case p.acceptKws("CROSS", "JOIN"):
			kind = CrossJoin
		case p.isKw("CROSS") && p.isKwAt(1, "APPLY"), p.isKw("OUTER") && p.isKwAt(1, "APPLY"):
			return nil, p.errAt(t.pos, t.upper+" APPLY is not supported", "write CROSS JOIN LATERAL TABLE(f(x)) or LEFT JOIN LATERAL TABLE(f(x)) ON TRUE")
		case p.acceptKw("JOIN"), p.acceptKws("INNER", "JOIN"):
		case p.acceptKws("LEFT", "JOIN"), p.acceptKws("LEFT", "OUTER", "JOIN"):
			kind = LeftJoin
		case p.acceptKws("RIGHT", "JOIN"), p.acceptKws("RIGHT", "OUTER", "JOIN"):
			kind = RightJoin
		case p.acceptKws("FULL", "JOIN"), p.acceptKws("FULL", "OUTER", "JOIN"):
			kind = FullJoin
		case p.isKw("NATURAL"):
			return nil, p.errAt(t.pos, "NATURAL JOIN is not supported", "name the join columns: JOIN t USING (a, b)")
		case t.kind == tokIdent && (t.upper == "LEFT" || t.upper == "RIGHT" || t.upper == "FULL" || t.upper == "INNER" || t.upper == "CROSS"):
			p.next()
			return nil, p.errExpected("JOIN")
		default:
			return left, nil
		}
		right, err := p.tablePrimary()
		if err != nil {
			return nil, err
		}
		j := &Join{Pos: left.Position(), Kind: kind, Left: left, Right: right}
		if kind != CrossJoin {
			switch {
			case p.acceptKw("ON"):
				if j.On, err = p.expr(); err != nil {
					return nil, err
				}
			case p.acceptKw("USING"):
				if j.Using, err = p.parenIdentList("column name"); err != nil {
					return nil, err
				}
			default:
				n := p.tok()
				return nil, p.errAt(n.pos, "expected ON or USING, found "+describe(n),
					"a "+kind.String()+" needs a condition, e.g. ON a.id = b.id; CROSS JOIN pairs every row")
			}
		}
		left = j
	}
}

// windowFuncs are the windowing table-valued functions.
var windowFuncs = map[string]WindowKind{
	"TUMBLE": TumbleWindow, "HOP": HopWindow, "CUMULATE": CumulateWindow, "SESSION": SessionWindow,
}

// windowSignatures show each window function's arguments in hints.
var windowSignatures = map[WindowKind]string{
	TumbleWindow:   "TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset])",
	HopWindow:      "HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset])",
	CumulateWindow: "CUMULATE(TABLE t, DESCRIPTOR(ts), step, size [, offset])",
	SessionWindow:  "SESSION(TABLE t [PARTITION BY key], DESCRIPTOR(ts), gap)",
}

// tablePrimary parses one FROM item without joins.
func (p *parser) tablePrimary() (TableExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.tok()
	switch {
	case t.kind == tokIdent && t.upper == "LATERAL":
		p.next()
		switch {
		case p.isKw("TABLE") && p.peekIs(1, tokLParen):
			return p.tableFunction(t.pos, true)
		case p.is(tokLParen):
			return p.derivedTable(t.pos, true)
		}
		return nil, p.errAt(p.tok().pos, "expected TABLE(...) or a subquery after LATERAL, found "+describe(p.tok()),
			"write LATERAL TABLE(f(x)) AS T(a, b)")
	case t.kind == tokIdent && t.upper == "TABLE" && p.peekIs(1, tokLParen):
		return p.tableFunction(t.pos, false)
	case t.kind == tokIdent && t.upper == "TABLE":
		return nil, p.errAt(t.pos, "TABLE name is not supported in FROM", "write the table name alone: FROM name")
	case t.kind == tokIdent && t.upper == "UNNEST" && p.peekIs(1, tokLParen):
		return p.unnest()
	case t.kind == tokLParen:
		if p.parenIsQuery(p.i) {
			return p.derivedTable(t.pos, false)
		}
		p.next()
		te, err := p.from()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
		if p.isKw("AS") || isName(p.tok()) {
			// (t) AS x: the alias of a parenthesised table.
			if tr, ok := te.(*TableRef); ok && tr.Alias == nil {
				var err error
				if tr.Alias, tr.ColumnAliases, err = p.tableAlias(); err != nil {
					return nil, err
				}
				return tr, nil
			}
			return nil, p.errAt(p.tok().pos, "an alias of a parenthesised join is not supported",
				"alias the tables inside the parentheses, or use a subquery: (SELECT ... FROM a JOIN b ON ...) AS x")
		}
		return te, nil
	case isName(t):
		name, err := p.objectName("table name")
		if err != nil {
			return nil, err
		}
		if p.is(tokLParen) {
			if k, ok := windowFuncs[strings.ToUpper(name.Last().Name)]; ok && len(name.Parts) == 1 {
				return nil, p.errAt(t.pos, "window function "+strings.ToUpper(name.Last().Name)+" must be wrapped in TABLE(...)",
					"write FROM TABLE("+windowSignatures[k]+")")
			}
			return nil, p.errAt(t.pos, "a table function in FROM must be wrapped in TABLE(...)",
				"write FROM TABLE("+name.String()+"(...)) or LATERAL TABLE("+name.String()+"(...))")
		}
		tr := &TableRef{Pos: t.pos, Name: name}
		if tr.Hints, err = p.hints(); err != nil {
			return nil, err
		}
		if p.acceptKws("FOR", "SYSTEM_TIME") {
			if !p.acceptKws("AS", "OF") {
				return nil, p.errExpected("AS OF")
			}
			if tr.SystemTime, err = p.additive(); err != nil {
				return nil, err
			}
		}
		if p.isKw("MATCH_RECOGNIZE") {
			return nil, p.errAt(p.tok().pos, "MATCH_RECOGNIZE is not supported", "")
		}
		if tr.Alias, tr.ColumnAliases, err = p.tableAlias(); err != nil {
			return nil, err
		}
		if p.isKw("MATCH_RECOGNIZE") {
			return nil, p.errAt(p.tok().pos, "MATCH_RECOGNIZE is not supported", "")
		}
		return tr, nil
	}
	if t.kind == tokIdent && reserved[t.upper] {
		return nil, p.errExpectedName("a table name or subquery")
	}
	return nil, p.errExpected("a table name or subquery")
}

// derivedTable parses [LATERAL] (query) [AS] alias [(columns)]; the
// current token is the "(".
func (p *parser) derivedTable(pos Pos, lateral bool) (TableExpr, error) {
	p.next() // (
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	dt := &DerivedTable{Pos: pos, Lateral: lateral, Query: q}
	if dt.Alias, dt.ColumnAliases, err = p.tableAlias(); err != nil {
		return nil, err
	}
	return dt, nil
}

// tableFunction parses TABLE(f(args)) [AS] alias [(columns)]: a window
// TVF or another table function. The current token is TABLE.
func (p *parser) tableFunction(pos Pos, lateral bool) (TableExpr, error) {
	p.next() // TABLE
	p.next() // (
	t := p.tok()
	name, err := p.objectName("function name")
	if err != nil {
		return nil, err
	}
	if !p.is(tokLParen) {
		return nil, p.errAt(p.tok().pos, "expected \"(\" after the function name, found "+describe(p.tok()),
			"TABLE(...) in FROM holds a function call, e.g. TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))")
	}
	call, err := p.callArgs(&FuncCall{Pos: t.pos, Name: name})
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	var te TableExpr
	var alias **Ident
	var cols *[]*Ident
	if k, ok := windowFuncs[strings.ToUpper(name.Last().Name)]; ok && len(name.Parts) == 1 && !name.Parts[0].Quoted && !lateral {
		w, err := p.windowTVF(pos, k, call)
		if err != nil {
			return nil, err
		}
		te, alias, cols = w, &w.Alias, &w.ColumnAliases
	} else {
		tf := &TableFunc{Pos: pos, Lateral: lateral, Call: call}
		te, alias, cols = tf, &tf.Alias, &tf.ColumnAliases
	}
	if *alias, *cols, err = p.tableAlias(); err != nil {
		return nil, err
	}
	return te, nil
}

// windowParams lists each window function's parameter names in order; the
// last is optional except for SESSION.
var windowParams = map[WindowKind][]string{
	TumbleWindow:   {"DATA", "TIMECOL", "SIZE", "OFFSET"},
	HopWindow:      {"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
	CumulateWindow: {"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"},
	SessionWindow:  {"DATA", "TIMECOL", "GAP"},
}

// windowTVF maps the arguments of a window function call, positional or
// named, to a WindowTVF.
func (p *parser) windowTVF(pos Pos, kind WindowKind, call *FuncCall) (*WindowTVF, error) {
	params := windowParams[kind]
	sig := windowSignatures[kind]
	fn := kind.String()
	if call.Star || call.Distinct {
		return nil, p.errAt(call.Pos, "invalid arguments of "+fn, "write "+sig)
	}
	vals := map[string]Expr{}
	named := false
	for i, a := range call.Args {
		if na, ok := a.(*NamedArg); ok {
			named = true
			n := strings.ToUpper(na.Name.Name)
			known := false
			for _, pn := range params {
				known = known || pn == n
			}
			if !known {
				return nil, p.errAt(na.Pos, fn+" has no parameter "+na.Name.Name,
					"its parameters are "+strings.Join(params, ", "))
			}
			if vals[n] != nil {
				return nil, p.errAt(na.Pos, "parameter "+n+" given twice", "")
			}
			vals[n] = na.Value
			continue
		}
		if named {
			return nil, p.errAt(a.Position(), "a positional argument after a named one", "write all arguments by position or all by name")
		}
		if i >= len(params) {
			return nil, p.errAt(a.Position(), "too many arguments for "+fn, "write "+sig)
		}
		vals[params[i]] = a
	}
	required := params
	if kind != SessionWindow {
		required = params[:len(params)-1]
	}
	for _, r := range required {
		if vals[r] == nil {
			return nil, p.errAt(call.Pos, fn+" is missing its "+r+" argument", "write "+sig)
		}
	}
	w := &WindowTVF{Pos: pos, Kind: kind}
	switch d := vals["DATA"].(type) {
	case *TableArg:
		w.Data = d
	case *Subquery:
		w.Data = &TableArg{Pos: d.Pos, Query: d.Query}
	default:
		return nil, p.errAt(d.Position(), "the first argument of "+fn+" must be a table, e.g. TABLE bids", "write "+sig)
	}
	if len(w.Data.PartitionBy) > 0 && kind != SessionWindow {
		return nil, p.errAt(w.Data.Pos, "only SESSION windows take PARTITION BY", "write "+sig)
	}
	desc, ok := vals["TIMECOL"].(*Descriptor)
	if !ok || len(desc.Columns) != 1 {
		return nil, p.errAt(vals["TIMECOL"].Position(), "the time column of "+fn+" must be DESCRIPTOR(column)", "write "+sig)
	}
	w.TimeCol = desc.Columns[0]
	w.Size, w.Slide, w.Step, w.Gap, w.Offset = vals["SIZE"], vals["SLIDE"], vals["STEP"], vals["GAP"], vals["OFFSET"]
	for _, e := range []Expr{w.Size, w.Slide, w.Step, w.Gap, w.Offset} {
		switch e.(type) {
		case *TableArg, *Descriptor:
			return nil, p.errAt(e.Position(), "expected an interval", "write "+sig)
		}
	}
	return w, nil
}

// unnest parses UNNEST(args) [WITH ORDINALITY] [AS] alias [(columns)].
func (p *parser) unnest() (TableExpr, error) {
	t := p.next() // UNNEST
	p.next()      // (
	u := &Unnest{Pos: t.pos}
	var err error
	if u.Args, err = p.exprList(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
		return nil, err
	}
	u.WithOrdinality = p.acceptKws("WITH", "ORDINALITY")
	if u.Alias, u.ColumnAliases, err = p.tableAlias(); err != nil {
		return nil, err
	}
	return u, nil
}

// ---------------------------------------------------------------------------
// Parenthesis matching

// matchOffset returns how many tokens after token i (a "(") its matching
// ")" is, or -1 when it has none.
func (p *parser) matchOffset(i int) int {
	if p.matches == nil {
		p.matches = make([]int, len(p.toks))
		var stack []int
		for j, t := range p.toks {
			p.matches[j] = -1
			switch t.kind {
			case tokLParen:
				stack = append(stack, j)
			case tokRParen:
				if n := len(stack); n > 0 {
					p.matches[stack[n-1]] = j
					stack = stack[:n-1]
				}
			}
		}
	}
	if i < 0 || i >= len(p.matches) || p.matches[i] < 0 {
		return -1
	}
	return p.matches[i] - i
}

// queryFollowers are the tokens that can follow a parenthesised query
// inside a query but not a parenthesised expression.
var queryFollowers = map[string]bool{
	"UNION": true, "INTERSECT": true, "EXCEPT": true, "ORDER": true,
	"LIMIT": true, "OFFSET": true, "FETCH": true,
}

// parenIsQuery reports whether the "(" at token i encloses a query rather
// than an expression (or a list, or a join). ((SELECT 1) UNION ...) and
// ((SELECT 1)) are queries; ((SELECT 1) + 1) is not. Deciding by looking
// ahead, instead of trying one and then the other, keeps parsing linear.
func (p *parser) parenIsQuery(i int) bool {
	k := 1
	for i+k < len(p.toks) && p.toks[i+k].kind == tokLParen {
		k++
	}
	t := &p.toks[min(i+k, len(p.toks)-1)]
	if t.kind != tokIdent || (t.upper != "SELECT" && t.upper != "WITH" && t.upper != "VALUES") {
		return false
	}
	// The parens i+1 .. i+k-1 must each be followed by ")" or a set
	// operator or ORDER BY/LIMIT, or the outer ones are expressions.
	for l := k - 1; l >= 1; l-- {
		m := p.matchOffset(i + l)
		if m < 0 {
			return true // unbalanced: let the query parser report it
		}
		after := &p.toks[min(i+l+m+1, len(p.toks)-1)]
		if after.kind == tokRParen {
			continue
		}
		if after.kind == tokIdent && queryFollowers[after.upper] {
			continue
		}
		return false
	}
	return true
}
