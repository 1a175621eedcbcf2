package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/collect"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 30 * time.Second

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

// cluster is a kfake broker for one test.
type cluster struct {
	t     testing.TB
	c     *kfake.Cluster
	addrs []string
}

// newCluster starts a kfake cluster of one broker (or brokers) on
// 127.0.0.1 that the test closes on cleanup.
func newCluster(t testing.TB, brokers int) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers)) // listens on 127.0.0.1
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &cluster{t: t, c: c, addrs: c.ListenAddrs()}
}

func (c *cluster) createTopic(topic string, partitions int32) {
	c.t.Helper()
	if err := c.c.CreateTopic(topic, partitions, nil); err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// client returns a client of the cluster closed on cleanup.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// producer returns a client producing to explicit partitions.
func (c *cluster) producer(opts ...kgo.Opt) *kgo.Client {
	return c.client(append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}, opts...)...)
}

func (c *cluster) produce(cl *kgo.Client, recs ...*kgo.Record) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		c.t.Fatalf("produce: %v", err)
	}
}

// produceTxn produces recs in one transaction and commits or aborts it.
func (c *cluster) produceTxn(cl *kgo.Client, commit bool, recs ...*kgo.Record) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		c.t.Fatalf("begin txn: %v", err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		c.t.Fatalf("produce in txn: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		c.t.Fatalf("end txn: %v", err)
	}
}

func (c *cluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// valueOf is the test format's value: "id,tsMillis,text".
func valueOf(id, tsMillis int64, text string) []byte {
	return fmt.Appendf(nil, "%d,%d,%s", id, tsMillis, text)
}

// rec returns a record with the test format's value, timestamped tsMillis.
func rec(topic string, partition int32, id, tsMillis int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Value: valueOf(id, tsMillis, "v"+strconv.FormatInt(id, 10)),
		Timestamp: time.UnixMilli(tsMillis)}
}

// testSchema is the test decoder's schema.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "text", Type: arrow.BinaryTypes.String},
}, nil)

// testDecoder decodes "id,tsMillis,text" values: a tiny format.Decoder
// of our own, so that these tests do not depend on package format's
// decoders.
type testDecoder struct{}

func (testDecoder) Schema() *arrow.Schema { return testSchema }

func (testDecoder) NewBuilder(mem memory.Allocator) format.BatchBuilder {
	return &testBuilder{
		id:   array.NewInt64Builder(mem),
		ts:   array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_ms.(*arrow.TimestampType)),
		text: array.NewStringBuilder(mem),
	}
}

type testBuilder struct {
	id   *array.Int64Builder
	ts   *array.TimestampBuilder
	text *array.StringBuilder
	n    int
}

func (b *testBuilder) Append(v []byte) error {
	i := bytes.IndexByte(v, ',')
	j := -1
	if i >= 0 {
		if j = bytes.IndexByte(v[i+1:], ','); j >= 0 {
			j += i + 1
		}
	}
	if j < 0 {
		return &format.RecordError{Format: "test", Offset: -1, Err: fmt.Errorf("want id,ts,text, got %q", v)}
	}
	id, ok := parseInt(v[:i])
	if !ok {
		return &format.RecordError{Format: "test", Field: "id", Offset: 0, Err: fmt.Errorf("%q is not an integer", v[:i])}
	}
	ts, ok := parseInt(v[i+1 : j])
	if !ok {
		return &format.RecordError{Format: "test", Field: "ts", Offset: i + 1, Err: fmt.Errorf("%q is not an integer", v[i+1:j])}
	}
	b.id.Append(id)
	b.ts.Append(arrow.Timestamp(ts))
	b.text.BinaryBuilder.Append(v[j+1:])
	b.n++
	return nil
}

// parseInt parses a decimal integer without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func (b *testBuilder) Len() int { return b.n }

func (b *testBuilder) NewRecord() arrow.RecordBatch {
	arrs := []arrow.Array{b.id.NewArray(), b.ts.NewArray(), b.text.NewArray()}
	rec := array.NewRecordBatch(testSchema, arrs, int64(b.n))
	for _, a := range arrs {
		a.Release()
	}
	b.n = 0
	return rec
}

func (b *testBuilder) Release() {
	b.id.Release()
	b.ts.Release()
	b.text.Release()
}

// baseOptions reads topics of c with the test decoder.
func baseOptions(c *cluster, topics ...string) Options {
	return Options{Brokers: c.addrs, Topics: topics, Decoder: testDecoder{}}
}

func mustSource(t testing.TB, o Options) *Source {
	t.Helper()
	s, err := NewSource(o)
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	return s
}

// states returns split states from Positions or from scratch.
func splitStates(ids []string) []arrowflow.SplitState {
	out := make([]arrowflow.SplitState, len(ids))
	for i, id := range ids {
		out[i] = arrowflow.SplitState{Split: id}
	}
	return out
}

// subtaskStates deals ids as the runtime does: split i to subtask i mod par.
func subtaskStates(ids []string, positions map[string][]byte, subtask, par int) []arrowflow.SplitState {
	var out []arrowflow.SplitState
	for i, id := range ids {
		if i%par == subtask {
			out = append(out, arrowflow.SplitState{Split: id, Position: positions[id]})
		}
	}
	return out
}

func mustSplits(t testing.TB, s *Source) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ids, err := s.Splits(ctx)
	if err != nil {
		t.Fatalf("Splits: %v", err)
	}
	return ids
}

func openReader(t testing.TB, s *Source, mem memory.Allocator, subtask, par int, splits []arrowflow.SplitState) *reader {
	t.Helper()
	rd, err := s.Open(&arrowflow.TaskInfo{Subtask: subtask, Parallelism: par, Allocator: mem}, splits)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd.(*reader)
}

// readUntil reads batches until stop returns true for the rows so far,
// io.EOF, or the test timeout, and returns the rows and whether EOF came.
func readUntil(t testing.TB, rd arrowflow.SourceReader, stop func(rows [][]any) bool) (rows [][]any, eof bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !stop(rows) {
		if time.Now().After(deadline) {
			t.Fatalf("reader: timed out with %d rows", len(rows))
		}
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, true
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		rows = appendRows(t, rows, b)
	}
	return rows, false
}

// readToEOF reads until io.EOF.
func readToEOF(t testing.TB, rd arrowflow.SourceReader) [][]any {
	t.Helper()
	rows, eof := readUntil(t, rd, func([][]any) bool { return false })
	if !eof {
		t.Fatal("BUG: readUntil returned without EOF")
	}
	return rows
}

func appendRows(t testing.TB, rows [][]any, b arrowflow.Batch) [][]any {
	t.Helper()
	if b.IsZero() {
		return rows
	}
	defer b.Release()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < b.NumRows(); k++ {
		rows = append(rows, b.RowValues(k))
	}
	return rows
}

// ids returns the id column (first) of rows, sorted.
func ids(rows [][]any) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[0].(int64)
	}
	slices.Sort(out)
	return out
}

// rowKey formats a row for multiset comparison.
func rowKey(r []any) string {
	var sb strings.Builder
	for i, v := range r {
		if i > 0 {
			sb.WriteByte('|')
		}
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&sb, "%x", v)
		case time.Time:
			sb.WriteString(v.UTC().Format(time.RFC3339Nano))
		default:
			fmt.Fprint(&sb, v)
		}
	}
	return sb.String()
}

// sameMultiset fails unless got and want hold the same rows, as often.
func sameMultiset(t testing.TB, what string, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if slices.Equal(g, w) {
		return
	}
	count := map[string]int{}
	for _, k := range g {
		count[k]++
	}
	for _, k := range w {
		count[k]--
	}
	var diffs []string
	for k, n := range count {
		if n != 0 && len(diffs) < 10 {
			diffs = append(diffs, fmt.Sprintf("%+d× %s", n, k))
		}
	}
	slices.Sort(diffs)
	t.Fatalf("%s: %d rows, want %d; surplus(+)/missing(-) rows include:\n%s", what, len(g), len(w), strings.Join(diffs, "\n"))
}

// consumeCommitted reads every partition of topics with a plain franz-go
// read_committed consumer, from the start until the end offsets (last
// stable offsets) listed first, and returns the records. It is the oracle
// of what the source must produce for a bounded latest-offset read.
func (c *cluster) consumeCommitted(topics ...string) []*kgo.Record {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ends, err := c.admin().ListCommittedOffsets(ctx, topics...)
	if err != nil {
		c.t.Fatal(err)
	}
	cl := c.client(kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var out []*kgo.Record
	// A read_committed consumer never sees markers or aborted records, so
	// it cannot tell when it passed the end: it reads until a quiet spell.
	quiet := 0
	for quiet < 3 {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			c.t.Fatal("oracle consumer timed out")
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if e, ok := ends.Lookup(r.Topic, r.Partition); ok && r.Offset < e.Offset {
				out = append(out, r)
			}
		})
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return out
}

// runJob runs source -> collect sink at the given parallelism and
// returns the sink and the job.
func runJob(t testing.TB, src *Source, par int, opts arrowflow.Options) (*collect.Sink, *arrowflow.Job, error) {
	t.Helper()
	g := arrowflow.NewGraph("kafka-test")
	n := g.Source("kafka", src, par)
	sink := collect.New()
	g.Sink("collect", sink, par, arrowflow.Forward(n))
	job, err := g.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return sink, job, job.Run(ctx)
}

func rowKeys(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowKey(r)
	}
	return out
}

// pollFor polls cl for at most d.
func pollFor(cl *kgo.Client, d time.Duration) kgo.Fetches {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cl.PollFetches(ctx)
}
