package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
)

// testChangeDecoder decodes change events of the test format, a tiny
// format.ChangeDecoder of our own:
//
//	"+id,ts,text"             an insert (one +I row)
//	"-id,ts,text"             a delete (one -D row)
//	"~id,ts,text~id,ts,text"  an update (a -U row, then a +U row)
//	"0"                       an event that changes nothing (no row)
type testChangeDecoder struct{}

func (testChangeDecoder) Schema() *arrow.Schema { return testSchema }

func (d testChangeDecoder) NewBuilder(mem memory.Allocator) format.BatchBuilder {
	return d.NewChangeBuilder(mem)
}

func (testChangeDecoder) NewChangeBuilder(mem memory.Allocator) format.ChangeBatchBuilder {
	return &testChangeBuilder{rows: testDecoder{}.NewBuilder(mem).(*testBuilder)}
}

type testChangeBuilder struct {
	rows  *testBuilder
	kinds []arrowflow.RowKind
}

func (b *testChangeBuilder) Append(v []byte) error {
	_, err := b.AppendChange(v)
	return err
}

func (b *testChangeBuilder) AppendChange(v []byte) (int, error) {
	bad := func(why string) (int, error) {
		return 0, &format.RecordError{Format: "test-changes", Offset: 0, Err: fmt.Errorf("%s: %q", why, v)}
	}
	if len(v) == 0 {
		return bad("empty event")
	}
	var images [][]byte
	var kinds []arrowflow.RowKind
	switch v[0] {
	case '0':
		if len(v) != 1 {
			return bad("no-op event with a body")
		}
		return 0, nil
	case '+':
		images, kinds = [][]byte{v[1:]}, []arrowflow.RowKind{arrowflow.Insert}
	case '-':
		images, kinds = [][]byte{v[1:]}, []arrowflow.RowKind{arrowflow.Delete}
	case '~':
		images = bytes.Split(v[1:], []byte("~"))
		if len(images) != 2 {
			return bad("an update needs a before and an after image")
		}
		kinds = []arrowflow.RowKind{arrowflow.UpdateBefore, arrowflow.UpdateAfter}
	default:
		return bad("unknown operation")
	}
	// Check every image before adding any, so that a bad event adds
	// nothing.
	for _, im := range images {
		if bytes.Count(im, []byte(",")) < 2 {
			return bad("image is not id,ts,text")
		}
		if _, ok := parseInt(im[:bytes.IndexByte(im, ',')]); !ok {
			return bad("id is not an integer")
		}
		rest := im[bytes.IndexByte(im, ',')+1:]
		if _, ok := parseInt(rest[:bytes.IndexByte(rest, ',')]); !ok {
			return bad("ts is not an integer")
		}
	}
	for _, im := range images {
		if err := b.rows.Append(im); err != nil {
			panic("BUG: checked image rejected: " + err.Error())
		}
	}
	b.kinds = append(b.kinds, kinds...)
	return len(images), nil
}

func (b *testChangeBuilder) Len() int { return b.rows.Len() }

func (b *testChangeBuilder) NewRecord() arrow.RecordBatch {
	b.kinds = b.kinds[:0]
	return b.rows.NewRecord()
}

func (b *testChangeBuilder) NewChangeRecord() (arrow.RecordBatch, []arrowflow.RowKind) {
	kinds := b.kinds
	b.kinds = nil // the batch owns its kinds from here on
	return b.rows.NewRecord(), kinds
}

func (b *testChangeBuilder) Release() { b.rows.Release() }

// changeEvent is one test change event and the rows it must give.
type changeEvent struct {
	value []byte
	rows  []string // "kind|id|ts|text"
}

func imageOf(id, ts int64) string { return fmt.Sprintf("%d,%d,v%d", id, ts, id) }

func rowOf(kind arrowflow.RowKind, id, ts int64) string {
	return fmt.Sprintf("%s|%d|%s|v%d", kind, id, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), id)
}

// A change decoder's events become rows with their row kinds: one event
// gives no row, one row or two (an update), each with the metadata of its
// record and the index of its partition (BatchSplits); the watermark of each
// partition follows the rows' event times; tombstones are skipped and
// counted; a bad event goes to the error policy and adds nothing.
func TestChangeDecoderRows(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "changes"
	c.createTopic(topic, 3)
	var recs []*kgo.Record
	want := map[int32][]string{} // per partition, in offset order: "kind|id|ts|text|partition|offset"
	offsets := map[int32]int64{}
	bad, tombstones := 0, 0
	for i := int64(0); i < 120; i++ {
		p := int32(i % 3)
		ts := t0.UnixMilli() + i*250 - (i*7%5)*100
		var ev changeEvent
		switch i % 8 {
		case 0, 3:
			ev = changeEvent{[]byte("+" + imageOf(i, ts)), []string{rowOf(arrowflow.Insert, i, ts)}}
		case 1:
			ev = changeEvent{[]byte("-" + imageOf(i, ts)), []string{rowOf(arrowflow.Delete, i, ts)}}
		case 2, 6:
			ev = changeEvent{[]byte("~" + imageOf(i, ts-1000) + "~" + imageOf(i+1000, ts)),
				[]string{rowOf(arrowflow.UpdateBefore, i, ts-1000), rowOf(arrowflow.UpdateAfter, i+1000, ts)}}
		case 4:
			ev = changeEvent{[]byte("0"), nil}
		case 5:
			ev = changeEvent{[]byte("~" + imageOf(i, ts) + "~x,1,y"), nil} // bad after image
			bad++
		case 7:
			ev = changeEvent{nil, nil} // a tombstone
			tombstones++
		}
		off := offsets[p]
		offsets[p]++
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: ev.value})
		for _, r := range ev.rows {
			want[p] = append(want[p], fmt.Sprintf("%s|%d|%d", r, p, off))
		}
	}
	c.produce(c.producer(), recs...)

	const bound = 2 * time.Second
	o := baseOptions(c, topic)
	o.Decoder = testChangeDecoder{}
	o.Metadata = []MetadataColumn{{Key: MetaPartition}, {Key: MetaOffset}}
	o.EventTime = "ts"
	o.MaxOutOfOrderness = bound
	o.OnError = SkipOnError
	o.BoundedMode = BoundedLatest
	o.BatchSize = 7
	src := mustSource(t, o)
	rd := openReader(t, src, newMem(t), 0, 1, splitStates(mustSplits(t, src)))
	got := map[int32][]string{}
	oracle := &wmOracle{bound: bound, max: map[int64]arrowflow.EventTime{}}
	for {
		b, err := rd.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if b.IsZero() {
			continue
		}
		if b.Kinds == nil || len(b.Kinds) != int(b.Record.NumRows()) {
			t.Fatalf("batch of %d rows has %d row kinds", b.Record.NumRows(), len(b.Kinds))
		}
		if b.NumRows() > o.BatchSize+1 {
			t.Fatalf("batch of %d rows, batch size %d (an event adds at most 2 rows)", b.NumRows(), o.BatchSize)
		}
		ids, rowSplit := rd.BatchSplits()
		if len(rowSplit) != b.NumRows() {
			t.Fatalf("BatchSplits gives %d rows, the batch has %d", len(rowSplit), b.NumRows())
		}
		var rows [][]any
		for k := range b.NumRows() {
			v := b.RowValues(k)
			p := int32(v[3].(int64))
			if want := (Partition{Topic: topic, Partition: p}).String(); ids[rowSplit[k]] != want {
				t.Fatalf("row %d of partition %d: BatchSplits says split %s", k, p, ids[rowSplit[k]])
			}
			got[p] = append(got[p], fmt.Sprintf("%s|%s", b.Kind(k), rowKey(v)))
			rows = append(rows, []any{v[0], v[1], v[2], v[3], int64(p)})
		}
		b.Release()
		oracle.observe(rows)
		w := oracle.watermark(0, 1, 2)
		if rd.active == 0 {
			w = arrowflow.MaxEventTime // every partition reached its end
		}
		if g := rd.Watermark(); g != w {
			t.Fatalf("watermark %s, want %s", g, w)
		}
	}
	for p := int32(0); p < 3; p++ {
		if strings.Join(got[p], "\n") != strings.Join(want[p], "\n") {
			t.Errorf("partition %d rows:\n%s\nwant:\n%s", p, strings.Join(got[p], "\n"), strings.Join(want[p], "\n"))
		}
	}
	st := src.Stats()
	if st.Skipped != int64(bad) || st.Tombstones != int64(tombstones) {
		t.Errorf("skipped %d, tombstones %d; want %d, %d", st.Skipped, st.Tombstones, bad, tombstones)
	}
	n := 0
	for _, rows := range want {
		n += len(rows)
	}
	if st.Records != int64(n) {
		t.Errorf("Stats.Records = %d, want %d rows", st.Records, n)
	}
}

// debezium-json events (package format's ChangeDecoder) through the
// source: c and r are +I, u is -U then +U, d is -D, in offset order, each
// row with its record's offset.
func TestDebeziumJSONRows(t *testing.T) {
	c := newCluster(t, 1)
	const topic = "dbz"
	c.createTopic(topic, 1)
	img := func(id, ts int64) string { return fmt.Sprintf(`{"id":%d,"ts":%d,"text":"v%d"}`, id, ts, id) }
	ts := t0.UnixMilli()
	events := []struct {
		value string
		rows  []string
	}{
		{`{"before":null,"after":` + img(1, ts) + `,"op":"c"}`, []string{rowOf(arrowflow.Insert, 1, ts)}},
		{`{"before":null,"after":` + img(2, ts+1) + `,"op":"r"}`, []string{rowOf(arrowflow.Insert, 2, ts+1)}},
		{`{"before":` + img(1, ts) + `,"after":` + img(3, ts+2) + `,"op":"u"}`, []string{rowOf(arrowflow.UpdateBefore, 1, ts), rowOf(arrowflow.UpdateAfter, 3, ts+2)}},
		{`{"before":` + img(2, ts+1) + `,"after":null,"op":"d"}`, []string{rowOf(arrowflow.Delete, 2, ts+1)}},
	}
	var recs []*kgo.Record
	var want []string
	for i, e := range events {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(e.value)})
		for _, r := range e.rows {
			want = append(want, fmt.Sprintf("%s|%d", r, i))
		}
	}
	recs = append(recs, &kgo.Record{Topic: topic}) // debezium's tombstone after a delete: skipped
	c.produce(c.producer(), recs...)
	dec, err := format.NewDecoder(context.Background(), format.Config{Name: format.DebeziumJSON, Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dec.(format.ChangeDecoder); !ok {
		t.Fatalf("the debezium-json decoder %T is not a format.ChangeDecoder", dec)
	}
	o := baseOptions(c, topic)
	o.Decoder = dec
	o.Metadata = []MetadataColumn{{Key: MetaOffset}}
	o.BoundedMode = BoundedLatest
	src := mustSource(t, o)
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
		for k := range b.NumRows() {
			got = append(got, fmt.Sprintf("%s|%s", b.Kind(k), rowKey(b.RowValues(k))))
		}
		b.Release()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := src.Stats(); st.Tombstones != 1 {
		t.Errorf("tombstones %d, want 1", st.Tombstones)
	}
}
