package files

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// joinLines writes lines as a text file does, varying the line breaks:
// every third line ends with "\r\n", blank lines go between some, and the
// last line has no break when noFinal is set.
func joinLines(lines []string, blanks, noFinal bool) string {
	var sb strings.Builder
	for i, l := range lines {
		sb.WriteString(l)
		if i == len(lines)-1 && noFinal {
			break
		}
		if i%3 == 2 {
			sb.WriteString("\r\n")
		} else {
			sb.WriteString("\n")
		}
		if blanks && i%10 == 4 {
			sb.WriteString("\n  \n")
		}
	}
	return sb.String()
}

func linesOf(rows [][]any, line func([]any) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = line(r)
	}
	return out
}

// JSON Lines and CSV files written by hand, read by a job: exactly the
// events written. The files have CRLF line breaks, blank lines, a byte
// order mark and a last line without a break.
func TestTextFormatsJob(t *testing.T) {
	for _, tc := range []struct {
		format   string
		opts     map[string]string
		line     func([]any) string
		declared *arrow.Schema
		cols     []int // the declared columns in eventSchema
	}{
		{"json", nil, jsonLine, arrow.NewSchema([]arrow.Field{
			eventSchema.Field(3), eventSchema.Field(0), eventSchema.Field(2), eventSchema.Field(1), eventSchema.Field(4),
		}, nil), []int{3, 0, 2, 1, 4}},
		{"csv", nil, csvLine, eventSchema, []int{0, 1, 2, 3, 4}},
		{"csv", map[string]string{"csv.field-delimiter": "|", "csv.disable-quote-character": "true"}, func(r []any) string {
			// No field holds "|": without quoting, fields are literal.
			f := strings.Split(csvLine(r), ",")
			if r[1] != nil {
				f = append(append(f[:1:1], r[1].(string)), f[len(f)-3:]...)
			}
			return strings.Join(f, "|")
		}, eventSchema, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tc.format+"/"+strings.Join(sortedKeys(tc.opts), ","), func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "a.txt"), "\xEF\xBB\xBF"+joinLines(linesOf(events(0, 150), tc.line), tc.format == "json", true))
			writeFile(t, filepath.Join(dir, "day=x", "b.txt"), joinLines(linesOf(events(150, 200), tc.line), false, false))
			writeFile(t, filepath.Join(dir, "empty.txt"), "")
			src := mustNew(t, Options{Path: dir, Format: tc.format, FormatOptions: tc.opts, Schema: tc.declared, BatchSize: 17})
			sink, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "rows", sink.Rows(), project(events(0, 200), tc.cols...))
		})
	}
}

// raw takes each line as one value: blank lines are values too.
func TestRawLines(t *testing.T) {
	mem := newMem(t)
	path := filepath.Join(t.TempDir(), "lines.log")
	writeFile(t, path, "first\r\n\nthird, with text\n  \nlast without break")
	src := mustNew(t, Options{Path: path, Format: "raw", Schema: arrow.NewSchema([]arrow.Field{{Name: "line", Type: arrow.BinaryTypes.String}}, nil)})
	sink, err := runJob(t, src, 1, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"first"}, {""}, {"third, with text"}, {"  "}, {"last without break"}}
	if got := sink.Rows(); !slices.EqualFunc(got, want, func(a, b []any) bool { return rowKey(a) == rowKey(b) }) {
		t.Fatalf("rows %v, want %v (in file order)", got, want)
	}
	// Without a schema, raw reads bytes into "value".
	src = mustNew(t, Options{Path: path, Format: "raw"})
	if f := src.Schema().Field(0); f.Name != "value" || f.Type.ID() != arrow.BINARY {
		t.Fatalf("default raw column %v", f)
	}
}

// badJSON is a JSON Lines file with three malformed lines among good ones.
func badJSON(t *testing.T, dir string) (path string, good [][]any, bad map[int64]string) {
	path = filepath.Join(dir, "in.jsonl")
	bad = map[int64]string{
		3: `{"id":"x","ts":"2026-03-01T00:00:00Z","qty":1}`,
		5: `{"id":7,"ts":"2026-03-01T00:00:00Z","qty":1`,
		8: "{\"id\":9,\"ts\":\"not a time\",\"qty\":1,\"name\":\"\xff\"}",
	}
	var lines []string
	k := 0
	for n := int64(1); n <= 10; n++ {
		if b, ok := bad[n]; ok {
			lines = append(lines, b)
			continue
		}
		r := event(k)
		good = append(good, r)
		lines = append(lines, jsonLine(r))
		k++
	}
	writeFile(t, path, strings.Join(lines, "\n")+"\n")
	return path, good, bad
}

// Malformed lines under each policy: fail names the file, the line and
// the format's reason; skip drops and counts them; dlq writes them with
// where they came from and why.
func TestMalformedLines(t *testing.T) {
	t.Run("fail", func(t *testing.T) {
		mem := newMem(t)
		path, _, _ := badJSON(t, t.TempDir())
		src := mustNew(t, Options{Path: path, Format: "json", Schema: eventSchema})
		_, err := runJob(t, src, 1, arrowflow.Options{Allocator: mem})
		wantErr(t, err, path, "line 3", "json: field id", "error policy fail")
	})
	t.Run("skip", func(t *testing.T) {
		mem := newMem(t)
		path, good, bad := badJSON(t, t.TempDir())
		src := mustNew(t, Options{Path: path, Format: "json", Schema: eventSchema, OnError: SkipOnError, BatchSize: 3})
		sink, err := runJob(t, src, 1, arrowflow.Options{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, "rows", sink.Rows(), good)
		if st := src.Stats(); st.Skipped != int64(len(bad)) || st.Records != int64(len(good)) {
			t.Fatalf("stats %+v, want %d skipped, %d records", st, len(bad), len(good))
		}
	})
	t.Run("dlq", func(t *testing.T) {
		mem := newMem(t)
		dir := t.TempDir()
		path, good, bad := badJSON(t, dir)
		dlq := filepath.Join(dir, "_dead")
		src := mustNew(t, Options{Path: path, Format: "json", Schema: eventSchema, OnError: DeadLetterOnError, DeadLetterPath: dlq})
		sink, err := runJob(t, src, 1, arrowflow.Options{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, "rows", sink.Rows(), good)
		entries, err := os.ReadDir(dlq)
		if err != nil || len(entries) != 1 {
			t.Fatalf("dead-letter folder: %v, %v", entries, err)
		}
		f, err := os.Open(filepath.Join(dlq, entries[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got := map[int64]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var dl DeadLetter
			if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
				t.Fatal(err)
			}
			if dl.File != path || !strings.HasPrefix(dl.Error, "json: ") {
				t.Fatalf("dead letter %+v", dl)
			}
			v := dl.Value
			if dl.ValueBase64 != nil {
				v = string(dl.ValueBase64)
			}
			got[dl.Line] = v
		}
		if len(got) != len(bad) {
			t.Fatalf("dead letters %v, want %v", got, bad)
		}
		for n, b := range bad {
			if got[n] != b {
				t.Fatalf("dead letter of line %d: %q, want %q", n, got[n], b)
			}
		}
		if st := src.Stats(); st.DeadLettered != int64(len(bad)) {
			t.Fatalf("stats %+v", st)
		}
	})
}
