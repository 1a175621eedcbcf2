package sql

import (
	"testing"
)

// queryCases are queries with their canonical forms (also fuzzing seeds).
var queryCases = []struct{ name, src, want string }{
	{"distinct", "SELECT DISTINCT a, b FROM t", "SELECT DISTINCT a, b FROM t"},
	{"star", "SELECT *, t.*, db.t.* FROM t", "SELECT *, t.*, db.t.* FROM t"},
	{"aliases", "SELECT a AS x, b y, `c` `my col` FROM t", "SELECT a AS x, b AS y, `c` AS `my col` FROM t"},
	{"no from", "SELECT 1, 'a'", "SELECT 1, 'a'"},
	{"where group having", "SELECT a, count(*) FROM t WHERE b > 1 GROUP BY a HAVING count(*) > 2",
		"SELECT a, count(*) FROM t WHERE b > 1 GROUP BY a HAVING count(*) > 2"},
	{"grouping sets", "SELECT a, b FROM t GROUP BY GROUPING SETS ((a, b), a, ())",
		"SELECT a, b FROM t GROUP BY GROUPING SETS ((a, b), (a), ())"},
	{"rollup cube", "SELECT a FROM t GROUP BY ROLLUP (a, b), CUBE ((a, b), c), d",
		"SELECT a FROM t GROUP BY ROLLUP ((a), (b)), CUBE ((a, b), (c)), d"},
	{"order limit offset", "SELECT a FROM t ORDER BY a DESC NULLS LAST, b NULLS FIRST, c ASC LIMIT 10 OFFSET 5",
		"SELECT a FROM t ORDER BY a DESC NULLS LAST, b NULLS FIRST, c LIMIT 10 OFFSET 5"},
	{"union", "SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT c FROM v",
		"SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT c FROM v"},
	{"intersect binds tighter", "SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v",
		"SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v"},
	{"set op parentheses", "(SELECT a FROM t UNION SELECT b FROM u) INTERSECT ALL SELECT c FROM v EXCEPT DISTINCT (SELECT d FROM w EXCEPT SELECT e FROM x)",
		"(SELECT a FROM t UNION SELECT b FROM u) INTERSECT ALL SELECT c FROM v EXCEPT (SELECT d FROM w EXCEPT SELECT e FROM x)"},
	{"set op with order", "(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL (SELECT b FROM u) ORDER BY 1",
		"(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL SELECT b FROM u ORDER BY 1"},
	{"with body in parentheses", "WITH x AS (SELECT 1) (SELECT * FROM x LIMIT 1)", "WITH x AS (SELECT 1) (SELECT * FROM x LIMIT 1)"},
	{"values", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v (n, s)", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v (n, s)"},

	// FROM items
	{"table alias", "SELECT * FROM db.t AS x (a, b)", "SELECT * FROM db.t AS x (a, b)"},
	{"subquery", "SELECT * FROM (SELECT a FROM t) s", "SELECT * FROM (SELECT a FROM t) AS s"},
	{"subquery without alias", "SELECT * FROM (SELECT a FROM t) WHERE a > 1", "SELECT * FROM (SELECT a FROM t) WHERE a > 1"},
	{"table hint", "SELECT * FROM t /*+ OPTIONS('scan.startup.mode' = 'earliest-offset') */ AS x",
		"SELECT * FROM t /*+ OPTIONS('scan.startup.mode' = 'earliest-offset') */ AS x"},
	{"query hint", "SELECT /*+ BROADCAST(a), STATE_TTL('a' = '1d') */ * FROM a JOIN b ON a.id = b.id",
		"SELECT /*+ BROADCAST(a), STATE_TTL('a' = '1d') */ * FROM a JOIN b ON a.id = b.id"},
	{"tumble", "SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
		"SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end"},
	{"tumble offset", "SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' HOUR, INTERVAL '15' MINUTE)) w",
		"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' HOUR, INTERVAL '15' MINUTE)) AS w"},
	{"tumble named", "SELECT * FROM TABLE(TUMBLE(DATA => TABLE bid, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, OFFSET => INTERVAL '1' MINUTE))",
		"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' MINUTE, INTERVAL '1' MINUTE))"},
	{"tumble named any order", "SELECT * FROM TABLE(TUMBLE(size => INTERVAL '10' MINUTES, data => TABLE bid, timecol => DESCRIPTOR(ts)))",
		"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' MINUTE))"},
	{"hop", "SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))",
		"SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"},
	{"cumulate", "SELECT * FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' MINUTE, INTERVAL '10' MINUTE))",
		"SELECT * FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' MINUTE, INTERVAL '10' MINUTE))"},
	{"session", "SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '5' MINUTE))",
		"SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY (bidder), DESCRIPTOR(ts), INTERVAL '5' MINUTE))"},
	{"session named", "SELECT * FROM TABLE(SESSION(DATA => TABLE bid PARTITION BY (a, b), TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '5' MINUTES))",
		"SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY (a, b), DESCRIPTOR(ts), INTERVAL '5' MINUTE))"},
	{"window over subquery", "SELECT * FROM TABLE(TUMBLE((SELECT *, PROCTIME() AS p FROM bid), DESCRIPTOR(p), INTERVAL '10' SECOND))",
		"SELECT * FROM TABLE(TUMBLE(TABLE (SELECT *, PROCTIME() AS p FROM bid), DESCRIPTOR(p), INTERVAL '10' SECOND))"},
	{"table function", "SELECT * FROM t, LATERAL TABLE(split(s, ',')) AS x (word)",
		"SELECT * FROM t, LATERAL TABLE(split(s, ',')) AS x (word)"},
	{"left join lateral", "SELECT * FROM t LEFT JOIN LATERAL TABLE(split(s)) AS x (w) ON TRUE",
		"SELECT * FROM t LEFT JOIN LATERAL TABLE(split(s)) AS x (w) ON TRUE"},
	{"table function without lateral", "SELECT * FROM TABLE(gen(3))", "SELECT * FROM TABLE(gen(3))"},
	{"lateral subquery", "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) x", "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) AS x"},
	{"unnest", "SELECT * FROM t CROSS JOIN UNNEST(t.tags) WITH ORDINALITY AS x (tag, n)",
		"SELECT * FROM t CROSS JOIN UNNEST(t.tags) WITH ORDINALITY AS x (tag, n)"},
	{"joins", "SELECT * FROM a INNER JOIN b ON a.x = b.x LEFT OUTER JOIN c USING (y) RIGHT JOIN d ON TRUE FULL OUTER JOIN e ON a.z = e.z CROSS JOIN f",
		"SELECT * FROM a JOIN b ON a.x = b.x LEFT JOIN c USING (y) RIGHT JOIN d ON TRUE FULL JOIN e ON a.z = e.z CROSS JOIN f"},
	{"comma and join", "SELECT * FROM a, b JOIN c ON b.x = c.x, d", "SELECT * FROM a, b JOIN c ON b.x = c.x, d"},
	{"parenthesised joins", "SELECT * FROM (a, b) JOIN c ON TRUE JOIN (d JOIN e ON TRUE) ON TRUE",
		"SELECT * FROM (a, b) JOIN c ON TRUE JOIN (d JOIN e ON TRUE) ON TRUE"},
	{"parenthesised join with subquery", "SELECT * FROM ((SELECT 1 AS a) x JOIN y ON x.a = y.a)",
		"SELECT * FROM (SELECT 1 AS a) AS x JOIN y ON x.a = y.a"},
	{"temporal join", "SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.ts AS r2 ON o.k = r2.k",
		"SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.ts AS r2 ON o.k = r2.k"},
	{"temporal join no alias", "SELECT * FROM o LEFT JOIN db.r FOR SYSTEM_TIME AS OF o.proctime ON o.k = r.k",
		"SELECT * FROM o LEFT JOIN db.r FOR SYSTEM_TIME AS OF o.proctime ON o.k = r.k"},
	{"subqueries in expressions", "SELECT (SELECT max(a) FROM u) AS m FROM t WHERE EXISTS (SELECT 1 FROM v) AND a IN (SELECT a FROM w)",
		"SELECT (SELECT max(a) FROM u) AS m FROM t WHERE EXISTS (SELECT 1 FROM v) AND a IN (SELECT a FROM w)"},
	{"subquery arithmetic", "SELECT ((SELECT 1) + 1) * 2, ((SELECT 1) UNION (SELECT 2)) FROM t",
		"SELECT ((SELECT 1) + 1) * 2, (SELECT 1 UNION SELECT 2) FROM t"},
	{"top-n", "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum FROM w) WHERE rownum <= 3",
		"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum FROM w) WHERE rownum <= 3"},
}

func TestQueries(t *testing.T) {
	for _, tt := range queryCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := canon(t, tt.src); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func selectOf(t *testing.T, src string) *Select {
	t.Helper()
	s := mustParseScript(t, src)
	q, ok := s.Statements[0].(*Query)
	if !ok {
		t.Fatalf("%q is a %T", src, s.Statements[0])
	}
	sel, ok := q.Body.(*Select)
	if !ok {
		t.Fatalf("%q: body is a %T", src, q.Body)
	}
	return sel
}

func TestSelectAST(t *testing.T) {
	sel := selectOf(t, "SELECT DISTINCT a AS x, t.*, count(*) c FROM t WHERE a > 1 GROUP BY a HAVING count(*) > 1")
	if !sel.Distinct || len(sel.Items) != 3 || sel.Pos != (Pos{1, 1}) {
		t.Fatalf("select: %+v", sel)
	}
	if it := sel.Items[0]; it.Alias.Name != "x" || Format(it.Expr) != "a" || it.Pos != (Pos{1, 17}) {
		t.Errorf("item 0: %+v", it)
	}
	if st, ok := sel.Items[1].Expr.(*Star); !ok || len(st.Qualifier) != 1 || st.Qualifier[0].Name != "t" {
		t.Errorf("item 1: %s", Format(sel.Items[1]))
	}
	if f := sel.Items[2].Expr.(*FuncCall); !f.Star || !f.IsNamed("COUNT") || sel.Items[2].Alias.Name != "c" {
		t.Errorf("item 2: %s", Format(sel.Items[2]))
	}
	if tr := sel.From.(*TableRef); tr.Name.String() != "t" || tr.Alias != nil {
		t.Errorf("from: %s", Format(sel.From))
	}
	if Format(sel.Where) != "a > 1" || len(sel.GroupBy) != 1 || Format(sel.Having) != "count(*) > 1" {
		t.Errorf("clauses: %s", Format(sel))
	}

	s := mustParseScript(t, "WITH w (n) AS (SELECT 1) SELECT n FROM w ORDER BY n DESC NULLS FIRST LIMIT 2 OFFSET 1")
	q := s.Statements[0].(*Query)
	if len(q.With) != 1 || q.With[0].Name.Name != "w" || q.With[0].Columns[0].Name != "n" {
		t.Errorf("with: %+v", q.With)
	}
	if len(q.OrderBy) != 1 || !q.OrderBy[0].Desc || q.OrderBy[0].Nulls != NullsFirst {
		t.Errorf("order: %+v", q.OrderBy)
	}
	if Format(q.Limit) != "2" || Format(q.Offset) != "1" {
		t.Errorf("limit/offset: %s", Format(q))
	}

	// INTERSECT binds more tightly than UNION.
	s = mustParseScript(t, "SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4")
	top := s.Statements[0].(*Query).Body.(*SetOp)
	if top.Op != Except {
		t.Fatalf("top: %v", top.Op)
	}
	u := top.Left.(*SetOp)
	if u.Op != Union || u.Right.(*SetOp).Op != Intersect || u.OpPos != (Pos{1, 10}) {
		t.Errorf("union: %s", Format(u))
	}

	// GROUPING SETS.
	sel = selectOf(t, "SELECT a FROM t GROUP BY GROUPING SETS ((a, b), (a), ()), ROLLUP (a, b)")
	gs := sel.GroupBy[0].(*GroupingSet)
	if gs.Kind != GroupingSets || len(gs.Sets) != 3 || len(gs.Sets[0]) != 2 || len(gs.Sets[2]) != 0 {
		t.Errorf("grouping sets: %s", Format(gs))
	}
	if r := sel.GroupBy[1].(*GroupingSet); r.Kind != Rollup || len(r.Sets) != 2 {
		t.Errorf("rollup: %s", Format(r))
	}
}

func TestFromAST(t *testing.T) {
	sel := selectOf(t, "SELECT * FROM a JOIN b ON a.x = b.x LEFT JOIN c USING (y), d CROSS JOIN e")
	comma := sel.From.(*Join)
	if comma.Kind != CommaJoin {
		t.Fatalf("top join: %v", comma.Kind)
	}
	left := comma.Left.(*Join)
	if left.Kind != LeftJoin || len(left.Using) != 1 || left.Using[0].Name != "y" || left.On != nil {
		t.Errorf("left join: %s", Format(left))
	}
	inner := left.Left.(*Join)
	if inner.Kind != InnerJoin || Format(inner.On) != "a.x = b.x" || inner.Left.(*TableRef).Name.String() != "a" {
		t.Errorf("inner join: %s", Format(inner))
	}
	if cross := comma.Right.(*Join); cross.Kind != CrossJoin || cross.On != nil || cross.Pos != (Pos{1, 60}) {
		t.Errorf("cross join: %s at %v", Format(cross), cross.Pos)
	}

	sel = selectOf(t, "SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) AS s")
	w := sel.From.(*WindowTVF)
	if w.Kind != SessionWindow || w.Data.Name.String() != "bid" || len(w.Data.PartitionBy) != 1 || Format(w.Data.PartitionBy[0]) != "bidder" ||
		w.TimeCol.Name != "dateTime" || Format(w.Gap) != "INTERVAL '10' SECOND" || w.Size != nil || w.Alias.Name != "s" || w.Pos != (Pos{1, 15}) {
		t.Errorf("session: %s %+v", Format(w), w)
	}
	sel = selectOf(t, "SELECT * FROM TABLE(CUMULATE(TABLE db.bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR, INTERVAL '5' SECOND))")
	w = sel.From.(*WindowTVF)
	if w.Kind != CumulateWindow || Format(w.Step) != "INTERVAL '1' MINUTE" || Format(w.Size) != "INTERVAL '1' HOUR" ||
		Format(w.Offset) != "INTERVAL '5' SECOND" || w.Data.Name.String() != "db.bid" {
		t.Errorf("cumulate: %s", Format(w))
	}

	sel = selectOf(t, "SELECT * FROM o JOIN r /*+ LOOKUP('table' = 'r', 'async' = 'true') */ FOR SYSTEM_TIME AS OF o.pt AS x ON o.k = x.k")
	r := sel.From.(*Join).Right.(*TableRef)
	if Format(r.SystemTime) != "o.pt" || r.Alias.Name != "x" || len(r.Hints) != 1 || len(r.Hints[0].Options) != 2 || r.Hints[0].Options[1].Key != "async" {
		t.Errorf("temporal: %s", Format(r))
	}

	sel = selectOf(t, "SELECT * FROM t LEFT JOIN LATERAL TABLE(split(t.s, ' ')) AS T(word, n) ON TRUE")
	tf := sel.From.(*Join).Right.(*TableFunc)
	if !tf.Lateral || !tf.Call.IsNamed("split") || len(tf.Call.Args) != 2 || tf.Alias.Name != "T" || len(tf.ColumnAliases) != 2 {
		t.Errorf("lateral: %s", Format(tf))
	}

	sel = selectOf(t, "SELECT * FROM (SELECT a FROM t) AS x (b)")
	if dt := sel.From.(*DerivedTable); dt.Alias.Name != "x" || dt.ColumnAliases[0].Name != "b" || dt.Lateral || dt.Pos != (Pos{1, 15}) {
		t.Errorf("derived: %s", Format(dt))
	}
	sel = selectOf(t, "SELECT /*+ STATE_TTL('o' = '1d') */ * FROM o")
	if len(sel.Hints) != 1 || sel.Hints[0].Name.Name != "STATE_TTL" || sel.Hints[0].Options[0].Value != "1d" || sel.Hints[0].Pos != (Pos{1, 12}) {
		t.Errorf("query hint: %+v", sel.Hints)
	}
	// A hint comment where hints are not taken is a comment.
	sel = selectOf(t, "SELECT a /*+ NOPE */ FROM t")
	if len(sel.Hints) != 0 || Format(sel) != "SELECT a FROM t" {
		t.Errorf("stray hint: %s", Format(sel))
	}
}
