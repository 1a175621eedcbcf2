package format

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/sr"
)

// FuzzRegistryReply serves an arbitrary status and body as the schema
// registry's every reply, and checks what the avro-confluent format makes
// of it: fetching a writer schema by the id in a value's Confluent header,
// taking the columns from a subject's latest schema, and registering the
// encoder's schema. The format must never panic, must blame the record
// (a *RecordError, which the connector's bad-record policy counts) only
// for what is the record's fault (no such id, a schema that is not Avro
// or does not fit the columns), and must not write a header whose id is
// not the one the registry gave.

// replyServer serves one status and body to every request, counting them.
type replyServer struct {
	mu       sync.Mutex
	status   int
	body     []byte
	requests int
}

func (s *replyServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	status, body := s.status, s.body
	s.requests++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // some statuses take no body
}

func (s *replyServer) set(status int, body []byte) {
	s.mu.Lock()
	s.status, s.body, s.requests = status, body, 0
	s.mu.Unlock()
}

func (s *replyServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// replyColumns are the columns the fuzzed decoders and encoder use.
var replyColumns = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// replyWriter is an Avro schema of replyColumns, and replyValue a value of
// it with schema id 1.
const replyWriter = `{"type":"record","name":"r","fields":[{"name":"i","type":["null","long"]},{"name":"s","type":["null","string"]}]}`

var replyValue = []byte{0, 0, 0, 0, 1, 2, 84, 2, 4, 'h', 'i'}

func FuzzRegistryReply(f *testing.F) {
	quoted := func(s string) string { return strconv.Quote(s) }
	for _, c := range []struct {
		status int
		body   string
		value  []byte
	}{
		{200, `{"schema":` + quoted(replyWriter) + `}`, replyValue},
		{200, `{"subject":"x","version":1,"id":1,"schema":` + quoted(replyWriter) + `}`, replyValue},
		{200, `{"schema":` + quoted(replyWriter) + `,"schemaType":"AVRO","references":[]}`, replyValue[:7]},
		{200, `{"schema":` + quoted(replyWriter) + `,"references":[{"name":"a","subject":"b","version":1}]}`, replyValue},
		{200, `{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}`, replyValue},
		{200, `{"schema":"{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"i\",\"type\":\"string\"}]}"}`, replyValue},
		{200, `{"schema":"{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"i\",\"type\":\"int\"},{\"name\":\"s\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}}]}"}`, []byte{0, 0, 0, 0, 9, 6, 0}},
		{200, `{"schema":"{"}`, replyValue},
		{200, `not json`, replyValue},
		{200, ``, replyValue},
		{200, `{"id":7}`, replyValue},
		{200, `{"id":-1}`, replyValue},
		{200, `{"id":4294967297}`, replyValue},
		{200, `{"id":0}`, replyValue},
		{404, `{"error_code":40403,"message":"Schema not found"}`, replyValue},
		{404, `{"error_code":40401,"message":"Subject 'x' not found."}`, replyValue},
		{500, `{"error_code":50001,"message":"boom"}`, replyValue},
		{401, `{"error_code":401,"message":"Unauthorized"}`, replyValue},
		{302, ``, replyValue},
		{200, `{"schema":` + quoted(replyWriter) + `}`, []byte{1, 0, 0, 0, 1}},
		{200, `{"schema":` + quoted(replyWriter) + `}`, []byte{0, 0}},
	} {
		f.Add(uint16(c.status), []byte(c.body), c.value)
	}
	srv := &replyServer{status: 200}
	ts := httptest.NewServer(srv)
	tr := &http.Transport{}
	f.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.Close()
	})
	cl, err := sr.NewClient(sr.URLs(ts.URL), sr.HTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, status uint16, body, value []byte) {
		// Statuses from 200 to 599: 1xx are not replies, and the client
		// follows redirects itself.
		code := int(status)
		if code < 200 || code > 599 {
			code = 200 + code%400
		}
		if code == 301 || code == 302 || code == 303 || code == 307 || code == 308 {
			return
		}
		srv.set(code, body)
		if code == http.StatusNoContent || code == http.StatusNotModified {
			body = nil // the server sends none
		}
		// A reply is a schema when the client can read it as one.
		var reply sr.Schema
		replyOK := code < 300 && json.Unmarshal(body, &reply) == nil

		// A value's writer schema, by the id in its header.
		dec, err := NewDecoder(ctx, Config{Name: "avro-confluent", Schema: replyColumns, Registry: cl})
		if err != nil {
			t.Fatalf("NewDecoder with a schema asked the registry: %v", err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		b := dec.NewBuilder(mem)
		defer b.Release()
		err = b.Append(value)
		var re *RecordError
		isRecord := errors.As(err, &re)
		header := len(value) >= confluentHeader && value[0] == 0
		switch {
		case !header:
			if !isRecord || re.Offset != 0 || srv.count() != 0 {
				t.Fatalf("bad header %x: %v (%d requests), want a record error at 0 without asking the registry", value, err, srv.count())
			}
			return
		case srv.count() != 1:
			t.Fatalf("%d requests for one schema id", srv.count())
		case code == http.StatusNotFound:
			if !isRecord {
				t.Fatalf("404: %v, want a record error (no such schema id)", err)
			}
		case code >= 300 || !replyOK:
			// The registry failed or replied what is not a schema: not
			// the record's fault, and the next record asks again.
			if err == nil || isRecord {
				t.Fatalf("status %d, body %q: %v, want an error that is not a record error", code, body, err)
			}
		case err != nil && !isRecord:
			t.Fatalf("status %d, body %q: %v, want nil or a record error", code, body, err)
		}
		if isRecord && re.Offset > len(value) {
			t.Fatalf("offset %d past the value's %d bytes", re.Offset, len(value))
		}
		if err == nil {
			// The reply was an Avro schema the columns resolve against,
			// and the row is what a plain avro decoder reads with it.
			w, perr := parseAvroSchema(reply.Schema)
			if perr != nil || len(reply.References) > 0 || reply.Type != sr.TypeAvro {
				t.Fatalf("accepted a value under reply %q (%v)", body, perr)
			}
			plain, derr := newAvroDecoder(replyColumns, w)
			if derr != nil {
				t.Fatalf("the confluent decoder compiled %q, the avro decoder does not: %v", reply.Schema, derr)
			}
			rec := b.NewRecord()
			defer rec.Release()
			pb := plain.NewBuilder(mem)
			defer pb.Release()
			if perr := pb.Append(value[confluentHeader:]); perr != nil {
				t.Fatalf("the avro decoder rejects what the confluent one took: %v", perr)
			}
			prec := pb.NewRecord()
			defer prec.Release()
			diffRows(t, rowsOf(prec), rowsOf(rec))
		}
		// A schema the registry gave (valid or not) is cached; after a
		// registry failure or a 404, the next record asks again.
		before := srv.count()
		err2 := b.Append(value)
		asked := srv.count() - before
		if cached := err == nil || isRecord && code != http.StatusNotFound; cached && asked != 0 || !cached && asked != 1 {
			t.Fatalf("second value: %d requests after %v", asked, err)
		}
		if (err == nil) != (err2 == nil) {
			t.Fatalf("the same value: %v, then %v", err, err2)
		}

		// The columns from a subject's latest schema.
		srv.set(code, body)
		ldec, err := NewDecoder(ctx, Config{Name: "avro-confluent", Registry: cl, Options: map[string]string{"avro-confluent.subject": "x"}})
		if err == nil {
			var sub sr.SubjectSchema
			if code >= 300 || json.Unmarshal(body, &sub) != nil || sub.Type != sr.TypeAvro || len(sub.References) > 0 {
				t.Fatalf("status %d, body %q: a decoder from no schema", code, body)
			}
			want, werr := ArrowSchemaFromAvro(sub.Schema.Schema)
			if werr != nil || !ldec.Schema().Equal(want) {
				t.Fatalf("columns %s from %q, want %v (%v)", ldec.Schema(), sub.Schema.Schema, want, werr)
			}
		}

		// Registering the encoder's schema: the header carries the id the
		// registry gave, which must be a schema id.
		srv.set(code, body)
		enc, err := NewEncoder(ctx, Config{Name: "avro-confluent", Schema: replyColumns, Registry: cl,
			Options: map[string]string{"avro-confluent.subject": "x"}})
		if err != nil {
			return
		}
		var reg struct {
			ID int64 `json:"id"`
		}
		if code >= 300 || json.Unmarshal(body, &reg) != nil {
			t.Fatalf("status %d, body %q: an encoder without a registered id", code, body)
		}
		if reg.ID < 1 || reg.ID > math.MaxInt32 {
			t.Fatalf("an encoder for id %d, which is not a schema id", reg.ID)
		}
		rec := b.NewRecord()
		defer rec.Release()
		if err := enc.Encode(rec, func(_ int, v []byte) error {
			if got := binary.BigEndian.Uint32(v[1:5]); v[0] != 0 || int64(got) != reg.ID {
				t.Fatalf("header % x, want id %d", v[:5], reg.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
