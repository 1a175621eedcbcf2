package queries

import (
	"cmp"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sqlFiles are the queries written in Flink SQL: nexmark_ddl.sql declares
// the events as Flink's nexmark suite does (a nexmark connector table
// with nested person, auction and bid ROWs, a computed event-time column
// and a 4 s watermark, and views person, auction, bid), and qN.sql holds
// query qN as an INSERT INTO nexmark_qN, a blackhole table. The queries
// of SQLOnly (q3, q4, q9, q15-q20) are the suite's files unmodified; they
// have no Go API version.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// SQL returns query name written in Flink SQL, as one script for
// `weir run` or sql.Compile: the DDL for events events in splits splits
// of the generator's seed (0 is the reference sequence) followed by the
// query. Its sink table
// is SQLSink(name). ok is false for queries without a SQL version.
func SQL(name string, events int64, splits int, seed uint64) (script string, ok bool) {
	body, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", false
	}
	return SQLDDL(events, splits, seed) + "\n" + string(body), true
}

// SQLDDL is the DDL part of the SQL versions alone: the events table and
// the person, auction and bid views.
func SQLDDL(events int64, splits int, seed uint64) string {
	ddl, err := sqlFiles.ReadFile("sql/nexmark_ddl.sql")
	if err != nil {
		panic(err) // embedded
	}
	return strings.NewReplacer("'EVENTS'", fmt.Sprintf("'%d'", events), "'SPLITS'", fmt.Sprintf("'%d'", splits), "'SEED'", fmt.Sprintf("'%d'", seed)).Replace(string(ddl))
}

// SQLSink is the name of query name's sink table in its SQL version.
func SQLSink(name string) string { return "nexmark_" + name }

// sqlOnly are the queries with a SQL version and no Go API version: the
// suite's updating queries, planned by the SQL planner on the changelog
// operators (regular joins, GROUP BY outside windows, Top-N and
// deduplication).
var sqlOnly = []string{"q3", "q4", "q9", "q15", "q16", "q17", "q18", "q19", "q20"}

// SQLOnly lists the queries that have a SQL version and no Go API
// version (Lookup does not know them; run them with SQL).
func SQLOnly() []string { return slices.Clone(sqlOnly) }

// SQLNames lists every query that has a SQL version, in query number
// order: those of Names and those of SQLOnly.
func SQLNames() []string {
	var names []string
	for _, n := range append(Names(), sqlOnly...) {
		if _, err := sqlFiles.ReadFile("sql/" + n + ".sql"); err == nil {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(queryNumber(a), queryNumber(b)) })
	return names
}

// queryNumber is N of "qN".
func queryNumber(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "q"))
	return n
}
