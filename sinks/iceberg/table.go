package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ParseIdentifier splits "namespace.table" (or "a.b.table") into an
// Iceberg identifier.
func ParseIdentifier(name string) (table.Identifier, error) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("iceberg: table %q: want namespace.table", name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("iceberg: table %q: empty name part", name)
		}
	}
	return table.Identifier(parts), nil
}

// partitionSpec builds the spec of a new table from Flink-style partition
// expressions: "col" or "identity(col)", "year(col)", "month(col)",
// "day(col)", "hour(col)", "bucket(N, col)", "truncate(W, col)".
func partitionSpec(sc *iceberg.Schema, exprs []string) (*iceberg.PartitionSpec, error) {
	var fields []iceberg.PartitionField
	for i, e := range exprs {
		e = strings.TrimSpace(e)
		fn, args := "identity", []string{e}
		if open := strings.IndexByte(e, '('); open > 0 && strings.HasSuffix(e, ")") {
			fn = strings.ToLower(strings.TrimSpace(e[:open]))
			args = strings.Split(e[open+1:len(e)-1], ",")
			for k := range args {
				args[k] = strings.TrimSpace(args[k])
			}
		}
		var col, tr, suffix string
		switch fn {
		case "identity", "year", "month", "day", "hour":
			if len(args) != 1 {
				return nil, fmt.Errorf("iceberg: partition %q: %s takes one column", e, fn)
			}
			col, tr, suffix = args[0], fn, "_"+fn
			if fn == "identity" {
				suffix = ""
			}
		case "bucket", "truncate":
			if len(args) != 2 {
				return nil, fmt.Errorf("iceberg: partition %q: %s takes (N, column)", e, fn)
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("iceberg: partition %q: %s needs a positive number first", e, fn)
			}
			col, tr = args[1], fmt.Sprintf("%s[%d]", fn, n)
			suffix = "_" + map[string]string{"bucket": "bucket", "truncate": "trunc"}[fn]
		default:
			return nil, fmt.Errorf("iceberg: partition %q: unknown transform %s (want identity, year, month, day, hour, bucket, truncate)", e, fn)
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return nil, fmt.Errorf("iceberg: partition %q: no column %q in the stream", e, col)
		}
		t, err := iceberg.ParseTransform(tr)
		if err != nil {
			return nil, fmt.Errorf("iceberg: partition %q: %w", e, err)
		}
		if !t.CanTransform(f.Type) {
			return nil, fmt.Errorf("iceberg: partition %q: %s cannot transform column %s of type %s", e, fn, col, f.Type)
		}
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000 + i, Name: col + suffix, Transform: t})
	}
	spec := iceberg.NewPartitionSpec(fields...)
	return &spec, nil
}

// openTable loads the table, or creates it (and its namespace) from the
// stream's schema. An existing table is checked against the stream: every
// stream column must exist with a type the table column accepts, and
// every required table column must be in the stream. With evolve, stream
// columns the table lacks are added as optional columns.
func openTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, stream *arrow.Schema, o Options) (*table.Table, error) {
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(stream, true)
	if err != nil {
		return nil, fmt.Errorf("iceberg: the stream's schema has no Iceberg form: %w", err)
	}
	if len(o.UpsertKeys) > 0 {
		if want, err = identifierSchema(want, o.UpsertKeys); err != nil {
			return nil, err
		}
	}
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		spec, err := partitionSpec(want, o.PartitionBy)
		if err != nil {
			return nil, err
		}
		ns := catalog.NamespaceFromIdent(ident)
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("iceberg: create namespace %s: %w", strings.Join(ns, "."), err)
		}
		// Merge small manifests on append, as Iceberg Java does by default:
		// one manifest per epoch would otherwise pile up and slow every
		// commit and scan.
		props := iceberg.Properties{"format-version": "2", "write.parquet.compression-codec": "zstd", "commit.manifest-merge.enabled": "true"}
		for k, v := range o.Properties {
			props[k] = v
		}
		if err := checkNewTable(name, props, o); err != nil {
			return nil, err
		}
		if err := checkUpsertSpec(name, want, spec, o); err != nil {
			return nil, err
		}
		tbl, err = cat.CreateTable(ctx, ident, want, catalog.WithPartitionSpec(spec), catalog.WithProperties(props))
		if errors.Is(err, catalog.ErrTableAlreadyExists) { // created by someone else meanwhile
			tbl, err = cat.LoadTable(ctx, ident)
		}
		if err != nil {
			return nil, fmt.Errorf("iceberg: create table %s: %w", name, err)
		}
		return tbl, nil
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg: load table %s: %w", name, err)
	}
	if f := tbl.Properties().Get(table.WriteFormatDefaultKey, "parquet"); !strings.EqualFold(f, "parquet") {
		return nil, fmt.Errorf("iceberg: table %s writes %s data files ('%s'); weir writes Parquet only", name, f, table.WriteFormatDefaultKey)
	}
	if len(o.UpsertKeys) > 0 {
		spec := tbl.Spec()
		if err := checkUpsertSpec(name, tbl.Schema(), &spec, o); err != nil {
			return nil, err
		}
		if tbl, err = upgradeForUpserts(ctx, cat, ident, tbl, o); err != nil {
			return nil, err
		}
	}
	missing, err := checkSchema(tbl.Schema(), want, name)
	if err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		return tbl, nil
	}
	if !o.SchemaEvolution {
		return nil, fmt.Errorf("iceberg: table %s has no column %s of the stream; enable schema evolution ('write.schema-evolution.enabled') to add it as an optional column",
			name, strings.Join(fieldNames(missing), ", "))
	}
	for attempt := 0; ; attempt++ {
		tx := tbl.NewTransaction()
		up := tx.UpdateSchema(true, false)
		for _, f := range missing {
			up.AddColumn([]string{f.Name}, f.Type, f.Doc, false, nil)
		}
		err := up.Commit()
		if err == nil {
			tbl, err = tx.Commit(ctx)
		}
		if err == nil {
			return tbl, nil
		}
		if !errors.Is(err, table.ErrCommitFailed) || attempt == 5 {
			return nil, fmt.Errorf("iceberg: add columns %s to table %s: %w", strings.Join(fieldNames(missing), ", "), name, err)
		}
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return nil, fmt.Errorf("iceberg: load table %s: %w", name, err)
		}
		if missing, err = checkSchema(tbl.Schema(), want, name); err != nil {
			return nil, err
		}
		if len(missing) == 0 {
			return tbl, nil
		}
	}
}

// checkSchema compares the table's schema with the stream's and returns
// the stream columns the table lacks.
func checkSchema(have, want *iceberg.Schema, name string) (missing []iceberg.NestedField, err error) {
	for _, f := range want.Fields() {
		tf, ok := have.FindFieldByName(f.Name)
		if !ok {
			missing = append(missing, f)
			continue
		}
		if !accepts(tf.Type, f.Type) {
			return nil, fmt.Errorf("iceberg: table %s: column %s is %s, the stream's is %s, which it cannot hold (changing a column's type is not schema evolution weir does)",
				name, f.Name, tf.Type, f.Type)
		}
	}
	for _, tf := range have.Fields() {
		if _, ok := want.FindFieldByName(tf.Name); !ok && tf.Required {
			return nil, fmt.Errorf("iceberg: table %s: required column %s is not in the stream", name, tf.Name)
		}
	}
	return missing, nil
}

// accepts reports whether a table column of type have can store values of
// type want: the same type, or an Iceberg type promotion.
func accepts(have, want iceberg.Type) bool {
	if have.Equals(want) {
		return true
	}
	switch {
	case want.Equals(iceberg.PrimitiveTypes.Int32):
		return have.Equals(iceberg.PrimitiveTypes.Int64)
	case want.Equals(iceberg.PrimitiveTypes.Float32):
		return have.Equals(iceberg.PrimitiveTypes.Float64)
	}
	hs, ok1 := have.(*iceberg.StructType)
	ws, ok2 := want.(*iceberg.StructType)
	if ok1 && ok2 {
		for _, wf := range ws.FieldList {
			found := false
			for _, hf := range hs.FieldList {
				if hf.Name == wf.Name {
					found = accepts(hf.Type, wf.Type)
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return false
}

func fieldNames(fs []iceberg.NestedField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// withFieldIDs returns sc with each field's Iceberg field id (by name, from
// the table's schema) in its metadata, as iceberg-go's writer matches
// columns by id.
func withFieldIDs(sc *arrow.Schema, ts *iceberg.Schema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		tf, ok := ts.FindFieldByName(f.Name)
		if !ok {
			return nil, fmt.Errorf("iceberg: column %s is not in the table", f.Name)
		}
		f.Metadata = arrow.NewMetadata([]string{table.ArrowParquetFieldIDKey}, []string{strconv.Itoa(tf.ID)})
		if st, ok := f.Type.(*arrow.StructType); ok {
			sub, err := withFieldIDs(arrow.NewSchema(st.Fields(), nil), structSchema(tf))
			if err != nil {
				return nil, err
			}
			f.Type = arrow.StructOf(sub.Fields()...)
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

func structSchema(f iceberg.NestedField) *iceberg.Schema {
	st, ok := f.Type.(*iceberg.StructType)
	if !ok {
		return iceberg.NewSchema(0)
	}
	return iceberg.NewSchema(0, st.FieldList...)
}

// checkNewTable checks the properties of a table the sink creates: its
// format version (an upsert table needs 2 or later: equality deletes) and
// data file format (Parquet).
func checkNewTable(name string, props iceberg.Properties, o Options) error {
	v, err := strconv.Atoi(props["format-version"])
	if err != nil || v < 1 {
		return fmt.Errorf("iceberg: table %s: 'format-version' = %q: want 1, 2 or 3", name, props["format-version"])
	}
	if len(o.UpsertKeys) > 0 && v < 2 {
		return fmt.Errorf("iceberg: table %s: upserts need format version 2 or later (equality deletes), and 'format-version' is %d", name, v)
	}
	if f := props.Get(table.WriteFormatDefaultKey, "parquet"); !strings.EqualFold(f, "parquet") {
		return fmt.Errorf("iceberg: table %s: '%s' = %q: weir writes Parquet data files only", name, table.WriteFormatDefaultKey, f)
	}
	return nil
}

// checkUpsertSpec refuses, as Flink does, an upsert table partitioned by
// a column that is not an upsert key: an upsert (a row without its
// retraction) of a key whose committed row is in another partition would
// delete in the wrong partition and leave the key twice.
func checkUpsertSpec(name string, sc *iceberg.Schema, spec *iceberg.PartitionSpec, o Options) error {
	if len(o.UpsertKeys) == 0 {
		return nil
	}
	for _, pf := range spec.Fields() {
		for _, src := range pf.SourceIDs {
			f, ok := sc.FindFieldByID(src)
			if !ok {
				continue
			}
			if !slices.Contains(o.UpsertKeys, f.Name) {
				return fmt.Errorf("iceberg: table %s: in upsert mode every partition column must be an upsert key (PRIMARY KEY) column, and partition %s is on %s (keys %s)",
					name, pf.Name, f.Name, strings.Join(o.UpsertKeys, ", "))
			}
		}
	}
	return nil
}

// upgradeForUpserts returns an existing table ready for upserts: format
// version 2 or later. A version 1 table is upgraded when the options ask
// for 'format-version' = '2' (as Flink's ALTER TABLE ... SET does), and
// refused otherwise.
func upgradeForUpserts(ctx context.Context, cat catalog.Catalog, ident table.Identifier, tbl *table.Table, o Options) (*table.Table, error) {
	name := strings.Join(ident, ".")
	if tbl.Metadata().Version() >= 2 {
		return tbl, nil
	}
	want, _ := strconv.Atoi(o.Properties["format-version"])
	if want < 2 {
		return nil, fmt.Errorf("iceberg: table %s is format version %d; upserts need version 2 (equality deletes): set 'format-version' = '2' to upgrade it (readers must support version 2)", name, tbl.Metadata().Version())
	}
	for attempt := 0; ; attempt++ {
		tx := tbl.NewTransaction()
		err := tx.UpgradeFormatVersion(want)
		if err == nil {
			var up *table.Table
			if up, err = tx.Commit(ctx); err == nil {
				return up, nil
			}
		}
		if !isConflict(err) || attempt == 5 {
			return nil, fmt.Errorf("iceberg: upgrade table %s to format version %d: %w", name, want, err)
		}
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return nil, fmt.Errorf("iceberg: load table %s: %w", name, err)
		}
		if tbl.Metadata().Version() >= 2 {
			return tbl, nil
		}
	}
}
