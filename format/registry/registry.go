// Package registry is an in-memory schema registry that speaks the REST
// API of Confluent's Schema Registry, the part that Kafka serializers and
// franz-go's sr client use. weir's tests run against it, and `weir kafka`
// serves it beside its embedded broker, so that the avro-confluent format
// works on a laptop with nothing else running.
//
// It keeps schemas in memory only. Schema ids are global: the same schema
// (same type and JSON text, whitespace aside) registered under several
// subjects has one id; registering a subject's current schema again
// returns its id without a new version. Avro schemas are checked to parse;
// JSON schemas to be JSON; Protobuf schemas are kept as text. It does not
// check compatibility (the level is always NONE), has no schema contexts,
// no import mode and no schema references.
//
// Endpoints (errors are JSON bodies {"error_code": N, "message": "..."}
// with Confluent's codes: 40401 subject not found, 40402 version not
// found, 40403 schema not found, 40404/40405 soft-delete states, 42201
// invalid schema, 42202 invalid version, 42203 invalid compatibility
// level, 42205 operation not permitted, 401 unauthorized):
//
//	GET    /                                         {}
//	GET    /schemas/types                            ["AVRO","JSON","PROTOBUF"]
//	GET    /schemas                                  every subject version (?subjectPrefix, ?latestOnly, ?deleted)
//	GET    /schemas/ids/{id}                         {"schema": ..., "schemaType": ...}
//	GET    /schemas/ids/{id}/schema                  the schema's text
//	GET    /schemas/ids/{id}/subjects                subjects using the id (?deleted)
//	GET    /schemas/ids/{id}/versions                [{"subject", "version"}] (?deleted)
//	GET    /subjects                                 subject names (?subjectPrefix, ?deleted, ?deletedOnly)
//	POST   /subjects/{subject}                       look a schema up: {"subject","id","version","schema"}
//	DELETE /subjects/{subject}                       soft-delete (?permanent=true to remove after that)
//	GET    /subjects/{subject}/versions              version numbers (?deleted)
//	POST   /subjects/{subject}/versions              register: {"id": N}
//	GET    /subjects/{subject}/versions/{version}    {"subject","id","version","schema"}; version may be latest or -1
//	GET    /subjects/{subject}/versions/{version}/schema  the schema's text
//	GET    /subjects/{subject}/versions/{version}/referencedby  [] (no references)
//	DELETE /subjects/{subject}/versions/{version}    soft-delete one version (?permanent=true)
//	POST   /compatibility/subjects/{subject}/versions/{version}  {"is_compatible": true}
//	GET    /config, /config/{subject}                {"compatibilityLevel": "NONE"}
//	PUT    /config, /config/{subject}                NONE only
//	GET    /mode, /mode/{subject}                    {"mode": "READWRITE"}
package registry

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
)

// Server is an in-memory schema registry. Its zero value is not usable;
// call New.
type Server struct {
	user, pass string
	auth       bool

	mu       sync.Mutex
	schemas  []*schema          // by id - 1
	byKey    map[string]*schema // type + "\x00" + compact text
	subjects map[string]*subject

	ln  net.Listener
	srv *http.Server
	mux *http.ServeMux
}

type schema struct {
	id   int
	typ  string // AVRO, JSON or PROTOBUF
	text string
}

type subject struct {
	versions []*version // in version order
	deleted  bool       // soft-deleted as a whole
}

type version struct {
	version int
	schema  *schema
	deleted bool
}

// Option configures a Server.
type Option func(*Server)

// BasicAuth makes the server require HTTP basic authentication with user
// and password on every request.
func BasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.pass, s.auth = user, password, true }
}

// New returns an empty registry.
func New(opts ...Option) *Server {
	s := &Server{byKey: make(map[string]*schema), subjects: make(map[string]*subject)}
	for _, o := range opts {
		o(s)
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s
}

// Handler returns the registry's HTTP handler, to serve it elsewhere (an
// httptest server, or beside other endpoints).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// Start serves the registry on addr (host:port; "" means 127.0.0.1 on a
// free port) in a goroutine, until Close. weir binds it to loopback by
// default: it has no TLS, and no authentication unless BasicAuth is set.
func (s *Server) Start(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("schema registry: %w", err)
	}
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		ln.Close()
		return errors.New("schema registry: already started")
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	s.mu.Unlock()
	go srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return nil
}

// URL returns the base URL the started server listens on, "" before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops a started server, waiting up to 5 seconds for requests in
// flight.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.srv, s.ln = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return srv.Close()
	}
	return nil
}

const contentType = "application/vnd.schemaregistry.v1+json"

// apiError is an error response.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errSubjectNotFound(name string) *apiError {
	return &apiError{http.StatusNotFound, 40401, fmt.Sprintf("Subject '%s' not found.", name)}
}

func errVersionNotFound(v string) *apiError {
	return &apiError{http.StatusNotFound, 40402, fmt.Sprintf("Version %s not found.", v)}
}

func errSchemaNotFound() *apiError {
	return &apiError{http.StatusNotFound, 40403, "Schema not found"}
}

func errInvalidSchema(msg string) *apiError {
	return &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema: " + msg}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.auth {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="schema-registry"`)
			writeError(w, &apiError{http.StatusUnauthorized, 401, "Unauthorized"})
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error_code": e.code, "message": e.msg})
}

// handle wraps a handler that returns a body or an error.
func (s *Server) handle(pattern string, h func(r *http.Request) (any, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) {
				e = &apiError{http.StatusInternalServerError, 50001, err.Error()}
			}
			writeError(w, e)
			return
		}
		if raw, ok := v.(rawText); ok {
			w.Header().Set("Content-Type", contentType)
			w.Write([]byte(raw)) //nolint:errcheck // the client went away
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// rawText is a response body written as is.
type rawText string

func (s *Server) routes() {
	s.handle("GET /{$}", func(*http.Request) (any, error) { return struct{}{}, nil })
	s.handle("GET /schemas/types", func(*http.Request) (any, error) {
		return []string{"AVRO", "JSON", "PROTOBUF"}, nil
	})
	s.handle("GET /schemas", s.allSchemas)
	s.handle("GET /schemas/ids/{id}", s.schemaByID)
	s.handle("GET /schemas/ids/{id}/schema", func(r *http.Request) (any, error) {
		sc, err := s.lookupID(r)
		if err != nil {
			return nil, err
		}
		return rawText(sc.text), nil
	})
	s.handle("GET /schemas/ids/{id}/subjects", s.subjectsByID)
	s.handle("GET /schemas/ids/{id}/versions", s.versionsByID)
	s.handle("GET /subjects", s.listSubjects)
	s.handle("POST /subjects/{subject}", s.lookup)
	s.handle("DELETE /subjects/{subject}", s.deleteSubject)
	s.handle("GET /subjects/{subject}/versions", s.listVersions)
	s.handle("POST /subjects/{subject}/versions", s.register)
	s.handle("GET /subjects/{subject}/versions/{version}", s.getVersion)
	s.handle("GET /subjects/{subject}/versions/{version}/schema", func(r *http.Request) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		v, err := s.findVersion(subjectOf(r), r.PathValue("version"), flag(r, "deleted"))
		if err != nil {
			return nil, err
		}
		return rawText(v.schema.text), nil
	})
	s.handle("GET /subjects/{subject}/versions/{version}/referencedby", func(r *http.Request) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, err := s.findVersion(subjectOf(r), r.PathValue("version"), flag(r, "deleted")); err != nil {
			return nil, err
		}
		return []int{}, nil
	})
	s.handle("DELETE /subjects/{subject}/versions/{version}", s.deleteVersion)
	s.handle("POST /compatibility/subjects/{subject}/versions/{version}", s.compatibility)
	config := func(*http.Request) (any, error) { return map[string]string{"compatibilityLevel": "NONE"}, nil }
	s.handle("GET /config", config)
	s.handle("GET /config/{subject}", config)
	s.handle("PUT /config", s.setConfig)
	s.handle("PUT /config/{subject}", s.setConfig)
	mode := func(*http.Request) (any, error) { return map[string]string{"mode": "READWRITE"}, nil }
	s.handle("GET /mode", mode)
	s.handle("GET /mode/{subject}", mode)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{http.StatusNotFound, 404, "HTTP 404 Not Found"})
	})
}

// subjectOf returns the request's subject name. A name that is not UTF-8
// has each bad byte replaced by U+FFFD, as Confluent's registry (Java)
// decodes it and as the JSON replies write it, so that a subject is
// listed and served under the one name it is stored as.
func subjectOf(r *http.Request) string {
	name := r.PathValue("subject")
	if utf8.ValidString(name) {
		return name
	}
	return string([]rune(name)) // one U+FFFD per invalid byte
}

func flag(r *http.Request, name string) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return v
}

// subjectVersion is the JSON of one version of a subject.
type subjectVersion struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int    `json:"id"`
	SchemaType string `json:"schemaType,omitempty"`
	Schema     string `json:"schema"`
}

func (v *version) json(subj string) subjectVersion {
	sv := subjectVersion{Subject: subj, Version: v.version, ID: v.schema.id, Schema: v.schema.text}
	if v.schema.typ != "AVRO" {
		sv.SchemaType = v.schema.typ
	}
	return sv
}

func (s *Server) lookupID(r *http.Request) (*schema, error) {
	id, err := strconv.Atoi(r.PathValue("id"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || id < 1 || id > len(s.schemas) || s.schemas[id-1] == nil {
		return nil, errSchemaNotFound()
	}
	return s.schemas[id-1], nil
}

func (s *Server) schemaByID(r *http.Request) (any, error) {
	sc, err := s.lookupID(r)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"schema": sc.text}
	if sc.typ != "AVRO" {
		body["schemaType"] = sc.typ
	}
	return body, nil
}

// usages returns the versions using schema id, by subject name.
func (s *Server) usages(id int, deleted bool) []subjectVersion {
	var out []subjectVersion
	for _, name := range s.sortedSubjects() {
		subj := s.subjects[name]
		for _, v := range subj.versions {
			if v.schema.id == id && (deleted || !v.deleted && !subj.deleted) {
				out = append(out, v.json(name))
			}
		}
	}
	return out
}

func (s *Server) subjectsByID(r *http.Request) (any, error) {
	sc, err := s.lookupID(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := []string{}
	for _, u := range s.usages(sc.id, flag(r, "deleted")) {
		if len(names) == 0 || names[len(names)-1] != u.Subject {
			names = append(names, u.Subject)
		}
	}
	return names, nil
}

func (s *Server) versionsByID(r *http.Request) (any, error) {
	sc, err := s.lookupID(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	type sv struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []sv{}
	for _, u := range s.usages(sc.id, flag(r, "deleted")) {
		out = append(out, sv{u.Subject, u.Version})
	}
	return out, nil
}

func (s *Server) sortedSubjects() []string {
	names := make([]string, 0, len(s.subjects))
	for n := range s.subjects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Server) allSchemas(r *http.Request) (any, error) {
	prefix := r.URL.Query().Get("subjectPrefix")
	latestOnly, deleted := flag(r, "latestOnly"), flag(r, "deleted")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []subjectVersion{}
	for _, name := range s.sortedSubjects() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		subj := s.subjects[name]
		var live []*version
		for _, v := range subj.versions {
			if deleted || !v.deleted && !subj.deleted {
				live = append(live, v)
			}
		}
		if latestOnly && len(live) > 0 {
			live = live[len(live)-1:]
		}
		for _, v := range live {
			out = append(out, v.json(name))
		}
	}
	return out, nil
}

func (s *Server) listSubjects(r *http.Request) (any, error) {
	prefix := r.URL.Query().Get("subjectPrefix")
	deleted, deletedOnly := flag(r, "deleted"), flag(r, "deletedOnly")
	s.mu.Lock()
	defer s.mu.Unlock()
	names := []string{}
	for _, name := range s.sortedSubjects() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		subj := s.subjects[name]
		live := subj.live() > 0
		switch {
		case deletedOnly && !live, !deletedOnly && (live || deleted):
			names = append(names, name)
		}
	}
	return names, nil
}

// live is the number of versions not deleted.
func (subj *subject) live() int {
	if subj.deleted {
		return 0
	}
	n := 0
	for _, v := range subj.versions {
		if !v.deleted {
			n++
		}
	}
	return n
}

// liveSubject returns a subject with a version not deleted; the caller
// holds mu.
func (s *Server) liveSubject(name string, deleted bool) (*subject, error) {
	subj, ok := s.subjects[name]
	if !ok || len(subj.versions) == 0 || !deleted && subj.live() == 0 {
		return nil, errSubjectNotFound(name)
	}
	return subj, nil
}

func (s *Server) listVersions(r *http.Request) (any, error) {
	name := subjectOf(r)
	deleted := flag(r, "deleted")
	s.mu.Lock()
	defer s.mu.Unlock()
	subj, err := s.liveSubject(name, deleted)
	if err != nil {
		return nil, err
	}
	out := []int{}
	for _, v := range subj.versions {
		if deleted || !v.deleted && !subj.deleted {
			out = append(out, v.version)
		}
	}
	return out, nil
}

// findVersion resolves {subject}/versions/{version}, deleted versions
// too when deleted is set; the caller holds mu.
func (s *Server) findVersion(name, vs string, deleted bool) (*version, error) {
	subj, err := s.liveSubject(name, deleted)
	if err != nil {
		return nil, err
	}
	visible := func(v *version) bool { return deleted || !v.deleted && !subj.deleted }
	if vs == "latest" || vs == "-1" {
		for i := len(subj.versions) - 1; i >= 0; i-- {
			if visible(subj.versions[i]) {
				return subj.versions[i], nil
			}
		}
		return nil, errVersionNotFound(vs)
	}
	n, err := strconv.Atoi(vs)
	if err != nil || n < 1 {
		return nil, &apiError{http.StatusUnprocessableEntity, 42202,
			fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", vs)}
	}
	for _, v := range subj.versions {
		if v.version == n && visible(v) {
			return v, nil
		}
	}
	return nil, errVersionNotFound(vs)
}

func (s *Server) getVersion(r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.findVersion(subjectOf(r), r.PathValue("version"), flag(r, "deleted"))
	if err != nil {
		return nil, err
	}
	return v.json(subjectOf(r)), nil
}

// registration is the body of a register or lookup request.
type registration struct {
	Schema     string            `json:"schema"`
	SchemaType string            `json:"schemaType"`
	References []json.RawMessage `json:"references"`
	ID         int               `json:"id"`
	Version    int               `json:"version"`
}

// parseRegistration reads and checks a schema from a request body,
// returning its type and canonical text.
func parseRegistration(r *http.Request) (registration, string, string, error) {
	var reg registration
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 16<<20))
	if err := dec.Decode(&reg); err != nil {
		return reg, "", "", &apiError{http.StatusUnprocessableEntity, 422, "Unprocessable entity: " + err.Error()}
	}
	if len(reg.References) > 0 {
		return reg, "", "", errInvalidSchema("schema references are not supported by this registry")
	}
	typ := strings.ToUpper(reg.SchemaType)
	if typ == "" {
		typ = "AVRO"
	}
	text := reg.Schema
	switch typ {
	case "AVRO":
		if _, err := avro.ParseWithCache(text, "", &avro.SchemaCache{}); err != nil {
			return reg, "", "", errInvalidSchema(err.Error())
		}
		text = compact(text)
	case "JSON":
		if !json.Valid([]byte(text)) {
			return reg, "", "", errInvalidSchema("not JSON")
		}
		text = compact(text)
	case "PROTOBUF":
		if strings.TrimSpace(text) == "" {
			return reg, "", "", errInvalidSchema("empty schema")
		}
	default:
		return reg, "", "", errInvalidSchema(fmt.Sprintf("unknown schema type %q", reg.SchemaType))
	}
	return reg, typ, text, nil
}

// compact removes insignificant whitespace from JSON text.
func compact(text string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(text)) != nil {
		return text
	}
	return b.String()
}

func (s *Server) register(r *http.Request) (any, error) {
	name := subjectOf(r)
	reg, typ, text, err := parseRegistration(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	subj := s.subjects[name]
	if subj != nil && subj.deleted {
		// Registering under a soft-deleted subject revives it without its
		// deleted versions, as Confluent's does.
		for _, v := range subj.versions {
			v.deleted = true
		}
		subj.deleted = false
	}
	if subj != nil {
		for _, v := range subj.versions {
			if !v.deleted && v.schema.typ == typ && v.schema.text == text {
				if reg.ID > 0 && reg.ID != v.schema.id {
					return nil, errNotPermitted()
				}
				return map[string]int{"id": v.schema.id}, nil
			}
		}
	}
	key := typ + "\x00" + text
	sc := s.byKey[key]
	if reg.ID > 0 && (sc == nil || sc.id != reg.ID) {
		return nil, errNotPermitted()
	}
	if sc == nil {
		sc = &schema{id: len(s.schemas) + 1, typ: typ, text: text}
		s.schemas = append(s.schemas, sc)
		s.byKey[key] = sc
	}
	if subj == nil {
		subj = &subject{}
		s.subjects[name] = subj
	}
	next := 1
	if n := len(subj.versions); n > 0 {
		next = subj.versions[n-1].version + 1
	}
	if reg.Version > 0 && reg.Version != next {
		return nil, errNotPermitted()
	}
	subj.versions = append(subj.versions, &version{version: next, schema: sc})
	return map[string]int{"id": sc.id}, nil
}

func errNotPermitted() *apiError {
	return &apiError{http.StatusUnprocessableEntity, 42205,
		"Operation not permitted: this registry assigns ids and versions itself (no import mode)"}
}

func (s *Server) lookup(r *http.Request) (any, error) {
	name := subjectOf(r)
	_, typ, text, err := parseRegistration(r)
	if err != nil {
		return nil, err
	}
	deleted := flag(r, "deleted")
	s.mu.Lock()
	defer s.mu.Unlock()
	subj, err := s.liveSubject(name, deleted)
	if err != nil {
		return nil, err
	}
	for _, v := range subj.versions {
		if (deleted || !v.deleted && !subj.deleted) && v.schema.typ == typ && v.schema.text == text {
			return v.json(name), nil
		}
	}
	return nil, errSchemaNotFound()
}

func (s *Server) deleteSubject(r *http.Request) (any, error) {
	name := subjectOf(r)
	permanent := flag(r, "permanent")
	s.mu.Lock()
	defer s.mu.Unlock()
	subj, ok := s.subjects[name]
	if !ok || len(subj.versions) == 0 {
		return nil, errSubjectNotFound(name)
	}
	out := []int{}
	if permanent {
		if subj.live() > 0 {
			return nil, &apiError{http.StatusNotFound, 40405,
				fmt.Sprintf("Subject '%s' was not deleted first before being permanently deleted", name)}
		}
		for _, v := range subj.versions {
			out = append(out, v.version)
		}
		delete(s.subjects, name)
		return out, nil
	}
	if subj.live() == 0 {
		return nil, &apiError{http.StatusNotFound, 40404,
			fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", name)}
	}
	for _, v := range subj.versions {
		if !v.deleted {
			out = append(out, v.version)
		}
	}
	subj.deleted = true
	return out, nil
}

func (s *Server) deleteVersion(r *http.Request) (any, error) {
	permanent := flag(r, "permanent")
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.findVersion(subjectOf(r), r.PathValue("version"), permanent)
	if err != nil {
		return nil, err
	}
	subj := s.subjects[subjectOf(r)]
	if permanent {
		if !v.deleted && !subj.deleted {
			return nil, &apiError{http.StatusNotFound, 40407,
				fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", subjectOf(r), v.version)}
		}
		for i, w := range subj.versions {
			if w == v {
				subj.versions = append(subj.versions[:i], subj.versions[i+1:]...)
				break
			}
		}
		if len(subj.versions) == 0 {
			delete(s.subjects, subjectOf(r))
		}
		return v.version, nil
	}
	v.deleted = true
	return v.version, nil
}

func (s *Server) compatibility(r *http.Request) (any, error) {
	if _, _, _, err := parseRegistration(r); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.findVersion(subjectOf(r), r.PathValue("version"), flag(r, "deleted")); err != nil {
		return nil, err
	}
	return map[string]bool{"is_compatible": true}, nil
}

func (s *Server) setConfig(r *http.Request) (any, error) {
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, &apiError{http.StatusUnprocessableEntity, 422, "Unprocessable entity: " + err.Error()}
	}
	if !strings.EqualFold(body.Compatibility, "NONE") {
		return nil, &apiError{http.StatusUnprocessableEntity, 42203,
			fmt.Sprintf("Invalid compatibility level %q: this registry does not check compatibility (NONE only)", body.Compatibility)}
	}
	return map[string]string{"compatibility": "NONE"}, nil
}
