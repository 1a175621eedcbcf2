// Command weir-duckdb runs one timed SQL query in an in-memory DuckDB
// database and prints its result and time as JSON. `weir bench nexmark
// --vs duckdb` runs it as a child process to compare a Nexmark query with
// the equivalent batch SQL over the same events; it lives in this
// separate module because DuckDB needs cgo and the weir binary does not.
//
//	weir-duckdb -threads 2 -setup "CREATE TABLE bid AS SELECT * FROM read_parquet('bids.parquet')" -sql "SELECT ..."
//
// The -setup statements run first and are not timed; then -sql runs and
// every row of its result is read. The output is one JSON object:
//
//	{"version": "v1.x", "threads": 2, "seconds": 0.42, "cpu_s": 0.8, "columns": ["n"], "rows": [["123"]]}
//
// seconds is the query's wall time, cpu_s the process's CPU time (all
// threads) meanwhile. Values are printed as strings (fmt's %v; NULL as null).
//
// Build it from bench/duckdb:
//
//	go build -o weir-duckdb ./weir-duckdb
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// result is what the command prints.
type result struct {
	Version string      `json:"version"`
	Threads int         `json:"threads"`
	Seconds float64     `json:"seconds"`
	CPUS    float64     `json:"cpu_s"` // process CPU time (all threads) during the query
	Columns []string    `json:"columns"`
	Rows    [][]*string `json:"rows"`
}

func main() {
	threads := flag.Int("threads", 1, "DuckDB threads (SET threads)")
	setup := flag.String("setup", "", "statements to run first, not timed")
	query := flag.String("sql", "", "the timed query")
	flag.Parse()
	if err := run(context.Background(), *threads, *setup, *query); err != nil {
		fmt.Fprintln(os.Stderr, "weir-duckdb:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, threads int, setup, query string) error {
	if query == "" {
		return errors.New("no -sql query")
	}
	if threads < 1 {
		return fmt.Errorf("-threads %d: must be at least 1", threads)
	}
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET threads=%d", threads)); err != nil {
		return fmt.Errorf("SET threads: %w", err)
	}
	r := result{Threads: threads}
	if err := conn.QueryRowContext(ctx, "SELECT version()").Scan(&r.Version); err != nil {
		return err
	}
	if setup != "" {
		if _, err := conn.ExecContext(ctx, setup); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	cpu0 := processCPU()
	start := time.Now()
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	if r.Columns, err = rows.Columns(); err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]any, len(r.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := make([]*string, len(vals))
		for i, v := range vals {
			if v != nil {
				s := fmt.Sprint(v)
				row[i] = &s
			}
		}
		r.Rows = append(r.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	r.Seconds = time.Since(start).Seconds()
	r.CPUS = processCPU() - cpu0
	return json.NewEncoder(os.Stdout).Encode(r)
}

// processCPU is this process's user and system CPU time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
