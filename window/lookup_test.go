package window

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// lookupTestTable is a bounded in-memory table of (k BIGINT, v STRING)
// rows in two splits, whose rows a test can replace between loads.
type lookupTestTable struct {
	mu    sync.Mutex
	rows  [][2]any // k (int64 or nil), v
	opens int
}

var lookupTableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func (s *lookupTestTable) set(rows [][2]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = rows
}

func (s *lookupTestTable) Schema() *arrow.Schema { return lookupTableSchema }

func (s *lookupTestTable) Splits(context.Context) ([]string, error) { return []string{"a", "b"}, nil }

func (s *lookupTestTable) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opens++
	rd := &lookupTestReader{mem: info.Allocator}
	// Split a has the even rows, b the odd ones, each one batch with a
	// selection vector that drops nothing but is not nil.
	for _, sp := range splits {
		b := array.NewRecordBuilder(rd.mem, lookupTableSchema)
		var sel []int32
		for i, r := range s.rows {
			if (i%2 == 0) != (sp.Split == "a") {
				continue
			}
			if r[0] == nil {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(r[0].(int64))
			}
			b.Field(1).(*array.StringBuilder).Append(r[1].(string))
			sel = append(sel, int32(len(sel)))
		}
		rd.batches = append(rd.batches, arrowflow.Batch{Record: b.NewRecordBatch(), Sel: sel})
		b.Release()
	}
	return rd, nil
}

type lookupTestReader struct {
	mem     memory.Allocator
	batches []arrowflow.Batch
	zero    bool
}

func (r *lookupTestReader) Next(context.Context) (arrowflow.Batch, error) {
	if !r.zero { // a "nothing right now" first, as a real source may return
		r.zero = true
		return arrowflow.Batch{}, nil
	}
	if len(r.batches) == 0 {
		return arrowflow.Batch{}, io.EOF
	}
	b := r.batches[0]
	r.batches = r.batches[1:]
	return b, nil
}
func (r *lookupTestReader) Watermark() arrowflow.EventTime             { return arrowflow.MinEventTime }
func (r *lookupTestReader) Positions() ([]arrowflow.SplitState, error) { return nil, nil }
func (r *lookupTestReader) Close() error {
	for _, b := range r.batches {
		b.Release()
	}
	return nil
}

var lookupProbeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// probeBatch is a batch of (id, key) rows, keys nil for NULL, with every
// other row (the odd ids) selected out when sparse.
func probeBatch(mem memory.Allocator, keys []any, sparse bool) arrowflow.Batch {
	b := array.NewRecordBuilder(mem, lookupProbeSchema)
	defer b.Release()
	var sel []int32
	for i, k := range keys {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if k == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(k.(int64))
		}
		if !sparse || i%2 == 0 {
			sel = append(sel, int32(i))
		}
	}
	out := arrowflow.Batch{Record: b.NewRecordBatch()}
	if sparse {
		out.Sel = sel
	}
	return out
}

func lookupRows(t *testing.T, c *collector) []string {
	t.Helper()
	var out []string
	for _, b := range c.batches {
		for k := range b.NumRows() {
			out = append(out, strings.TrimSpace(fmt.Sprintln(b.RowValues(k)...)))
		}
	}
	slices.Sort(out)
	return out
}

// A lookup join matches each selected probe row with every table row of
// its key (duplicates too), drops NULL keys on both sides, pads unmatched
// rows in a LEFT join, and reads the table again once the TTL has passed
// on its clock, not before; it holds no state and leaks no memory.
func TestLookupJoinOperator(t *testing.T) {
	for _, kind := range []JoinKind{JoinInner, JoinLeftOuter} {
		t.Run(kind.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			table := &lookupTestTable{}
			table.set([][2]any{{int64(1), "one"}, {int64(2), "two"}, {int64(2), "deux"}, {nil, "null"}, {int64(3), "three"}})
			cfg := LookupJoin{Probe: lookupProbeSchema, ProbeKeys: []string{"key"}, Table: table, TableKeys: []string{"k"},
				Kind: kind, TTL: time.Minute, ProbeColumns: []string{"id"}, TableColumns: []string{"v"}, TablePrefix: "s."}
			out, err := cfg.OutputSchema()
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.Contains(got, "id: type=int64") || !strings.Contains(got, "s.v: type=utf8") {
				t.Errorf("schema %s", got)
			}
			clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
			op := cfg.Factory()()
			if err := op.Open(&arrowflow.TaskInfo{Name: "lookup", Parallelism: 1, Allocator: mem, Clock: clock}); err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			c := &collector{}
			defer c.release()
			// ids 0..5: keys 2, (1), nil, (2), 9, (3); odd ids not selected.
			if err := op.ProcessBatch(0, probeBatch(mem, []any{int64(2), int64(1), nil, int64(2), int64(9), int64(3)}, true), c); err != nil {
				t.Fatal(err)
			}
			want := []string{"0 deux", "0 two"}
			if kind == JoinLeftOuter {
				want = append(want, "2 <nil>", "4 <nil>")
			}
			slices.Sort(want)
			if got := lookupRows(t, c); !slices.Equal(got, want) {
				t.Fatalf("rows %q, want %q", got, want)
			}
			// The table changes; before the TTL the old one is used.
			table.set([][2]any{{int64(9), "nine"}, {int64(2), "zwei"}})
			clock.now = clock.now.Add(59 * time.Second)
			c.release()
			c.batches = nil
			if err := op.ProcessBatch(0, probeBatch(mem, []any{int64(9), int64(1)}, false), c); err != nil {
				t.Fatal(err)
			}
			want = []string{"1 one"}
			if kind == JoinLeftOuter {
				want = []string{"0 <nil>", "1 one"}
			}
			if got := lookupRows(t, c); !slices.Equal(got, want) {
				t.Fatalf("before the TTL: rows %q, want %q", got, want)
			}
			// Once the TTL has passed, the new table.
			clock.now = clock.now.Add(time.Second)
			c.release()
			c.batches = nil
			if err := op.ProcessBatch(0, probeBatch(mem, []any{int64(9), int64(1), int64(2)}, false), c); err != nil {
				t.Fatal(err)
			}
			want = []string{"0 nine", "2 zwei"}
			if kind == JoinLeftOuter {
				want = []string{"0 nine", "1 <nil>", "2 zwei"}
			}
			if got := lookupRows(t, c); !slices.Equal(got, want) {
				t.Fatalf("after the TTL: rows %q, want %q", got, want)
			}
			st := op.(LookupJoinStatsReporter).LookupJoinStats()
			if st.Loads != 2 || table.opens != 2 || st.TableRows != 2 || st.NullKeyRows != 1 {
				t.Errorf("stats %+v, %d opens", st, table.opens)
			}
			// No state: a snapshot writes nothing.
			if err := op.SnapshotState(1, nil); err != nil {
				t.Fatal(err)
			}
			if err := op.Finish(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Configurations the join cannot run say which field is at fault.
func TestLookupJoinValidate(t *testing.T) {
	table := &lookupTestTable{}
	base := LookupJoin{Probe: lookupProbeSchema, ProbeKeys: []string{"key"}, Table: table, TableKeys: []string{"k"}}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*LookupJoin)
		msg  string
	}{
		{"kind", func(j *LookupJoin) { j.Kind = JoinFullOuter }, "Kind FULL"},
		{"no keys", func(j *LookupJoin) { j.ProbeKeys, j.TableKeys = nil, nil }, "at least one key pair"},
		{"missing key", func(j *LookupJoin) { j.TableKeys = []string{"x"} }, `TableKeys: column "x"`},
		{"key types", func(j *LookupJoin) { j.TableKeys = []string{"v"} }, "cast one to the other's type"},
		{"duplicate output", func(j *LookupJoin) { j.ProbeColumns = []string{"id", "id"} }, "not unique"},
		{"negative ttl", func(j *LookupJoin) { j.TTL = -time.Second }, "negative"},
		{"no table", func(j *LookupJoin) { j.Table = nil }, "no table source"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := base
			c.edit(&j)
			if err := j.Validate(); err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Validate: %v, want %q", err, c.msg)
			}
		})
	}
}
