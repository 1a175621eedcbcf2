package sql

import (
	"strings"
)

// Operator precedence levels, from the loosest to the tightest. The
// printer uses the same levels to decide where parentheses are needed.
const (
	precOr      = 1
	precAnd     = 2
	precNot     = 3
	precCmp     = 4 // = <> < <= > >= IS BETWEEN IN LIKE SIMILAR
	precAdd     = 5 // + - ||
	precMul     = 6 // * / %
	precUnary   = 7 // unary - +
	precPrimary = 8 // literals, names, calls, member access, [index]
)

// expr parses an expression.
func (p *parser) expr() (Expr, error) {
	if err := p.enterFrame(); err != nil {
		return nil, err
	}
	defer p.leaveFrame()
	return p.or()
}

func (p *parser) or() (Expr, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	return p.orFrom(left)
}

// orFrom parses the rest of an OR chain whose first operand is left.
func (p *parser) orFrom(left Expr) (Expr, error) {
	for p.isKw("OR") {
		op := p.next()
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = &Binary{Pos: left.Position(), OpPos: op.pos, Op: OpOr, Left: left, Right: right}
	}
	return left, nil
}

func (p *parser) and() (Expr, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	return p.andFrom(left)
}

// andFrom parses the rest of an AND chain whose first operand is left.
func (p *parser) andFrom(left Expr) (Expr, error) {
	for p.isKw("AND") {
		op := p.next()
		right, err := p.not()
		if err != nil {
			return nil, err
		}
		left = &Binary{Pos: left.Position(), OpPos: op.pos, Op: OpAnd, Left: left, Right: right}
	}
	return left, nil
}

func (p *parser) not() (Expr, error) {
	if !p.isKw("NOT") {
		return p.comparison()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.next()
	e, err := p.not()
	if err != nil {
		return nil, err
	}
	return &Unary{Pos: t.pos, Op: OpNot, Expr: e}, nil
}

var comparisonOps = map[tokenKind]BinaryOp{
	tokEq: OpEq, tokNe: OpNe, tokLt: OpLt, tokLe: OpLe, tokGt: OpGt, tokGe: OpGe,
}

// comparison parses the comparison level: comparisons and the IS, BETWEEN,
// IN, LIKE and SIMILAR TO predicates, left-associatively.
func (p *parser) comparison() (Expr, error) {
	left, err := p.additive()
	if err != nil {
		return nil, err
	}
	return p.comparisonFrom(left)
}

// comparisonFrom parses the comparisons and predicates that follow left,
// an additive-level operand.
func (p *parser) comparisonFrom(left Expr) (Expr, error) {
	var err error
	for {
		t := p.tok()
		if op, ok := comparisonOps[t.kind]; ok {
			p.next()
			right, err := p.additive()
			if err != nil {
				return nil, err
			}
			left = &Binary{Pos: left.Position(), OpPos: t.pos, Op: op, Left: left, Right: right}
			continue
		}
		if t.kind == tokEqEq {
			return nil, p.errAt(t.pos, "unexpected \"==\"", "compare with a single =")
		}
		if t.kind != tokIdent {
			return left, nil
		}
		not := false
		switch t.upper {
		case "IS":
			if left, err = p.isPredicate(left); err != nil {
				return nil, err
			}
			continue
		case "NOT":
			n := p.peek(1)
			if n.kind != tokIdent || (n.upper != "IN" && n.upper != "BETWEEN" && n.upper != "LIKE" && n.upper != "SIMILAR") {
				return left, nil
			}
			p.next()
			not = true
		case "IN", "BETWEEN", "LIKE", "SIMILAR":
		default:
			return left, nil
		}
		switch p.tok().upper {
		case "IN":
			left, err = p.inPredicate(left, not)
		case "BETWEEN":
			left, err = p.between(left, not)
		default:
			left, err = p.like(left, not)
		}
		if err != nil {
			return nil, err
		}
	}
}

// isPredicate parses IS [NOT] NULL|TRUE|FALSE|UNKNOWN|DISTINCT FROM x.
func (p *parser) isPredicate(left Expr) (Expr, error) {
	isTok := p.next() // IS
	not := p.acceptKw("NOT")
	is := &Is{Pos: left.Position(), Expr: left, Not: not}
	switch {
	case p.acceptKw("NULL"):
		is.Test = IsNull
	case p.acceptKw("TRUE"):
		is.Test = IsTrue
	case p.acceptKw("FALSE"):
		is.Test = IsFalse
	case p.acceptKw("UNKNOWN"):
		is.Test = IsUnknown
	case p.acceptKws("DISTINCT", "FROM"):
		right, err := p.additive()
		if err != nil {
			return nil, err
		}
		op := OpIsDistinctFrom
		if not {
			op = OpIsNotDistinctFrom
		}
		return &Binary{Pos: left.Position(), OpPos: isTok.pos, Op: op, Left: left, Right: right}, nil
	case p.isKw("JSON"):
		return nil, p.errAt(p.tok().pos, "IS JSON is not supported", "")
	default:
		return nil, p.errExpected("NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM")
	}
	return is, nil
}

// inPredicate parses IN (list) or IN (query) after left [NOT].
func (p *parser) inPredicate(left Expr, not bool) (Expr, error) {
	if err := p.enter(); err != nil { // the list or query is a level
		return nil, err
	}
	defer p.leave()
	p.next() // IN
	in := &In{Pos: left.Position(), Expr: left, Not: not}
	if !p.is(tokLParen) {
		return nil, p.errAt(p.tok().pos, "expected \"(\" after IN, found "+describe(p.tok()), "IN takes a parenthesised list: x IN (1, 2, 3)")
	}
	if p.parenIsQuery(p.i) {
		p.next()
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		in.Query = q
	} else {
		p.next()
		if p.is(tokRParen) {
			return nil, p.errAt(p.tok().pos, "IN needs at least one value", "")
		}
		list, err := p.exprList()
		if err != nil {
			return nil, err
		}
		in.List = list
	}
	if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
		return nil, err
	}
	return in, nil
}

// between parses BETWEEN [ASYMMETRIC|SYMMETRIC] low AND high.
func (p *parser) between(left Expr, not bool) (Expr, error) {
	p.next() // BETWEEN
	b := &Between{Pos: left.Position(), Expr: left, Not: not}
	if p.acceptKw("SYMMETRIC") {
		b.Symmetric = true
	} else {
		p.acceptKw("ASYMMETRIC")
	}
	var err error
	if b.Low, err = p.additive(); err != nil {
		return nil, err
	}
	if !p.isKw("AND") {
		return nil, p.errAt(p.tok().pos, "expected AND, found "+describe(p.tok()), "write x BETWEEN low AND high")
	}
	p.next()
	if b.High, err = p.additive(); err != nil {
		return nil, err
	}
	return b, nil
}

// like parses LIKE pattern [ESCAPE e] or SIMILAR TO pattern [ESCAPE e].
func (p *parser) like(left Expr, not bool) (Expr, error) {
	l := &Like{Pos: left.Position(), Expr: left, Not: not}
	if p.acceptKw("SIMILAR") {
		if _, err := p.expectKw("TO"); err != nil {
			return nil, err
		}
		l.Similar = true
	} else {
		p.next() // LIKE
	}
	var err error
	if l.Pattern, err = p.additive(); err != nil {
		return nil, err
	}
	if p.acceptKw("ESCAPE") {
		if l.Escape, err = p.additive(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// additive parses + - || left-associatively.
func (p *parser) additive() (Expr, error) {
	left, err := p.multiplicative()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		var op BinaryOp
		switch t.kind {
		case tokPlus:
			op = OpAdd
		case tokMinus:
			op = OpSub
		case tokConcat:
			op = OpConcat
		default:
			return left, nil
		}
		p.next()
		right, err := p.multiplicative()
		if err != nil {
			return nil, err
		}
		left = &Binary{Pos: left.Position(), OpPos: t.pos, Op: op, Left: left, Right: right}
	}
}

// multiplicative parses * / % left-associatively.
func (p *parser) multiplicative() (Expr, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		var op BinaryOp
		switch t.kind {
		case tokStar:
			op = OpMul
		case tokSlash:
			op = OpDiv
		case tokPercent:
			op = OpMod
		default:
			return left, nil
		}
		p.next()
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = &Binary{Pos: left.Position(), OpPos: t.pos, Op: op, Left: left, Right: right}
	}
}

// unary parses prefix - and +.
func (p *parser) unary() (Expr, error) {
	t := p.tok()
	if t.kind != tokMinus && t.kind != tokPlus {
		return p.postfix()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	e, err := p.unary()
	if err != nil {
		return nil, err
	}
	op := OpNeg
	if t.kind == tokPlus {
		op = OpPlus
	}
	return &Unary{Pos: t.pos, Op: op, Expr: e}, nil
}

// postfix parses member access (.field) and indexing ([i]) after a
// primary expression.
func (p *parser) postfix() (Expr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.is(tokDot):
			n := p.peek(1)
			if n.kind == tokStar {
				return nil, p.errAt(n.pos, "* is only allowed in the select list and in COUNT(*)", "")
			}
			p.next()
			id, err := p.identAfterDot("field name")
			if err != nil {
				return nil, err
			}
			if ref, ok := e.(*Ref); ok {
				ref.Parts = append(ref.Parts, id)
			} else {
				e = &FieldAccess{Pos: e.Position(), Expr: e, Field: id}
			}
		case p.is(tokLBracket):
			idx, err := p.index()
			if err != nil {
				return nil, err
			}
			e = &Index{Pos: e.Position(), Expr: e, Index: idx}
		default:
			return e, nil
		}
	}
}

// index parses [i], a level of nesting.
func (p *parser) index() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next() // [
	idx, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRBracket, "\"]\""); err != nil {
		return nil, err
	}
	return idx, nil
}

// exprList parses expr, expr, ...
func (p *parser) exprList() ([]Expr, error) {
	var list []Expr
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.accept(tokComma) {
			return list, nil
		}
	}
}

// niladic are the functions called without parentheses.
var niladic = map[string]bool{
	"CURRENT_DATE": true, "CURRENT_TIME": true, "CURRENT_TIMESTAMP": true,
	"LOCALTIME": true, "LOCALTIMESTAMP": true,
}

// primary parses a literal, a name, a function call, a parenthesised
// expression or subquery, or one of the special forms (CASE, CAST,
// INTERVAL, EXISTS, ...).
func (p *parser) primary() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.tok()
	lit := func(k LitKind, v string) (Expr, error) {
		p.next()
		return &Literal{Pos: t.pos, Kind: k, Value: v}, nil
	}
	switch t.kind {
	case tokInteger:
		return lit(LitInteger, t.text)
	case tokDecimal:
		return lit(LitDecimal, t.text)
	case tokApprox:
		return lit(LitFloat, t.text)
	case tokString:
		return lit(LitString, t.val)
	case tokBinary:
		return lit(LitBinary, t.val)
	case tokLParen:
		if p.parenIsQuery(p.i) {
			p.next()
			q, err := p.query()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tokRParen, "\")\""); err != nil {
				return nil, err
			}
			return &Subquery{Pos: t.pos, Query: q}, nil
		}
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.is(tokComma) {
			return nil, p.errAt(p.tok().pos, "expected \")\", found \",\"", "a row value is written ROW(a, b)")
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
		return e, nil
	case tokQIdent:
		return p.nameExpr()
	case tokQuestion:
		return nil, p.errAt(t.pos, "dynamic parameters (?) are not supported", "")
	case tokStar:
		return nil, p.errAt(t.pos, "* is only allowed in the select list and in COUNT(*)", "")
	case tokIdent:
	default:
		return nil, p.errExpected("an expression")
	}

	// A word: a keyword form or a name.
	n1 := p.peek(1)
	paren := n1.kind == tokLParen
	switch t.upper {
	case "NULL":
		return lit(LitNull, "NULL")
	case "TRUE", "FALSE":
		return lit(LitBool, t.upper)
	case "UNKNOWN":
		return lit(LitUnknown, "UNKNOWN")
	case "CASE":
		return p.caseExpr()
	case "INTERVAL":
		return p.interval()
	case "EXISTS":
		p.next()
		if !p.is(tokLParen) {
			return nil, p.errExpected("\"(\" after EXISTS")
		}
		p.next()
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
		return &Exists{Pos: t.pos, Query: q}, nil
	case "DATE", "TIME", "TIMESTAMP":
		if n1.kind == tokString {
			return p.typedLiteral()
		}
	case "ARRAY", "MAP":
		if n1.kind == tokLBracket {
			return p.constructor()
		}
	case "ROW":
		if paren {
			return p.constructor()
		}
	case "DESCRIPTOR":
		if paren {
			p.next()
			p.next()
			cols, err := p.identList("column name")
			if err != nil {
				return nil, err
			}
			return &Descriptor{Pos: t.pos, Columns: cols}, nil
		}
	case "CAST", "TRY_CAST":
		if paren {
			return p.cast()
		}
	case "TRIM":
		if paren {
			return p.trim()
		}
	case "EXTRACT", "POSITION", "SUBSTRING", "OVERLAY", "FLOOR", "CEIL", "CEILING", "TIMESTAMPADD", "TIMESTAMPDIFF":
		if paren {
			return p.specialCall()
		}
	case "LEFT", "RIGHT":
		if paren { // LEFT(s, n) and RIGHT(s, n) are functions
			p.next()
			return p.funcCall(&ObjectName{Pos: t.pos, Parts: []*Ident{identFrom(t)}})
		}
	}
	if niladic[t.upper] {
		p.next()
		name := &ObjectName{Pos: t.pos, Parts: []*Ident{identFrom(t)}}
		if paren {
			return p.funcCall(name)
		}
		return &FuncCall{Pos: t.pos, Name: name, NoParens: true}, nil
	}
	if reserved[t.upper] {
		return nil, p.errExpectedExpr("an expression")
	}
	return p.nameExpr()
}

// nameExpr parses a column reference a.b.c or a function call f(...) or
// db.f(...).
func (p *parser) nameExpr() (Expr, error) {
	first := p.next()
	parts := []*Ident{identFrom(first)}
	for p.is(tokDot) && (p.peekIs(1, tokIdent) || p.peekIs(1, tokQIdent)) {
		p.next()
		parts = append(parts, identFrom(p.next()))
	}
	if p.is(tokLParen) {
		return p.funcCall(&ObjectName{Pos: first.pos, Parts: parts})
	}
	return &Ref{Pos: first.pos, Parts: parts}, nil
}

// funcCall parses the arguments of a call of name, then FILTER (WHERE
// ...) and OVER (...). The current token is the "(".
func (p *parser) funcCall(name *ObjectName) (Expr, error) {
	f, err := p.callArgs(&FuncCall{Pos: name.Pos, Name: name})
	if err != nil {
		return nil, err
	}
	return p.callSuffix(f)
}

// callSuffix parses FILTER (WHERE ...) and OVER (...) after a call.
func (p *parser) callSuffix(f *FuncCall) (Expr, error) {
	var err error
	if p.isKw("FILTER") && p.peekIs(1, tokLParen) {
		p.next()
		p.next()
		if _, err := p.expectKw("WHERE"); err != nil {
			return nil, err
		}
		if f.Filter, err = p.expr(); err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
	}
	if p.isKw("WITHIN") && p.isKwAt(1, "GROUP") {
		return nil, p.errAt(p.tok().pos, "WITHIN GROUP is not supported", "")
	}
	if (p.isKw("IGNORE") || p.isKw("RESPECT")) && p.isKwAt(1, "NULLS") {
		return nil, p.errAt(p.tok().pos, p.tok().upper+" NULLS is not supported", "")
	}
	if p.acceptKw("OVER") {
		if isName(p.tok()) {
			// OVER name: resolved against the WINDOW clause when the
			// SELECT ends (parse_query.go).
			t := p.next()
			f.Over = &WindowSpec{Pos: t.pos, Name: identFrom(t)}
			return f, nil
		}
		if !p.is(tokLParen) {
			return nil, p.errAt(p.tok().pos, "expected \"(\" or a window name after OVER, found "+describe(p.tok()), "")
		}
		if f.Over, err = p.windowSpec(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// callArgs parses (args) into f: (), (*), ([DISTINCT|ALL] arg, ...). An
// argument is an expression, name => value, TABLE name or DESCRIPTOR(...).
func (p *parser) callArgs(f *FuncCall) (*FuncCall, error) {
	p.next() // (
	if p.accept(tokRParen) {
		return f, nil
	}
	if p.is(tokStar) && p.peekIs(1, tokRParen) {
		p.next()
		p.next()
		f.Star = true
		return f, nil
	}
	if p.acceptKw("DISTINCT") {
		f.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	return p.argsFrom(f, nil)
}

// argsFrom parses the arguments of f up to and including the ")", after
// first, its first argument when already parsed.
func (p *parser) argsFrom(f *FuncCall, first Expr) (*FuncCall, error) {
	if first == nil {
		var err error
		if first, err = p.arg(); err != nil {
			return nil, err
		}
	}
	f.Args = append(f.Args, first)
	for p.accept(tokComma) {
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, a)
	}
	if !p.is(tokRParen) {
		if isName(p.tok()) || p.is(tokString) || p.is(tokInteger) {
			return nil, p.errAt(p.tok().pos, "expected \",\" or \")\", found "+describe(p.tok()),
				"is a comma or an operator missing before "+describe(p.tok())+"?")
		}
		return nil, p.errExpected("\",\" or \")\"")
	}
	p.next()
	return f, nil
}

// arg parses one function argument.
func (p *parser) arg() (Expr, error) {
	t := p.tok()
	if (t.kind == tokIdent || t.kind == tokQIdent) && p.peekIs(1, tokArrow) {
		p.next()
		p.next()
		v, err := p.argValue()
		if err != nil {
			return nil, err
		}
		return &NamedArg{Pos: t.pos, Name: identFrom(t), Value: v}, nil
	}
	return p.argValue()
}

func (p *parser) argValue() (Expr, error) {
	if p.isKw("TABLE") {
		return p.tableArg()
	}
	return p.expr()
}

// tableArg parses TABLE name or TABLE (query), with an optional PARTITION
// BY.
func (p *parser) tableArg() (Expr, error) {
	t := p.next() // TABLE
	ta := &TableArg{Pos: t.pos}
	var err error
	if p.is(tokLParen) {
		p.next()
		if ta.Query, err = p.query(); err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "\")\""); err != nil {
			return nil, err
		}
	} else if ta.Name, err = p.objectName("table name"); err != nil {
		return nil, err
	}
	if p.acceptKws("PARTITION", "BY") {
		if p.is(tokLParen) && !p.parenIsQuery(p.i) {
			p.next()
			if ta.PartitionBy, err = p.exprList(); err != nil {
				return nil, err
			}
			if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
				return nil, err
			}
		} else {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			ta.PartitionBy = []Expr{e}
		}
	}
	return ta, nil
}

// windowSpec parses (PARTITION BY ... ORDER BY ... frame).
func (p *parser) windowSpec() (*WindowSpec, error) {
	t := p.next() // (
	ws := &WindowSpec{Pos: t.pos}
	var err error
	if p.acceptKws("PARTITION", "BY") {
		if ws.PartitionBy, err = p.exprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKws("ORDER", "BY") {
		if ws.OrderBy, err = p.orderItems(); err != nil {
			return nil, err
		}
	}
	if p.isKw("ROWS") || p.isKw("RANGE") {
		u := p.next()
		fr := &WindowFrame{Pos: u.pos, Unit: FrameRows}
		if u.upper == "RANGE" {
			fr.Unit = FrameRange
		}
		if p.acceptKw("BETWEEN") {
			if fr.Start, err = p.frameBound(); err != nil {
				return nil, err
			}
			if _, err := p.expectKw("AND"); err != nil {
				return nil, err
			}
			if fr.End, err = p.frameBound(); err != nil {
				return nil, err
			}
		} else if fr.Start, err = p.frameBound(); err != nil {
			return nil, err
		}
		ws.Frame = fr
	}
	if !p.is(tokRParen) {
		if isName(p.tok()) {
			return nil, p.errAt(p.tok().pos, "expected \")\", found "+describe(p.tok()),
				"refining a named window, OVER (name ...), is not supported: write OVER name, or the whole window inline")
		}
		return nil, p.errExpected("\")\"")
	}
	p.next()
	return ws, nil
}

// frameBound parses UNBOUNDED PRECEDING|FOLLOWING, CURRENT ROW, or n
// PRECEDING|FOLLOWING.
func (p *parser) frameBound() (*FrameBound, error) {
	t := p.tok()
	b := &FrameBound{Pos: t.pos}
	switch {
	case p.acceptKws("UNBOUNDED", "PRECEDING"):
		b.Kind = UnboundedPreceding
	case p.acceptKws("UNBOUNDED", "FOLLOWING"):
		b.Kind = UnboundedFollowing
	case p.acceptKws("CURRENT", "ROW"):
		b.Kind = CurrentRow
	default:
		var err error
		if b.Offset, err = p.additive(); err != nil {
			return nil, err
		}
		switch {
		case p.acceptKw("PRECEDING"):
			b.Kind = Preceding
		case p.acceptKw("FOLLOWING"):
			b.Kind = Following
		default:
			return nil, p.errExpected("PRECEDING or FOLLOWING")
		}
	}
	return b, nil
}

// caseExpr parses CASE [operand] WHEN ... THEN ... [ELSE ...] END.
func (p *parser) caseExpr() (Expr, error) {
	t := p.next() // CASE
	c := &Case{Pos: t.pos}
	var err error
	if !p.isKw("WHEN") {
		if c.Operand, err = p.expr(); err != nil {
			return nil, err
		}
	}
	for p.isKw("WHEN") {
		w := &When{Pos: p.next().pos}
		if w.Cond, err = p.expr(); err != nil {
			return nil, err
		}
		if _, err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		if w.Result, err = p.expr(); err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		return nil, p.errExpected("WHEN")
	}
	if p.acceptKw("ELSE") {
		if c.Else, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if !p.isKw("END") {
		return nil, p.errAt(p.tok().pos, "expected END, found "+describe(p.tok()), "close the CASE that starts at "+t.pos.String()+" with END")
	}
	p.next()
	return c, nil
}

// cast parses CAST(expr AS type) and TRY_CAST(expr AS type).
func (p *parser) cast() (Expr, error) {
	t := p.next() // CAST
	p.next()      // (
	c := &Cast{Pos: t.pos, Try: t.upper == "TRY_CAST"}
	var err error
	if c.Expr, err = p.expr(); err != nil {
		return nil, err
	}
	if !p.isKw("AS") {
		hint := ""
		if p.is(tokComma) {
			hint = "write " + t.upper + "(x AS type)"
		}
		return nil, p.errAt(p.tok().pos, "expected AS, found "+describe(p.tok()), hint)
	}
	p.next()
	if c.Type, err = p.dataType(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	return c, nil
}

// trim parses TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) and TRIM(s).
func (p *parser) trim() (Expr, error) {
	t := p.next() // TRIM
	p.next()      // (
	tr := &Trim{Pos: t.pos}
	mode := false
	switch {
	case p.acceptKw("BOTH"):
		mode = true
	case p.acceptKw("LEADING"):
		mode, tr.Mode = true, TrimLeading
	case p.acceptKw("TRAILING"):
		mode, tr.Mode = true, TrimTrailing
	}
	var err error
	if p.acceptKw("FROM") {
		if tr.Expr, err = p.expr(); err != nil {
			return nil, err
		}
	} else {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.acceptKw("FROM") {
			tr.Chars = e
			if tr.Expr, err = p.expr(); err != nil {
				return nil, err
			}
		} else if mode {
			return nil, p.errExpected("FROM")
		} else {
			tr.Expr = e
		}
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	return tr, nil
}

// timeUnitWords maps unit keywords, singular and plural, to units.
var timeUnitWords = map[string]TimeUnit{}

func init() {
	for u := UnitYear; u <= UnitMillennium; u++ {
		timeUnitWords[u.String()] = u
	}
	for u := UnitYear; u <= UnitNanosecond; u++ {
		timeUnitWords[u.String()+"S"] = u
	}
}

// isTimeUnit reports whether t is a time unit keyword.
func isTimeUnit(t *token) bool {
	_, ok := timeUnitWords[t.upper]
	return t.kind == tokIdent && ok
}

// timeUnitArg parses a time unit keyword as an argument.
func (p *parser) timeUnitArg() (*TimeUnitArg, error) {
	t := p.tok()
	if !isTimeUnit(t) {
		return nil, p.errAt(t.pos, "expected a time unit, found "+describe(t), "e.g. SECOND, MINUTE, HOUR, DAY, MONTH, YEAR")
	}
	p.next()
	return &TimeUnitArg{Pos: t.pos, Unit: timeUnitWords[t.upper]}, nil
}

// specialCall parses the functions with keywords between their arguments:
// EXTRACT, POSITION, SUBSTRING, OVERLAY, FLOOR/CEIL ... TO, TIMESTAMPADD
// and TIMESTAMPDIFF. Their comma forms, where they have one, are parsed as
// plain calls.
func (p *parser) specialCall() (Expr, error) {
	t := p.tok()
	name := &ObjectName{Pos: t.pos, Parts: []*Ident{identFrom(t)}}
	f := &FuncCall{Pos: t.pos, Name: name}
	switch t.upper {
	case "EXTRACT":
		p.next()
		p.next()
		u, err := p.timeUnitArg()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectKw("FROM"); err != nil {
			return nil, err
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		f.Args = []Expr{u, e}
	case "TIMESTAMPADD", "TIMESTAMPDIFF":
		// The unit form is a unit word and a comma; anything else (a
		// column named DAY in an expression) makes a plain call.
		if !isTimeUnit(p.peek(2)) || !p.peekIs(3, tokComma) {
			p.next()
			return p.funcCall(name)
		}
		p.next()
		p.next()
		u, err := p.timeUnitArg()
		if err != nil {
			return nil, err
		}
		f.Args = []Expr{u}
		for i := 0; i < 2; i++ {
			if _, err := p.expect(tokComma, "\",\""); err != nil {
				return nil, err
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, e)
		}
	default:
		// POSITION(a IN b), SUBSTRING(s FROM a FOR b), OVERLAY(s PLACING r
		// FROM a FOR b), FLOOR(x TO unit): the first argument, then the
		// keyword; a comma or ")" instead makes a plain call. The first
		// argument is parsed once either way, so nested calls stay linear.
		kw := map[string]string{"POSITION": "IN", "SUBSTRING": "FROM", "OVERLAY": "PLACING",
			"FLOOR": "TO", "CEIL": "TO", "CEILING": "TO"}[t.upper]
		a := p.peek(2)
		if a.kind == tokRParen || a.kind == tokStar || (a.kind == tokIdent && (a.upper == "DISTINCT" || a.upper == "ALL" || a.upper == "TABLE")) ||
			((a.kind == tokIdent || a.kind == tokQIdent) && p.peekIs(3, tokArrow)) {
			p.next()
			return p.funcCall(name)
		}
		p.next()
		p.next()
		var first Expr
		var err error
		if t.upper == "POSITION" {
			first, err = p.additive() // IN would be the IN predicate
		} else {
			first, err = p.expr()
		}
		if err != nil {
			return nil, err
		}
		if !p.isKw(kw) {
			if t.upper == "POSITION" { // the rest of an expression
				if first, err = p.comparisonFrom(first); err == nil {
					if first, err = p.andFrom(first); err == nil {
						first, err = p.orFrom(first)
					}
				}
				if err != nil {
					return nil, err
				}
			}
			if _, err := p.argsFrom(f, first); err != nil {
				return nil, err
			}
			return p.callSuffix(f)
		}
		p.next()
		f.Args = []Expr{first}
		if kw == "TO" {
			u, err := p.timeUnitArg()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, u)
			break
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, e)
		next := map[string][]string{"POSITION": {"FROM"}, "SUBSTRING": {"FOR"}, "OVERLAY": {"FROM", "FOR"}}[t.upper]
		for i, k := range next {
			if !p.acceptKw(k) {
				if t.upper == "OVERLAY" && i == 0 {
					return nil, p.errExpected("FROM")
				}
				break
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, e)
		}
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	return f, nil
}

// constructor parses ARRAY[...], MAP[...] and ROW(...).
func (p *parser) constructor() (Expr, error) {
	t := p.next()
	c := &Constructor{Pos: t.pos}
	closing := tokRBracket
	switch t.upper {
	case "MAP":
		c.Kind = MapCtor
	case "ROW":
		c.Kind = RowCtor
		closing = tokRParen
	}
	p.next() // [ or (
	if !p.is(closing) {
		args, err := p.exprList()
		if err != nil {
			return nil, err
		}
		c.Args = args
	}
	close := map[tokenKind]string{tokRBracket: "\"]\"", tokRParen: "\")\""}[closing]
	if _, err := p.expect(closing, "\",\" or "+close); err != nil {
		return nil, err
	}
	if c.Kind == MapCtor && len(c.Args)%2 != 0 {
		return nil, p.errAt(t.pos, "MAP[...] needs pairs of keys and values", "write MAP['k1', v1, 'k2', v2]")
	}
	return c, nil
}

// typedLiteral parses DATE '...', TIME '...' and TIMESTAMP '...'.
func (p *parser) typedLiteral() (Expr, error) {
	t := p.next()
	s := p.next()
	lit := &Literal{Pos: t.pos, Value: s.val}
	var ok bool
	var format string
	switch t.upper {
	case "DATE":
		lit.Kind, format = LitDate, "DATE 'yyyy-mm-dd'"
		ok = validDate(s.val)
	case "TIME":
		lit.Kind, format = LitTime, "TIME 'hh:mm:ss[.fff]'"
		ok = validTime(s.val)
	default:
		lit.Kind, format = LitTimestamp, "TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.fff]'"
		d, tm, found := strings.Cut(strings.TrimSpace(s.val), " ")
		ok = validDate(d) && (!found || validTime(strings.TrimSpace(tm)))
	}
	if !ok {
		return nil, p.errAt(s.pos, "invalid "+t.upper+" literal '"+s.val+"'", "write "+format)
	}
	return lit, nil
}

// numField parses s[i:] as 1 to maxDigits digits and returns the value and
// the index after it.
func numField(s string, i, minDigits, maxDigits int) (int, int, bool) {
	n, j := 0, i
	for j < len(s) && j-i < maxDigits && isDigit(s[j]) {
		n = n*10 + int(s[j]-'0')
		j++
	}
	return n, j, j-i >= minDigits
}

// validDate checks yyyy-mm-dd (month and day may have one digit).
func validDate(s string) bool {
	s = strings.TrimSpace(s)
	_, i, ok := numField(s, 0, 1, 4)
	if !ok || i >= len(s) || s[i] != '-' {
		return false
	}
	m, i, ok := numField(s, i+1, 1, 2)
	if !ok || i >= len(s) || s[i] != '-' || m < 1 || m > 12 {
		return false
	}
	d, i, ok := numField(s, i+1, 1, 2)
	return ok && i == len(s) && d >= 1 && d <= 31
}

// validTime checks hh:mm[:ss[.fraction]].
func validTime(s string) bool {
	s = strings.TrimSpace(s)
	h, i, ok := numField(s, 0, 1, 2)
	if !ok || i >= len(s) || s[i] != ':' || h > 23 {
		return false
	}
	m, i, ok := numField(s, i+1, 2, 2)
	if !ok || m > 59 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != ':' {
		return false
	}
	sec, i, ok := numField(s, i+1, 2, 2)
	if !ok || sec > 59 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	_, j, ok := numField(s, i+1, 1, 9)
	return ok && j == len(s)
}

// interval parses INTERVAL [+|-] 'value' qualifier (a bare number is
// accepted for the value too).
func (p *parser) interval() (Expr, error) {
	t := p.next() // INTERVAL
	lit := &IntervalLit{Pos: t.pos}
	if p.accept(tokMinus) {
		lit.Negative = true
	} else {
		p.accept(tokPlus)
	}
	v := p.tok()
	switch v.kind {
	case tokString:
		lit.Value = v.val
	case tokInteger, tokDecimal:
		lit.Value = v.text
	default:
		return nil, p.errAt(v.pos, "expected the interval's value as a string, found "+describe(v), "write INTERVAL '10' SECOND")
	}
	p.next()
	if !isTimeUnit(p.tok()) {
		hint := "write INTERVAL '10' SECOND; the units are YEAR, MONTH, DAY, HOUR, MINUTE, SECOND (also plural)"
		if num, unit, found := strings.Cut(strings.TrimSpace(lit.Value), " "); found && timeUnitWords[strings.ToUpper(strings.TrimSpace(unit))] != UnitNone {
			hint = "the unit goes after the string: INTERVAL '" + num + "' " + strings.ToUpper(strings.TrimSpace(unit))
		}
		return nil, p.errAt(p.tok().pos, "expected a time unit after INTERVAL '"+lit.Value+"', found "+describe(p.tok()), hint)
	}
	q, err := p.intervalQualifier()
	if err != nil {
		return nil, err
	}
	lit.Qualifier = q
	if _, err := intervalValue(lit.Value, q); err != nil {
		return nil, p.errAt(v.pos, "invalid interval: "+err.Error(), "")
	}
	return lit, nil
}

// intervalQualifier parses unit [(p [, f])] [TO unit [(f)]].
func (p *parser) intervalQualifier() (IntervalQualifier, error) {
	var q IntervalQualifier
	start := p.tok()
	q.Start = timeUnitWords[start.upper]
	p.next()
	var err error
	if q.StartPrecision, err = p.intervalPrecision(q.Start == UnitSecond); err != nil {
		return q, err
	}
	if p.isKw("TO") && isTimeUnit(p.peek(1)) {
		p.next()
		q.End = timeUnitWords[p.next().upper]
		if q.End == UnitSecond {
			if q.EndPrecision, err = p.intervalPrecision(false); err != nil {
				return q, err
			}
		}
	}
	if !validQualifier(q.Start, q.End) {
		return q, p.errAt(start.pos, q.Start.String()+qualifierTail(q)+" is not a valid interval unit",
			"use one unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND) or a range: YEAR TO MONTH, DAY TO HOUR|MINUTE|SECOND, HOUR TO MINUTE|SECOND, MINUTE TO SECOND")
	}
	if len(q.StartPrecision) == 2 && q.Start != UnitSecond {
		return q, p.errAt(start.pos, "only SECOND takes a fractional precision", "")
	}
	return q, nil
}

func qualifierTail(q IntervalQualifier) string {
	if q.End == UnitNone {
		return ""
	}
	return " TO " + q.End.String()
}

// intervalPrecision parses an optional (p) or, when two is set, (p, f).
func (p *parser) intervalPrecision(two bool) ([]int, error) {
	if !p.is(tokLParen) {
		return nil, nil
	}
	p.next()
	var ps []int
	for {
		t := p.tok()
		if t.kind != tokInteger || len(t.text) > 2 {
			return nil, p.errExpected("a precision")
		}
		n := 0
		for i := 0; i < len(t.text); i++ {
			n = n*10 + int(t.text[i]-'0')
		}
		p.next()
		ps = append(ps, n)
		if len(ps) == 2 || !two || !p.accept(tokComma) {
			break
		}
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return nil, err
	}
	return ps, nil
}
