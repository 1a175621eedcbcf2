package registry_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/weirflow/weir/format/registry"
)

// call sends one request to h and returns the status and body; a reply
// that is not JSON with the registry's content type fails the test.
func call(t *testing.T, h http.Handler, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, "http://registry"+path, bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/vnd.schemaregistry.v1+json" {
		t.Fatalf("%s %s: content type %q, status %d, body %q", method, path, ct, rec.Code, rec.Body.Bytes())
	}
	return rec.Code, rec.Body.Bytes()
}

// replyInto decodes a JSON reply, failing the test when it is not JSON.
func replyInto(t *testing.T, what string, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: reply %q is not the JSON expected: %v", what, body, err)
	}
}

// FuzzRegister registers an arbitrary request body under an arbitrary
// subject, and checks the registry's replies: every reply is JSON (an
// error has a code and a message); a registered schema is served back by
// id, as the subject's latest version and by lookup, in the canonical
// form that parses; registering it again returns the same id without a
// new version.
func FuzzRegister(f *testing.F) {
	avroText := `{"type": "record", "name": "a", "fields": [{"name": "x", "type": "long"}]}`
	for _, c := range []struct{ subject, body string }{
		{"t-value", `{"schema":` + strconv.Quote(avroText) + `}`},
		{"t-value", `{"schema":` + strconv.Quote(avroText) + `,"schemaType":"avro"}`},
		{"t-value", `{"schema":"{\"type\":\"object\"}","schemaType":"JSON"}`},
		{"t-value", `{"schema":"syntax = \"proto3\";\nmessage M {}","schemaType":"PROTOBUF"}`},
		{"t-value", `{"schema":"\"string\"","id":5}`},
		{"t-value", `{"schema":"\"string\"","version":2}`},
		{"t-value", `{"schema":"\"int\"","references":[{"name":"a","subject":"b","version":1}]}`},
		{"t-value", `{"schema":"{","schemaType":"JSON"}`},
		{"t-value", `{"schema":"nope"}`},
		{"t-value", `{"schema":"x","schemaType":"XML"}`},
		{"t-value", `not json`},
		{"t-value", ``},
		{"a/b c%", `{"schema":"\"long\""}`},
		{"ünï", `{"schema":"\"long\""}`},
	} {
		f.Add(c.subject, []byte(c.body))
	}
	f.Fuzz(func(t *testing.T, subject string, body []byte) {
		if subject == "" || subject == "." || subject == ".." || strings.ContainsAny(subject, "\x00") {
			return // not a path segment
		}
		h := registry.New().Handler()
		base := "/subjects/" + url.PathEscape(subject)
		// The name the registry keeps: a bad byte becomes U+FFFD.
		name := string([]rune(subject))
		status, reply := call(t, h, "POST", base+"/versions", body)
		if status != http.StatusOK {
			var e struct {
				Code    int    `json:"error_code"`
				Message string `json:"message"`
			}
			replyInto(t, "register error", reply, &e)
			if status < 400 || e.Code == 0 || e.Message == "" {
				t.Fatalf("status %d, reply %q: want a 4xx error with a code and a message", status, reply)
			}
			return
		}
		var reg struct {
			ID int `json:"id"`
		}
		replyInto(t, "register", reply, &reg)
		if reg.ID != 1 {
			t.Fatalf("first schema of an empty registry got id %d", reg.ID)
		}
		// What was registered, as the oracle reads the request.
		var req struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("registered %q, which is not JSON: %v", body, err)
		}
		typ := strings.ToUpper(req.SchemaType)
		want := req.Schema
		switch typ {
		case "", "AVRO":
			if _, err := avro.ParseWithCache(req.Schema, "", &avro.SchemaCache{}); err != nil {
				t.Fatalf("registered an Avro schema that does not parse: %q: %v", req.Schema, err)
			}
			fallthrough
		case "JSON":
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(req.Schema)); err == nil {
				want = b.String()
			}
		case "PROTOBUF":
		default:
			t.Fatalf("registered a schema of type %q", req.SchemaType)
		}

		// By id.
		status, reply = call(t, h, "GET", "/schemas/ids/1", nil)
		var byID struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		replyInto(t, "schema by id", reply, &byID)
		if status != http.StatusOK || byID.Schema != want {
			t.Fatalf("schema 1: status %d, %q, want %q", status, byID.Schema, want)
		}
		if (typ == "" || typ == "AVRO") != (byID.SchemaType == "") || byID.SchemaType != "" && byID.SchemaType != typ {
			t.Fatalf("schema 1 has type %q, registered as %q", byID.SchemaType, req.SchemaType)
		}
		if typ == "" || typ == "AVRO" {
			if _, err := avro.ParseWithCache(byID.Schema, "", &avro.SchemaCache{}); err != nil {
				t.Fatalf("the registry serves an Avro schema that does not parse: %q: %v", byID.Schema, err)
			}
		}
		req2 := httptest.NewRequest("GET", "http://registry/schemas/ids/1/schema", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req2)
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Fatalf("schema 1's text: status %d, %q, want %q", rec.Code, rec.Body.String(), want)
		}

		// As the subject's latest version, by lookup, and in the list.
		var sv struct {
			Subject string `json:"subject"`
			Version int    `json:"version"`
			ID      int    `json:"id"`
			Schema  string `json:"schema"`
		}
		status, reply = call(t, h, "GET", base+"/versions/latest", nil)
		replyInto(t, "latest version", reply, &sv)
		if status != http.StatusOK || sv.ID != 1 || sv.Version != 1 || sv.Schema != want || sv.Subject != name {
			t.Fatalf("latest of %q: status %d, %+v", subject, status, sv)
		}
		status, reply = call(t, h, "POST", base, body)
		sv = struct {
			Subject string `json:"subject"`
			Version int    `json:"version"`
			ID      int    `json:"id"`
			Schema  string `json:"schema"`
		}{}
		replyInto(t, "lookup", reply, &sv)
		if status != http.StatusOK || sv.ID != 1 || sv.Version != 1 {
			t.Fatalf("lookup under %q: status %d, %+v", subject, status, sv)
		}
		var subjects []string
		_, reply = call(t, h, "GET", "/subjects", nil)
		replyInto(t, "subjects", reply, &subjects)
		if !slices.Equal(subjects, []string{name}) {
			t.Fatalf("subjects %q, want [%q]", subjects, name)
		}

		// Again: the same id, no new version.
		status, reply = call(t, h, "POST", base+"/versions", body)
		reg.ID = 0
		replyInto(t, "register again", reply, &reg)
		if status != http.StatusOK || reg.ID != 1 {
			t.Fatalf("registering again: status %d, %q", status, reply)
		}
		var versions []int
		_, reply = call(t, h, "GET", base+"/versions", nil)
		replyInto(t, "versions", reply, &versions)
		if !slices.Equal(versions, []int{1}) {
			t.Fatalf("versions %v after registering one schema twice", versions)
		}
	})
}
