package format

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/weirflow/weir/format/registry"
	"github.com/weirflow/weir/internal/testutil"
)

// newRegistry serves an in-memory registry on loopback for one test and
// returns its URL and a client of it.
func newRegistry(t testing.TB, opts ...registry.Option) (string, *sr.Client) {
	t.Helper()
	srv := httptest.NewServer(registry.New(opts...).Handler())
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	cl, err := sr.NewClient(sr.URLs(srv.URL), sr.HTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, cl
}

func TestConfluentRoundTrip(t *testing.T) {
	_, cl := newRegistry(t)
	for seed := range 40 {
		rng := rand.New(rand.NewPCG(uint64(seed), 19))
		schema := randomSchema(rng, avroTypes)
		mem := testutil.CheckedAllocator(t)
		rec := randomBatch(rng, mem, schema, avroTypes, 20)
		defer rec.Release()
		cfg := Config{Name: "avro-confluent", Schema: schema, Registry: cl,
			Options: map[string]string{"avro-confluent.subject": "rt-value"}}
		values := encodeAll(t, mustEncoder(t, cfg), rec)
		text, err := AvroSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		registered, err := cl.LookupSchema(context.Background(), "rt-value", sr.Schema{Schema: text})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if v[0] != 0 || binary.BigEndian.Uint32(v[1:5]) != uint32(registered.ID) {
				t.Fatalf("seed %d: header % x, want magic 0 and id %d", seed, v[:5], registered.ID)
			}
		}
		got := decodeAll(t, mustDecoder(t, cfg), mem, values)
		diffRows(t, rowsOf(rec), got)
	}
}

// TestConfluentEvolution decodes values written with two versions of a
// subject's schema into one set of columns, and takes the columns from the
// latest version when no schema is given.
func TestConfluentEvolution(t *testing.T) {
	url, cl := newRegistry(t)
	ctx := context.Background()
	v1 := `{"type":"record","name":"bid","fields":[{"name":"auction","type":"long"},{"name":"price","type":"int"}]}`
	v2 := `{"type":"record","name":"bid","fields":[{"name":"auction","type":"long"},{"name":"price","type":"long"},` +
		`{"name":"channel","type":["null","string"],"default":null}]}`
	var values [][]byte
	for _, c := range []struct {
		schema string
		value  map[string]any
	}{
		{v1, map[string]any{"auction": int64(1), "price": 10}},
		{v2, map[string]any{"auction": int64(2), "price": int64(1) << 40, "channel": map[string]any{"string": "web"}}},
		{v1, map[string]any{"auction": int64(3), "price": -5}},
	} {
		id, err := cl.RegisterSchema(ctx, "bids-value", sr.Schema{Schema: c.schema}, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := avro.Marshal(avro.MustParse(c.schema), c.value)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, append(confluentPrefix(id), b...))
	}
	// No schema: the columns are those of the latest version (v2), from a
	// client the decoder builds itself.
	dec := mustDecoder(t, Config{Name: "avro-confluent", Options: map[string]string{
		"avro-confluent.url": url, "avro-confluent.subject": "bids-value"}})
	want := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if !dec.Schema().Equal(want) {
		t.Fatalf("schema %s, want %s", dec.Schema(), want)
	}
	mem := testutil.CheckedAllocator(t)
	got := decodeAll(t, dec, mem, values)
	diffRows(t, [][]any{{int64(1), int64(10), nil}, {int64(2), int64(1) << 40, "web"}, {int64(3), int64(-5), nil}}, got)
	closeIdle(dec)
}

// closeIdle closes the idle connections of a decoder's own registry
// client (tests check for leaked goroutines).
func closeIdle(dec Decoder) {
	if d, ok := dec.(*confluentDecoder); ok {
		if hc, ok := d.client.OptValue(sr.HTTPClient).(*http.Client); ok && hc != nil {
			hc.CloseIdleConnections()
		}
	}
}

func TestConfluentRecordErrors(t *testing.T) {
	url, cl := newRegistry(t)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	good, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: `{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}`}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: `{"type":"record","name":"r","fields":[{"name":"a","type":"string"}]}`}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	jsonID, err := cl.RegisterSchema(ctx, "j", sr.Schema{Schema: `{}`, Type: sr.TypeJSON}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "avro-confluent", Schema: schema, Registry: cl})
	b := dec.NewBuilder(mem)
	defer b.Release()
	goodValue := append(confluentPrefix(good), 4)
	for _, c := range []struct {
		value  []byte
		field  string
		offset int
		msg    string
	}{
		{[]byte{0, 0, 0}, "", 0, "fewer than the 5-byte Confluent header"},
		{[]byte{1, 0, 0, 0, 1, 4}, "", 0, "magic byte 0x01"},
		{append(confluentPrefix(99), 4), "", 1, "schema id 99 is not in the registry"},
		{append(confluentPrefix(wrong), 2, 'x'), "", 1, "writer schema 2 does not resolve"},
		{append(confluentPrefix(jsonID), 2), "", 1, "a JSON schema, not Avro"},
		{append(confluentPrefix(good), 0x80), "a", 5, "unexpected end"},
		{append(confluentPrefix(good), 4, 4), "", 6, "bytes after the end"},
	} {
		before := b.Len()
		wantRecordError(t, b.Append(c.value), "avro-confluent", c.field, c.offset, c.msg)
		if b.Len() != before {
			t.Fatalf("% x: Len %d, want %d", c.value, b.Len(), before)
		}
		if err := b.Append(goodValue); err != nil {
			t.Fatalf("good value after % x: %v", c.value, err)
		}
	}

	// A registry that cannot be reached is not the record's fault.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	down, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	b2 := mustDecoder(t, Config{Name: "avro-confluent", Schema: schema, Registry: down}).NewBuilder(mem)
	defer b2.Release()
	err = b2.Append(goodValue)
	var re *RecordError
	if err == nil || errors.As(err, &re) {
		t.Fatalf("unreachable registry: %v, want an error that is not a RecordError", err)
	}
	_ = url
}

func TestConfluentOptions(t *testing.T) {
	url, _ := newRegistry(t, registry.BasicAuth("user", "secret"))
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ctx := context.Background()
	opts := map[string]string{
		"avro-confluent.schema-registry.url":  url,
		"avro-confluent.subject":              "a-value",
		"avro-confluent.basic-auth.user-info": "user:secret",
	}
	enc, err := NewEncoder(ctx, Config{Name: "avro-confluent", Schema: schema, Options: opts})
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	if e, ok := enc.(*avroEncoder); !ok || len(e.prefix) != 5 {
		t.Fatalf("encoder %T", enc)
	}
	opts["avro-confluent.basic-auth.user-info"] = "user:wrong"
	if _, err := NewEncoder(ctx, Config{Name: "avro-confluent", Schema: schema, Options: opts}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("wrong credentials: %v", err)
	}
	for _, c := range []struct {
		opts map[string]string
		msg  string
	}{
		{map[string]string{"avro-confluent.subject": "s"}, "avro-confluent.url (the schema registry's URL) is required"},
		{map[string]string{"avro-confluent.url": url}, "avro-confluent.subject is required"},
		{map[string]string{"avro-confluent.url": url, "avro-confluent.subject": "s", "avro-confluent.colour": "red"}, "unknown option avro-confluent.colour"},
	} {
		if _, err := NewEncoder(ctx, Config{Name: "avro-confluent", Schema: schema, Options: c.opts}); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.msg)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// TestConcurrentUse shares one decoder and one encoder between goroutines,
// each with its own builder (run with -race).
func TestConcurrentUse(t *testing.T) {
	_, cl := newRegistry(t)
	schema := jsonTestSchema
	cfg := Config{Name: "avro-confluent", Schema: schema, Registry: cl, Options: map[string]string{"avro-confluent.subject": "c-value"}}
	enc, dec := mustEncoder(t, cfg), mustDecoder(t, cfg)
	mem := testutil.CheckedAllocator(t)
	rec := randomBatch(rand.New(rand.NewPCG(1, 1)), mem, schema, avroTypes, 50)
	defer rec.Release()
	want := rowsOf(rec)
	done := make(chan error, 4)
	for range 4 {
		go func() {
			b := dec.NewBuilder(mem)
			defer b.Release()
			err := enc.Encode(rec, func(_ int, v []byte) error { return b.Append(v) })
			if err == nil {
				out := b.NewRecord()
				if got := rowsOf(out); len(got) != len(want) {
					err = errors.New("rows lost")
				}
				out.Release()
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
