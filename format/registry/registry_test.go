package registry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/weirflow/weir/format/registry"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	schemaA = `{"type":"record","name":"a","fields":[{"name":"x","type":"long"}]}`
	schemaB = `{"type": "record", "name": "b", "fields": [{"name": "y", "type": "string"}]}`
)

// newClient serves a registry with httptest and returns a franz-go client
// of it.
func newClient(t *testing.T, opts ...registry.Option) (*sr.Client, *httptest.Server) {
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
	return cl, srv
}

// code returns the Confluent error code of err, or 0.
func code(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

func TestRegisterAndFetch(t *testing.T) {
	ctx := context.Background()
	cl, _ := newClient(t)
	idA, err := cl.RegisterSchema(ctx, "t-value", sr.Schema{Schema: schemaA}, -1, -1)
	if err != nil || idA != 1 {
		t.Fatalf("register: id %d, %v", idA, err)
	}
	// The same schema again, with other whitespace: same id, no version.
	again, err := cl.RegisterSchema(ctx, "t-value", sr.Schema{Schema: " " + strings.ReplaceAll(schemaA, ",", " , ")}, -1, -1)
	if err != nil || again != idA {
		t.Fatalf("register again: id %d, %v; want %d", again, err, idA)
	}
	idB, err := cl.RegisterSchema(ctx, "t-value", sr.Schema{Schema: schemaB}, -1, -1)
	if err != nil || idB != 2 {
		t.Fatalf("register B: id %d, %v", idB, err)
	}
	// The same schema under another subject shares the id.
	other, err := cl.RegisterSchema(ctx, "u-value", sr.Schema{Schema: schemaA}, -1, -1)
	if err != nil || other != idA {
		t.Fatalf("register under u-value: id %d, %v; want %d", other, err, idA)
	}

	s, err := cl.SchemaByID(ctx, idB)
	if err != nil || s.Schema != `{"type":"record","name":"b","fields":[{"name":"y","type":"string"}]}` || s.Type != sr.TypeAvro {
		t.Fatalf("SchemaByID: %+v, %v", s, err)
	}
	if text, err := cl.SchemaTextByID(ctx, idA); err != nil || text != schemaA {
		t.Fatalf("SchemaTextByID: %q, %v", text, err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || !reflect.DeepEqual(subjects, []string{"t-value", "u-value"}) {
		t.Fatalf("Subjects: %v, %v", subjects, err)
	}
	versions, err := cl.SubjectVersions(ctx, "t-value")
	if err != nil || !reflect.DeepEqual(versions, []int{1, 2}) {
		t.Fatalf("SubjectVersions: %v, %v", versions, err)
	}
	latest, err := cl.SchemaByVersion(ctx, "t-value", -1)
	if err != nil || latest.ID != idB || latest.Version != 2 || latest.Subject != "t-value" {
		t.Fatalf("latest: %+v, %v", latest, err)
	}
	v1, err := cl.SchemaByVersion(ctx, "t-value", 1)
	if err != nil || v1.ID != idA || v1.Version != 1 {
		t.Fatalf("version 1: %+v, %v", v1, err)
	}
	found, err := cl.LookupSchema(ctx, "t-value", sr.Schema{Schema: schemaB})
	if err != nil || found.ID != idB || found.Version != 2 {
		t.Fatalf("LookupSchema: %+v, %v", found, err)
	}
	usages, err := cl.SchemaUsagesByID(ctx, idA)
	if err != nil || len(usages) != 2 {
		t.Fatalf("SchemaUsagesByID: %+v, %v", usages, err)
	}
	created, err := cl.CreateSchema(ctx, "w-value", sr.Schema{Schema: `{"type":"string"}`})
	if err != nil || created.ID != 3 || created.Version != 1 || created.Subject != "w-value" {
		t.Fatalf("CreateSchema: %+v, %v", created, err)
	}
	all, err := cl.Schemas(ctx, "t-value")
	if err != nil || len(all) != 2 || all[1].ID != idB {
		t.Fatalf("Schemas: %+v, %v", all, err)
	}
	compat, err := cl.CheckCompatibility(ctx, "t-value", -1, sr.Schema{Schema: schemaA})
	if err != nil || !compat.Is {
		t.Fatalf("CheckCompatibility: %+v, %v", compat, err)
	}
	if res := cl.Compatibility(ctx); len(res) != 1 || res[0].Err != nil || res[0].Level != sr.CompatNone {
		t.Fatalf("Compatibility: %+v", res)
	}
	jsonID, err := cl.RegisterSchema(ctx, "j", sr.Schema{Schema: `{"type": "object"}`, Type: sr.TypeJSON}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cl.SchemaByID(ctx, jsonID); err != nil || s.Type != sr.TypeJSON || s.Schema != `{"type":"object"}` {
		t.Fatalf("JSON schema: %+v, %v", s, err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	cl, _ := newClient(t)
	if _, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: schemaA}, -1, -1); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		code int
	}{
		{"unknown id", func() error { _, err := cl.SchemaByID(ctx, 99); return err }(), 40403},
		{"unknown subject", func() error { _, err := cl.SubjectVersions(ctx, "nope"); return err }(), 40401},
		{"unknown version", func() error { _, err := cl.SchemaByVersion(ctx, "s", 7); return err }(), 40402},
		{"lookup unknown schema", func() error { _, err := cl.LookupSchema(ctx, "s", sr.Schema{Schema: schemaB}); return err }(), 40403},
		{"lookup unknown subject", func() error { _, err := cl.LookupSchema(ctx, "x", sr.Schema{Schema: schemaA}); return err }(), 40401},
		{"invalid avro", func() error {
			_, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: `{"type":"record","name":"r"}`}, -1, -1)
			return err
		}(), 42201},
		{"invalid json", func() error {
			_, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: `{`, Type: sr.TypeJSON}, -1, -1)
			return err
		}(), 42201},
		{"references", func() error {
			_, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: schemaB, References: []sr.SchemaReference{{Name: "a", Subject: "s", Version: 1}}}, -1, -1)
			return err
		}(), 42201},
		{"explicit id", func() error { _, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: schemaB}, 50, -1); return err }(), 42205},
	}
	for _, c := range cases {
		if got := code(c.err); got != c.code {
			t.Errorf("%s: error %v (code %d), want code %d", c.name, c.err, got, c.code)
		}
	}
	// An invalid version and an unknown path, through plain HTTP.
	for path, want := range map[string]string{
		"/subjects/s/versions/x": `{"error_code":42202,`,
		"/nope":                  `{"error_code":404,"message":"HTTP 404 Not Found"}`,
	} {
		var raw []byte
		err := cl.Do(ctx, http.MethodGet, path, nil, &raw)
		var re *sr.ResponseError
		if !errors.As(err, &re) || !strings.HasPrefix(string(re.Raw), want) {
			t.Errorf("GET %s: %v, want a body starting %s", path, err, want)
		}
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	cl, _ := newClient(t)
	for _, s := range []string{schemaA, schemaB} {
		if _, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: s}, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.DeleteSubject(ctx, "s", sr.HardDelete); code(err) != 40405 {
		t.Fatalf("hard delete before soft: %v", err)
	}
	versions, err := cl.DeleteSubject(ctx, "s", sr.SoftDelete)
	if err != nil || !reflect.DeepEqual(versions, []int{1, 2}) {
		t.Fatalf("soft delete: %v, %v", versions, err)
	}
	if _, err := cl.SubjectVersions(ctx, "s"); code(err) != 40401 {
		t.Fatalf("versions of a deleted subject: %v", err)
	}
	if subjects, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted)); err != nil || !reflect.DeepEqual(subjects, []string{"s"}) {
		t.Fatalf("Subjects(deleted): %v, %v", subjects, err)
	}
	// Ids outlive their subjects.
	if _, err := cl.SchemaByID(ctx, 1); err != nil {
		t.Fatalf("id of a deleted subject: %v", err)
	}
	// Registering again revives the subject with a new version.
	id, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: schemaA}, -1, -1)
	if err != nil || id != 1 {
		t.Fatalf("register after delete: %d, %v", id, err)
	}
	if v, err := cl.SchemaByVersion(ctx, "s", -1); err != nil || v.Version != 3 {
		t.Fatalf("latest after revival: %+v, %v", v, err)
	}
	if err := cl.DeleteSchema(ctx, "s", 3, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteSchema(ctx, "s", 3, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "s", sr.HardDelete); err != nil {
		t.Fatalf("hard delete: %v", err)
	}
	if subjects, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted)); err != nil || len(subjects) != 0 {
		t.Fatalf("Subjects after hard delete: %v, %v", subjects, err)
	}
}

func TestBasicAuth(t *testing.T) {
	ctx := context.Background()
	cl, srv := newClient(t, registry.BasicAuth("u", "p"))
	if _, err := cl.Subjects(ctx); code(err) != 401 {
		t.Fatalf("no credentials: %v", err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	authed, err := sr.NewClient(sr.URLs(srv.URL), sr.BasicAuth("u", "p"), sr.HTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authed.Subjects(ctx); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
}

func TestStart(t *testing.T) {
	s := registry.New()
	if err := s.Start(""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q", s.URL())
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.URL() + "/schemas/types")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := strings.TrimSpace(string(body)); got != `["AVRO","JSON","PROTOBUF"]` || resp.Header.Get("Content-Type") != "application/vnd.schemaregistry.v1+json" {
		t.Fatalf("types: %s %q", got, resp.Header.Get("Content-Type"))
	}
	if err := s.Start(""); err == nil {
		t.Fatal("second Start succeeded")
	}
}
