package sql

import (
	"testing"
)

// statementCases are statements of every kind with their canonical forms;
// each is checked for its round trip (and seeds the fuzzer).
var statementCases = []struct{ name, src, want string }{
	// CREATE TABLE
	{"table/all clauses", `CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (
		id BIGINT NOT NULL COMMENT 'order id',
		price DECIMAL(10, 2),
		total AS price * 2 COMMENT 'computed',
		ts TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL,
		part INT METADATA,
		src STRING METADATA VIRTUAL,
		WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
		CONSTRAINT pk PRIMARY KEY (id, part) NOT ENFORCED
	) COMMENT 'orders' PARTITIONED BY (part) WITH ('connector' = 'kafka', 'topic' = 'orders')`,
		"CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (id BIGINT NOT NULL COMMENT 'order id', price DECIMAL(10, 2), " +
			"total AS price * 2 COMMENT 'computed', ts TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL, part INT METADATA, " +
			"src STRING METADATA VIRTUAL, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, CONSTRAINT pk PRIMARY KEY (id, part) NOT ENFORCED) " +
			"COMMENT 'orders' PARTITIONED BY (part) WITH ('connector' = 'kafka', 'topic' = 'orders')"},
	{"table/inline key with name", "CREATE TABLE t (id INT NOT NULL CONSTRAINT k PRIMARY KEY NOT ENFORCED COMMENT 'c') WITH ('connector' = 'x')",
		"CREATE TABLE t (id INT NOT NULL COMMENT 'c', CONSTRAINT k PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'x')"},
	{"table/watermark first", "CREATE TABLE t (WATERMARK FOR ts AS ts, ts TIMESTAMP(3)) WITH ('a' = 'b')",
		"CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('a' = 'b')"},
	{"table/no columns", "CREATE TABLE t WITH ('connector' = 'x')", "CREATE TABLE t WITH ('connector' = 'x')"},
	{"table/no options", "create table t (a int)", "CREATE TABLE t (a INT)"},
	{"table/quoted names", "CREATE TABLE `my table` (`value` STRING, `a``b` INT) WITH ('k' = 'v')",
		"CREATE TABLE `my table` (`value` STRING, `a``b` INT) WITH ('k' = 'v')"},
	{"table/non-reserved names", "CREATE TABLE t (key BIGINT, `timestamp` TIMESTAMP(3), comment STRING, watermark INT, metadata INT) WITH ('k' = 'v')",
		"CREATE TABLE t (key BIGINT, `timestamp` TIMESTAMP(3), comment STRING, watermark INT, metadata INT) WITH ('k' = 'v')"},
	{"table/all types", `CREATE TABLE t (
		a BOOLEAN, b TINYINT, c SMALLINT, d INT, e INTEGER, f BIGINT, g FLOAT, h REAL, i DOUBLE, j DOUBLE PRECISION,
		k DECIMAL, l DEC(5), m NUMERIC(10, 3), n CHAR, o CHAR(3), p CHARACTER VARYING(10), q VARCHAR, r VARCHAR(20),
		s STRING, u BINARY(4), v VARBINARY(8), w BINARY VARYING(2), x BYTES, y DATE, z TIME, aa TIME(3),
		ab TIMESTAMP, ac TIMESTAMP(9) WITHOUT TIME ZONE, ad TIMESTAMP(3) WITH LOCAL TIME ZONE, ae TIMESTAMP_LTZ(6),
		af ROW<x INT NOT NULL 'first', y ROW<z STRING>>, ag ROW(x INT, y STRING), ah ARRAY<INT NOT NULL> NOT NULL,
		ai MAP<STRING, ARRAY<BIGINT>>, aj MULTISET<STRING>, ak INT ARRAY, al ROW<>, am TIME WITHOUT TIME ZONE, an INT NULL)`,
		"CREATE TABLE t (a BOOLEAN, b TINYINT, c SMALLINT, d INT, e INT, f BIGINT, g FLOAT, h FLOAT, i DOUBLE, j DOUBLE, " +
			"k DECIMAL, l DECIMAL(5), m DECIMAL(10, 3), n CHAR, o CHAR(3), p VARCHAR(10), q VARCHAR, r VARCHAR(20), " +
			"s STRING, u BINARY(4), v VARBINARY(8), w VARBINARY(2), x BYTES, y DATE, z TIME, aa TIME(3), " +
			"ab TIMESTAMP, ac TIMESTAMP(9), ad TIMESTAMP_LTZ(3), ae TIMESTAMP_LTZ(6), " +
			"af ROW<x INT NOT NULL 'first', y ROW<z STRING>>, ag ROW<x INT, y STRING>, ah ARRAY<INT NOT NULL> NOT NULL, " +
			"ai MAP<STRING, ARRAY<BIGINT>>, aj MULTISET<STRING>, ak ARRAY<INT>, al ROW<>, am TIME, an INT)"},

	// CREATE VIEW
	{"view", "CREATE TEMPORARY VIEW IF NOT EXISTS db.v (a, b) COMMENT 'v' AS SELECT x, y FROM t",
		"CREATE TEMPORARY VIEW IF NOT EXISTS db.v (a, b) COMMENT 'v' AS SELECT x, y FROM t"},
	{"view/with", "CREATE VIEW v AS WITH w AS (SELECT 1 AS one) SELECT * FROM w",
		"CREATE VIEW v AS WITH w AS (SELECT 1 AS one) SELECT * FROM w"},

	// SET and RESET
	{"set", "SET 'execution.checkpointing.interval' = '10s'", "SET 'execution.checkpointing.interval' = '10s'"},
	{"set/unquoted", "SET execution.runtime-mode = streaming", "SET 'execution.runtime-mode' = 'streaming'"},
	{"set/unquoted number", "SET parallelism.default=4", "SET 'parallelism.default' = '4'"},
	{"set/unquoted value with spaces", "SET 'pipeline.name' = my job", "SET 'pipeline.name' = 'my job'"},
	{"reset", "RESET 'table.exec.state.ttl'", "RESET 'table.exec.state.ttl'"},
	{"reset/unquoted", "RESET table.exec.state.ttl", "RESET 'table.exec.state.ttl'"},
	{"reset/all", "RESET", "RESET"},

	// INSERT
	{"insert", "INSERT INTO cat.db.sink SELECT * FROM src", "INSERT INTO cat.db.sink SELECT * FROM src"},
	{"insert/columns", "INSERT INTO sink (a, b) SELECT x, y FROM src", "INSERT INTO sink (a, b) SELECT x, y FROM src"},
	{"insert/overwrite", "INSERT OVERWRITE sink SELECT * FROM src", "INSERT OVERWRITE sink SELECT * FROM src"},
	{"insert/partition", "INSERT INTO sink PARTITION (dt = '2024-01-01', h = 3) SELECT a FROM src",
		"INSERT INTO sink PARTITION (dt = '2024-01-01', h = 3) SELECT a FROM src"},
	{"insert/values", "INSERT INTO sink VALUES (1, 'a'), (2, NULL)", "INSERT INTO sink VALUES (1, 'a'), (2, NULL)"},
	{"insert/hint", "INSERT INTO sink /*+ OPTIONS('sink.parallelism' = '2') */ SELECT * FROM src",
		"INSERT INTO sink /*+ OPTIONS('sink.parallelism' = '2') */ SELECT * FROM src"},
	{"insert/with", "INSERT INTO sink WITH x AS (SELECT 1) SELECT * FROM x", "INSERT INTO sink WITH x AS (SELECT 1) SELECT * FROM x"},
	{"insert/execute", "EXECUTE INSERT INTO sink SELECT 1", "INSERT INTO sink SELECT 1"},

	// Statement sets
	{"statement set", "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM s; INSERT INTO b SELECT * FROM s; END",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM s; INSERT INTO b SELECT * FROM s; END"},
	{"statement set/no last semicolon", "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2 END",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2; END"},
	{"statement set/begin form", "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2; END"},

	// DROP
	{"drop table", "DROP TABLE IF EXISTS db.t", "DROP TABLE IF EXISTS db.t"},
	{"drop view", "drop temporary view v", "DROP TEMPORARY VIEW v"},

	// Queries as statements
	{"query", "SELECT a FROM t", "SELECT a FROM t"},
	{"query/values", "VALUES (1), (2)", "VALUES (1), (2)"},
	{"query/with", "WITH a (x) AS (SELECT 1), b AS (SELECT x FROM a) SELECT * FROM b", "WITH a (x) AS (SELECT 1), b AS (SELECT x FROM a) SELECT * FROM b"},
	{"query/parenthesised", "(SELECT a FROM t ORDER BY a LIMIT 3)", "SELECT a FROM t ORDER BY a LIMIT 3"},
}

func TestStatements(t *testing.T) {
	for _, tt := range statementCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := canon(t, tt.src); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestScript(t *testing.T) {
	src := `-- a job
SET 'pipeline.name' = 'job';;
/* the source */
CREATE TABLE src (a INT) WITH ('connector' = 'datagen');
CREATE TABLE dst (a INT) WITH ('connector' = 'print')
;
INSERT INTO dst SELECT a FROM src -- no semicolon at the end`
	s, out := roundTrip(t, src)
	want := "SET 'pipeline.name' = 'job';\n" +
		"CREATE TABLE src (a INT) WITH ('connector' = 'datagen');\n" +
		"CREATE TABLE dst (a INT) WITH ('connector' = 'print');\n" +
		"INSERT INTO dst SELECT a FROM src;\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if s.Pos != (Pos{2, 1}) {
		t.Errorf("script position %v", s.Pos)
	}
	wantPos := []Pos{{2, 1}, {4, 1}, {5, 1}, {7, 1}}
	for i, st := range s.Statements {
		if st.Position() != wantPos[i] {
			t.Errorf("statement %d at %v, want %v", i, st.Position(), wantPos[i])
		}
	}
	for _, empty := range []string{"", "  ", ";", "; ;", "-- only a comment", "/* c */"} {
		s := mustParseScript(t, empty)
		if len(s.Statements) != 0 {
			t.Errorf("%q: %d statements", empty, len(s.Statements))
		}
	}
}

func TestCreateTableAST(t *testing.T) {
	s := mustParseScript(t, statementCases[0].src)
	ct := s.Statements[0].(*CreateTable)
	if !ct.Temporary || !ct.IfNotExists || ct.Name.String() != "cat.db.orders" || ct.Name.Last().Name != "orders" {
		t.Errorf("header: %+v", ct)
	}
	if ct.Pos != (Pos{1, 1}) || ct.Name.Pos != (Pos{1, 38}) {
		t.Errorf("positions: %v %v", ct.Pos, ct.Name.Pos)
	}
	type col struct {
		name, typ string
		kind      ColumnKind
		key       string
		virtual   bool
		comment   string
	}
	want := []col{
		{"id", "BIGINT NOT NULL", PhysicalColumn, "", false, "order id"},
		{"price", "DECIMAL(10, 2)", PhysicalColumn, "", false, ""},
		{"total", "", ComputedColumn, "", false, "computed"},
		{"ts", "TIMESTAMP(3)", MetadataColumn, "timestamp", true, ""},
		{"part", "INT", MetadataColumn, "", false, ""},
		{"src", "STRING", MetadataColumn, "", true, ""},
	}
	if len(ct.Columns) != len(want) {
		t.Fatalf("%d columns", len(ct.Columns))
	}
	for i, w := range want {
		c := ct.Columns[i]
		typ := ""
		if c.Type != nil {
			typ = Format(c.Type)
		}
		got := col{c.Name.Name, typ, c.Kind, c.MetadataKey, c.Virtual, c.Comment}
		if got != w {
			t.Errorf("column %d: %+v, want %+v", i, got, w)
		}
	}
	if c := ct.Columns[0]; !c.Type.NotNull || c.Type.Name != "BIGINT" || c.Pos != (Pos{2, 3}) {
		t.Errorf("id: %+v %v", c.Type, c.Pos)
	}
	if got := Format(ct.Columns[2].Expr); got != "price * 2" {
		t.Errorf("computed: %s", got)
	}
	if p := ct.Columns[1].Type.Params; len(p) != 2 || p[0] != 10 || p[1] != 2 {
		t.Errorf("DECIMAL params %v", p)
	}
	if ct.Watermark.Column.Name != "ts" || ct.Watermark.Pos != (Pos{8, 3}) {
		t.Errorf("watermark %+v", ct.Watermark)
	}
	pk := ct.PrimaryKey
	if pk.Name.Name != "pk" || len(pk.Columns) != 2 || pk.Columns[1].Name != "part" {
		t.Errorf("primary key %s", Format(pk))
	}
	if ct.Comment != "orders" || len(ct.PartitionedBy) != 1 || ct.PartitionedBy[0].Name != "part" {
		t.Errorf("comment/partitions: %q %v", ct.Comment, ct.PartitionedBy)
	}
	if len(ct.Options) != 2 || ct.Options[1].Key != "topic" || ct.Options[1].Value != "orders" || ct.Options[1].Pos != (Pos{10, 72}) {
		t.Errorf("options %+v", ct.Options[1])
	}

	// Identifiers keep their spelling and quoting.
	s = mustParseScript(t, "CREATE TABLE T (UserId INT, `Name` STRING)")
	ct = s.Statements[0].(*CreateTable)
	if id := ct.Columns[0].Name; id.Name != "UserId" || id.Quoted {
		t.Errorf("UserId: %+v", id)
	}
	if id := ct.Columns[1].Name; id.Name != "Name" || !id.Quoted || id.Pos != (Pos{1, 29}) {
		t.Errorf("`Name`: %+v", id)
	}
}

func TestTypesAST(t *testing.T) {
	s := mustParseScript(t, "CREATE TABLE t (m MAP<STRING, ROW<a INT NOT NULL, b ARRAY<DOUBLE>>> NOT NULL, ts TIMESTAMP(3) WITH LOCAL TIME ZONE, c INT MULTISET)")
	ct := s.Statements[0].(*CreateTable)
	m := ct.Columns[0].Type
	if m.Name != "MAP" || !m.NotNull || len(m.Elems) != 2 || m.Elems[0].Name != "STRING" {
		t.Fatalf("map: %+v", m)
	}
	row := m.Elems[1]
	if row.Name != "ROW" || len(row.Fields) != 2 || !row.Fields[0].Type.NotNull || row.NotNull {
		t.Fatalf("row: %+v", row)
	}
	arr := row.Fields[1].Type
	if arr.Name != "ARRAY" || arr.Elems[0].Name != "DOUBLE" || arr.Pos != (Pos{1, 53}) {
		t.Errorf("array: %+v", arr)
	}
	if ts := ct.Columns[1].Type; ts.Name != "TIMESTAMP_LTZ" || ts.Params[0] != 3 {
		t.Errorf("ltz: %+v", ts)
	}
	if ms := ct.Columns[2].Type; ms.Name != "MULTISET" || ms.Elems[0].Name != "INT" {
		t.Errorf("multiset: %+v", ms)
	}
}

func TestSetAST(t *testing.T) {
	tests := []struct{ src, key, value string }{
		{"SET 'a.b' = 'c d'", "a.b", "c d"},
		{"SET a.b-c.d = 1 h", "a.b-c.d", "1 h"},
		{"SET table.local-time-zone = 'Europe/Berlin'", "table.local-time-zone", "Europe/Berlin"},
		{"SET 'k' = 'v'\nSELECT 1", "", ""}, // error: a missing semicolon
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if tt.key == "" {
			if err == nil {
				t.Errorf("%q: no error", tt.src)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		st := s.Statements[0].(*Set)
		if st.Key != tt.key || st.Value != tt.value {
			t.Errorf("%q: key %q value %q", tt.src, st.Key, st.Value)
		}
	}
}

func TestInsertAST(t *testing.T) {
	s := mustParseScript(t, "INSERT OVERWRITE db.t /*+ OPTIONS('a' = 'b') */ PARTITION (dt = '1') (x, y) SELECT 1, 2")
	ins := s.Statements[0].(*Insert)
	if !ins.Overwrite || ins.Table.String() != "db.t" || len(ins.Columns) != 2 || ins.Columns[1].Name != "y" {
		t.Errorf("insert: %+v", ins)
	}
	if len(ins.Hints) != 1 || ins.Hints[0].Name.Name != "OPTIONS" || ins.Hints[0].Options[0].Value != "b" {
		t.Errorf("hints: %+v", ins.Hints)
	}
	if len(ins.Partition) != 1 || ins.Partition[0].Column.Name != "dt" || Format(ins.Partition[0].Value) != "'1'" {
		t.Errorf("partition: %+v", ins.Partition)
	}
	if len(ins.Query.Body.(*Select).Items) != 2 {
		t.Errorf("query: %s", Format(ins.Query))
	}

	s = mustParseScript(t, "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;\nSELECT 3")
	if len(s.Statements) != 2 {
		t.Fatalf("%d statements", len(s.Statements))
	}
	ss := s.Statements[0].(*StatementSet)
	if len(ss.Inserts) != 2 || ss.Inserts[1].Table.String() != "b" || ss.Inserts[1].Pos != (Pos{3, 1}) {
		t.Errorf("statement set: %s", Format(ss))
	}
}

func TestDropAST(t *testing.T) {
	s := mustParseScript(t, "DROP TEMPORARY VIEW IF EXISTS a.b; DROP TABLE t")
	d := s.Statements[0].(*Drop)
	if d.Kind != ViewObject || !d.Temporary || !d.IfExists || d.Name.String() != "a.b" {
		t.Errorf("drop: %+v", d)
	}
	if d := s.Statements[1].(*Drop); d.Kind != TableObject || d.IfExists || d.Pos != (Pos{1, 36}) {
		t.Errorf("drop: %+v", d)
	}
}
