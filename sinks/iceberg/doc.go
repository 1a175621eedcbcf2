// Package iceberg is weir's Apache Iceberg sink: each epoch's rows become
// Parquet data files, committed to the table exactly once, in one snapshot
// per epoch, through any catalog iceberg-go supports (the SQL catalog on
// SQLite as the embedded default, the SQL catalog on PostgreSQL, REST).
package iceberg
