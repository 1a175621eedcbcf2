package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// groupQuery is the timed DuckDB query: the benchmark's group-by, with its
// result reduced inside DuckDB to one row so that no time goes into
// handing rows to Go. The outer query uses both aggregates, so DuckDB must
// compute each of them per group.
const groupQuery = `SELECT count(*), sum(s)::BIGINT, sum(c)::BIGINT
FROM (SELECT k, sum(v) AS s, count(*) AS c FROM t GROUP BY k)`

// duck is one in-memory DuckDB database, used over a single connection and
// limited to one thread.
type duck struct {
	db   *sql.DB
	conn *sql.Conn
}

// openDuck opens a fresh in-memory DuckDB database with threads=1.
func openDuck(ctx context.Context) (*duck, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	d := &duck{db: db, conn: conn}
	if _, err := conn.ExecContext(ctx, "SET threads=1"); err != nil {
		d.close()
		return nil, fmt.Errorf("duckdb: SET threads=1: %w", err)
	}
	return d, nil
}

// close closes the connection and the database.
func (d *duck) close() error {
	err := d.conn.Close()
	if err2 := d.db.Close(); err == nil {
		err = err2
	}
	return err
}

// version returns DuckDB's version string (SELECT version()).
func (d *duck) version(ctx context.Context) (string, error) {
	var v string
	err := d.conn.QueryRowContext(ctx, "SELECT version()").Scan(&v)
	return v, err
}

// load creates the table t(k BIGINT, v BIGINT) and appends every row of
// data to it through the driver's Appender.
func (d *duck) load(ctx context.Context, data *dataset) error {
	if _, err := d.conn.ExecContext(ctx, "CREATE OR REPLACE TABLE t(k BIGINT, v BIGINT)"); err != nil {
		return fmt.Errorf("duckdb: create table: %w", err)
	}
	err := d.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "t")
		if err != nil {
			return err
		}
		for _, rec := range data.batches {
			ks := rec.Column(0).(*array.Int64).Int64Values()
			vs := rec.Column(1).(*array.Int64).Int64Values()
			for i := range ks {
				if err := app.AppendRow(ks[i], vs[i]); err != nil {
					app.Close()
					return err
				}
			}
		}
		return app.Close()
	})
	if err != nil {
		return fmt.Errorf("duckdb: load: %w", err)
	}
	return nil
}

// groupBy runs groupQuery once and returns its totals.
func (d *duck) groupBy(ctx context.Context) (totals, error) {
	var t totals
	err := d.conn.QueryRowContext(ctx, groupQuery).Scan(&t.groups, &t.sum, &t.count)
	if err != nil {
		return t, fmt.Errorf("duckdb: group-by: %w", err)
	}
	return t, nil
}

// explain returns DuckDB's physical plan for groupQuery.
func (d *duck) explain(ctx context.Context) (string, error) {
	rows, err := d.conn.QueryContext(ctx, "EXPLAIN "+groupQuery)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		var kind, plan string
		if err := rows.Scan(&kind, &plan); err != nil {
			return "", err
		}
		out += plan + "\n"
	}
	return out, rows.Err()
}
