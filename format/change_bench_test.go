package format

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// changeEvents wraps each json row of the Nexmark bids in a change event
// made by wrap(prev, row) (prev the row before it, for updates).
func changeEvents(b *testing.B, wrap func(prev, row string) string) [][]byte {
	rows := encodeBids(b, "json")
	out := make([][]byte, len(rows))
	for i, r := range rows {
		prev := rows[(i+len(rows)-1)%len(rows)]
		out[i] = []byte(wrap(string(prev), string(r)))
	}
	return out
}

// changeDecode decodes change events through a ChangeBatchBuilder,
// closing a batch every 4096 rows as a source would, and reports rows
// per second next to records per second.
func changeDecode(b *testing.B, format string, values [][]byte) {
	dec, err := NewDecoder(context.Background(), Config{Name: format, Schema: bidSchema})
	if err != nil {
		b.Fatal(err)
	}
	cb := dec.(ChangeDecoder).NewChangeBuilder(memory.NewGoAllocator())
	defer cb.Release()
	rows := 0
	runDecode(b, values, func(v []byte) error {
		n, err := cb.AppendChange(v)
		if err != nil {
			return err
		}
		rows += n
		if cb.Len() >= 4096 {
			rec, _ := cb.NewChangeRecord()
			rec.Release()
		}
		return nil
	})
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeChanges decodes the Nexmark bids as change events of
// each format, with the plain json decoding of the same rows as the
// baseline (json-rows: one row per record, so rows/s = records/s):
// debezium-json creates with and without Debezium's "source" block,
// updates (two rows per event, the old row first), canal-json inserts
// and updates (old values of one column), maxwell-json inserts and
// updates.
func BenchmarkDecodeChanges(b *testing.B) {
	jsonValues := encodeBids(b, "json")
	const source = `"source":{"version":"2.5.0.Final","connector":"mysql","name":"nexmark","ts_ms":1700000000000,"snapshot":"false","db":"nexmark","sequence":null,"table":"bid","server_id":1,"gtid":null,"file":"mysql-bin.000003","pos":154,"row":0,"thread":7,"query":null}`
	cases := []struct {
		name, format string
		wrap         func(prev, row string) string
	}{
		{"debezium-create", DebeziumJSON, func(_, r string) string {
			return `{"before":null,"after":` + r + `,"op":"c"}`
		}},
		{"debezium-create-source", DebeziumJSON, func(_, r string) string {
			return `{"before":null,"after":` + r + `,` + source + `,"op":"c","ts_ms":1700000000123,"transaction":null}`
		}},
		{"debezium-update", DebeziumJSON, func(p, r string) string {
			return `{"before":` + p + `,"after":` + r + `,` + source + `,"op":"u","ts_ms":1700000000123,"transaction":null}`
		}},
		{"canal-insert", CanalJSON, func(_, r string) string {
			return `{"data":[` + r + `],"database":"nexmark","es":1700000000000,"id":1,"isDdl":false,"old":null,"pkNames":["auction"],"sql":"","table":"bid","ts":1700000000123,"type":"INSERT"}`
		}},
		{"canal-update", CanalJSON, func(_, r string) string {
			return `{"data":[` + r + `],"database":"nexmark","es":1700000000000,"id":1,"isDdl":false,"old":[{"price":1}],"pkNames":["auction"],"sql":"","table":"bid","ts":1700000000123,"type":"UPDATE"}`
		}},
		{"maxwell-insert", MaxwellJSON, func(_, r string) string {
			return `{"database":"nexmark","table":"bid","type":"insert","ts":1700000000,"xid":1,"commit":true,"data":` + r + `}`
		}},
		{"maxwell-update", MaxwellJSON, func(_, r string) string {
			return `{"database":"nexmark","table":"bid","type":"update","ts":1700000000,"xid":1,"commit":true,"data":` + r + `,"old":{"price":1}}`
		}},
	}
	b.Run("json-rows", func(b *testing.B) { weirDecode(b, "json", jsonValues) })
	for _, c := range cases {
		values := changeEvents(b, c.wrap)
		b.Run(c.name, func(b *testing.B) { changeDecode(b, c.format, values) })
	}
}
