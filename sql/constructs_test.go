package sql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/bench/queries"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

// testBid and testAuction are events read straight from the generator,
// for the references.
type testBid struct {
	auction, bidder, price int64
	channel                string
	ts                     time.Time
}

type testAuction struct {
	id, seller int64
	ts         time.Time
}

func readNexmark(t *testing.T) ([]testBid, []testAuction) {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Seed: 3, Events: testEvents, Splits: 4, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	splits, _ := src.Splits(context.Background())
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	rd, err := src.Open(&arrowflow.TaskInfo{Job: "ref", Parallelism: 1, Allocator: memory.DefaultAllocator}, states)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var bids []testBid
	var auctions []testAuction
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return bids, auctions
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.IsZero() {
			continue
		}
		for _, kind := range []nexmark.EventType{nexmark.BidEvent, nexmark.AuctionEvent} {
			rec, err := nexmark.Project(memory.DefaultAllocator, b, kind)
			if err != nil {
				t.Fatal(err)
			}
			col := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
			for i := 0; i < int(rec.NumRows()); i++ {
				v := func(name string) any { return arrowflow.ValueAt(rec.Column(col(name)), i) }
				if kind == nexmark.BidEvent {
					bids = append(bids, testBid{v("auction").(int64), v("bidder").(int64), v("price").(int64), v("channel").(string), v("dateTime").(time.Time)})
				} else {
					auctions = append(auctions, testAuction{v("id").(int64), v("seller").(int64), v("dateTime").(time.Time)})
				}
			}
			rec.Release()
		}
		b.Release()
	}
}

// runScript runs the Nexmark DDL plus body at parallelism par and
// returns the rows of table out.
func runScript(t *testing.T, body, out string, par int) []string {
	t.Helper()
	sink := collect.New()
	job, err := Compile(context.Background(), queries.SQLDDL(testEvents, 4, 3)+"\n"+body,
		Options{Parallelism: par, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{out: sink}})
	if err != nil {
		t.Fatal(err)
	}
	return runGraph(t, job.Graph, sink, nil)
}

func compareRows(t *testing.T, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if len(want) == 0 {
		t.Fatal("the reference has no rows: nothing is compared")
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d\nfirst: %q\nwant:  %q", len(got), len(want), first(got), first(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func windowStart(ts time.Time, size, slide time.Duration) []time.Time {
	var out []time.Time
	last := ts.Truncate(slide)
	for s := last; s.After(ts.Add(-size)); s = s.Add(-slide) {
		out = append(out, s)
	}
	return out
}

func fmtRow(vals ...any) string {
	s := ""
	for i, v := range vals {
		if i > 0 {
			s += " | "
		}
		if v == nil {
			s += "NULL"
		} else {
			s += fmt.Sprint(v)
		}
	}
	return s
}

// Window Top-N over a window TVF: ROW_NUMBER in two phases (no partition
// keys) and RANK with ties per partition.
func TestWindowTopNOverTVF(t *testing.T) {
	bids, _ := readNexmark(t)
	type wk struct {
		ws      time.Time
		auction int64
	}
	byWindow := map[time.Time][]int64{}
	maxPer := map[wk]int64{}
	for _, b := range bids {
		ws := b.ts.Truncate(10 * time.Second)
		byWindow[ws] = append(byWindow[ws], b.price)
		k := wk{ws, b.auction}
		if p, ok := maxPer[k]; !ok || b.price > p {
			maxPer[k] = b.price
		}
	}
	var wantTop, wantRank []string
	for ws, prices := range byWindow {
		sort.Slice(prices, func(i, j int) bool { return prices[i] > prices[j] })
		for i := 0; i < 3 && i < len(prices); i++ {
			wantTop = append(wantTop, fmtRow(ws.UTC(), prices[i], int64(i+1)))
		}
	}
	for _, b := range bids {
		k := wk{b.ts.Truncate(10 * time.Second), b.auction}
		if b.price == maxPer[k] {
			wantRank = append(wantRank, fmtRow(k.ws.UTC(), b.auction, b.price, int64(1)))
		}
	}
	for _, par := range []int{1, 2} {
		got := runScript(t, `
CREATE TABLE top3 (ws TIMESTAMP(3), price BIGINT, rn BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO top3
SELECT window_start, price, rn FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
) WHERE rn <= 3;`, "top3", par)
		compareRows(t, got, wantTop)
		got = runScript(t, `
CREATE TABLE best (ws TIMESTAMP(3), auction BIGINT, price BIGINT, rk BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO best
SELECT window_start, auction, price, rk FROM (
    SELECT *, RANK() OVER (PARTITION BY window_start, window_end, auction ORDER BY price DESC) AS rk
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
) WHERE rk = 1;`, "best", par)
		compareRows(t, got, wantRank)
	}
}

// A hopping window aggregation with COUNT(DISTINCT), SUM ... FILTER,
// MIN, HAVING, in a WITH query.
func TestWindowAggregateFilterDistinctHaving(t *testing.T) {
	bids, _ := readNexmark(t)
	type key struct {
		auction int64
		ws      time.Time
	}
	type acc struct {
		n, min  int64
		sum     *int64
		bidders map[int64]bool
	}
	accs := map[key]*acc{}
	for _, b := range bids {
		for _, ws := range windowStart(b.ts, 10*time.Second, 5*time.Second) {
			k := key{b.auction, ws}
			a := accs[k]
			if a == nil {
				a = &acc{min: b.price, bidders: map[int64]bool{}}
				accs[k] = a
			}
			a.n++
			a.min = min(a.min, b.price)
			a.bidders[b.bidder] = true
			if b.price > 5_000_000 {
				if a.sum == nil {
					a.sum = new(int64)
				}
				*a.sum += b.price
			}
		}
	}
	var want []string
	for k, a := range accs {
		if a.n > 2 {
			var sum any
			if a.sum != nil {
				sum = *a.sum
			}
			want = append(want, fmtRow(k.auction, k.ws.UTC(), a.n, int64(len(a.bidders)), sum, a.min))
		}
	}
	got := runScript(t, `
CREATE TABLE stats (auction BIGINT, ws TIMESTAMP(3), n BIGINT, bidders BIGINT, big BIGINT, low BIGINT)
WITH ('connector' = 'blackhole');
INSERT INTO stats
WITH windowed AS (
    SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
)
SELECT auction, window_start, COUNT(*), COUNT(DISTINCT bidder),
       SUM(price) FILTER (WHERE price > 5000000), MIN(price)
FROM windowed
GROUP BY auction, window_start, window_end
HAVING COUNT(*) > 2;`, "stats", 2)
	compareRows(t, got, want)
}

// UNION ALL of two filtered projections with CASE, CAST, BETWEEN, LIKE
// and IS DISTINCT FROM.
func TestUnionAllAndExpressions(t *testing.T) {
	bids, _ := readNexmark(t)
	var want []string
	for _, b := range bids {
		if b.price >= 1000 && b.price <= 2_000_000 {
			size := "small"
			if b.price > 1_000_000 {
				size = "large"
			}
			want = append(want, fmtRow(b.auction, float64(b.price)/100, size))
		}
		if len(b.channel) >= 6 && b.channel[:6] == "Google" && b.bidder != 1001 {
			want = append(want, fmtRow(b.auction, -1.0, "google"))
		}
	}
	got := runScript(t, `
CREATE TABLE picked (auction BIGINT, p DOUBLE, what STRING) WITH ('connector' = 'blackhole');
INSERT INTO picked
SELECT auction, CAST(price AS DOUBLE) / 100, CASE WHEN price > 1000000 THEN 'large' ELSE 'small' END
FROM bid WHERE price BETWEEN 1000 AND 2000000
UNION ALL
SELECT B.auction, -1.0, 'google' FROM bid AS B WHERE B.channel LIKE 'Google%' AND B.bidder IS DISTINCT FROM 1001;`, "picked", 2)
	compareRows(t, got, want)
}

// A window join of two window TVFs: bids with their auction when it was
// opened in the same 10 s window.
func TestWindowJoinOfTVFs(t *testing.T) {
	bids, auctions := readNexmark(t)
	type key struct {
		id int64
		ws time.Time
	}
	opened := map[key]int64{}
	for _, a := range auctions {
		opened[key{a.id, a.ts.Truncate(10 * time.Second)}] = a.seller
	}
	var want []string
	for _, b := range bids {
		ws := b.ts.Truncate(10 * time.Second)
		if seller, ok := opened[key{b.auction, ws}]; ok {
			want = append(want, fmtRow(b.auction, b.price, seller, ws.UTC()))
		}
	}
	for _, par := range []int{1, 2} {
		got := runScript(t, `
CREATE TABLE fresh (auction BIGINT, price BIGINT, seller BIGINT, ws TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO fresh
SELECT B.auction, B.price, A.seller, B.window_start
FROM (SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))) B
JOIN TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) A
ON B.window_start = A.window_start AND B.window_end = A.window_end AND B.auction = A.id;`, "fresh", par)
		compareRows(t, got, want)
	}
}

// Interval joins bounded by comparisons instead of BETWEEN: a strict
// upper bound is exclusive, and the bounds may be written either way
// round.
func TestIntervalJoinWithComparisons(t *testing.T) {
	bids, auctions := readNexmark(t)
	opened := map[int64]time.Time{}
	for _, a := range auctions {
		opened[a.id] = a.ts
	}
	var want []string
	for _, b := range bids {
		at, ok := opened[b.auction]
		if !ok {
			continue
		}
		if !b.ts.Before(at) && b.ts.Before(at.Add(2*time.Second)) {
			want = append(want, fmtRow(b.auction, b.price, at.UTC()))
		}
	}
	for i, cond := range []string{
		"B.dateTime >= A.dateTime AND B.dateTime < A.dateTime + INTERVAL '2' SECOND",
		"A.dateTime + INTERVAL '2' SECOND > B.dateTime AND A.dateTime <= B.dateTime",
		"B.dateTime - INTERVAL '2' SECOND < A.dateTime AND B.dateTime >= A.dateTime",
	} {
		got := runScript(t, `
CREATE TABLE early (auction BIGINT, price BIGINT, opened TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO early
SELECT B.auction, B.price, A.dateTime
FROM bid B JOIN auction A
ON B.auction = A.id AND `+cond+`;`, "early", 1+i%2)
		compareRows(t, got, want)
	}

	// Strict bounds on a self-join: no bid pairs with itself (nor with
	// bids of the same millisecond), nor with bids 2 ms later.
	byAuction := map[int64][]testBid{}
	for _, b := range bids {
		byAuction[b.auction] = append(byAuction[b.auction], b)
	}
	want, equal := nil, 0
	for _, bs := range byAuction {
		for _, b1 := range bs {
			for _, b2 := range bs {
				d := b2.ts.Sub(b1.ts)
				if d == 0 {
					equal++
				}
				if d > 0 && d < 2*time.Millisecond {
					want = append(want, fmtRow(b1.auction, b1.bidder, b2.bidder, b2.ts.Sub(b1.ts).Milliseconds()))
				}
			}
		}
	}
	if equal <= len(bids) {
		t.Fatalf("%d pairs of bids with equal times, %d bids: the strict bound is not exercised beyond self-pairs", equal, len(bids))
	}
	for _, par := range []int{1, 2} {
		got := runScript(t, `
CREATE TABLE next_bids (auction BIGINT, first_bidder BIGINT, next_bidder BIGINT, ms BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO next_bids
SELECT B1.auction, B1.bidder, B2.bidder, TIMESTAMPDIFF(MILLISECOND, B1.dateTime, B2.dateTime)
FROM bid B1 JOIN bid B2
ON B1.auction = B2.auction AND B2.dateTime > B1.dateTime AND B2.dateTime < B1.dateTime + INTERVAL '2' MILLISECOND;`, "next_bids", par)
		compareRows(t, got, want)
	}
	t.Logf("%d pairs 1 ms apart, %d with equal times", len(want), equal)
}

// TRIM of given characters, from either end or both.
func TestTrimCharacters(t *testing.T) {
	bids, _ := readNexmark(t)
	var want []string
	for _, b := range bids {
		if b.price%50 == 0 {
			want = append(want, fmtRow(b.channel, strings.TrimLeft(b.channel, "aeg"), strings.TrimRight(b.channel, "e"), strings.Trim(b.channel, "Apel")))
		}
	}
	got := runScript(t, `
CREATE TABLE trimmed (c STRING, l STRING, r STRING, b STRING) WITH ('connector' = 'blackhole');
INSERT INTO trimmed
SELECT channel, TRIM(LEADING 'aeg' FROM channel), TRIM(TRAILING 'e' FROM channel), TRIM('Apel' FROM channel)
FROM bid WHERE MOD(price, 50) = 0;`, "trimmed", 1)
	compareRows(t, got, want)
}

// CUMULATE windows: per channel, the bids since the start of each 10 s
// window, every 2 s; window_time is the window's last millisecond.
func TestCumulateWindowAggregate(t *testing.T) {
	bids, _ := readNexmark(t)
	type key struct {
		start, end time.Time
		channel    string
	}
	type agg struct{ n, sum, max int64 }
	aggs := map[key]*agg{}
	const step, size = 2 * time.Second, 10 * time.Second
	for _, b := range bids {
		start := b.ts.Truncate(size)
		for end := start.Add(step); !end.After(start.Add(size)); end = end.Add(step) {
			if !end.After(b.ts) {
				continue
			}
			k := key{start, end, b.channel}
			a := aggs[k]
			if a == nil {
				a = &agg{}
				aggs[k] = a
			}
			a.n++
			a.sum += b.price
			a.max = max(a.max, b.price)
		}
	}
	var want []string
	for k, a := range aggs {
		want = append(want, fmtRow(k.channel, k.start.UTC(), k.end.UTC(), k.end.Add(-time.Millisecond).UTC(), a.n, a.sum, a.max))
	}
	for _, par := range []int{1, 2} {
		got := runScript(t, `
CREATE TABLE cumulated (channel STRING, ws TIMESTAMP(3), we TIMESTAMP(3), wt TIMESTAMP(3), n BIGINT, total BIGINT, hi BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO cumulated
SELECT channel, window_start, window_end, window_time, COUNT(*), SUM(price), MAX(price)
FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end, channel;`, "cumulated", par)
		compareRows(t, got, want)
	}
	if len(want) < 20 {
		t.Fatalf("only %d windows: the test sees little", len(want))
	}
}

// A legacy group window's TUMBLE_ROWTIME is its last millisecond, as
// TUMBLE_END - 1 ms.
func TestLegacyGroupWindowRowtime(t *testing.T) {
	bids, _ := readNexmark(t)
	counts := map[time.Time]int64{}
	for _, b := range bids {
		counts[b.ts.Truncate(10*time.Second)]++
	}
	var want []string
	for ws, n := range counts {
		we := ws.Add(10 * time.Second)
		want = append(want, fmtRow(ws.UTC(), we.UTC(), we.Add(-time.Millisecond).UTC(), n))
	}
	got := runScript(t, `
CREATE TABLE per10s (ws TIMESTAMP(3), we TIMESTAMP(3), wt TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per10s
SELECT TUMBLE_START(dateTime, INTERVAL '10' SECOND), TUMBLE_END(dateTime, INTERVAL '10' SECOND),
       TUMBLE_ROWTIME(dateTime, INTERVAL '10' SECOND), COUNT(*)
FROM bid GROUP BY TUMBLE(dateTime, INTERVAL '10' SECOND);`, "per10s", 2)
	compareRows(t, got, want)
}

// A time attribute computed as a ROW field (`ts AS bid.dateTime`, read
// without a copy) is taken out of the struct for the window TVF.
func TestWindowOverNestedTimeAttribute(t *testing.T) {
	bids, _ := readNexmark(t)
	counts := map[time.Time]int64{}
	for _, b := range bids {
		counts[b.ts.Truncate(10*time.Second)]++
	}
	var want []string
	for ws, n := range counts {
		want = append(want, fmtRow(ws.UTC(), n))
	}
	script := fmt.Sprintf(`
CREATE TABLE events (
    event_type INT,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>,
    ts AS bid.dateTime,
    WATERMARK FOR ts AS ts - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'events.num' = '%d', 'seed' = '3', 'splits' = '4', 'batch-size' = '1000');
CREATE TABLE per10s (ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per10s
SELECT window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE (SELECT * FROM events WHERE event_type = 2), DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;`, testEvents)
	for _, par := range []int{1, 2} {
		sink := collect.New()
		job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"per10s": sink}})
		if err != nil {
			t.Fatal(err)
		}
		compareRows(t, runGraph(t, job.Graph, sink, nil), want)
	}
}

// A window aggregation without keys runs in two phases above parallelism
// 1 (each subtask's partial aggregates merged by one): the same results
// as one phase, for hopping windows and COUNT(DISTINCT) too.
func TestKeylessWindowAggregateInTwoPhases(t *testing.T) {
	bids, _ := readNexmark(t)
	type acc struct {
		n, sum  int64
		bidders map[int64]bool
	}
	accs := map[time.Time]*acc{}
	for _, b := range bids {
		for _, ws := range windowStart(b.ts, 10*time.Second, 2*time.Second) {
			a := accs[ws]
			if a == nil {
				a = &acc{bidders: map[int64]bool{}}
				accs[ws] = a
			}
			a.n++
			a.sum += b.price
			a.bidders[b.bidder] = true
		}
	}
	var want []string
	for ws, a := range accs {
		want = append(want, fmtRow(ws.UTC(), a.n, a.sum, int64(len(a.bidders))))
	}
	for _, par := range []int{1, 2} {
		script := `
CREATE TABLE totals (ws TIMESTAMP(3), n BIGINT, total BIGINT, bidders BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals
SELECT window_start, COUNT(*), SUM(price), COUNT(DISTINCT bidder)
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end;`
		job, err := Compile(context.Background(), queries.SQLDDL(testEvents, 4, 3)+script, Options{Parallelism: par, ForceParallelism: true, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if twoPhase := strings.Contains(job.Plan, "in two phases"); twoPhase != (par > 1) {
			t.Fatalf("parallelism %d: two phases %t:\n%s", par, twoPhase, job.Plan)
		}
		compareRows(t, runScript(t, script, "totals", par), want)
	}
}

// Cascading windows: 100 ms counts per auction, windowed again over their
// window_time into seconds, give the per-second counts (a 100 ms window's
// window_time is its last millisecond, so [0.9 s, 1 s) counts in the
// first second); none of the 100 ms results is late for the second
// windows.
func TestCascadingWindowsOverWindowTime(t *testing.T) {
	bids, _ := readNexmark(t)
	type key struct {
		auction int64
		ws      time.Time
	}
	counts := map[key]int64{}
	for _, b := range bids {
		counts[key{b.auction, b.ts.Truncate(time.Second)}]++
	}
	var want []string
	for k, n := range counts {
		want = append(want, fmtRow(k.auction, k.ws.UTC(), n))
	}
	for _, par := range []int{1, 2} {
		got := runScript(t, `
CREATE VIEW per100ms AS
SELECT auction, window_time, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '100' MILLISECOND))
GROUP BY auction, window_start, window_end;
CREATE TABLE perSecond (auction BIGINT, ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO perSecond
SELECT auction, window_start, SUM(n)
FROM TABLE(TUMBLE(TABLE per100ms, DESCRIPTOR(window_time), INTERVAL '1' SECOND))
GROUP BY auction, window_start, window_end;`, "perSecond", par)
		compareRows(t, got, want)
	}
	seconds := map[time.Time]bool{}
	for k := range counts {
		seconds[k.ws] = true
	}
	if len(seconds) < 3 {
		t.Fatalf("the bids span %d seconds: too few windows to see", len(seconds))
	}
}
