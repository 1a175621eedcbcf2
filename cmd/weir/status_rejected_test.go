package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/internal/kafkatest"
	"github.com/weirflow/weir/internal/status"
)

// writeLines writes good JSON lines {"id": n} and bad ones (malformed)
// interleaved into path: bad of them, at every fifth line.
func writeLines(t *testing.T, path string, good, bad int) {
	t.Helper()
	var b strings.Builder
	for i, g, m := 0, 0, 0; g < good || m < bad; i++ {
		if (i%5 == 4 && m < bad) || g == good {
			fmt.Fprintf(&b, "{\"id\": not json %d\n", m)
			m++
			continue
		}
		fmt.Fprintf(&b, "{\"id\": %d}\n", g)
		g++
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A bounded job over two folders of JSON lines, one skipping malformed
// lines and one writing them to a dead-letter folder: the line weir run
// prints at the end says how many of each, per source.
func TestRunReportsSkippedAndDeadLetteredRecords(t *testing.T) {
	dir := t.TempDir()
	const skipped, deadLettered = 7, 3
	writeLines(t, filepath.Join(dir, "a", "a.jsonl"), 40, skipped)
	writeLines(t, filepath.Join(dir, "b", "b.jsonl"), 25, deadLettered)
	writeLines(t, filepath.Join(dir, "c", "c.jsonl"), 10, 0)
	script := fmt.Sprintf(`CREATE TABLE lax (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE careful (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json', 'weir.on-error' = 'dlq', 'weir.dead-letter-path' = '%s');
CREATE TABLE clean (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json', 'weir.on-error' = 'skip');
CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out1 SELECT id FROM lax UNION ALL SELECT id FROM careful UNION ALL SELECT id FROM clean;
`, filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "dlq"), filepath.Join(dir, "c"))
	path := filepath.Join(dir, "rejects.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "run", "--http", "off", "--parallelism", "1", "--checkpoint-dir", filepath.Join(dir, "cp"), path)
	if err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}
	var end string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "finished") {
			end = l
		}
	}
	for _, want := range []string{
		fmt.Sprintf("lax: %d records skipped, 0 dead-lettered", skipped),
		fmt.Sprintf("careful: 0 records skipped, %d dead-lettered", deadLettered),
	} {
		if !strings.Contains(end, want) {
			t.Fatalf("the end line %q lacks %q:\n%s", end, want, out)
		}
	}
	if strings.Contains(end, "clean") {
		t.Fatalf("the end line names a source that rejected nothing: %q", end)
	}
}

// A Kafka source skipping malformed records shows how many in /status,
// in /metrics, and in the line weir run prints when it stops.
func TestRunShowsSkippedKafkaRecordsInStatusAndMetrics(t *testing.T) {
	broker := kafkatest.Start(t, "", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const total = 70 // every seventh record is malformed
	var recs []*kgo.Record
	nBad := 0
	for i := range total {
		v := fmt.Sprintf(`{"id": %d}`, i)
		if i%7 == 3 {
			v = fmt.Sprintf(`{"id": %d`, i) // cut short
			nBad++
		}
		recs = append(recs, &kgo.Record{Topic: "in", Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
CREATE TABLE events (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out1 SELECT id FROM events;
`, broker.Addr())
	path := filepath.Join(dir, "kafka.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "cp")
	p := startInProcess(t, "run", "--parallelism", "1", "--checkpoint-dir", cp, "--http", "127.0.0.1:0", path)
	url := p.statusURL(t)
	var st status.Status
	waitFor(t, "every record read", func() bool {
		st = jobStatus(t, url)
		return st.SourceRecordsIn == int64(total-nBad) && len(st.SourceRejected) == 1 && st.SourceRejected[0].Skipped == int64(nBad)
	})
	if r := st.SourceRejected[0]; r.Source != "events" || r.DeadLettered != 0 {
		t.Fatalf("source_rejected %+v", st.SourceRejected)
	}
	code, body := request(t, http.MethodGet, url+"/metrics", nil)
	for _, want := range []string{
		fmt.Sprintf("weir_source_records_skipped_total{source=\"events\"} %d\n", nBad),
		"weir_source_records_dead_lettered_total{source=\"events\"} 0\n",
		"# TYPE weir_source_records_skipped_total counter\n",
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET /metrics: %d, lacks %q:\n%s", code, want, body)
		}
	}
	p.cancel() // Ctrl-C
	if err := p.wait(t); err != nil {
		t.Fatalf("after Ctrl-C: %v\n%s", err, p.out.String())
	}
	if want := fmt.Sprintf("events: %d records skipped, 0 dead-lettered", nBad); !strings.Contains(p.out.String(), want) {
		t.Fatalf("the stop line lacks %q:\n%s", want, p.out.String())
	}
}
