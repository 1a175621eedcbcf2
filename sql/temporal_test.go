package sql

import (
	"fmt"
	"testing"
	"time"
)

// An event-time temporal join: each order joined with the version of its
// currency's rate valid at the order's time (the latest rate update at or
// before it), a LEFT join padding orders older than any rate; against a
// plain Go reference.
func TestTemporalJoinAsOfEventTime(t *testing.T) {
	const orders, updates = 2000, 200
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	orderStart := start.Add(-time.Second) // the first orders precede every rate
	type version struct {
		ts   time.Time
		rate int64
	}
	versions := map[int64][]version{}
	for v := int64(0); v < updates; v++ {
		versions[v%5] = append(versions[v%5], version{start.Add(time.Duration(v) * 100 * time.Millisecond), v * 7})
	}
	var want, wantInner []string
	for id := int64(0); id < orders; id++ {
		ts := orderStart.Add(time.Duration(id) * 13 * time.Millisecond)
		cur := id * 3 % 5
		var rate any
		for _, v := range versions[cur] {
			if !v.ts.After(ts) {
				rate = v.rate
			}
		}
		want = append(want, fmtRow(id, cur, rate))
		if rate != nil {
			wantInner = append(wantInner, fmtRow(id, cur, rate))
		}
	}
	ddl := fmt.Sprintf(`
CREATE TABLE rates (
    v BIGINT, ts TIMESTAMP(3), cur AS MOD(v, 5), rate AS v * 7,
    PRIMARY KEY (cur) NOT ENFORCED,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'fields.v.kind' = 'sequence', 'fields.v.start' = '0', 'fields.v.end' = '%d',
        'fields.ts.start' = '2026-03-01 12:00:00', 'fields.ts.interval' = '100 ms', 'splits' = '2');
CREATE TABLE orders (
    id BIGINT, ts TIMESTAMP(3), cur AS MOD(id * 3, 5),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d',
        'fields.ts.start' = '2026-03-01 11:59:59', 'fields.ts.interval' = '13 ms', 'splits' = '3');
CREATE TABLE priced (id BIGINT, cur BIGINT, rate BIGINT) WITH ('connector' = 'blackhole');
`, updates-1, orders-1)
	for _, par := range []int{1, 2} {
		got := compileRun(t, ddl+`
INSERT INTO priced
SELECT o.id, o.cur, r.rate
FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur;`, par, "priced")
		compareRows(t, got, want)
		got = compileRun(t, ddl+`
INSERT INTO priced
SELECT o.id, o.cur, r.rate
FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON r.cur = o.cur;`, par, "priced")
		compareRows(t, got, wantInner)
	}
	if len(wantInner) == len(want) || len(wantInner) == 0 {
		t.Fatalf("%d of %d orders priced: the test sees no padding or no match", len(wantInner), len(want))
	}
}
