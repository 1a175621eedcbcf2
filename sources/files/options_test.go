package files

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// Options are checked by New; errors name the setting at fault.
func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		o     Options
		parts []string
	}{
		{"no-path", Options{Format: "json", Schema: eventSchema}, []string{"Path is required"}},
		{"missing-path", Options{Path: filepath.Join(dir, "nope"), Format: "json", Schema: eventSchema}, []string{"nope", "no such file"}},
		{"no-format", Options{Path: dir, Schema: eventSchema}, []string{"Format is required"}},
		{"avro", Options{Path: dir, Format: "avro", Schema: eventSchema}, []string{`format "avro" is not line-delimited`}},
		{"avro-confluent", Options{Path: dir, Format: "avro-confluent", Schema: eventSchema}, []string{"not line-delimited"}},
		{"unknown-format", Options{Path: dir, Format: "orc", Schema: eventSchema}, []string{`unknown format "orc"`}},
		{"no-schema", Options{Path: dir, Format: "json"}, []string{"Schema (the declared columns) is required"}},
		{"parquet-options", Options{Path: dir, Format: Parquet, Schema: eventSchema, FormatOptions: map[string]string{"parquet.x": "1"}},
			[]string{"parquet takes no FormatOptions", "parquet.x"}},
		{"csv-option", Options{Path: dir, Format: "csv", Schema: eventSchema, FormatOptions: map[string]string{"csv.nope": "1"}},
			[]string{"unknown option csv.nope"}},
		{"policy-option", Options{Path: dir, Format: "csv", Schema: eventSchema, FormatOptions: map[string]string{"csv.ignore-parse-errors": "true"}},
			[]string{"csv.ignore-parse-errors"}},
		{"duplicate", Options{Path: dir, Format: "json", Schema: arrow.NewSchema([]arrow.Field{eventSchema.Field(0), eventSchema.Field(0)}, nil)},
			[]string{`Schema declares column "id" twice`}},
		{"batch", Options{Path: dir, Format: "json", Schema: eventSchema, BatchSize: -1}, []string{"BatchSize -1"}},
		{"policy", Options{Path: dir, Format: "json", Schema: eventSchema, OnError: "ignore"}, []string{`error policy "ignore"`}},
		{"dlq-path", Options{Path: dir, Format: "json", Schema: eventSchema, OnError: DeadLetterOnError}, []string{"DeadLetterPath"}},
		{"event-time", Options{Path: dir, Format: "json", Schema: eventSchema, EventTime: "id"}, []string{`"id"`, "must be a timestamp"}},
		{"event-time-missing", Options{Path: dir, Format: "json", Schema: eventSchema, EventTime: "when"}, []string{`"when"`, "not found"}},
		{"delay", Options{Path: dir, Format: "json", Schema: eventSchema, MaxOutOfOrderness: -1}, []string{"MaxOutOfOrderness"}},
		{"partition-undeclared", Options{Path: dir, Format: "json", Schema: eventSchema, PartitionBy: []string{"day"}},
			[]string{`PartitionBy column "day" is not a declared column`}},
		{"partition-type", Options{Path: dir, Format: Parquet, Schema: arrow.NewSchema([]arrow.Field{
			{Name: "b", Type: arrow.BinaryTypes.Binary}}, nil), PartitionBy: []string{"b"}}, []string{"partition column b", "binary"}},
		{"raw-columns", Options{Path: dir, Format: "raw", Schema: eventSchema, PartitionBy: []string{"id"}}, []string{"raw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			wantErr(t, err, tc.parts...)
		})
	}
}

// A single file is one split named by its base name; a split that is not
// a listed file, or a position of another format or malformed, is
// refused by Open.
func TestSingleFileAndOpenErrors(t *testing.T) {
	mem := newMem(t)
	path := filepath.Join(t.TempDir(), "one.jsonl")
	writeFile(t, path, jsonLine(event(0))+"\n"+jsonLine(event(1))+"\n")
	src := mustNew(t, Options{Path: path, Format: "json", Schema: eventSchema})
	ids := mustSplits(t, src)
	if len(ids) != 1 || ids[0] != "one.jsonl" {
		t.Fatalf("splits %v", ids)
	}
	sink, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "rows", sink.Rows(), events(0, 2))

	parquetPos := position{size: 10}.encode(kindParquet)
	for _, tc := range []struct {
		name   string
		splits []arrowflow.SplitState
		parts  []string
	}{
		{"unknown", []arrowflow.SplitState{{Split: "two.jsonl"}}, []string{"split two.jsonl is not a file"}},
		{"twice", []arrowflow.SplitState{{Split: "one.jsonl"}, {Split: "one.jsonl"}}, []string{"given twice"}},
		{"kind", []arrowflow.SplitState{{Split: "one.jsonl", Position: parquetPos}}, []string{"Parquet file", "Format changed"}},
		{"malformed", []arrowflow.SplitState{{Split: "one.jsonl", Position: []byte{1, 't', 0, 5}}}, []string{"malformed position"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, tc.splits)
			wantErr(t, err, tc.parts...)
		})
	}
}

// Positions decode to what was encoded, and truncated or extended ones
// are refused.
func TestPositionEncoding(t *testing.T) {
	for _, p := range []position{
		{},
		{size: 1 << 40, rows: 12345, offset: 1 << 39, line: 99, prev: "a/b=c/d.parquet", next: "ü", done: true},
		{size: 7, rows: 7, next: strings.Repeat("x", 300)},
	} {
		for _, kind := range []byte{kindParquet, kindText} {
			b := p.encode(kind)
			got, err := decodePosition("s", kind, b)
			if err != nil || got != p {
				t.Fatalf("decode(encode(%+v)) = %+v, %v", p, got, err)
			}
			for n := range len(b) {
				if _, err := decodePosition("s", kind, b[:n]); err == nil {
					t.Fatalf("%x truncated to %d bytes decodes", b, n)
				}
			}
			if _, err := decodePosition("s", kind, append(bytes.Clone(b), 0)); err == nil {
				t.Fatalf("%x with a trailing byte decodes", b)
			}
		}
	}
}

// Lines longer than the read buffer are read whole.
func TestLongLines(t *testing.T) {
	mem := newMem(t)
	path := filepath.Join(t.TempDir(), "long.txt")
	long := strings.Repeat("0123456789", textReadBuffer/10*2+7)
	writeFile(t, path, "a\n"+long+"\r\nb\n"+long)
	src := mustNew(t, Options{Path: path, Format: "raw", Schema: arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.BinaryTypes.String}}, nil)})
	rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))
	rows, _ := readN(t, rd, -1)
	want := [][]any{{"a"}, {long}, {"b"}, {long}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}
	for i := range want {
		if rowKey(rows[i]) != rowKey(want[i]) {
			t.Fatalf("row %d: %d bytes, want %d", i, len(rows[i][0].(string)), len(want[i][0].(string)))
		}
	}
}
