package files

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// partitionFolder is a Hive-style folder and the values it stands for, as
// ValueAt returns them.
type partitionFolder struct {
	dir    string
	region any // string or nil
	day    time.Time
	bucket int64
}

var partitionFolders = []partitionFolder{
	{"region=eu/day=2026-03-01/bucket=3", "eu", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 3},
	{"region=us%2Feast/day=2026-03-02/bucket=-1", "us/east", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), -1},
	{"region=__HIVE_DEFAULT_PARTITION__/day=1969-12-31/bucket=0", nil, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), 0},
	{"region=/day=2026-03-01/other/bucket=7", nil, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 7},
}

// Declared columns named by col=value folders come from the folder names,
// parsed as their types, with Hive's escaping and null partition; the
// file columns keep their order around them (csv reads by position).
func TestPartitionColumns(t *testing.T) {
	declared := arrow.NewSchema([]arrow.Field{
		eventSchema.Field(0),
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		eventSchema.Field(1),
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		eventSchema.Field(2), eventSchema.Field(3), eventSchema.Field(4),
		{Name: "bucket", Type: arrow.PrimitiveTypes.Int16},
	}, nil)
	for _, format := range []string{Parquet, "csv"} {
		for _, explicit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/explicit=%v", format, explicit), func(t *testing.T) {
				mem := newMem(t)
				dir := t.TempDir()
				var want [][]any
				for i, pf := range partitionFolders {
					rows := events(i*40, i*40+40)
					path := filepath.Join(dir, filepath.FromSlash(pf.dir), "part-0")
					if format == Parquet {
						writeParquet(t, path, eventSchema, rows, 16, true)
					} else {
						writeFile(t, path, joinLines(linesOf(rows, csvLine), false, false))
					}
					for _, r := range rows {
						want = append(want, []any{r[0], pf.region, r[1], pf.day, r[2], r[3], r[4], pf.bucket})
					}
				}
				o := Options{Path: dir, Format: format, Schema: declared, BatchSize: 15}
				if explicit {
					o.PartitionBy = []string{"region", "day", "bucket"}
				}
				src := mustNew(t, o)
				sink, err := runJob(t, src, 3, arrowflow.Options{Allocator: mem})
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, "rows", sink.Rows(), want)
			})
		}
	}
}

// Partition folders that do not fit fail when the job lists the files,
// naming the file, the column and the value.
func TestPartitionErrors(t *testing.T) {
	declared := arrow.NewSchema([]arrow.Field{
		eventSchema.Field(0),
		{Name: "bucket", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	for _, tc := range []struct {
		name     string
		files    []string
		declared *arrow.Schema
		opts     func(*Options)
		parts    []string
	}{
		{"missing-folder", []string{"bucket=1/a", "b"}, declared, nil,
			[]string{"file b is not in a bucket=... folder", "some file's folders name it"}},
		{"missing-explicit", []string{"a"}, declared, func(o *Options) { o.PartitionBy = []string{"bucket"} },
			[]string{"file a is not in a bucket=... folder", "listed in PartitionBy"}},
		{"bad-value", []string{"bucket=1/a", "bucket=300/b"}, declared, nil,
			[]string{"file bucket=300/b", "partition column bucket", `"300"`, "int8", "out of range"}},
		{"null-not-null", []string{"bucket=__HIVE_DEFAULT_PARTITION__/a"}, declared, nil,
			[]string{"file bucket=__HIVE_DEFAULT_PARTITION__/a", "bucket is NOT NULL"}},
		{"twice", []string{"bucket=1/x/bucket=2/a"}, declared, nil,
			[]string{"bucket=1/x/bucket=2/a", "named by two folders"}},
		{"type", []string{"bucket=1/a"}, arrow.NewSchema([]arrow.Field{
			eventSchema.Field(0), {Name: "bucket", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)}}, nil), nil,
			[]string{"partition column bucket", "list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), "{\"id\":1}\n")
			}
			o := Options{Path: dir, Format: "json", Schema: tc.declared}
			if tc.opts != nil {
				tc.opts(&o)
			}
			src := mustNew(t, o)
			_, err := src.Splits(ctx)
			wantErr(t, err, tc.parts...)
		})
	}
}

// Timestamp, float and bool partition values; a declared schema of
// partition columns only reads the files' row counts and no column.
func TestPartitionOnlyColumns(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	folders := []struct {
		dir  string
		at   time.Time
		f    any
		flag bool
		rows int
	}{
		{"at=2026-03-01 10%3A00%3A00/f=1.5/flag=true", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 1.5, true, 70},
		{"at=2026-03-01T10%3A00%3A00.25+02%3A00/f=__HIVE_DEFAULT_PARTITION__/flag=false", time.Date(2026, 3, 1, 8, 0, 0, 250e6, time.UTC), nil, false, 3},
		{"at=2026-03-02/f=-2.5/flag=false", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), -2.5, false, 5},
		{"at=2026-03-03/f=0/flag=true", time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), 0.0, true, 0},
	}
	declared := arrow.NewSchema([]arrow.Field{
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	var want [][]any
	for _, pf := range folders {
		writeParquet(t, filepath.Join(dir, filepath.FromSlash(pf.dir), "p.parquet"), eventSchema, events(0, pf.rows), 16, true)
		for range pf.rows {
			want = append(want, []any{pf.flag, pf.at, pf.f})
		}
	}
	src := mustNew(t, Options{Path: dir, Format: Parquet, Schema: declared, BatchSize: 32})
	sink, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "rows", sink.Rows(), want)
}
