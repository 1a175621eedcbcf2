package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/nexmarkref"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

// The Nexmark suite's own Flink SQL files (testdata/nexmark/suite, as the
// suite ships them: ddl_gen.sql, ddl_views.sql and qN.sql) run unmodified
// but for their ${...} placeholders, joined as the suite's runner joins
// them, and their rows are compared with plain Go answers
// (internal/nexmarkref) over the same events.

const suiteEvents = 30_000

// suiteScript is the suite's job for query q: ddl_gen.sql, ddl_views.sql
// and qN.sql with the placeholders substituted (events events at rate
// events per second, FLINK_HOME and NEXMARK_DIR dir). The generator's
// splits are weir's, not the suite's: the runner's parallelism is set by
// the test, which adds 'splits' to the generator table's options (0:
// the default).
func suiteScript(t *testing.T, q string, events, rate, splits int, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"ddl_gen.sql", "ddl_views.sql", q + ".sql"} {
		data, err := os.ReadFile(filepath.Join("testdata", "nexmark", "suite", f))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	s := strings.NewReplacer(
		"${TPS}", fmt.Sprint(rate),
		"${EVENTS_NUM}", fmt.Sprint(events),
		"${PERSON_PROPORTION}", "1",
		"${AUCTION_PROPORTION}", "3",
		"${BID_PROPORTION}", "46",
		"${NEXMARK_TABLE}", "datagen",
		"${FLINK_HOME}", dir,
		"${NEXMARK_DIR}", dir,
		"${SUBMIT_TIME}", "run",
	).Replace(b.String())
	if strings.Contains(s, "${") {
		t.Fatalf("%s: a placeholder is left: %s", q, s[strings.Index(s, "${"):][:40])
	}
	if splits == 0 {
		return s
	}
	return strings.Replace(s, "'connector' = 'nexmark',", fmt.Sprintf("'connector' = 'nexmark',\n    'splits' = '%d',", splits), 1)
}

// suiteRef reads the events of the suite's generator table with events
// events at rate events per second (any splits: an event depends only on
// its position).
func suiteRef(t *testing.T, events, rate int) nexmarkref.Events {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Events: int64(events), EventsPerSecond: int64(rate)})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := nexmarkref.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// suiteRun compiles and runs the suite's query q and returns its rows
// (formatted, sorted) and the generator the job read. The generator's
// splits are each in event-time order, so no operator may drop a row as
// late.
func suiteRun(t *testing.T, q string, par, rate, splits int, dir string) ([]string, *nexmark.Source) {
	t.Helper()
	out := collect.New()
	sinks := map[string]arrowflow.Sink{"nexmark_" + q: out}
	if q == "q10" {
		sinks = nil // its own filesystem sink; suiteRows reads the files
	}
	job, err := Compile(context.Background(), suiteScript(t, q, suiteEvents, rate, splits, dir),
		Options{Parallelism: par, ForceParallelism: true, Sinks: sinks})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var src *nexmark.Source
	for _, s := range job.Sources {
		if n, ok := s.(*nexmark.Source); ok {
			src = n
		}
	}
	if src == nil {
		t.Fatalf("%s: no nexmark source in the job", q)
	}
	rows, late := runGraphLate(t, job.Graph, out, nil)
	if late != 0 {
		t.Errorf("%s: %d rows dropped as late; the splits are in order, none may be", q, late)
	}
	return rows, src
}

// suiteAnswers computes each query's rows, formatted as runGraph does,
// in the suite's column orders.
func suiteAnswers(ev nexmarkref.Events) map[string][]string {
	ref := map[string][]string{}
	add := func(q string, vals ...any) { ref[q] = append(ref[q], fmtRow(vals...)) }
	named := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
	for _, b := range ev.Bids {
		add("q0", b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra)
		// q1 and q14: 0.908 * price is DECIMAL(23, 3), exact.
		eur := b.Price * 908
		price := fmt.Sprintf("%d.%03d", eur/1000, eur%1000)
		add("q1", b.Auction, b.Bidder, price, b.DateTime, b.Extra)
		if eur > 1_000_000_000 && eur < 50_000_000_000 {
			kind := "otherTime"
			switch h := b.DateTime.Hour(); {
			case h >= 8 && h <= 18:
				kind = "dayTime"
			case h <= 6 || h >= 20:
				kind = "nightTime"
			}
			add("q14", b.Auction, b.Bidder, price, kind, b.DateTime, b.Extra, strings.Count(b.Extra, "c"))
		}
		add("q10", b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra, b.DateTime.Format("2006-01-02"), b.DateTime.Format("15:04"))
		add("q13", b.Auction, b.Bidder, b.Price, b.DateTime, sideValue(b.Auction%10000))
		if b.Auction%123 == 0 {
			add("q2", b.Auction, b.Price)
		}
		if id, ok := named[strings.ToLower(b.Channel)]; ok {
			add("q21", b.Auction, b.Bidder, b.Price, b.Channel, id)
		} else if id, ok := nexmarkref.ChannelID(b.URL); ok {
			add("q21", b.Auction, b.Bidder, b.Price, b.Channel, id)
		}
		dir := func(i int) any {
			if d, ok := nexmarkref.URLDir(b.URL, i); ok {
				return d
			}
			return nil
		}
		add("q22", b.Auction, b.Bidder, b.Price, b.Channel, dir(3), dir(4), dir(5))
	}
	for _, c := range nexmarkref.HotItems(ev.Bids) {
		add("q5", c.Auction, c.Bids)
	}
	for _, b := range nexmarkref.HighestBids(ev.Bids, true) {
		// The suite's q7 selects auction, price, bidder into a table
		// declared (auction, bidder, price): INSERT goes by position.
		add("q7", b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra)
	}
	for _, u := range nexmarkref.NewUsers(ev.Persons, ev.Auctions) {
		add("q8", u.ID, u.Name, u.Window)
	}
	for _, s := range nexmarkref.Sessions(ev.Bids, 10*time.Second) {
		add("q11", s.Bidder, s.Bids, s.Start, s.End)
	}
	for _, rows := range ref {
		slices.Sort(rows)
	}
	return ref
}

// suiteQueries are the suite's queries this test runs to an exact
// answer.
var suiteQueries = []string{"q0", "q1", "q2", "q5", "q7", "q8", "q10", "q11", "q13", "q14", "q21", "q22"}

// suiteRows runs the suite's query q and returns its rows: what its sink
// collected, or for q10 what its csv files hold (every partition with
// its success file at the end of the input). q13's side input is written
// first.
func suiteRows(t *testing.T, q string, par, rate, splits int) ([]string, *nexmark.Source) {
	t.Helper()
	dir := t.TempDir()
	if q == "q13" {
		writeSideInput(t, dir)
	}
	rows, src := suiteRun(t, q, par, rate, splits, dir)
	if q == "q10" {
		table := filepath.Join(dir, "data", "output", "run", "bid")
		var partitions map[string]bool
		rows, partitions = readQ10(t, table)
		checkQ10Success(t, table, partitions)
	}
	return rows, src
}

func TestNexmarkSuiteFiles(t *testing.T) {
	answers := map[int]map[string][]string{} // by rate
	for _, rate := range []int{1000, 10000} {
		for _, par := range []int{1, 2, 4} {
			for _, splits := range []int{1, 8, 50} {
				for _, q := range suiteQueries {
					t.Run(fmt.Sprintf("%s/r%d/p%d/s%d", q, rate, par, splits), func(t *testing.T) {
						got, src := suiteRows(t, q, par, rate, splits)
						if answers[rate] == nil {
							ev, err := nexmarkref.Read(src)
							if err != nil {
								t.Fatal(err)
							}
							if len(ev.Bids) != suiteEvents*46/50 {
								t.Fatalf("%d bids in %d events, want 46 in 50", len(ev.Bids), suiteEvents)
							}
							answers[rate] = suiteAnswers(ev)
						}
						want := answers[rate][q]
						if len(want) == 0 {
							t.Fatalf("the answer of %s is empty: the test checks nothing", q)
						}
						if !slices.Equal(got, want) {
							i := 0
							for i < min(len(got), len(want)) && got[i] == want[i] {
								i++
							}
							t.Fatalf("%d rows, the answer has %d; first difference at row %d: %q, answer %q", len(got), len(want), i, first(got[i:]), first(want[i:]))
						}
					})
				}
			}
		}
	}
}

// q12 counts on processing time: its windows depend on when rows
// arrive, so only the total is checked: every bid is counted once.
func TestNexmarkSuiteQ12CountsEveryBid(t *testing.T) {
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			rows, _ := suiteRun(t, "q12", par, 10000, 8, t.TempDir())
			var total int64
			for _, r := range rows {
				var n int64
				if _, err := fmt.Sscan(strings.Split(r, " | ")[1], &n); err != nil {
					t.Fatalf("row %q: %v", r, err)
				}
				total += n
			}
			if want := int64(suiteEvents * 46 / 50); total != want {
				t.Fatalf("q12 counted %d bids, the events hold %d", total, want)
			}
		})
	}
}
