package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"time"
)

// ErrorResponse is the JSON body of every error answer.
type ErrorResponse struct {
	// Error says what went wrong and what to do.
	Error string `json:"error"`
	// State is the job's state when the request was answered.
	State State `json:"state"`
}

// SavepointResponse is the JSON body of a successful POST /savepoint.
type SavepointResponse struct {
	// Epoch is the savepoint's epoch.
	Epoch uint64 `json:"epoch"`
	// Location is the savepoint's folder: start a job from it with
	// --from-savepoint.
	Location string `json:"location"`
	// Stopped is set when the job stops after the savepoint (?stop=true).
	Stopped bool `json:"stopped"`
}

// Handler returns the server's HTTP handler, for tests or to mount it in
// another server. It checks Host and Origin as Start's server does; the
// address it listens on is not known to it, so only loopback names and
// Config.AllowedHosts pass.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.handleOverview)
	mux.HandleFunc("/status", s.handleStatus)
	mux.HandleFunc("/plan", s.handlePlan)
	mux.HandleFunc("/metrics", s.handleMetrics)
	mux.HandleFunc("/savepoint", s.handleSavepoint)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.check(w, r) {
			mux.ServeHTTP(w, r)
		}
	})
}

// allow answers 405 unless r's method is one of methods (GET allows
// HEAD).
func (s *Server) allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
			return true
		}
	}
	allowed := methods[0]
	for _, m := range methods[1:] {
		allowed += ", " + m
	}
	if methods[0] == http.MethodGet {
		allowed += ", " + http.MethodHead
	}
	w.Header().Set("Allow", allowed)
	s.writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not supported; use %s", r.Method, r.URL.Path, allowed))
	return false
}

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // task names hold "->"
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) writeError(w http.ResponseWriter, code int, msg string) {
	s.writeJSON(w, code, ErrorResponse{Error: msg, State: s.State()})
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		s.writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; see / for the endpoints", r.URL.Path))
		return
	}
	if !s.allow(w, r, http.MethodGet) {
		return
	}
	st := s.Snapshot(r.Context())
	var b bytes.Buffer
	name := html.EscapeString(st.Job)
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>weir: %s</title></head><body>\n", name)
	fmt.Fprintf(&b, "<h1>weir job %s</h1>\n<p>state: <b>%s</b>", name, html.EscapeString(string(st.State)))
	if st.Error != "" {
		fmt.Fprintf(&b, " (%s)", html.EscapeString(st.Error))
	}
	fmt.Fprintf(&b, "<br>up %s, %d epochs committed, %d source records in, watermark %s, %d late rows dropped</p>\n",
		time.Duration(st.UptimeSeconds*float64(time.Second)).Round(time.Second), st.EpochsCompleted, st.SourceRecordsIn, html.EscapeString(st.Watermark), st.LateRowsTotal)
	b.WriteString(`<ul>
<li><a href="/status">/status</a>: the job's state and counters (JSON)</li>
<li><a href="/plan">/plan</a>: the job's tasks and exchanges (text)</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
`)
	fmt.Fprintf(&b, "<li>POST /savepoint (?stop=true): take a savepoint (and stop the job after it); it needs the server's token, %s: <code>curl -X POST -H 'Authorization: Bearer TOKEN' http://%s/savepoint</code></li>\n",
		html.EscapeString(s.tokenWhere()), html.EscapeString(r.Host))
	b.WriteString(`</ul>
<p>Reading needs no token: keep this server on a loopback address.</p>
</body></html>
`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, http.MethodGet) {
		return
	}
	s.writeJSON(w, http.StatusOK, s.Snapshot(r.Context()))
}

func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, http.MethodGet) {
		return
	}
	job := s.view().job
	if job == nil {
		w.Header().Set("Retry-After", "1")
		s.writeError(w, http.StatusServiceUnavailable, "the job is not planned yet; try again in a moment")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, job.Explain())
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, http.MethodGet) {
		return
	}
	st := s.Snapshot(r.Context())
	var b bytes.Buffer
	writeFamilies(&b, metrics(st, len(st.Tasks) > 0))
	w.Header().Set("Content-Type", metricsContentType)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

func (s *Server) handleSavepoint(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, http.MethodPost) {
		return
	}
	if s.cfg.Savepoint == nil {
		// Nothing can change: say so, token or not.
		reason := s.cfg.NoSavepointReason
		if reason == "" {
			reason = "this job cannot take savepoints"
		}
		s.writeError(w, http.StatusConflict, reason)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	stop := false
	if v := r.URL.Query().Get("stop"); v != "" {
		var err error
		if stop, err = strconv.ParseBool(v); err != nil {
			s.writeError(w, http.StatusBadRequest, fmt.Sprintf("stop=%q: want true or false", v))
			return
		}
	}
	// The answer waits for the savepoint, which may take longer than
	// WriteTimeout allows other answers; the request is authorised.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	switch state := s.State(); {
	case state == Starting:
		w.Header().Set("Retry-After", "1")
		s.writeError(w, http.StatusServiceUnavailable, "the job is starting (recovering from its checkpoints); try again once it runs")
		return
	case state.ended():
		s.writeError(w, http.StatusConflict, fmt.Sprintf("the job is %s; savepoints are taken of a running job", state))
		return
	}
	epoch, loc, err := s.cfg.Savepoint(r.Context(), stop)
	if err != nil {
		code := http.StatusInternalServerError
		if s.State().ended() {
			code = http.StatusConflict // it ended meanwhile
		}
		s.writeError(w, code, "savepoint: "+err.Error())
		return
	}
	s.mu.Lock()
	s.savepoint = &SavepointInfo{Epoch: epoch, Location: loc, Time: time.Now().UTC(), Stopped: stop}
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, SavepointResponse{Epoch: epoch, Location: loc, Stopped: stop})
}
