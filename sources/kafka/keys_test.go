package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/sinks/collect"
)

func jsonDecoderOf(t testing.TB, fields ...arrow.Field) format.Decoder {
	t.Helper()
	dec, err := format.NewDecoder(context.Background(), format.Config{Name: "json", Schema: arrow.NewSchema(fields, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

var (
	idField   = arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	tsField   = arrow.Field{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms}
	textField = arrow.Field{Name: "text", Type: arrow.BinaryTypes.String}
)

// keyedRecord is a test record with a JSON key {"id":..} and a JSON value
// {"id","ts","text"}, or a tombstone, or a bad key or value.
type keyedRecord struct {
	p          int32
	key        []byte // nil: no key
	id         int64  // the id of the value (and of the key when it is good)
	ts         int64  // millis
	text       string
	tombstone  bool
	badKey     bool
	badValue   bool
	valueNoKey bool // the value lacks "id" (EXCEPT_KEY values)
}

func (r keyedRecord) record(topic string) *kgo.Record {
	out := &kgo.Record{Topic: topic, Partition: r.p, Key: r.key}
	switch {
	case r.tombstone:
	case r.badValue:
		out.Value = []byte(`{"ts":"not a time"}`)
	case r.valueNoKey:
		out.Value = fmt.Appendf(nil, `{"ts":%d,"text":%q}`, r.ts, r.text)
	default:
		out.Value = fmt.Appendf(nil, `{"id":%d,"ts":%d,"text":%q}`, r.id, r.ts, r.text)
	}
	return out
}

// randomKeyed returns records over keys 0..keys-1, each key in the
// partition id mod 3, with tombstones, records without a key, bad keys and
// bad values mixed in.
func randomKeyed(rng *rand.Rand, n, keys int, exceptKey bool) []keyedRecord {
	var out []keyedRecord
	for i := range n {
		id := int64(rng.IntN(keys))
		r := keyedRecord{p: int32(id % 3), id: id, ts: t0.UnixMilli() + int64(i)*100, text: fmt.Sprintf("v%d", i), valueNoKey: exceptKey}
		r.key = fmt.Appendf(nil, `{"id":%d}`, id)
		switch rng.IntN(12) {
		case 0, 1:
			r.tombstone = true
		case 2:
			r.key = nil
		case 3:
			r.key, r.badKey = []byte(`{"id":"x"}`), true
		case 4:
			r.badValue = true
		}
		out = append(out, r)
	}
	return out
}

// A key format decodes record keys into the key columns, which take their
// place among the table's columns (Options.Columns): with the value's
// columns all there ('value.fields-include' = 'ALL') or the key's left out
// of the value ('EXCEPT_KEY', with a 'key.fields-prefix'). A record without
// a key has NULL key columns; a bad key or value is a bad record (the row
// is not added, whichever half was good); a tombstone is skipped and
// counted.
func TestKeyFormat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exceptKey bool
		prefix    string
		columns   []string
	}{
		{name: "ALL"},
		{name: "EXCEPT_KEY", exceptKey: true, columns: []string{"id", "ts", "text"}},
		{name: "EXCEPT_KEY/prefix", exceptKey: true, prefix: "k_", columns: []string{"ts", "k_id", "text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1)
			const topic = "keyed"
			c.createTopic(topic, 3)
			recs := randomKeyed(rand.New(rand.NewPCG(1, 2)), 300, 20, tc.exceptKey)
			var krecs []*kgo.Record
			var want []string
			skipped, tombstones := 0, 0
			for _, r := range recs {
				krecs = append(krecs, r.record(topic))
				switch {
				case r.tombstone:
					tombstones++
					continue
				case r.badKey && r.key != nil || r.badValue:
					skipped++
					continue
				}
				var key any = r.id
				if r.key == nil {
					key = nil
				}
				ts := time.UnixMilli(r.ts)
				vals := map[string]any{tc.prefix + "id": key, "ts": ts, "text": r.text}
				if !tc.exceptKey {
					vals["id"] = r.id // from the value
				}
				cols := tc.columns
				if cols == nil {
					cols = []string{"id", "ts", "text"}
				}
				var row []any
				for _, col := range cols {
					row = append(row, vals[col])
				}
				want = append(want, rowKey(append(row, int64(r.p))))
			}
			c.produce(c.producer(), krecs...)

			o := baseOptions(c, topic)
			if tc.exceptKey {
				o.Decoder = jsonDecoderOf(t, tsField, textField)
			} else {
				o.Decoder = jsonDecoderOf(t, idField, tsField, textField)
			}
			o.KeyDecoder = jsonDecoderOf(t, idField)
			o.KeyFieldsPrefix = tc.prefix
			o.Columns = tc.columns
			o.Metadata = []MetadataColumn{{Key: MetaPartition}}
			o.BoundedMode = BoundedLatest
			o.OnError = SkipOnError
			o.BatchSize = 16
			src := mustSource(t, o)
			if tc.columns != nil {
				for i, col := range tc.columns {
					if f := src.Schema().Field(i); f.Name != col {
						t.Fatalf("column %d is %s, want %s", i, f.Name, col)
					}
				}
			}
			rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
			var got []string
			for {
				b, err := rd.Next(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.IsZero() {
					continue
				}
				if b.Kinds != nil {
					t.Fatal("a batch of a row format with row kinds")
				}
				for k := range b.NumRows() {
					v := b.RowValues(k)
					if p, ok := v[3].(int32); ok {
						v[3] = int64(p)
					}
					got = append(got, rowKey(v))
				}
				b.Release()
			}
			sameMultiset(t, "rows", got, want)
			if st := src.Stats(); st.Skipped != int64(skipped) || st.Tombstones != int64(tombstones) {
				t.Errorf("skipped %d, tombstones %d; want %d, %d", st.Skipped, st.Tombstones, skipped, tombstones)
			}
		})
	}
}

// upsertOracle is the table a compacted topic describes: each key's last
// value, keys whose last record is a tombstone absent.
func upsertOracle(recs []keyedRecord, exceptKey bool) map[int64]string {
	out := map[int64]string{}
	for _, r := range recs {
		switch {
		case r.key == nil || r.badKey || r.badValue:
		case r.tombstone:
			delete(out, r.id)
		default:
			out[r.id] = rowKey([]any{r.id, time.UnixMilli(r.ts), r.text})
		}
	}
	return out
}

// An upsert source reads a compacted-style topic: a value is +I of its
// key's row, a tombstone -D with the key columns set and the others NULL,
// in offset order per partition; bad keys, records without a key and bad
// values go to the error policy. Normalized by key (the planner's
// changelog-normalize) at parallelism 2, the table equals the last value
// of every key, with key columns from the key (EXCEPT_KEY) or the value
// (ALL).
func TestUpsertSource(t *testing.T) {
	for _, exceptKey := range []bool{false, true} {
		t.Run(map[bool]string{false: "ALL", true: "EXCEPT_KEY"}[exceptKey], func(t *testing.T) {
			c := newCluster(t, 1)
			const topic = "upserts"
			c.createTopic(topic, 3)
			recs := randomKeyed(rand.New(rand.NewPCG(5, 6)), 400, 25, exceptKey)
			var krecs []*kgo.Record
			want := map[int32][]string{}
			bad := 0
			for _, r := range recs {
				krecs = append(krecs, r.record(topic))
				switch {
				case r.key == nil || r.badKey || r.badValue:
					bad++
				case r.tombstone:
					want[r.p] = append(want[r.p], fmt.Sprintf("%s|%s", arrowflow.Delete, rowKey([]any{r.id, nil, nil})))
				default:
					want[r.p] = append(want[r.p], fmt.Sprintf("%s|%s", arrowflow.Insert, rowKey([]any{r.id, time.UnixMilli(r.ts), r.text})))
				}
			}
			c.produce(c.producer(), krecs...)
			o := baseOptions(c, topic)
			o.Decoder = jsonDecoderOf(t, idField, tsField, textField)
			if exceptKey {
				o.Decoder = jsonDecoderOf(t, tsField, textField)
				o.Columns = []string{"id", "ts", "text"}
			}
			o.KeyDecoder = jsonDecoderOf(t, idField)
			o.Upsert = true
			o.BoundedMode = BoundedLatest
			o.OnError = SkipOnError
			o.BatchSize = 10

			src := mustSource(t, o)
			if f := src.Schema().Field(1); !f.Nullable {
				t.Error("a value column of an upsert source is not nullable (tombstones have none)")
			}
			rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
			got := map[int32][]string{}
			for {
				b, err := rd.Next(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.IsZero() {
					continue
				}
				ids, rowSplit := rd.BatchSplits()
				for k := range b.NumRows() {
					p, _ := ParsePartition(ids[rowSplit[b.Row(k)]])
					got[p.Partition] = append(got[p.Partition], fmt.Sprintf("%s|%s", b.Kind(k), rowKey(b.RowValues(k))))
				}
				b.Release()
			}
			for p := int32(0); p < 3; p++ {
				if strings.Join(got[p], "\n") != strings.Join(want[p], "\n") {
					t.Errorf("partition %d:\n%s\nwant:\n%s", p, strings.Join(got[p], "\n"), strings.Join(want[p], "\n"))
				}
			}
			if st := src.Stats(); st.Skipped != int64(bad) {
				t.Errorf("skipped %d, want %d", st.Skipped, bad)
			}

			// Through a job: source, key-by, normalize, collect.
			src = mustSource(t, o)
			g := arrowflow.NewGraph("upsert-test")
			n := g.Source("kafka", src, 2)
			norm := g.Operator("normalize", changelog.Normalize{Input: src.Schema(), Key: []string{"id"}}.Factory(), 2, arrowflow.KeyBy(n, "id"))
			sink := collect.New()
			g.Sink("collect", sink, 2, arrowflow.Forward(norm))
			job, err := g.Plan(arrowflow.Options{Allocator: newMem(t), CheckpointInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			table, err := sink.Table()
			if err != nil {
				t.Fatal(err)
			}
			oracle := upsertOracle(recs, exceptKey)
			var wantRows []string
			for _, r := range oracle {
				wantRows = append(wantRows, r)
			}
			sameMultiset(t, "normalized table", rowKeys(table), wantRows)
		})
	}
}

// Options of key decoding are checked.
func TestKeyOptions(t *testing.T) {
	c := newCluster(t, 1)
	base := func() Options {
		o := baseOptions(c, "t")
		o.Decoder = jsonDecoderOf(t, idField, tsField, textField)
		o.KeyDecoder = jsonDecoderOf(t, idField)
		return o
	}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"upsert without key", func(o *Options) { o.KeyDecoder, o.Upsert = nil, true }, "upsert mode needs a key format"},
		{"prefix without key", func(o *Options) { o.KeyDecoder, o.KeyFieldsPrefix = nil, "k_" }, "needs a key format"},
		{"upsert of changes", func(o *Options) { o.Decoder, o.Upsert = testChangeDecoder{}, true }, "upsert mode reads rows"},
		{"key of changes", func(o *Options) { o.KeyDecoder = testChangeDecoder{} }, "a key format decodes key columns"},
		{"type clash", func(o *Options) {
			o.KeyDecoder = jsonDecoderOf(t, arrow.Field{Name: "id", Type: arrow.BinaryTypes.String})
		}, "int64 in the value and utf8 in the key"},
		{"unknown column", func(o *Options) { o.Columns = []string{"id", "ts", "nope"} }, `"nope" is not a column`},
		{"missing column", func(o *Options) { o.Columns = []string{"id", "ts"} }, "lists 2 columns"},
	} {
		o := base()
		tc.edit(&o)
		_, err := NewSource(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
