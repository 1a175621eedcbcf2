package sql

import (
	"strconv"
)

// create parses CREATE TABLE and CREATE VIEW, and rejects the other CREATE
// statements with a hint.
func (p *parser) create() (Statement, error) {
	start := p.next() // CREATE
	orReplace := p.acceptKws("OR", "REPLACE")
	temporary := p.acceptKw("TEMPORARY")
	system := p.acceptKw("SYSTEM")
	t := p.tok()
	if t.kind == tokIdent && !orReplace && t.upper == "FUNCTION" {
		return p.createFunction(start, temporary, system)
	}
	if t.kind == tokIdent && !orReplace && !system {
		switch t.upper {
		case "TABLE":
			return p.createTable(start, temporary)
		case "VIEW":
			return p.createView(start, temporary)
		}
	}
	if t.kind != tokIdent {
		return nil, p.errExpected("TABLE or VIEW")
	}
	name := "CREATE "
	if orReplace {
		name += "OR REPLACE "
	}
	name += t.upper
	var hint string
	switch t.upper {
	case "FUNCTION":
		hint = "write CREATE [TEMPORARY [SYSTEM]] FUNCTION name AS 'identifier'"
	case "CATALOG", "DATABASE":
		hint = "weir has no catalogs or databases: declare tables with CREATE TABLE ... WITH (...) in the script"
	case "TABLE":
		hint = "declare the table with CREATE TABLE and fill it with INSERT INTO"
	case "VIEW":
		hint = "use CREATE VIEW without OR REPLACE"
	default:
		hint = "weir supports CREATE TABLE and CREATE VIEW"
	}
	return nil, p.errAt(start.pos, name+" is not supported", hint)
}

// createFunction parses the rest of CREATE [TEMPORARY] [SYSTEM] FUNCTION
// [IF NOT EXISTS] name AS 'identifier' [LANGUAGE JAVA|SCALA|PYTHON]
// [USING JAR 'path' [, JAR 'path']...]. What the identifier names is
// decided by the planner (see functions.go).
func (p *parser) createFunction(start *token, temporary, system bool) (Statement, error) {
	p.next() // FUNCTION
	cf := &CreateFunction{Pos: start.pos, Temporary: temporary, System: system}
	cf.IfNotExists = p.acceptKws("IF", "NOT", "EXISTS")
	var err error
	if cf.Name, err = p.objectName("function name"); err != nil {
		return nil, err
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	cf.IdentifierPos = p.tok().pos
	if cf.Identifier, err = p.stringLit("the function's identifier, a string such as 'com.example.MyFunction'"); err != nil {
		return nil, err
	}
	if p.acceptKw("LANGUAGE") {
		l := p.tok()
		if l.kind != tokIdent || (l.upper != "JAVA" && l.upper != "SCALA" && l.upper != "PYTHON") {
			return nil, p.errExpected("JAVA, SCALA or PYTHON")
		}
		cf.Language = l.upper
		p.next()
	}
	if p.acceptKw("USING") {
		for {
			if _, err := p.expectKw("JAR"); err != nil {
				return nil, err
			}
			jar, err := p.stringLit("the jar's path, a string")
			if err != nil {
				return nil, err
			}
			cf.Jars = append(cf.Jars, jar)
			if !p.accept(tokComma) {
				break
			}
		}
	}
	return cf, nil
}

// createTable parses the rest of CREATE [TEMPORARY] TABLE.
func (p *parser) createTable(start *token, temporary bool) (Statement, error) {
	p.next() // TABLE
	ct := &CreateTable{Pos: start.pos, Temporary: temporary}
	ct.IfNotExists = p.acceptKws("IF", "NOT", "EXISTS")
	var err error
	if ct.Name, err = p.objectName("table name"); err != nil {
		return nil, err
	}
	if p.accept(tokLParen) {
		if err := p.tableElements(ct); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("COMMENT") {
		if ct.Comment, err = p.stringLit("comment string"); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("PARTITIONED") {
		if _, err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if ct.PartitionedBy, err = p.parenIdentList("partition column"); err != nil {
			return nil, err
		}
	}
	if p.isKw("DISTRIBUTED") {
		return nil, p.errAt(p.tok().pos, "DISTRIBUTED BY is not supported", "remove it: weir distributes rows by the keys of each operator")
	}
	if p.acceptKw("WITH") {
		if _, err := p.expect(tokLParen, "\"(\""); err != nil {
			return nil, err
		}
		if ct.Options, err = p.optionList(); err != nil {
			return nil, err
		}
	}
	switch {
	case p.isKw("LIKE"):
		return nil, p.errAt(p.tok().pos, "CREATE TABLE ... LIKE is not supported",
			"declare all columns and options in the CREATE TABLE itself")
	case p.isKw("AS"):
		return nil, p.errAt(p.tok().pos, "CREATE TABLE ... AS SELECT is not supported",
			"declare the table with its columns, then fill it with INSERT INTO ... SELECT")
	}
	return ct, nil
}

// tableElements parses the column definitions, watermark and constraints
// of a CREATE TABLE, after its "(" and up to and including its ")".
func (p *parser) tableElements(ct *CreateTable) error {
	for {
		t := p.tok()
		switch {
		case t.kind == tokIdent && t.upper == "WATERMARK" && p.isKwAt(1, "FOR"):
			if ct.Watermark != nil {
				return p.errAt(t.pos, "a table has at most one WATERMARK", "")
			}
			p.next()
			p.next()
			wm := &Watermark{Pos: t.pos}
			var err error
			if wm.Column, err = p.ident("event-time column name"); err != nil {
				return err
			}
			if _, err := p.expectKw("AS"); err != nil {
				return err
			}
			if wm.Expr, err = p.expr(); err != nil {
				return err
			}
			ct.Watermark = wm
		case t.kind == tokIdent && (t.upper == "CONSTRAINT" || t.upper == "PRIMARY"):
			pk, err := p.primaryKey(nil)
			if err != nil {
				return err
			}
			if ct.PrimaryKey != nil {
				return p.errAt(pk.Pos, "a table has at most one primary key", "")
			}
			ct.PrimaryKey = pk
		case t.kind == tokIdent && (t.upper == "UNIQUE" || t.upper == "FOREIGN" || t.upper == "CHECK"):
			return p.errAt(t.pos, t.upper+" constraints are not supported", "Flink tables have PRIMARY KEY (...) NOT ENFORCED constraints only")
		default:
			col, pk, err := p.columnDef()
			if err != nil {
				return err
			}
			if pk != nil {
				if ct.PrimaryKey != nil {
					return p.errAt(pk.Pos, "a table has at most one primary key", "")
				}
				ct.PrimaryKey = pk
			}
			ct.Columns = append(ct.Columns, col)
		}
		if p.accept(tokComma) {
			continue
		}
		if p.accept(tokRParen) {
			return nil
		}
		n := p.tok()
		if isName(n) || (n.kind == tokIdent && (n.upper == "WATERMARK" || n.upper == "PRIMARY" || n.upper == "CONSTRAINT")) {
			return p.errAt(n.pos, "expected \",\" or \")\", found "+describe(n),
				"is a comma missing before "+describe(n)+"?")
		}
		return p.errExpected("\",\" or \")\"")
	}
}

// primaryKey parses [CONSTRAINT name] PRIMARY KEY [(columns)] NOT
// ENFORCED. For an inline key, column is the column it follows (and the
// column list is not written).
func (p *parser) primaryKey(column *Ident) (*PrimaryKey, error) {
	pk := &PrimaryKey{Pos: p.tok().pos}
	if p.acceptKw("CONSTRAINT") {
		var err error
		if pk.Name, err = p.ident("constraint name"); err != nil {
			return nil, err
		}
	}
	if !p.isKw("PRIMARY") {
		if p.isKw("UNIQUE") {
			return nil, p.errAt(p.tok().pos, "UNIQUE constraints are not supported", "Flink tables have PRIMARY KEY (...) NOT ENFORCED constraints only")
		}
		return nil, p.errExpected("PRIMARY KEY")
	}
	p.next()
	if _, err := p.expectKw("KEY"); err != nil {
		return nil, err
	}
	cols := "" // for the hint
	if column != nil {
		c := *column // a copy: no node is shared between two parents
		pk.Columns = []*Ident{&c}
	} else {
		var err error
		if pk.Columns, err = p.parenIdentList("key column"); err != nil {
			return nil, err
		}
		cols = "(" + pk.Columns[0].String()
		if len(pk.Columns) > 1 {
			cols += ", ..."
		}
		cols += ") "
	}
	if !p.acceptKws("NOT", "ENFORCED") {
		t := p.tok()
		return nil, p.errAt(t.pos, "expected NOT ENFORCED, found "+describe(t),
			"Flink does not check primary keys: write PRIMARY KEY "+cols+"NOT ENFORCED")
	}
	return pk, nil
}

// columnDef parses one column definition, and the primary key declared
// inline after its type, if any.
func (p *parser) columnDef() (*ColumnDef, *PrimaryKey, error) {
	if p.is(tokRParen) {
		hint := p.commonHint(hintNone)
		if hint == "" {
			hint = "a table needs at least one column"
		}
		return nil, nil, p.errAt(p.tok().pos, "expected a column definition, found \")\"", hint)
	}
	name, err := p.ident("column name")
	if err != nil {
		return nil, nil, err
	}
	col := &ColumnDef{Pos: name.Pos, Name: name}
	var pk *PrimaryKey
	if p.acceptKw("AS") {
		col.Kind = ComputedColumn
		if col.Expr, err = p.expr(); err != nil {
			return nil, nil, err
		}
	} else {
		if col.Type, err = p.dataType(); err != nil {
			return nil, nil, err
		}
		if p.acceptKw("METADATA") {
			col.Kind = MetadataColumn
			if p.acceptKw("FROM") {
				if col.MetadataKey, err = p.stringLit("metadata key string"); err != nil {
					return nil, nil, err
				}
			}
			col.Virtual = p.acceptKw("VIRTUAL")
		} else if p.isKw("PRIMARY") || p.isKw("CONSTRAINT") {
			if pk, err = p.primaryKey(name); err != nil {
				return nil, nil, err
			}
		}
	}
	if p.acceptKw("COMMENT") {
		if col.Comment, err = p.stringLit("comment string"); err != nil {
			return nil, nil, err
		}
	}
	return col, pk, nil
}

// optionList parses 'key' = 'value', ... after the "(" and up to and
// including the ")".
func (p *parser) optionList() ([]*Option, error) {
	var opts []*Option
	seen := map[string]bool{}
	const hint = "option keys and values are strings in single quotes: 'connector' = 'kafka'"
	for {
		t := p.tok()
		if t.kind != tokString {
			if t.kind == tokRParen && len(opts) > 0 {
				return nil, p.errAt(t.pos, "expected an option, found \")\"", "remove the trailing comma before )")
			}
			h := hint
			if t.kind == tokRParen {
				h = "write at least one option, or leave out WITH ()"
			}
			return nil, p.errAt(t.pos, "expected an option key string, found "+describe(t), h)
		}
		p.next()
		o := &Option{Pos: t.pos, Key: t.val}
		if seen[o.Key] {
			return nil, p.errAt(t.pos, "duplicate option '"+o.Key+"'", "")
		}
		seen[o.Key] = true
		if _, err := p.expect(tokEq, "\"=\""); err != nil {
			return nil, err
		}
		v := p.tok()
		if v.kind != tokString {
			return nil, p.errAt(v.pos, "expected an option value string, found "+describe(v), hint)
		}
		p.next()
		o.Value = v.val
		opts = append(opts, o)
		if p.accept(tokComma) {
			continue
		}
		if p.accept(tokRParen) {
			return opts, nil
		}
		if p.is(tokString) {
			return nil, p.errAt(p.tok().pos, "expected \",\" or \")\", found "+describe(p.tok()),
				"is a comma missing before "+describe(p.tok())+"?")
		}
		return nil, p.errExpected("\",\" or \")\"")
	}
}

// createView parses the rest of CREATE [TEMPORARY] VIEW.
func (p *parser) createView(start *token, temporary bool) (Statement, error) {
	p.next() // VIEW
	cv := &CreateView{Pos: start.pos, Temporary: temporary}
	cv.IfNotExists = p.acceptKws("IF", "NOT", "EXISTS")
	var err error
	if cv.Name, err = p.objectName("view name"); err != nil {
		return nil, err
	}
	if p.accept(tokLParen) {
		if cv.Columns, err = p.identList("column name"); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("COMMENT") {
		if cv.Comment, err = p.stringLit("comment string"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if !p.startsQuery(0) {
		return nil, p.errExpected("a query")
	}
	if cv.Query, err = p.query(); err != nil {
		return nil, err
	}
	return cv, nil
}

// ---------------------------------------------------------------------------
// Data types

// typeNames lists the type names the parser knows, for suggestions.
var typeNames = []string{
	"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "REAL",
	"DOUBLE", "DECIMAL", "DEC", "NUMERIC", "CHAR", "CHARACTER", "VARCHAR", "STRING",
	"BINARY", "VARBINARY", "BYTES", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ",
	"ROW", "ARRAY", "MAP", "MULTISET",
}

// otherDialectTypes maps type names of other SQL dialects to Flink's.
var otherDialectTypes = map[string]string{
	"TEXT": "STRING", "LONG": "BIGINT", "INT64": "BIGINT", "INT32": "INT",
	"BOOL": "BOOLEAN", "DATETIME": "TIMESTAMP(3)", "TIMESTAMPTZ": "TIMESTAMP_LTZ(3)",
	"NVARCHAR": "STRING", "CLOB": "STRING", "BLOB": "BYTES", "BYTEA": "BYTES",
	"UUID": "STRING", "JSON": "STRING", "NUMBER": "DECIMAL", "FLOAT64": "DOUBLE",
	"FLOAT32": "FLOAT", "STRUCT": "ROW<...>", "LIST": "ARRAY<...>",
}

// dataType parses a data type with its NOT NULL.
func (p *parser) dataType() (*DataType, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.tok()
	if t.kind != tokIdent {
		hint := ""
		if t.kind == tokComma || t.kind == tokRParen {
			hint = "each column needs a type, e.g. price BIGINT"
		}
		if t.kind == tokQIdent {
			hint = "type names are not quoted"
		}
		if h := p.commonHint(hintNone); h != "" {
			hint = h
		}
		return nil, p.errAt(t.pos, "expected a data type, found "+describe(t), hint)
	}
	p.next()
	dt := &DataType{Pos: t.pos, Name: t.upper}
	var err error
	switch t.upper {
	case "BOOLEAN", "TINYINT", "SMALLINT", "BIGINT", "STRING", "BYTES", "DATE":
	case "INT", "INTEGER":
		dt.Name = "INT"
	case "FLOAT", "REAL":
		dt.Name = "FLOAT"
	case "DOUBLE":
		p.acceptKw("PRECISION")
	case "DECIMAL", "DEC", "NUMERIC":
		dt.Name = "DECIMAL"
		err = p.typeParams(dt, 2)
	case "CHAR", "CHARACTER":
		dt.Name = "CHAR"
		if p.acceptKw("VARYING") {
			dt.Name = "VARCHAR"
		}
		err = p.typeParams(dt, 1)
	case "VARCHAR":
		err = p.typeParams(dt, 1)
	case "BINARY":
		if p.acceptKw("VARYING") {
			dt.Name = "VARBINARY"
		}
		err = p.typeParams(dt, 1)
	case "VARBINARY":
		err = p.typeParams(dt, 1)
	case "TIME":
		if err = p.typeParams(dt, 1); err == nil {
			err = p.timeZone(dt)
		}
	case "TIMESTAMP":
		if err = p.typeParams(dt, 1); err == nil {
			err = p.timeZone(dt)
		}
	case "TIMESTAMP_LTZ":
		err = p.typeParams(dt, 1)
	case "ROW":
		err = p.rowType(dt)
	case "ARRAY", "MULTISET", "MAP":
		err = p.collectionType(dt)
	case "RAW", "INTERVAL", "NULL", "VARIANT", "STRUCTURED", "SYMBOL":
		return nil, p.errAt(t.pos, "type "+t.upper+" is not supported", "")
	default:
		hint := "the types are " + "BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, BINARY(n), VARBINARY(n), BYTES, DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), ROW<...>, ARRAY<t>, MAP<k, v>, MULTISET<t>"
		if s, ok := otherDialectTypes[t.upper]; ok {
			hint = "use " + s
		} else if s := suggest(t.upper, typeNames); s != "" {
			hint = "did you mean " + s + "?"
		}
		return nil, p.errAt(t.pos, "unknown data type "+describe(t), hint)
	}
	if err != nil {
		return nil, err
	}
	// Calcite's postfix collection form: INT ARRAY, STRING MULTISET. Each
	// counts as a level of nesting, as ARRAY<...> does.
	for (p.isKw("ARRAY") || p.isKw("MULTISET")) && !p.peekIs(1, tokLt) {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		k := p.next()
		dt = &DataType{Pos: dt.Pos, Name: k.upper, Elems: []*DataType{dt}}
	}
	if p.isKw("NOT") && p.isKwAt(1, "NULL") {
		p.next()
		p.next()
		dt.NotNull = true
	} else if p.isKw("NULL") {
		p.next()
	}
	return dt, nil
}

func (p *parser) peekIs(n int, k tokenKind) bool { return p.peek(n).kind == k }

// typeParams parses an optional (n) or (p, s) with at most max numbers,
// and checks their ranges.
func (p *parser) typeParams(dt *DataType, max int) error {
	if !p.is(tokLParen) {
		return nil
	}
	open := p.next()
	for {
		t := p.tok()
		if t.kind != tokInteger {
			return p.errExpected("an integer")
		}
		n, err := strconv.ParseInt(t.text, 10, 32)
		if err != nil {
			return p.errAt(t.pos, "type parameter "+t.text+" is too large", "")
		}
		p.next()
		dt.Params = append(dt.Params, int(n))
		if !p.accept(tokComma) {
			break
		}
	}
	if _, err := p.expect(tokRParen, "\")\""); err != nil {
		return err
	}
	if len(dt.Params) > max {
		return p.errAt(open.pos, dt.Name+" takes at most "+strconv.Itoa(max)+" parameter"+plural(max), "")
	}
	bad := func(msg string) error { return p.errAt(open.pos, msg, "") }
	switch dt.Name {
	case "DECIMAL":
		if dt.Params[0] < 1 || dt.Params[0] > 38 {
			return bad("DECIMAL precision must be between 1 and 38")
		}
		if len(dt.Params) == 2 && dt.Params[1] > dt.Params[0] {
			return bad("DECIMAL scale must be between 0 and the precision")
		}
	case "CHAR", "VARCHAR", "BINARY", "VARBINARY":
		if dt.Params[0] < 1 {
			return bad(dt.Name + " length must be at least 1")
		}
	case "TIME", "TIMESTAMP", "TIMESTAMP_LTZ":
		if dt.Params[0] > 9 {
			return bad(dt.Name + " precision must be between 0 and 9")
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// timeZone parses [WITHOUT TIME ZONE] or WITH LOCAL TIME ZONE after TIME
// or TIMESTAMP.
func (p *parser) timeZone(dt *DataType) error {
	if p.acceptKws("WITHOUT", "TIME", "ZONE") {
		return nil
	}
	if dt.Name == "TIMESTAMP" && p.acceptKws("WITH", "LOCAL", "TIME", "ZONE") {
		dt.Name = "TIMESTAMP_LTZ"
		return nil
	}
	if p.isKw("WITH") && (p.isKwAt(1, "TIME") || p.isKwAt(1, "LOCAL")) {
		return p.errAt(p.tok().pos, dt.Name+" WITH TIME ZONE is not supported",
			"Flink has TIMESTAMP (no time zone) and TIMESTAMP_LTZ (an instant, shown in the session time zone)")
	}
	return nil
}

// rowType parses the fields of ROW<name type, ...> or ROW(name type, ...).
func (p *parser) rowType(dt *DataType) error {
	var closing tokenKind
	switch {
	case p.is(tokNe): // ROW<>
		p.next()
		return nil
	case p.accept(tokLt):
		closing = tokGt
	case p.accept(tokLParen):
		closing = tokRParen
	default:
		return p.errAt(p.tok().pos, "expected \"<\" after ROW, found "+describe(p.tok()), "write ROW<name type, ...>")
	}
	if p.accept(closing) {
		return nil
	}
	close := map[tokenKind]string{tokGt: "\">\"", tokRParen: "\")\""}[closing]
	for {
		name, err := p.ident("field name")
		if err != nil {
			return err
		}
		f := &RowField{Pos: name.Pos, Name: name}
		if f.Type, err = p.dataType(); err != nil {
			return err
		}
		if p.acceptKw("COMMENT") {
			if f.Comment, err = p.stringLit("comment string"); err != nil {
				return err
			}
		} else if p.is(tokString) {
			f.Comment = p.next().val
		}
		dt.Fields = append(dt.Fields, f)
		if p.accept(tokComma) {
			continue
		}
		if p.accept(closing) {
			return nil
		}
		if isName(p.tok()) {
			return p.errAt(p.tok().pos, "expected \",\" or "+close+", found "+describe(p.tok()),
				"is a comma missing before "+describe(p.tok())+"?")
		}
		return p.errExpected("\",\" or " + close)
	}
}

// collectionType parses <type> after ARRAY or MULTISET and <key, value>
// after MAP.
func (p *parser) collectionType(dt *DataType) error {
	n := 1
	example := dt.Name + "<INT>"
	if dt.Name == "MAP" {
		n = 2
		example = "MAP<STRING, INT>"
	}
	if !p.accept(tokLt) {
		return p.errAt(p.tok().pos, "expected \"<\" after "+dt.Name+", found "+describe(p.tok()), "write "+example)
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			if _, err := p.expect(tokComma, "\",\""); err != nil {
				return err
			}
		}
		e, err := p.dataType()
		if err != nil {
			return err
		}
		dt.Elems = append(dt.Elems, e)
	}
	if !p.accept(tokGt) {
		hint := ""
		if p.is(tokComma) && n == 1 {
			hint = dt.Name + " has one element type: " + example
		}
		return p.errAt(p.tok().pos, "expected \">\", found "+describe(p.tok()), hint)
	}
	return nil
}
