// Package sql is weir's streaming SQL front end: Flink-dialect job scripts
// (CREATE TABLE ... WITH (...), CREATE VIEW, SET, INSERT INTO ... SELECT,
// statement sets) parsed, validated and planned into an arrowflow graph.
//
// # Parsing
//
// Parse reads a script of statements separated by semicolons into a
// *Script; ParseExpr reads one expression. The parser is hand-written
// (recursive descent, with precedence climbing for expressions) and
// follows Flink SQL, which is Apache Calcite's grammar with Flink's
// extensions: a script that Flink accepts should parse here. Keywords are
// case-insensitive; names keep their spelling (Flink names are
// case-sensitive) and whether they were quoted with backticks. The words
// reserved here (FROM, ORDER, TABLE, ...) are reserved in Flink too; many
// that Flink reserves (VALUE, DATE, TIMESTAMP, USER, ...) are names here
// where the grammar allows.
//
// Statements: CREATE [TEMPORARY] TABLE with physical, computed (AS expr)
// and metadata (METADATA [FROM 'key'] [VIRTUAL]) columns, a WATERMARK,
// a PRIMARY KEY ... NOT ENFORCED, COMMENT, PARTITIONED BY and WITH
// options; CREATE [TEMPORARY] VIEW; SET and RESET; INSERT INTO|OVERWRITE
// with static partitions, column lists and OPTIONS hints; EXECUTE
// STATEMENT SET BEGIN ... END and BEGIN STATEMENT SET; ... END; DROP
// TABLE|VIEW; and a query on its own (a preview). Queries have WITH, set
// operations, VALUES, joins of every kind, temporal joins (FOR SYSTEM_TIME
// AS OF), window table functions (TUMBLE, HOP, CUMULATE, SESSION, with
// positional or named arguments), LATERAL TABLE and UNNEST, GROUP BY with
// GROUPING SETS, ROLLUP and CUBE, OVER windows, FILTER, ORDER BY, LIMIT
// and OFFSET.
//
// Other statements (CREATE FUNCTION, CREATE CATALOG, USE, SHOW, EXPLAIN,
// ALTER, ...) and the few constructs weir does not run (CREATE TABLE ...
// LIKE or AS SELECT, MATCH_RECOGNIZE, named WINDOW clauses, NATURAL JOIN,
// Unicode escape strings) are syntax errors that say so, with a hint.
//
// # The syntax tree
//
// Every node records the position (line and column, 1-based, columns in
// runes) of its first token. Statements implement Statement, scalar
// expressions Expr, FROM items TableExpr and query bodies QueryExpr; the
// concrete types are listed in ast.go. Inspect and Children walk a tree.
// The parser keeps no parentheses: (a + b) * c is a Binary whose Left is a
// Binary. It resolves no names either: t.a.b is a Ref with three parts,
// whichever of them name a table, a column and a nested field.
//
// Format prints any node as canonical SQL, which parses back to an equal
// tree; tests and the fuzzer (FuzzParse) check that.
//
// # Errors
//
// Syntax errors are *Error values with the position, the source line and,
// for common mistakes (double-quoted strings, unquoted option keys, a
// missing comma, a reserved word used as a name, a window function
// without TABLE(...), ...), a hint:
//
//	line 3:3: expected "," or ")", found "b"
//	  b STRING
//	  ^
//	hint: is a comma missing before "b"?
package sql
