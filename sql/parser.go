package sql

import (
	"fmt"
	"slices"
	"strings"
)

// Parse parses a script: statements separated by semicolons (the last one
// may omit it). It returns the first syntax error as an *Error.
func Parse(src string) (*Script, error) {
	toks, lerr := lex(src)
	if lerr != nil {
		return nil, lerr
	}
	p := &parser{src: src, toks: toks}
	s, err := p.script()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseExpr parses a single expression, such as a computed column's or a
// watermark's, or an option value that holds an expression.
func ParseExpr(src string) (Expr, error) {
	toks, lerr := lex(src)
	if lerr != nil {
		return nil, lerr
	}
	p := &parser{src: src, toks: toks}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if !p.is(tokEOF) {
		return nil, p.errExpected("end of expression")
	}
	if err := p.checkDepth(e); err != nil {
		return nil, err
	}
	return e, nil
}

// The limits on the shape of a statement. Every pass over a statement
// (the parser, the printer, the planner, the kernels that evaluate its
// expressions) recurses along its syntax tree, so the tree's depth must
// be bounded for hostile or generated SQL not to exhaust the stack (a
// fatal error in Go, not a panic). The limits are checked while parsing,
// before any other pass runs; docs/sql.md documents them.
const (
	// maxNesting bounds how deeply parentheses, calls, CASE, CAST,
	// subqueries, derived tables, WITH queries, NOT, unary minus,
	// [index] and types nest: each is a level, as the user writes it.
	// The parser recurses once per level.
	maxNesting = 1000
	// maxExprDepth bounds the depth of a statement's syntax tree, which
	// chains of operators grow without nesting: a + b + c parses
	// iteratively, but into a left-deep tree with a level per operator
	// that the passes after the parser recurse along. A long chain of OR
	// or AND (a generated filter) stays well within it; planning is
	// linear in its length.
	maxExprDepth = 10_000
	// maxParseFrames bounds the parser's recursion through expr and
	// query, which a level of nesting enters at most twice (a subquery:
	// the query, then the expression of its select list): a backstop
	// under maxNesting, should some nesting escape the count.
	maxParseFrames = 4 * maxNesting
)

// parser is a recursive-descent parser over the tokens of one script (or
// of one hint comment).
type parser struct {
	src  string
	toks []token // ends with tokEOF
	i    int     // the current token
	// depth counts the levels of nesting open (see enter); deepAt is
	// where the level past maxNesting opened. frames counts the active
	// calls of expr and query.
	depth  int
	deepAt Pos
	frames int
	// matches holds, for each "(" token, the index of its ")" (-1 when
	// unbalanced); computed on first use.
	matches []int
}

// tok returns the current token.
func (p *parser) tok() *token { return &p.toks[p.i] }

// peek returns the token n places after the current one (tokEOF past the
// end).
func (p *parser) peek(n int) *token {
	j := p.i + n
	if j >= len(p.toks) {
		j = len(p.toks) - 1
	}
	return &p.toks[j]
}

// prev returns the token before the current one, or nil.
func (p *parser) prev() *token {
	if p.i == 0 {
		return nil
	}
	return &p.toks[p.i-1]
}

// next consumes the current token and returns it.
func (p *parser) next() *token {
	t := &p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) is(k tokenKind) bool { return p.tok().kind == k }

func (p *parser) accept(k tokenKind) bool {
	if p.is(k) {
		p.next()
		return true
	}
	return false
}

// isKw reports whether the current token is the unquoted keyword kw (upper
// case).
func (p *parser) isKw(kw string) bool {
	t := p.tok()
	return t.kind == tokIdent && t.upper == kw
}

// isKwAt is isKw for the token n places ahead.
func (p *parser) isKwAt(n int, kw string) bool {
	t := p.peek(n)
	return t.kind == tokIdent && t.upper == kw
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.next()
		return true
	}
	return false
}

// acceptKws consumes the keyword sequence kws if the next tokens are
// exactly it, and nothing otherwise.
func (p *parser) acceptKws(kws ...string) bool {
	for i, kw := range kws {
		if !p.isKwAt(i, kw) {
			return false
		}
	}
	for range kws {
		p.next()
	}
	return true
}

func (p *parser) expectKw(kw string) (*token, error) {
	if !p.isKw(kw) {
		return nil, p.errExpected(kw)
	}
	return p.next(), nil
}

func (p *parser) expect(k tokenKind, what string) (*token, error) {
	if !p.is(k) {
		return nil, p.errExpected(what)
	}
	return p.next(), nil
}

// enter counts one level of nesting, opened by the current token;
// callers defer p.leave(). The innermost term of a nesting (a literal, a
// name, a type name) counts as a level too, which is why the limit is
// maxNesting+1: maxNesting levels around a term parse, one more does
// not, and the error points at the level past the limit.
func (p *parser) enter() error {
	p.depth++
	if p.depth == maxNesting+1 {
		p.deepAt = p.tok().pos
	}
	if p.depth > maxNesting+1 {
		return p.errNesting(p.deepAt)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// enterFrame counts an active call of expr or query; callers defer
// p.leaveFrame().
func (p *parser) enterFrame() error {
	p.frames++
	if p.frames > maxParseFrames {
		return p.errNesting(p.tok().pos)
	}
	return nil
}

func (p *parser) leaveFrame() { p.frames-- }

// errNesting is the error of a statement nested deeper than maxNesting,
// at pos.
func (p *parser) errNesting(pos Pos) error {
	return p.errAt(pos, fmt.Sprintf("the statement is nested too deeply: more than %d levels of parentheses, calls, CASE, subqueries or types", maxNesting),
		"write the inner part as a view (CREATE VIEW) or a WITH query and use it by name")
}

// checkDepth returns an error when the tree of n (a statement or an
// expression) is deeper than maxExprDepth. It walks without recursion:
// the tree may be far deeper than the stack allows to recurse. The
// error is at the outermost expression holding the deepest path, or at
// n when no expression does (a long chain of UNION or JOIN).
func (p *parser) checkDepth(n Node) error {
	var err error
	var path []Node // the current node's ancestors and itself
	walkDepth(n, func(x Node, depth int) bool {
		if err != nil {
			return false
		}
		path = append(path[:depth-1], x)
		if depth <= maxExprDepth {
			return true
		}
		for _, a := range path {
			if e, ok := a.(Expr); ok {
				err = p.errAt(e.Position(), fmt.Sprintf("this expression is too deep: its syntax tree is more than %d levels deep", maxExprDepth),
					"each operator in a chain such as a + b + c is a level, and so is each nested call, CASE or subquery; "+
						"split the expression: compute parts of it in a view or a WITH query, or write a chain of x = v1 OR x = v2 ... as x IN (v1, v2, ...)")
				return false
			}
		}
		err = p.errAt(n.Position(), fmt.Sprintf("this statement is too deep: its syntax tree is more than %d levels deep", maxExprDepth),
			"each UNION, JOIN or nested query in a chain of them is a level; split the statement into views and combine those")
		return false
	})
	return err
}

// errAt returns an *Error at pos.
func (p *parser) errAt(pos Pos, msg, hint string) error {
	return newError(p.src, pos, msg, hint)
}

// clauseWords are keywords that end a list; one right after a comma
// suggests a trailing comma.
var clauseWords = map[string]bool{
	"FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true,
	"LIMIT": true, "OFFSET": true, "UNION": true, "EXCEPT": true, "INTERSECT": true,
	"WITH": true, "PARTITIONED": true, "COMMENT": true, "ON": true, "USING": true,
	"JOIN": true, "LEFT": true, "RIGHT": true, "FULL": true, "INNER": true, "CROSS": true,
	"WINDOW": true, "SELECT": true, "END": true, "THEN": true, "ELSE": true, "WHEN": true,
}

// errExpected returns "expected what, found <current token>" at the
// current token, with a hint for common mistakes.
func (p *parser) errExpected(what string) error {
	t := p.tok()
	return p.errAt(t.pos, "expected "+what+", found "+describe(t), p.commonHint(hintNone))
}

// errExpectedName is errExpected where a name is expected: a reserved word
// there gets a hint to quote it.
func (p *parser) errExpectedName(what string) error {
	t := p.tok()
	return p.errAt(t.pos, "expected "+what+", found "+describe(t), p.commonHint(hintName))
}

// errExpectedExpr is errExpected where an expression is expected: a
// reserved word there gets a hint to quote it when it looks like a name.
func (p *parser) errExpectedExpr(what string) error {
	t := p.tok()
	return p.errAt(t.pos, "expected "+what+", found "+describe(t), p.commonHint(hintExpr))
}

// Contexts of commonHint.
const (
	hintNone = iota // no name expected
	hintName        // a name is expected
	hintExpr        // an expression is expected
)

// commonHint returns a hint for the current token in an error, or "".
func (p *parser) commonHint(context int) string {
	t := p.tok()
	pr := p.prev()
	switch t.kind {
	case tokEqEq:
		return "compare with a single =, not =="
	case tokQuestion:
		return "dynamic parameters (?) are not supported"
	case tokString:
		if pr != nil && pr.kind == tokIdent && pr.upper == "AS" {
			return "an alias is an identifier: quote it with backticks (`" + t.val + "`), not single quotes"
		}
	case tokRParen:
		if pr != nil && pr.kind == tokComma {
			return "remove the trailing comma before )"
		}
	case tokComma:
		if pr != nil && pr.kind == tokComma {
			return "remove the extra comma"
		}
	case tokEOF:
		if pr != nil && pr.kind == tokComma {
			return "remove the trailing comma"
		}
	case tokIdent:
		if pr != nil && pr.kind == tokComma && clauseWords[t.upper] {
			return "remove the trailing comma before " + t.upper
		}
		if !reserved[t.upper] {
			return ""
		}
		switch context {
		case hintName:
			return reservedHint(t)
		case hintExpr:
			// A clause word (FROM, ORDER, ...) where an expression should
			// be is more often a missing operand than a column named so;
			// it is a name when a comma, FROM or AS follows it.
			n := p.peek(1)
			if !clauseWords[t.upper] || n.kind == tokComma || n.kind == tokRParen || n.kind == tokDot ||
				(n.kind == tokIdent && (n.upper == "FROM" || n.upper == "AS")) {
				return reservedHint(t)
			}
		}
	}
	return ""
}

func reservedHint(t *token) string {
	return t.upper + " is a reserved word; to use it as a name, quote it with backticks: `" + t.text + "`"
}

// reserved lists the words that cannot be unquoted names, because they
// start or end clauses and would make the grammar ambiguous. Flink reserves
// more words (e.g. VALUE, DATE, TIMESTAMP); weir accepts those as names
// where the grammar allows, so a script that Flink accepts parses here too.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		ALL AND AS ASYMMETRIC BEGIN BETWEEN BOTH BY CASE CONSTRAINT CREATE CROSS
		CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DISTINCT DROP ELSE END ESCAPE
		EXCEPT EXECUTE EXISTS FALSE FETCH FILTER FOR FROM FULL GROUP HAVING IN INNER
		INSERT INTERSECT INTERVAL INTO IS JOIN LATERAL LEADING LEFT LIKE LIMIT
		LOCALTIME LOCALTIMESTAMP MATCH_RECOGNIZE NATURAL NOT NULL OFFSET ON OR ORDER
		OUTER OVER PRIMARY RIGHT SELECT SET SIMILAR SYMMETRIC TABLE THEN TRAILING
		TRUE UNION UNIQUE UNKNOWN USING VALUES WHEN WHERE WINDOW WITH`) {
		reserved[w] = true
	}
}

// isName reports whether t can be a name: a quoted identifier or an
// unquoted word that is not reserved.
func isName(t *token) bool {
	return t.kind == tokQIdent || (t.kind == tokIdent && !reserved[t.upper])
}

// identFrom makes an Ident of a name token.
func identFrom(t *token) *Ident {
	return &Ident{Pos: t.pos, Name: t.val, Quoted: t.kind == tokQIdent}
}

// ident parses a name; what says what kind of name, for the error.
func (p *parser) ident(what string) (*Ident, error) {
	if !isName(p.tok()) {
		return nil, p.errExpectedName(what)
	}
	return identFrom(p.next()), nil
}

// identAfterDot parses the part of a qualified name after a dot, where
// reserved words are names too (t.order).
func (p *parser) identAfterDot(what string) (*Ident, error) {
	t := p.tok()
	if t.kind != tokIdent && t.kind != tokQIdent {
		return nil, p.errExpectedName(what)
	}
	return identFrom(p.next()), nil
}

// objectName parses name[.name[.name]].
func (p *parser) objectName(what string) (*ObjectName, error) {
	first, err := p.ident(what)
	if err != nil {
		return nil, err
	}
	n := &ObjectName{Pos: first.Pos, Parts: []*Ident{first}}
	for p.is(tokDot) {
		p.next()
		id, err := p.identAfterDot(what)
		if err != nil {
			return nil, err
		}
		n.Parts = append(n.Parts, id)
	}
	return n, nil
}

// identList parses name, name, ... up to (not including) the closing
// parenthesis; the opening one is already consumed.
func (p *parser) identList(what string) ([]*Ident, error) {
	var ids []*Ident
	for {
		id, err := p.ident(what)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		if !p.accept(tokComma) {
			break
		}
	}
	if !p.is(tokRParen) {
		if isName(p.tok()) {
			return nil, p.errAt(p.tok().pos, "expected \",\" or \")\", found "+describe(p.tok()),
				"is a comma missing before "+describe(p.tok())+"?")
		}
		return nil, p.errExpected("\",\" or \")\"")
	}
	p.next()
	return ids, nil
}

// parenIdentList parses ( name, name, ... ).
func (p *parser) parenIdentList(what string) ([]*Ident, error) {
	if _, err := p.expect(tokLParen, "\"(\""); err != nil {
		return nil, err
	}
	return p.identList(what)
}

// stringLit parses a string literal and returns its value.
func (p *parser) stringLit(what string) (string, error) {
	if !p.is(tokString) {
		return "", p.errExpected(what)
	}
	return p.next().val, nil
}

// ---------------------------------------------------------------------------
// Script and statements

func (p *parser) script() (*Script, error) {
	s := &Script{Pos: Pos{Line: 1, Col: 1}}
	for {
		for p.accept(tokSemicolon) {
		}
		if p.is(tokEOF) {
			break
		}
		stmt, err := p.statement()
		if err != nil {
			return nil, err
		}
		if err := p.checkDepth(stmt); err != nil {
			return nil, err
		}
		if len(s.Statements) == 0 {
			s.Pos = stmt.Position()
		}
		s.Statements = append(s.Statements, stmt)
		if p.is(tokEOF) {
			break
		}
		if !p.is(tokSemicolon) {
			t := p.tok()
			hint := ""
			if t.kind == tokIdent && statementWords[t.upper] {
				hint = "end each statement with a semicolon"
			} else if t.kind == tokIdent && isName(t) {
				hint = "is a comma or an operator missing before " + describe(t) + "?"
			} else if t.kind == tokRParen {
				hint = "this parenthesis closes nothing"
			} else if t.kind == tokString && p.prev().kind == tokString {
				hint = "concatenate strings with ||"
			}
			if h := p.commonHint(hintNone); h != "" {
				hint = h
			}
			return nil, p.errAt(t.pos, "expected \";\" or the end of the statement, found "+describe(t), hint)
		}
	}
	return s, nil
}

// statementWords are the words that start supported statements.
var statementWords = map[string]bool{
	"CREATE": true, "DROP": true, "INSERT": true, "EXECUTE": true, "BEGIN": true,
	"SET": true, "RESET": true, "SELECT": true, "WITH": true, "VALUES": true,
}

// unsupportedStatements maps the first word of statements weir does not
// run to the hint given for them.
var unsupportedStatements = map[string]string{
	"ALTER":    "weir runs the script as written: change the CREATE statement instead",
	"SHOW":     "SQL-client statements that inspect the session have no effect in a job script: remove it",
	"DESCRIBE": "SQL-client statements that inspect the session have no effect in a job script: remove it",
	"DESC":     "SQL-client statements that inspect the session have no effect in a job script: remove it",
	"EXPLAIN":  "remove it; weir can print a job's plan from the command line",
	"USE":      "weir has no catalogs or databases: declare tables with CREATE TABLE ... WITH (...) in the script",
	"LOAD":     "weir has no modules: built-in functions are always available",
	"UNLOAD":   "weir has no modules: built-in functions are always available",
	"ADD":      "weir does not load jars: connectors and formats are built in",
	"REMOVE":   "weir does not load jars: connectors and formats are built in",
	"ANALYZE":  "statistics statements are not supported: remove it",
	"TRUNCATE": "batch-only statements are not supported",
	"UPDATE":   "batch-only statements are not supported: weir runs streaming INSERT jobs",
	"DELETE":   "batch-only statements are not supported: weir runs streaming INSERT jobs",
	"MERGE":    "batch-only statements are not supported: weir runs streaming INSERT jobs",
	"CALL":     "stored procedures are not supported",
	"COMPILE":  "compiled plans are not supported: run the statements themselves",
	"HELP":     "SQL-client commands are not part of a job script: remove it",
	"QUIT":     "SQL-client commands are not part of a job script: remove it",
	"EXIT":     "SQL-client commands are not part of a job script: remove it",
	"CLEAR":    "SQL-client commands are not part of a job script: remove it",
	"SOURCE":   "SQL-client commands are not part of a job script: remove it",
}

func (p *parser) statement() (Statement, error) {
	t := p.tok()
	if t.kind == tokLParen {
		return p.query()
	}
	if t.kind != tokIdent {
		return nil, p.errAt(t.pos, "expected a statement, found "+describe(t), p.commonHint(hintNone))
	}
	switch t.upper {
	case "SELECT", "WITH", "VALUES":
		return p.query()
	case "CREATE":
		return p.create()
	case "DROP":
		return p.drop()
	case "INSERT":
		return p.insert()
	case "EXECUTE":
		if p.isKwAt(1, "STATEMENT") {
			return p.statementSet()
		}
		if p.isKwAt(1, "INSERT") {
			p.next()
			return p.insert()
		}
		return nil, p.errAt(t.pos, "EXECUTE "+strings.ToUpper(p.peek(1).text)+" is not supported",
			"weir runs EXECUTE STATEMENT SET BEGIN ... END and EXECUTE INSERT")
	case "BEGIN":
		if p.isKwAt(1, "STATEMENT") {
			return p.statementSet()
		}
		return nil, p.errAt(t.pos, "BEGIN is only supported as BEGIN STATEMENT SET", "group INSERT statements with BEGIN STATEMENT SET; ... END;")
	case "END":
		return nil, p.errAt(t.pos, "END without BEGIN STATEMENT SET", "")
	case "SET":
		return p.set()
	case "RESET":
		return p.reset()
	}
	if hint, ok := unsupportedStatements[t.upper]; ok {
		name := t.upper
		switch n := p.peek(1); {
		case n.kind != tokIdent:
		case t.upper == "ALTER" || t.upper == "SHOW" || t.upper == "LOAD" || t.upper == "UNLOAD" || t.upper == "ADD" || t.upper == "REMOVE",
			t.upper == "USE" && (n.upper == "CATALOG" || n.upper == "MODULES"):
			name += " " + n.upper
		}
		return nil, p.errAt(t.pos, name+" is not supported", hint)
	}
	words := make([]string, 0, len(statementWords))
	for w := range statementWords {
		words = append(words, w)
	}
	hint := "a statement starts with CREATE, DROP, INSERT, EXECUTE, BEGIN, SET, RESET, SELECT, WITH or VALUES"
	if s := suggestSorted(t.upper, words); s != "" {
		hint = "did you mean " + s + "?"
	}
	return nil, p.errAt(t.pos, "expected a statement, found "+describe(t), hint)
}

// suggestSorted is suggest with the candidates in a stable order.
func suggestSorted(word string, candidates []string) string {
	slices.Sort(candidates)
	return suggest(word, candidates)
}

// set parses SET 'key' = 'value', or the legacy SET key = value with the
// key and value as written.
func (p *parser) set() (Statement, error) {
	setTok := p.next()
	st := &Set{Pos: setTok.pos}
	if p.is(tokSemicolon) || p.is(tokEOF) {
		return nil, p.errAt(setTok.pos, "SET needs a key and a value",
			"write SET 'key' = 'value'; listing the session's settings is a SQL-client command")
	}
	if p.is(tokString) {
		st.Key = p.next().val
	} else {
		key, err := p.rawText("=", false)
		if err != nil {
			return nil, err
		}
		st.Key = key
	}
	if _, err := p.expect(tokEq, "\"=\""); err != nil {
		return nil, err
	}
	if v := p.tok(); v.kind == tokString {
		if n := p.peek(1); n.kind == tokSemicolon || n.kind == tokEOF || n.pos.Line != v.pos.Line {
			st.Value = p.next().val
			return st, nil
		}
	}
	val, err := p.rawText("a value", true)
	if err != nil {
		return nil, err
	}
	st.Value = val
	return st, nil
}

// rawText returns the source text of the tokens from the current one up to
// a ";", the end of input or, for keys, "=" (or, for values, the end of the
// line), for the unquoted SET and RESET forms. Keys must not contain
// spaces.
func (p *parser) rawText(what string, value bool) (string, error) {
	first := p.tok()
	last := first
	n := 0
	for {
		t := p.tok()
		if t.kind == tokEOF || t.kind == tokSemicolon || (!value && t.kind == tokEq) {
			break
		}
		if value && t.pos.Line != first.pos.Line {
			break
		}
		if !value && n > 0 && t.off != last.end {
			return "", p.errAt(first.pos, "a SET key must not contain spaces",
				"quote keys and values: SET 'key' = 'value'")
		}
		last = t
		n++
		p.next()
	}
	if n == 0 {
		if value {
			return "", p.errExpected(what)
		}
		return "", p.errExpected("a key")
	}
	return strings.TrimSpace(p.src[first.off:last.end]), nil
}

// reset parses RESET ['key'] (or an unquoted key).
func (p *parser) reset() (Statement, error) {
	t := p.next()
	st := &Reset{Pos: t.pos}
	switch {
	case p.is(tokSemicolon) || p.is(tokEOF):
	case p.is(tokString):
		st.Key = p.next().val
	default:
		key, err := p.rawText("a key", false)
		if err != nil {
			return nil, err
		}
		if p.is(tokEq) {
			return nil, p.errAt(p.tok().pos, "RESET takes a key only", "RESET 'key' resets a key; SET 'key' = 'value' sets it")
		}
		st.Key = key
	}
	return st, nil
}

// insert parses INSERT { INTO | OVERWRITE } name [PARTITION (...)]
// [(columns)] query.
func (p *parser) insert() (*Insert, error) {
	t, err := p.expectKw("INSERT")
	if err != nil {
		return nil, err
	}
	ins := &Insert{Pos: t.pos}
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		ins.Overwrite = true
	default:
		return nil, p.errExpected("INTO or OVERWRITE")
	}
	if ins.Table, err = p.objectName("table name"); err != nil {
		return nil, err
	}
	if ins.Hints, err = p.hints(); err != nil {
		return nil, err
	}
	if p.isKw("PARTITION") {
		p.next()
		if _, err := p.expect(tokLParen, "\"(\""); err != nil {
			return nil, err
		}
		for {
			col, err := p.ident("partition column")
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tokEq, "\"=\""); err != nil {
				return nil, err
			}
			v, err := p.additive()
			if err != nil {
				return nil, err
			}
			ins.Partition = append(ins.Partition, &PartitionValue{Pos: col.Pos, Column: col, Value: v})
			if !p.accept(tokComma) {
				break
			}
		}
		if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
			return nil, err
		}
	}
	if p.is(tokLParen) && !p.startsQuery(1) {
		p.next()
		if ins.Columns, err = p.identList("column name"); err != nil {
			return nil, err
		}
	}
	if !p.startsQuery(0) {
		return nil, p.errExpected("SELECT or VALUES")
	}
	if ins.Query, err = p.query(); err != nil {
		return nil, err
	}
	return ins, nil
}

// startsQuery reports whether the token n places ahead starts a query:
// SELECT, WITH, VALUES or a parenthesis.
func (p *parser) startsQuery(n int) bool {
	t := p.peek(n)
	if t.kind == tokLParen {
		return true
	}
	return t.kind == tokIdent && (t.upper == "SELECT" || t.upper == "WITH" || t.upper == "VALUES")
}

// statementSet parses EXECUTE STATEMENT SET BEGIN insert; ... END and
// BEGIN STATEMENT SET; insert; ... END.
func (p *parser) statementSet() (Statement, error) {
	start := p.tok()
	ss := &StatementSet{Pos: start.pos}
	if p.acceptKw("EXECUTE") {
		if !p.acceptKws("STATEMENT", "SET") {
			return nil, p.errExpected("STATEMENT SET")
		}
		if _, err := p.expectKw("BEGIN"); err != nil {
			return nil, err
		}
	} else {
		p.next() // BEGIN
		if !p.acceptKws("STATEMENT", "SET") {
			return nil, p.errExpected("STATEMENT SET")
		}
		if _, err := p.expect(tokSemicolon, "\";\""); err != nil {
			return nil, err
		}
	}
	for {
		for p.accept(tokSemicolon) {
		}
		if p.isKw("END") {
			p.next()
			break
		}
		if !p.isKw("INSERT") {
			t := p.tok()
			if t.kind == tokEOF {
				return nil, p.errAt(t.pos, "expected INSERT or END, found end of input", "close the statement set with END")
			}
			return nil, p.errAt(t.pos, "expected INSERT or END, found "+describe(t),
				"a statement set holds INSERT statements only; put other statements before it")
		}
		ins, err := p.insert()
		if err != nil {
			return nil, err
		}
		ss.Inserts = append(ss.Inserts, ins)
		if !p.is(tokSemicolon) && !p.isKw("END") {
			return nil, p.errAt(p.tok().pos, "expected \";\" or END, found "+describe(p.tok()), p.commonHint(hintNone))
		}
	}
	if len(ss.Inserts) == 0 {
		return nil, p.errAt(start.pos, "the statement set has no INSERT statements", "")
	}
	return ss, nil
}

// drop parses DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name and DROP
// [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] name.
func (p *parser) drop() (Statement, error) {
	t := p.next()
	d := &Drop{Pos: t.pos}
	d.Temporary = p.acceptKw("TEMPORARY")
	switch {
	case p.acceptKw("TABLE"):
		d.Kind = TableObject
	case p.acceptKw("VIEW"):
		d.Kind = ViewObject
	case p.acceptKw("FUNCTION"):
		d.Kind = FunctionObject
	case p.acceptKws("SYSTEM", "FUNCTION"):
		d.Kind, d.System = FunctionObject, true
	default:
		if n := p.tok(); n.kind == tokIdent {
			return nil, p.errAt(t.pos, "DROP "+n.upper+" is not supported", "weir drops tables, views and functions only")
		}
		return nil, p.errExpected("TABLE, VIEW or FUNCTION")
	}
	d.IfExists = p.acceptKws("IF", "EXISTS")
	var err error
	if d.Name, err = p.objectName(strings.ToLower(d.Kind.String()) + " name"); err != nil {
		return nil, err
	}
	return d, nil
}

// ---------------------------------------------------------------------------
// Hints

// hints parses the hint comments written before the current token.
func (p *parser) hints() ([]*Hint, error) {
	var hs []*Hint
	for _, hb := range p.tok().hints {
		if len(hb.toks) == 1 { // "/*+ */": nothing
			continue
		}
		sub := &parser{src: p.src, toks: hb.toks}
		for {
			h, err := sub.hint()
			if err != nil {
				return nil, err
			}
			hs = append(hs, h)
			if !sub.accept(tokComma) {
				break
			}
		}
		if !sub.is(tokEOF) {
			return nil, sub.errExpected("\",\" or */")
		}
	}
	return hs, nil
}

// hint parses NAME, NAME('k' = 'v', ...) or NAME(a, b, ...).
func (p *parser) hint() (*Hint, error) {
	t := p.tok()
	if t.kind != tokIdent && t.kind != tokQIdent {
		return nil, p.errExpected("hint name")
	}
	h := &Hint{Pos: t.pos, Name: identFrom(p.next())}
	if !p.accept(tokLParen) {
		return h, nil
	}
	if p.accept(tokRParen) {
		return h, nil
	}
	if p.is(tokString) {
		opts, err := p.optionList()
		if err != nil {
			return nil, err
		}
		h.Options = opts
		return h, nil
	}
	for {
		t := p.tok()
		if t.kind != tokIdent && t.kind != tokQIdent {
			return nil, p.errExpected("hint argument")
		}
		h.Args = append(h.Args, identFrom(p.next()))
		if !p.accept(tokComma) {
			break
		}
	}
	if _, err := p.expect(tokRParen, "\",\" or \")\""); err != nil {
		return nil, err
	}
	return h, nil
}
