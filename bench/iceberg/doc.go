// Package iceberg holds an independent check of weir's Iceberg sink:
// DuckDB reads the data files a `weir job windowed --table` run (killed
// with SIGKILL and restarted) committed to the table's current snapshot,
// and must find exactly what weir's Parquet sink wrote for the same job
// and what iceberg-go's own scan reads. The test needs cgo and links
// DuckDB, so it runs only with the duckdb build tag; see README.md.
package iceberg
