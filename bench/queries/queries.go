// Package queries holds the Nexmark benchmark queries built with weir's Go
// API: each reads the events of a sources/nexmark generator and writes its
// result to a sink (a blackhole in benchmarks, which still pre-commits and
// commits every epoch; a collect sink in tests).
//
// The queries follow the Nexmark suite's Flink SQL versions (q0, q1, q2,
// q11, q12, q14, q21, q22 here; q5, q7 and q8 with the window Top-N and
// window join operators). Each function's comment gives the SQL it
// computes.
//
// The same queries, and the suite's updating queries (q3, q4, q9,
// q15-q20: regular joins, GROUP BY outside windows, Top-N and
// deduplication), are also written in Flink SQL (SQL, SQLNames, SQLOnly).
package queries

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sources/nexmark"
	"github.com/weirflow/weir/window"
)

// Config says what a query runs on.
type Config struct {
	// Source generates the events; its Splits should be a multiple of
	// Parallelism.
	Source *nexmark.Source
	// Parallelism is the number of subtasks of every node.
	Parallelism int
	// Sink receives the query's result.
	Sink arrowflow.Sink
}

// Query is one Nexmark query.
type Query struct {
	// Name is "q0", "q1", ...
	Name string
	// What says in a few words what the query computes.
	What string
	// Build adds the query's nodes to g.
	Build func(g *arrowflow.Graph, c Config) error
}

var all = []Query{
	{"q0", "pass-through: every bid", q0},
	{"q1", "currency conversion: bid prices in euros", q1},
	{"q2", "selection: bids of auctions whose id is a multiple of 123", q2},
	{"q5", "hot items: per 10 s window sliding by 2 s, the auctions with the most bids", q5},
	{"q7", "highest bid: per 10 s window, the bids at the window's highest price", q7},
	{"q8", "new users: persons who opened an auction in the 10 s window they registered in", q8},
	{"q11", "user sessions: bids per bidder in 10 s-gap sessions", q11},
	{"q12", "processing-time windows: bids per bidder per 10 s of processing time", q12},
	{"q14", "calculation: euro prices in a range, time of day, count of 'c' in extra", q14},
	{"q21", "channel id from the channel name or the url's query string", q21},
	{"q22", "url directories split out", q22},
}

// Names lists the queries, in order.
func Names() []string {
	names := make([]string, len(all))
	for i, q := range all {
		names[i] = q.Name
	}
	return names
}

// Lookup returns the query of that name.
func Lookup(name string) (Query, bool) {
	for _, q := range all {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// Build returns the job graph of query name.
func Build(name string, c Config) (*arrowflow.Graph, error) {
	q, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("nexmark: no query %q (have %s)", name, strings.Join(Names(), ", "))
	}
	if c.Parallelism < 1 {
		c.Parallelism = 1
	}
	g := arrowflow.NewGraph("nexmark-" + name)
	if err := q.Build(g, c); err != nil {
		return nil, fmt.Errorf("nexmark %s: %w", name, err)
	}
	return g, nil
}

// events adds the generator and the projection of its events of type t
// to their flat schema (Flink's person, auction and bid views).
func events(g *arrowflow.Graph, c Config, t nexmark.EventType) *arrowflow.Node {
	return eventsOf(g, g.Source("nexmark", c.Source, c.Parallelism), c, t)
}

// eventsOf projects the events of type t of the generator node src.
func eventsOf(g *arrowflow.Graph, src *arrowflow.Node, c Config, t nexmark.EventType) *arrowflow.Node {
	return g.Operator(strings.ToLower(t.String())+"s", ops.Map(func(b arrowflow.Batch, mem memory.Allocator) (arrowflow.Batch, error) {
		defer b.Release()
		rec, err := nexmark.Project(mem, b, t)
		if err != nil || rec == nil {
			return arrowflow.Batch{}, err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			return arrowflow.Batch{}, nil
		}
		return arrowflow.NewBatch(rec), nil
	}), c.Parallelism, arrowflow.Forward(src))
}

func project(g *arrowflow.Graph, name string, in *arrowflow.Node, c Config, exprs []kernels.Expr, names []string) *arrowflow.Node {
	return g.Operator(name, ops.Project(exprs, names), c.Parallelism, arrowflow.Forward(in))
}

func sink(g *arrowflow.Graph, in *arrowflow.Node, c Config) {
	g.Sink("sink", c.Sink, c.Parallelism, arrowflow.Forward(in))
}

// q0: SELECT auction, bidder, price, dateTime, extra FROM bid
func q0(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	out := project(g, "q0", bids, c, cols("auction", "bidder", "price", "dateTime", "extra"), nil)
	sink(g, out, c)
	return nil
}

// q1: SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid
func q1(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	out := project(g, "q1", bids, c,
		[]kernels.Expr{kernels.Col("auction"), kernels.Col("bidder"), euros(), kernels.Col("dateTime"), kernels.Col("extra")},
		[]string{"auction", "bidder", "price", "dateTime", "extra"})
	sink(g, out, c)
	return nil
}

// euros is 0.908 * price as Flink computes it: DECIMAL(4, 3) * BIGINT,
// exact, then DOUBLE (the sink column's type).
func euros() kernels.Expr {
	rate := &kernels.LiteralExpr{Value: kernels.Decimal{Unscaled: decimal128.FromI64(908), Scale: 3}, Type: &arrow.Decimal128Type{Precision: 4, Scale: 3}}
	return kernels.Cast(kernels.Mul(rate, kernels.Col("price")), arrow.PrimitiveTypes.Float64)
}

// q2: SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0
func q2(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	where := g.Operator("where", ops.Where(kernels.Eq(kernels.Mod(kernels.Col("auction"), kernels.Lit(int64(123))), kernels.Lit(int64(0)))),
		c.Parallelism, arrowflow.Forward(bids))
	sink(g, project(g, "q2", where, c, cols("auction", "price"), nil), c)
	return nil
}

// q5: SELECT AuctionBids.auction, AuctionBids.num FROM
// (SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
// FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
// GROUP BY auction, window_start, window_end) AuctionBids
// JOIN (SELECT max(num) AS maxn, starttime, endtime FROM (the same counts)
// GROUP BY starttime, endtime) MaxBids
// ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
// AND AuctionBids.num >= MaxBids.maxn
//
// The join of the counts with their window's maximum is a window top-1
// with ties over the counts.
func q5(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	counts := window.Aggregate{Input: nexmark.BidSchema(), Time: "dateTime", Window: window.Hopping(10*time.Second, 2*time.Second),
		Keys: []string{"auction"}, Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "num"}}}
	countsOut, err := counts.OutputSchema()
	if err != nil {
		return err
	}
	hot := window.TopN{Input: countsOut, WindowStart: "window_start", WindowEnd: "window_end",
		OrderBy: []window.OrderKey{{Column: "num", Desc: true}}, N: 1, WithTies: true,
		KeyBy: []string{"window_start", "window_end"}}
	if err := hot.Validate(); err != nil {
		return err
	}
	agg := g.Operator("bids-per-auction", counts.Factory(), c.Parallelism, arrowflow.KeyBy(bids, "auction"))
	top := g.Operator("hot-items", hot.Factory(), c.Parallelism, arrowflow.KeyBy(agg, hot.KeyBy...))
	sink(g, project(g, "q5", top, c, cols("auction", "num"), nil), c)
	return nil
}

// q7: SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra FROM bid B
// JOIN (SELECT MAX(price) AS maxprice, window_end AS dateTime
// FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
// GROUP BY window_start, window_end) B1 ON B.price = B1.maxprice
// WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime
//
// Computed as a window top-1 with ties over the bids, in two phases (each
// subtask keeps only its running maximum's bids; a final phase keyed by
// window merges them). One difference: the SQL's BETWEEN also matches a
// bid at exactly a window's end (which belongs to the next window) whose
// price equals that window's maximum; here a bid counts in its own
// window only.
func q7(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	highest := window.TopN{Input: nexmark.BidSchema(), Time: "dateTime", Window: window.Tumbling(10 * time.Second),
		OrderBy: []window.OrderKey{{Column: "price", Desc: true}}, N: 1, WithTies: true}
	if err := highest.Validate(); err != nil {
		return err
	}
	final, err := highest.Final()
	if err != nil {
		return err
	}
	local := g.Operator("highest-local", highest.Local().Factory(), c.Parallelism, arrowflow.Forward(bids))
	top := g.Operator("highest", final.Factory(), c.Parallelism, arrowflow.KeyBy(local, final.KeyBy...))
	sink(g, project(g, "q7", top, c, cols("auction", "price", "bidder", "dateTime", "extra"), nil), c)
	return nil
}

// q8: SELECT P.id, P.name, P.starttime FROM
// (SELECT id, name, window_start AS starttime, window_end AS endtime
// FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
// GROUP BY id, name, window_start, window_end) P
// JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
// FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
// GROUP BY seller, window_start, window_end) A
// ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime
//
// Person ids are unique, so the grouped join is a window semi join.
func q8(g *arrowflow.Graph, c Config) error {
	src := g.Source("nexmark", c.Source, c.Parallelism)
	persons := eventsOf(g, src, c, nexmark.PersonEvent)
	auctions := eventsOf(g, src, c, nexmark.AuctionEvent)
	j := window.Join{
		Left: nexmark.PersonSchema(), Right: nexmark.AuctionSchema(), LeftTime: "dateTime", RightTime: "dateTime",
		LeftKeys: []string{"id"}, RightKeys: []string{"seller"}, Window: window.Tumbling(10 * time.Second),
		Kind: window.JoinSemi, LeftColumns: []string{"id", "name"},
	}
	if err := j.Validate(); err != nil {
		return err
	}
	join := g.Operator("new-users", j.Factory(), c.Parallelism, arrowflow.KeyBy(persons, "id"), arrowflow.KeyBy(auctions, "seller"))
	sink(g, project(g, "q8", join, c, cols("id", "name", "window_start"), []string{"id", "name", "starttime"}), c)
	return nil
}

// q11: SELECT bidder, count(*) AS bid_count,
// SESSION_START(dateTime, INTERVAL '10' SECOND) AS starttime,
// SESSION_END(dateTime, INTERVAL '10' SECOND) AS endtime
// FROM bid GROUP BY bidder, SESSION(dateTime, INTERVAL '10' SECOND)
func q11(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	agg := window.Aggregate{Input: nexmark.BidSchema(), Time: "dateTime", Window: window.Session(10 * time.Second),
		Keys: []string{"bidder"}, Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "bid_count"}}}
	if err := agg.Validate(); err != nil {
		return err
	}
	sessions := g.Operator("sessions", agg.Factory(), c.Parallelism, arrowflow.KeyBy(bids, "bidder"))
	sink(g, sessions, c)
	return nil
}

// q12: SELECT bidder, count(*) AS bid_count, window_start, window_end
// FROM TABLE(TUMBLE(TABLE (SELECT *, PROCTIME() AS p_time FROM bid),
// DESCRIPTOR(p_time), INTERVAL '10' SECOND))
// GROUP BY bidder, window_start, window_end
func q12(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	agg := window.Aggregate{Input: nexmark.BidSchema(), ProcessingTime: true, Window: window.Tumbling(10 * time.Second),
		Keys: []string{"bidder"}, Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "bid_count"}}}
	if err := agg.Validate(); err != nil {
		return err
	}
	sink(g, g.Operator("proctime-windows", agg.Factory(), c.Parallelism, arrowflow.KeyBy(bids, "bidder")), c)
	return nil
}

// q14: SELECT auction, bidder, 0.908 * price AS price,
// CASE WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
// WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
// ELSE 'otherTime' END AS bidTimeType, dateTime, extra,
// count_char(extra, 'c') AS c_counts
// FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000
//
// count_char is the suite's user-defined function; here it is a Go
// function over the string column's bytes.
func q14(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	where := g.Operator("where", ops.Where(kernels.And(kernels.Greater(euros(), kernels.Lit(1_000_000.0)), kernels.Less(euros(), kernels.Lit(50_000_000.0)))),
		c.Parallelism, arrowflow.Forward(bids))
	hour := kernels.Extract("hour", kernels.Col("dateTime"))
	timeType := kernels.Case(kernels.And(kernels.GreaterEq(hour, kernels.Lit(int64(8))), kernels.LessEq(hour, kernels.Lit(int64(18)))), kernels.Lit("dayTime")).
		When(kernels.Or(kernels.LessEq(hour, kernels.Lit(int64(6))), kernels.GreaterEq(hour, kernels.Lit(int64(20)))), kernels.Lit("nightTime")).
		Otherwise(kernels.Lit("otherTime"))
	proj := project(g, "q14", where, c,
		[]kernels.Expr{kernels.Col("auction"), kernels.Col("bidder"), euros(), timeType, kernels.Col("dateTime"), kernels.Col("extra")},
		[]string{"auction", "bidder", "price", "bidTimeType", "dateTime", "extra"})
	counts := g.Operator("count_char", ops.MapRecords(func(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
		return appendCountChar(mem, rec, "extra", 'c', "c_counts")
	}), c.Parallelism, arrowflow.Forward(proj))
	sink(g, counts, c)
	return nil
}

// appendCountChar returns rec with a column name holding, per row, how
// many times ch occurs in the string column col (null for null).
func appendCountChar(mem memory.Allocator, rec arrow.RecordBatch, col string, ch byte, name string) (arrow.RecordBatch, error) {
	idx := rec.Schema().FieldIndices(col)
	if len(idx) != 1 {
		return nil, fmt.Errorf("count_char: no column %q", col)
	}
	strs, ok := rec.Column(idx[0]).(*array.String)
	if !ok {
		return nil, fmt.Errorf("count_char: column %q is %s, not a string", col, rec.Column(idx[0]).DataType())
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(strs.Len())
	data, offsets := strs.ValueBytes(), strs.ValueOffsets()
	base := offsets[0]
	for i := 0; i < strs.Len(); i++ {
		if strs.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.UnsafeAppend(int64(bytes.Count(data[offsets[i]-base:offsets[i+1]-base], []byte{ch})))
	}
	counts := b.NewArray()
	defer counts.Release()
	fields := append(slices.Clone(rec.Schema().Fields()), arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	cols := append(slices.Clone(rec.Columns()), counts)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

// channelIDPattern is q21's regular expression.
const channelIDPattern = "(&|^)channel_id=([^&]*)"

// q21: SELECT auction, bidder, price, channel,
// CASE WHEN lower(channel) = 'apple' THEN '0'
// WHEN lower(channel) = 'google' THEN '1'
// WHEN lower(channel) = 'facebook' THEN '2'
// WHEN lower(channel) = 'baidu' THEN '3'
// ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END AS channel_id
// FROM bid WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
// OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')
func q21(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	lower := kernels.Lower(kernels.Col("channel"))
	extract := kernels.Call("regexp_extract", kernels.Col("url"), kernels.Lit(channelIDPattern), kernels.Lit(int64(2)))
	where := g.Operator("where", ops.Where(kernels.Or(kernels.IsNotNull(extract),
		kernels.In(lower, kernels.Lit("apple"), kernels.Lit("google"), kernels.Lit("facebook"), kernels.Lit("baidu")))),
		c.Parallelism, arrowflow.Forward(bids))
	id := kernels.Case(kernels.Eq(lower, kernels.Lit("apple")), kernels.Lit("0")).
		When(kernels.Eq(lower, kernels.Lit("google")), kernels.Lit("1")).
		When(kernels.Eq(lower, kernels.Lit("facebook")), kernels.Lit("2")).
		When(kernels.Eq(lower, kernels.Lit("baidu")), kernels.Lit("3")).
		Otherwise(extract)
	sink(g, project(g, "q21", where, c,
		[]kernels.Expr{kernels.Col("auction"), kernels.Col("bidder"), kernels.Col("price"), kernels.Col("channel"), id},
		[]string{"auction", "bidder", "price", "channel", "channel_id"}), c)
	return nil
}

// q22: SELECT auction, bidder, price, channel,
// SPLIT_INDEX(url, '/', 3) AS dir1, SPLIT_INDEX(url, '/', 4) AS dir2,
// SPLIT_INDEX(url, '/', 5) AS dir3 FROM bid
func q22(g *arrowflow.Graph, c Config) error {
	bids := events(g, c, nexmark.BidEvent)
	split := func(i int64) kernels.Expr {
		return kernels.Call("split_index", kernels.Col("url"), kernels.Lit("/"), kernels.Lit(i))
	}
	sink(g, project(g, "q22", bids, c,
		[]kernels.Expr{kernels.Col("auction"), kernels.Col("bidder"), kernels.Col("price"), kernels.Col("channel"), split(3), split(4), split(5)},
		[]string{"auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"}), c)
	return nil
}

func cols(names ...string) []kernels.Expr {
	out := make([]kernels.Expr, len(names))
	for i, n := range names {
		out[i] = kernels.Col(n)
	}
	return out
}
