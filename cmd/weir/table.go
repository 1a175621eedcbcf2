package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/weirflow/weir/internal/ctxsleep"
	"github.com/weirflow/weir/internal/redact"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	"github.com/weirflow/weir/sinks/parquet"
)

// tableCommitAttempts bounds the catalog commits `weir table expire`
// tries when a concurrent commit (a running job's
// epoch) wins the race: each attempt works on the table as the catalog
// has it then.
const tableCommitAttempts = 5

// tableTarget is the table a `weir table` subcommand works on: an Iceberg
// table in a catalog (--table) or a Parquet sink folder (--path).
type tableTarget struct {
	path string
	ice  icebergFlags
}

// tableCatalogFlags are the flags that only apply to an Iceberg table.
var tableCatalogFlags = []string{"warehouse", "catalog-uri", "catalog-type", "catalog-name", "catalog-prop"}

func (t *tableTarget) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	t.ice.register(f)
	f.Lookup("table").Usage = "Iceberg table namespace.name to inspect or maintain (instead of --path)"
	f.StringVar(&t.path, "path", "", "folder of a Parquet table written by weir's Parquet sink (instead of --table)")
}

// check validates the flags: exactly one of --table and --path, catalog
// flags only with --table.
func (t *tableTarget) check(cmd *cobra.Command) error {
	switch {
	case t.ice.table == "" && t.path == "":
		return errors.New("--table namespace.name (Iceberg) or --path DIR (Parquet folder) is required")
	case t.ice.table != "" && t.path != "":
		return errors.New("give either --table (Iceberg) or --path (Parquet folder), not both")
	case t.path != "":
		for _, name := range tableCatalogFlags {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s applies to Iceberg tables (--table), not to a Parquet folder (--path)", name)
			}
		}
		return nil
	}
	if ident := catalog.ToIdentifier(t.ice.table); len(ident) < 2 || slices.Contains(ident, "") {
		return fmt.Errorf("--table %q: want namespace.name", t.ice.table)
	}
	switch strings.ToLower(t.ice.catalogType) {
	case "sql", "rest":
	default:
		return fmt.Errorf("--catalog-type %q: want sql or rest", t.ice.catalogType)
	}
	_, err := t.ice.properties()
	return err
}

// catalogDescription names the catalog for messages.
func (t *tableTarget) catalogDescription() string {
	typ := strings.ToLower(t.ice.catalogType)
	switch {
	case typ == "rest":
		return fmt.Sprintf("rest catalog %q at %s", t.ice.catalogName, redact.String(t.ice.catalogURI))
	case t.ice.catalogURI != "":
		return fmt.Sprintf("sql catalog %q at %s", t.ice.catalogName, redact.String(t.ice.catalogURI))
	default:
		return fmt.Sprintf("sql catalog %q in warehouse %s", t.ice.catalogName, redact.String(t.ice.warehouse))
	}
}

// catalogTable is an open catalog and a table loaded from it.
type catalogTable struct {
	cat   catalog.Catalog
	ident table.Identifier
	tbl   *table.Table
	// where names the table and its catalog for messages.
	where string
}

// openIceberg opens the catalog and loads the table. The catalog must
// exist already: no `weir table` subcommand creates a catalog file,
// folder, warehouse or catalog table.
func (t *tableTarget) openIceberg(ctx context.Context) (*catalogTable, error) {
	opts, err := t.ice.catalog()
	if err != nil {
		return nil, err
	}
	opts.Existing = true
	where := fmt.Sprintf("table %s in the %s", t.ice.table, t.catalogDescription())
	cat, err := icebergsink.OpenCatalog(ctx, opts) // its errors name the catalog
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (wrong --warehouse or --catalog-uri?)", where, err)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.ice.table, err)
	}
	it := &catalogTable{cat: cat, ident: catalog.ToIdentifier(t.ice.table), where: where}
	if err := it.reload(ctx); err != nil {
		it.close()
		return nil, err
	}
	return it, nil
}

// reload loads the table's current metadata from the catalog.
func (it *catalogTable) reload(ctx context.Context) error {
	tbl, err := it.cat.LoadTable(ctx, it.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		return fmt.Errorf("%s: no such table", it.where)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", it.where, err)
	}
	it.tbl = tbl
	return nil
}

func (it *catalogTable) close() {
	if c, ok := it.cat.(catalog.Closer); ok {
		_ = c.Close()
	}
}

func newTableCommand() *cobra.Command {
	t := &tableTarget{}
	cmd := &cobra.Command{
		Use:   "table snapshots|schema|count|head|expire|compact",
		Short: "Inspect and maintain an Iceberg table or a Parquet sink folder",
		Long: `Inspects and maintains a table that a weir job writes, without another tool:
an Iceberg table in a catalog (--table namespace.name with the catalog
flags; by default the SQL catalog in ./warehouse/catalog.db) or a Parquet
folder written by the Parquet sink (--path DIR; only the files its commit
log lists are part of the table).

expire and compact (Iceberg only) are one catalog commit each and may run
next to a job writing the table: when the job commits first, they try
again on the table as it is then (at most 5 attempts).`,
		Args: cobra.NoArgs,
	}
	t.register(cmd)
	cmd.AddCommand(newTableSnapshotsCommand(t), newTableSchemaCommand(t), newTableCountCommand(t),
		newTableHeadCommand(t), newTableExpireCommand(t), newTableCompactCommand(t))
	return cmd
}

// tableRunE checks the target flags, then runs the Iceberg or the Parquet
// variant of a subcommand; parquetFn nil means Iceberg only.
func tableRunE(t *tableTarget, name string, icebergFn func(*cobra.Command, *catalogTable) error,
	parquetFn func(*cobra.Command) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := t.check(cmd); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		if t.path != "" {
			if parquetFn == nil {
				return fmt.Errorf("table %s: works on Iceberg tables only (--table), not on a Parquet folder", name)
			}
			if err := parquetFn(cmd); err != nil {
				return fmt.Errorf("table %s: %w", name, err)
			}
			return nil
		}
		it, err := t.openIceberg(cmd.Context())
		if err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		defer it.close()
		if err := icebergFn(cmd, it); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		return nil
	}
}

func newTableSnapshotsCommand(t *tableTarget) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshots",
		Short: "List the table's snapshots (Iceberg) or committed epochs (Parquet), oldest first",
		Long: `Lists the snapshots of an Iceberg table, oldest first, one a line: id,
parent, time (UTC), operation, rows and data files added and in total
(from the snapshot summary), and the job, epoch and commit id weir's sink
records in the summary (weir.job-id, weir.epoch, weir.commit-id; other
weir.* properties follow as key=value). The current snapshot is marked *.

For a Parquet folder: one line per committed epoch of each job in the
commit log, with its files, rows and bytes.`,
		Args: cobra.NoArgs,
		RunE: tableRunE(t, "snapshots", snapshotsIceberg, func(cmd *cobra.Command) error {
			return snapshotsParquet(cmd.OutOrStdout(), t.path)
		}),
	}
}

func snapshotsIceberg(cmd *cobra.Command, it *catalogTable) error {
	out := cmd.OutOrStdout()
	snaps := slices.Clone(it.tbl.Metadata().Snapshots())
	if len(snaps) == 0 {
		fmt.Fprintf(out, "%s has no snapshots\n", it.where)
		return nil
	}
	slices.SortStableFunc(snaps, func(a, b table.Snapshot) int {
		return cmp.Or(cmp.Compare(a.TimestampMs, b.TimestampMs), cmp.Compare(a.SequenceNumber, b.SequenceNumber))
	})
	var current int64
	currentName := "none"
	if cur := it.tbl.CurrentSnapshot(); cur != nil {
		current, currentName = cur.SnapshotID, strconv.FormatInt(cur.SnapshotID, 10)
	}
	header := []string{"", "SNAPSHOT", "PARENT", "TIME", "OPERATION", "ADDED-ROWS", "TOTAL-ROWS", "ADDED-FILES", "TOTAL-FILES", "JOB", "EPOCH", "COMMIT", "OTHER"}
	rows := make([][]string, 0, len(snaps))
	for _, s := range snaps {
		mark := ""
		if currentName != "none" && s.SnapshotID == current {
			mark = "*"
		}
		parent := "-"
		if s.ParentSnapshotID != nil {
			parent = strconv.FormatInt(*s.ParentSnapshotID, 10)
		}
		var op string
		var props iceberg.Properties
		if s.Summary != nil {
			op, props = string(s.Summary.Operation), s.Summary.Properties
		}
		var other []string
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if strings.HasPrefix(k, "weir.") && k != icebergsink.SummaryJobID && k != icebergsink.SummaryEpoch && k != icebergsink.SummaryCommitID {
				other = append(other, cell(k+"="+props[k]))
			}
		}
		rows = append(rows, []string{mark, strconv.FormatInt(s.SnapshotID, 10), parent,
			time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339), orDash(op),
			orDash(props["added-records"]), orDash(props["total-records"]),
			orDash(props["added-data-files"]), orDash(props["total-data-files"]),
			orDash(props[icebergsink.SummaryJobID]), orDash(props[icebergsink.SummaryEpoch]), orDash(props[icebergsink.SummaryCommitID]),
			strings.Join(other, " ")})
	}
	writeAligned(out, header, rows, []bool{false, true, true, false, false, true, true, true, true, false, true, false, false})
	fmt.Fprintf(out, "%s; current: %s\n", nOf(len(snaps), "snapshot"), currentName)
	return nil
}

func snapshotsParquet(out io.Writer, path string) error {
	files, err := parquet.CommittedFiles(path)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintf(out, "Parquet folder %s has no committed epochs\n", path)
		return nil
	}
	type epoch struct {
		job                string
		epoch              uint64
		files, rows, bytes int64
	}
	var epochs []epoch
	for _, f := range files { // ordered by job and epoch
		if n := len(epochs); n > 0 && epochs[n-1].job == f.Job && epochs[n-1].epoch == f.Epoch {
			epochs[n-1].files++
			epochs[n-1].rows += f.Rows
			epochs[n-1].bytes += f.Bytes
			continue
		}
		epochs = append(epochs, epoch{job: f.Job, epoch: f.Epoch, files: 1, rows: f.Rows, bytes: f.Bytes})
	}
	rows := make([][]string, len(epochs))
	var totalRows int64
	for i, e := range epochs {
		rows[i] = []string{e.job, strconv.FormatUint(e.epoch, 10), strconv.FormatInt(e.files, 10),
			strconv.FormatInt(e.rows, 10), strconv.FormatInt(e.bytes, 10)}
		totalRows += e.rows
	}
	writeAligned(out, []string{"JOB", "EPOCH", "FILES", "ROWS", "BYTES"}, rows, []bool{false, true, true, true, true})
	fmt.Fprintf(out, "%s, %s, %s\n", nOf(len(epochs), "committed epoch"), nOf(len(files), "file"), nOf(totalRows, "row"))
	return nil
}

func newTableSchemaCommand(t *tableTarget) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the table's schema, partition spec, sort order and properties",
		Long: `Prints an Iceberg table's current schema (field ids, names, types,
required or optional; nested fields under their parents), its partition
spec, its sort order and its properties (weir.last-epoch.<job> among
them).

For a Parquet folder: the columns as readers see them (partition columns
come from the folder names) and the Parquet schema of the committed
files.`,
		Args: cobra.NoArgs,
		RunE: tableRunE(t, "schema", schemaIceberg, func(cmd *cobra.Command) error {
			return schemaParquet(cmd.OutOrStdout(), t.path)
		}),
	}
}

func schemaIceberg(cmd *cobra.Command, it *catalogTable) error {
	out := cmd.OutOrStdout()
	meta := it.tbl.Metadata()
	sc := it.tbl.Schema()
	fmt.Fprintf(out, "table %s (format v%d) at %s\n\n", strings.Join(it.ident, "."), meta.Version(), it.tbl.Location())

	fmt.Fprintf(out, "schema %d:\n", sc.ID)
	var rows [][]string
	var walk func(prefix string, f iceberg.NestedField)
	walk = func(prefix string, f iceberg.NestedField) {
		name := prefix + f.Name
		req := "optional"
		if f.Required {
			req = "required"
		}
		typ := f.Type.String()
		switch nt := f.Type.(type) {
		case *iceberg.StructType:
			rows = append(rows, []string{strconv.Itoa(f.ID), name, "struct", req})
			for _, c := range nt.FieldList {
				walk(name+".", c)
			}
			return
		case *iceberg.ListType:
			rows = append(rows, []string{strconv.Itoa(f.ID), name, "list", req})
			walk(name+".", nt.ElementField())
			return
		case *iceberg.MapType:
			rows = append(rows, []string{strconv.Itoa(f.ID), name, "map", req})
			walk(name+".", nt.KeyField())
			walk(name+".", nt.ValueField())
			return
		}
		rows = append(rows, []string{strconv.Itoa(f.ID), name, typ, req})
	}
	for _, f := range sc.Fields() {
		walk("", f)
	}
	writeAlignedIndent(out, "  ", []string{"ID", "NAME", "TYPE", ""}, rows, []bool{true, false, false, false})
	if ids := sc.IdentifierFieldIDs; len(ids) > 0 {
		fmt.Fprintf(out, "  identifier fields: %s\n", columnNames(sc, ids))
	}

	spec := it.tbl.Spec()
	if spec.IsUnpartitioned() {
		fmt.Fprintf(out, "\npartition spec %d: unpartitioned\n", spec.ID())
	} else {
		fmt.Fprintf(out, "\npartition spec %d:\n", spec.ID())
		for _, pf := range spec.Fields() {
			fmt.Fprintf(out, "  %d: %s = %s(%s)\n", pf.FieldID, pf.Name, pf.Transform, columnNames(sc, pf.SourceIDs))
		}
	}

	order := it.tbl.SortOrder()
	if order.IsUnsorted() {
		fmt.Fprintf(out, "\nsort order %d: unsorted\n", order.OrderID())
	} else {
		fmt.Fprintf(out, "\nsort order %d:\n", order.OrderID())
		for _, sf := range order.Fields() {
			col := columnNames(sc, sf.SourceIDs)
			if _, ok := sf.Transform.(iceberg.IdentityTransform); !ok {
				col = fmt.Sprintf("%s(%s)", sf.Transform, col)
			}
			fmt.Fprintf(out, "  %s %s %s\n", col, sf.Direction, sf.NullOrder)
		}
	}

	props := it.tbl.Properties()
	fmt.Fprintf(out, "\nproperties:\n")
	if len(props) == 0 {
		fmt.Fprintf(out, "  (none)\n")
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(out, "  %s = %s\n", k, props[k])
	}
	return nil
}

// columnNames spells field ids as the schema's column names.
func columnNames(sc *iceberg.Schema, ids []int) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		if n, ok := sc.FindColumnName(id); ok {
			names[i] = n
		} else {
			names[i] = fmt.Sprintf("field %d (dropped)", id)
		}
	}
	return strings.Join(names, ", ")
}

func schemaParquet(out io.Writer, path string) error {
	files, err := parquet.CommittedFiles(path)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintf(out, "Parquet folder %s has no committed files: no schema yet\n", path)
		return nil
	}
	first := files[0]
	fileSchema, arrowSchema, err := parquetFileSchema(filepath.Join(path, filepath.FromSlash(first.Path)))
	if err != nil {
		return fmt.Errorf("%s: %w", first.Path, err)
	}
	fmt.Fprintf(out, "Parquet folder %s: %s\n\ncolumns:\n", path, nOf(len(files), "committed file"))
	var rows [][]string
	for _, name := range first.Columns {
		if i := slices.IndexFunc(first.PartitionBy, func(pc parquet.PartitionColumn) bool { return pc.Name == name }); i >= 0 {
			pc := first.PartitionBy[i]
			rows = append(rows, []string{name, pc.Type, nullability(pc.Nullable), "partition column (folder names)"})
			continue
		}
		if idx := arrowSchema.FieldIndices(name); len(idx) == 1 {
			f := arrowSchema.Field(idx[0])
			rows = append(rows, []string{name, f.Type.String(), nullability(f.Nullable), ""})
		} else {
			rows = append(rows, []string{name, "?", "", "missing from the file"})
		}
	}
	writeAlignedIndent(out, "  ", []string{"NAME", "TYPE", "", ""}, rows, nil)

	fmt.Fprintf(out, "\nParquet schema of the files (%s):\n", first.Path)
	pqschema.PrintSchema(fileSchema.Root(), out, 2)
	var differ []string
	for _, f := range files[1:] {
		sc, _, err := parquetFileSchema(filepath.Join(path, filepath.FromSlash(f.Path)))
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		if !sc.Equals(fileSchema) {
			differ = append(differ, f.Path)
		}
	}
	if len(differ) > 0 {
		fmt.Fprintf(out, "\n%s another Parquet schema: %s\n", nOf(len(differ), "file"), strings.Join(differ, ", "))
	}
	return nil
}

func nullability(nullable bool) string {
	if nullable {
		return "nullable"
	}
	return "not null"
}

// parquetFileSchema reads a Parquet file's schema from its footer.
func parquetFileSchema(name string) (*pqschema.Schema, *arrow.Schema, error) {
	pf, err := file.OpenParquetFile(name, false)
	if err != nil {
		return nil, nil, err
	}
	defer pf.Close()
	md := pf.MetaData()
	as, err := pqarrow.FromParquet(md.Schema, nil, md.KeyValueMetadata())
	if err != nil {
		return nil, nil, err
	}
	return md.Schema, as, nil
}

func newTableCountCommand(t *tableTarget) *cobra.Command {
	return &cobra.Command{
		Use:   "count",
		Short: "Print the number of rows of the current snapshot (Iceberg) or the committed files (Parquet)",
		Long: `Prints the table's row count, a bare number. For an Iceberg table: the
record counts of the current snapshot's data files, from the manifests;
when delete files apply to them, the rows are counted by scanning the
table with the deletes applied. For a Parquet folder: the rows of the
committed files, as the commit log records them.`,
		Args: cobra.NoArgs,
		RunE: tableRunE(t, "count", func(cmd *cobra.Command, it *catalogTable) error {
			n, err := countIceberg(cmd.Context(), it.tbl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), n)
			return nil
		}, func(cmd *cobra.Command) error {
			pt, err := parquet.ReadCommitted(t.path, nil)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), pt.Rows())
			return nil
		}),
	}
}

// countIceberg counts the rows of the table's current snapshot.
func countIceberg(ctx context.Context, tbl *table.Table) (int64, error) {
	if tbl.CurrentSnapshot() == nil {
		return 0, nil
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan the scan: %w", err)
	}
	var n int64
	seen := map[string]bool{} // a large file can be split into several tasks
	for _, task := range tasks {
		if len(task.DeleteFiles) > 0 || len(task.EqualityDeleteFiles) > 0 || len(task.DeletionVectorFiles) > 0 {
			return scanCount(ctx, tbl)
		}
		if !seen[task.File.FilePath()] {
			seen[task.File.FilePath()] = true
			n += task.File.Count()
		}
	}
	return n, nil
}

// scanCount counts the rows of the current snapshot by reading them, with
// delete files applied.
func scanCount(ctx context.Context, tbl *table.Table) (int64, error) {
	scan := tbl.Scan()
	defer scan.Close()
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return 0, fmt.Errorf("scan: %w", err)
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			return 0, fmt.Errorf("scan: %w", err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}

func newTableHeadCommand(t *tableTarget) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "head [-n 10]",
		Short: "Print the table's first rows as a text table",
		Long: `Prints the first N rows of the table's current snapshot (Iceberg, deletes
applied) or of its committed files in commit order (Parquet) as an
aligned text table. Values longer than 64 characters are cut.`,
		Args: cobra.NoArgs,
		RunE: tableRunE(t, "head", func(cmd *cobra.Command, it *catalogTable) error {
			if n < 0 {
				return fmt.Errorf("-n must be at least 0, got %d", n)
			}
			return headIceberg(cmd.Context(), cmd.OutOrStdout(), it.tbl, n)
		}, func(cmd *cobra.Command) error {
			if n < 0 {
				return fmt.Errorf("-n must be at least 0, got %d", n)
			}
			return headParquet(cmd.Context(), cmd.OutOrStdout(), t.path, n)
		}),
	}
	cmd.Flags().IntVarP(&n, "rows", "n", 10, "rows to print")
	return cmd
}

func headIceberg(ctx context.Context, out io.Writer, tbl *table.Table, n int) error {
	scan := tbl.Scan(table.WithLimit(int64(n)))
	defer scan.Close()
	sc, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	p := newRowPrinter(sc, n)
	// Ranged over even for -n 0: an iterator never ranged over keeps the
	// scan's file IO lease.
	for rec, err := range recs {
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		more := p.add(rec)
		rec.Release()
		if !more {
			break
		}
	}
	p.print(out)
	return nil
}

func headParquet(ctx context.Context, out io.Writer, path string, n int) error {
	pt, err := parquet.ReadCommitted(path, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	if len(pt.Files) == 0 {
		fmt.Fprintf(out, "Parquet folder %s has no committed rows\n", path)
		return nil
	}
	var p *rowPrinter
	for rec, err := range pt.Records(ctx) {
		if err != nil {
			return err
		}
		if p == nil {
			p = newRowPrinter(rec.Schema(), n)
		}
		more := n > 0 && p.add(rec)
		rec.Release()
		if !more {
			break
		}
	}
	if p != nil {
		p.print(out)
	}
	return nil
}

// maxCellWidth is the longest value head prints, in characters.
const maxCellWidth = 64

// rowPrinter collects up to limit rows as strings and prints them
// aligned.
type rowPrinter struct {
	header []string
	right  []bool
	rows   [][]string
	limit  int
}

func newRowPrinter(sc *arrow.Schema, limit int) *rowPrinter {
	p := &rowPrinter{limit: limit}
	for _, f := range sc.Fields() {
		p.header = append(p.header, f.Name)
		p.right = append(p.right, arrow.IsInteger(f.Type.ID()) || arrow.IsFloating(f.Type.ID()) || arrow.IsDecimal(f.Type.ID()))
	}
	return p
}

// add takes rows of rec until the limit; it reports whether more are
// wanted.
func (p *rowPrinter) add(rec arrow.RecordBatch) bool {
	for i := 0; i < int(rec.NumRows()) && len(p.rows) < p.limit; i++ {
		row := make([]string, rec.NumCols())
		for c, col := range rec.Columns() {
			v := "null"
			if col.IsValid(i) {
				v = cell(col.ValueStr(i))
			}
			row[c] = v
		}
		p.rows = append(p.rows, row)
	}
	return len(p.rows) < p.limit
}

func (p *rowPrinter) print(out io.Writer) {
	writeAligned(out, p.header, p.rows, p.right)
	fmt.Fprintf(out, "(%s)\n", nOf(len(p.rows), "row"))
}

// cell makes a value printable on one line of bounded width.
func cell(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) > maxCellWidth {
		s = string([]rune(s)[:maxCellWidth-1]) + "…"
	}
	return s
}

// nOf spells a count of a noun: "1 file", "2 files".
func nOf[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeAligned prints header and rows as columns separated by two spaces;
// right[i] aligns column i to the right.
func writeAligned(out io.Writer, header []string, rows [][]string, right []bool) {
	writeAlignedIndent(out, "", header, rows, right)
}

func writeAlignedIndent(out io.Writer, indent string, header []string, rows [][]string, right []bool) {
	width := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, v := range r {
			width[i] = max(width[i], utf8.RuneCountInString(v))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{header}, rows...) {
		b.Reset()
		b.WriteString(indent)
		for i, v := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(v))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(right) && right[i] {
				b.WriteString(pad + v)
			} else {
				b.WriteString(v + pad)
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
}

type expireOptions struct {
	retainLast int
	olderThan  time.Duration
	keepFiles  bool
}

func newTableExpireCommand(t *tableTarget) *cobra.Command {
	o := expireOptions{}
	cmd := &cobra.Command{
		Use:   "expire [--retain-last 1] [--older-than DURATION]",
		Short: "Expire old snapshots of an Iceberg table",
		Long: `Removes old snapshots from an Iceberg table in one catalog commit, then
deletes the files only they used (manifests, manifest lists, data files
that later snapshots removed), unless --keep-files.

The last --retain-last snapshots of the current branch always stay. Of
the older ones, those older than --older-than expire; without
--older-than all of them do. Snapshots that a branch or tag points at
stay too. The table's properties are not touched (weir's sink keeps its
last committed epoch in one, weir.last-epoch.<job>).

Safe next to a job writing the table: when the job commits between the
moment expire reads the table and its commit, the commit is refused and
expire starts again from the table as it is then (at most 5 attempts).`,
		Args: cobra.NoArgs,
		RunE: tableRunE(t, "expire", func(cmd *cobra.Command, it *catalogTable) error {
			return expireIceberg(cmd.Context(), cmd.OutOrStdout(), it, o)
		}, nil),
	}
	f := cmd.Flags()
	f.IntVar(&o.retainLast, "retain-last", 1, "snapshots of the current branch kept whatever their age (at least 1)")
	f.DurationVar(&o.olderThan, "older-than", 0, "only expire snapshots older than this, e.g. 168h (0: any age)")
	f.BoolVar(&o.keepFiles, "keep-files", false, "do not delete the expired snapshots' files (leave them to an orphan file cleanup)")
	return cmd
}

func expireIceberg(ctx context.Context, out io.Writer, it *catalogTable, o expireOptions) error {
	if o.retainLast < 1 {
		return fmt.Errorf("--retain-last must be at least 1, got %d", o.retainLast)
	}
	if o.olderThan < 0 {
		return fmt.Errorf("--older-than must not be negative, got %s", o.olderThan)
	}
	opts := []table.ExpireSnapshotsOpt{
		table.WithRetainLast(o.retainLast),
		// Without this iceberg-go falls back to the table's
		// history.expire.max-snapshot-age-ms (5 days by default), and
		// --retain-last alone would expire nothing recent.
		table.WithOlderThan(o.olderThan),
		table.WithPostCommit(!o.keepFiles),
	}
	for attempt := 1; ; attempt++ {
		before := it.tbl
		txn := before.NewTransaction()
		if err := txn.ExpireSnapshots(opts...); err != nil {
			return fmt.Errorf("%s: %w", it.where, err)
		}
		after, err := txn.Commit(ctx)
		if after == nil && tableCommitConflict(err) && attempt < tableCommitAttempts {
			fmt.Fprintf(out, "a concurrent commit changed the table; trying again (attempt %d of %d)\n", attempt+1, tableCommitAttempts)
			if err := ctxsleep.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return err
			}
			if err := it.reload(ctx); err != nil {
				return err
			}
			continue
		}
		if after == nil {
			if tableCommitConflict(err) {
				return fmt.Errorf("%s: gave up after %d attempts, each beaten by a concurrent commit: %w", it.where, attempt, err)
			}
			return fmt.Errorf("%s: commit: %w", it.where, err)
		}
		it.tbl = after
		reportExpired(out, before, after)
		if err != nil && onlyNotExist(err) {
			// iceberg-go also deletes the files that an expired
			// snapshot's manifests list as deleted, which an earlier
			// expiry may have deleted already.
			err = nil
		}
		if err != nil {
			// The catalog took the commit; deleting the files failed.
			return fmt.Errorf("%s: snapshots expired, but deleting their files failed (an orphan file cleanup can remove them later): %w", it.where, err)
		}
		return nil
	}
}

// reportExpired prints the snapshots of before that after no longer has.
func reportExpired(out io.Writer, before, after *table.Table) {
	kept := map[int64]bool{}
	for _, s := range after.Metadata().Snapshots() {
		kept[s.SnapshotID] = true
	}
	var rows [][]string
	for _, s := range before.Metadata().Snapshots() {
		if kept[s.SnapshotID] {
			continue
		}
		var props iceberg.Properties
		if s.Summary != nil {
			props = s.Summary.Properties
		}
		rows = append(rows, []string{strconv.FormatInt(s.SnapshotID, 10), time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339),
			orDash(props[icebergsink.SummaryJobID]), orDash(props[icebergsink.SummaryEpoch])})
	}
	if len(rows) == 0 {
		fmt.Fprintf(out, "nothing to expire: %s kept\n", nOf(len(kept), "snapshot"))
		return
	}
	fmt.Fprintf(out, "expired %s:\n", nOf(len(rows), "snapshot"))
	writeAlignedIndent(out, "  ", []string{"SNAPSHOT", "TIME", "JOB", "EPOCH"}, rows, []bool{true, false, false, true})
	fmt.Fprintf(out, "%s kept\n", nOf(len(kept), "snapshot"))
}

// onlyNotExist reports whether err, and every error joined in it, is
// about a file that does not exist.
func onlyNotExist(err error) bool {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if !onlyNotExist(inner) {
				return false
			}
		}
		return len(e.Unwrap()) > 0
	default:
		return errors.Is(err, fs.ErrNotExist)
	}
}

// tableCommitConflict reports// tableCommitConflict reports whether a commit failed because another
// commit came first, and nothing was committed. iceberg-go's SQL catalog
// wraps table.ErrCommitFailed only when it loses the final
// compare-and-swap; a base that is already stale fails the commit's
// requirements with a plain error ("requirement failed: branch "main" has
// changed ..."), checked before anything is written.
func tableCommitConflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed: ")
}

type compactOptions struct {
	targetFileSize int64
	minInputFiles  int
	// watch: keep running, a round every interval (after the end of the
	// previous one), at most maxRounds rounds (0: no limit).
	watch     bool
	interval  time.Duration
	maxRounds int
}

// check validates the flags.
func (o compactOptions) check(cmd *cobra.Command) error {
	if o.targetFileSize < 0 {
		return fmt.Errorf("--target-file-size must not be negative, got %d", o.targetFileSize)
	}
	if o.minInputFiles < 1 {
		return fmt.Errorf("--min-input-files must be at least 1, got %d", o.minInputFiles)
	}
	if !o.watch {
		for _, name := range []string{"interval", "max-rounds"} {
			if cmd != nil && cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s applies only with --watch", name)
			}
		}
		return nil
	}
	if o.interval <= 0 {
		return fmt.Errorf("--interval must be positive with --watch, got %s", o.interval)
	}
	if o.maxRounds < 0 {
		return fmt.Errorf("--max-rounds must not be negative (0: no limit), got %d", o.maxRounds)
	}
	return nil
}

func newTableCompactCommand(t *tableTarget) *cobra.Command {
	o := compactOptions{}
	run := tableRunE(t, "compact", func(cmd *cobra.Command, it *catalogTable) error {
		if o.watch {
			return watchCompactions(cmd.Context(), cmd.OutOrStdout(), it, o)
		}
		return compactIceberg(cmd.Context(), cmd.OutOrStdout(), it, o)
	}, nil)
	cmd := &cobra.Command{
		Use:   "compact [--target-file-size BYTES] [--min-input-files N] [--watch [--interval D] [--max-rounds N]]",
		Short: "Rewrite an Iceberg table's small data files into larger ones",
		Long: `Rewrites the small data files of an Iceberg table's current snapshot
into files of about --target-file-size, in one replace snapshot: the rows
stay the same, there are fewer files. Files smaller than 75% of the target
are candidates; within each partition they are packed into groups of
about the target size, and a group of fewer than --min-input-files files
is left alone. Delete files that apply to rewritten files are applied
while reading, and removed when no other file needs them.

Safe next to a job writing the table: the new files are written first,
then committed at once. When the job commits in between, the commit is
refused; if the rewritten files are still in the table with the same
deletes, the rewrite is committed again on the table as it is then (a
job's appends do not touch them), else the new files are deleted and the
compaction starts over (at most 5 attempts in all). The replaced files
stay until their snapshots expire (weir table expire).

With --watch it keeps running next to the job: a compaction round at
once, then one --interval after the end of each round, each on the table
as the catalog has it then. It prints a line for each round that rewrote
files, and one when a round finds nothing to compact after one that did.
A round whose attempts all lose to concurrent commits is reported, and
the next round tries again; any other error (table gone, catalog
unreachable) stops the watch with that error. Ctrl-C (SIGINT) or SIGTERM
stops it with exit status 0; the files of a rewrite not committed yet are
deleted. --max-rounds bounds the rounds. --watch only compacts: it does
not expire snapshots, so the replaced files stay on disk until weir table
expire deletes them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(cmd); err != nil {
				return fmt.Errorf("table compact: %w", err)
			}
			return run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.targetFileSize, "target-file-size", 0, "size of the files to write, in bytes (0: the table's write.target-file-size-bytes, 512 MiB by default)")
	f.IntVar(&o.minInputFiles, "min-input-files", icebergsink.DefaultMinInputFiles, "fewest small files in a partition worth rewriting (at least 1)")
	f.BoolVar(&o.watch, "watch", false, "keep running: a compaction round every --interval until stopped (Ctrl-C, SIGTERM) or --max-rounds; does not expire snapshots")
	f.DurationVar(&o.interval, "interval", time.Minute, "with --watch: the pause after each round before the next, a Go duration (30s, 5m; more than 0)")
	f.IntVar(&o.maxRounds, "max-rounds", 0, "with --watch: stop after this many rounds (0: no limit)")
	return cmd
}

func compactIceberg(ctx context.Context, out io.Writer, it *catalogTable, o compactOptions) error {
	_, err := compactOnce(ctx, out, out, it, o)
	return err
}

// compactResult is what one compaction did.
type compactResult struct {
	committed bool // a rewrite was committed
	recommits int  // commits of a written rewrite redone after concurrent commits
	rewrites  int  // rewrites deleted and written again after concurrent commits
}

// compactOnce compacts it.tbl in one commit, trying again after
// concurrent commits (icebergsink.Compact). out gets the report (or why
// there is nothing to compact), progress the attempts again.
func compactOnce(ctx context.Context, out, progress io.Writer, it *catalogTable, o compactOptions) (compactResult, error) {
	if err := o.check(nil); err != nil {
		return compactResult{}, err
	}
	r, err := icebergsink.Compact(ctx, it.tbl, func(ctx context.Context) (*table.Table, error) {
		if err := it.reload(ctx); err != nil {
			return nil, err
		}
		return it.tbl, nil
	}, icebergsink.CompactOptions{
		TargetFileSize: o.targetFileSize, MinInputFiles: o.minInputFiles,
		Progress: func(msg string) { fmt.Fprintln(progress, msg) },
	})
	if r.Table != nil {
		it.tbl = r.Table
	}
	res := compactResult{committed: r.Committed, recommits: r.Recommits, rewrites: r.Rewrites}
	switch {
	case r.Committed:
		fmt.Fprintf(out, "before: %s, %s (snapshot %d)\n", nOf(r.FilesBefore, "data file"), nOf(r.BytesBefore, "byte"), r.SnapshotRead)
		fmt.Fprintf(out, "rewrote %s (%s) in %s into %s (%s)", nOf(r.FilesRemoved, "file"), nOf(r.BytesRemoved, "byte"),
			nOf(r.Groups, "group"), nOf(r.FilesAdded, "file"), nOf(r.BytesAdded, "byte"))
		if r.DeleteFilesRemoved > 0 {
			fmt.Fprintf(out, "; removed %s", nOf(r.DeleteFilesRemoved, "delete file"))
		}
		fmt.Fprintln(out)
		if r.FilesAfter >= 0 {
			fmt.Fprintf(out, "after: %s (snapshot %d)\n", nOf(r.FilesAfter, "data file"), r.SnapshotAfter)
		}
		if err != nil {
			return res, fmt.Errorf("%s: committed, but: %w", it.where, err)
		}
	case err == nil:
		fmt.Fprintf(out, "nothing to compact: %s\n", r.Nothing)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", it.where, err)
	}
	return res, nil
}

// watchCompactions runs compaction rounds on the table until ctx ends
// (Ctrl-C, SIGTERM: no error) or o.maxRounds rounds ran: the first at
// once, each next one o.interval after the end of the previous one, on
// the table reloaded. Each round that rewrote files prints its report as
// one line; a round that finds nothing to compact prints so only after
// one that did (or as the first round). A round beaten by concurrent
// commits on every attempt is reported, and the watch goes on; any other
// error ends it.
func watchCompactions(ctx context.Context, out io.Writer, it *catalogTable, o compactOptions) error {
	if err := o.check(nil); err != nil {
		return err
	}
	limit := "until stopped"
	if o.maxRounds > 0 {
		limit = fmt.Sprintf("for at most %s", nOf(o.maxRounds, "round"))
	}
	fmt.Fprintf(out, "watching %s: compacting every %s %s (snapshots are not expired: weir table expire does that)\n", it.where, o.interval, limit)
	var rounds, compacted, beaten int
	summary := func(how string) {
		fmt.Fprintf(out, "%s after %s: %d compacted, %d beaten by concurrent commits\n", how, nOf(rounds, "round"), compacted, beaten)
	}
	quiet := false // the last round found nothing to compact, and said so
	for {
		if rounds > 0 {
			if ctxsleep.Sleep(ctx, o.interval) != nil {
				summary("stopped")
				return nil
			}
		}
		rounds++
		start := time.Now()
		if rounds > 1 {
			if err := it.reload(ctx); err != nil {
				if ctx.Err() != nil {
					rounds--
					summary("stopped")
					return nil
				}
				return fmt.Errorf("round %d: %w", rounds, err)
			}
		}
		var buf bytes.Buffer
		res, err := compactOnce(ctx, &buf, io.Discard, it, o)
		line := fmt.Sprintf("round %d at %s: %s", rounds, start.Format("2006-01-02 15:04:05"),
			strings.ReplaceAll(strings.TrimSpace(buf.String()), "\n", "; "))
		var again []string
		if res.recommits > 0 {
			again = append(again, "committed again "+nOf(res.recommits, "time"))
		}
		if res.rewrites > 0 {
			again = append(again, "rewritten again "+nOf(res.rewrites, "time"))
		}
		if len(again) > 0 {
			line += " (after concurrent commits: " + strings.Join(again, ", ") + ")"
		}
		switch {
		case ctx.Err() != nil:
			// Stopped during the round: a rewrite not committed is deleted.
			if res.committed {
				compacted++
				fmt.Fprintln(out, line)
			}
			summary("stopped")
			return nil
		case errors.Is(err, icebergsink.ErrCompactionBeaten):
			beaten++
			quiet = false
			fmt.Fprintf(out, "%s: %v; the next round tries again\n", line, err)
		case err != nil:
			if buf.Len() > 0 {
				fmt.Fprintln(out, line)
			}
			return fmt.Errorf("round %d: %w", rounds, err)
		case res.committed:
			compacted++
			quiet = false
			fmt.Fprintln(out, line)
		case !quiet:
			quiet = true
			fmt.Fprintln(out, line+" (quiet until a round compacts)")
		}
		if o.maxRounds > 0 && rounds >= o.maxRounds {
			summary("done")
			return nil
		}
	}
}
