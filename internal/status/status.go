// Package status serves a running weir job's status over HTTP, as
// Flink's REST API does for its jobs: state, progress, per-task counters,
// the plan, Prometheus metrics, and a savepoint trigger.
//
// Security: the server answers only requests whose Host names it (a
// loopback name or address, the address it listens on, or one of
// Config.AllowedHosts), against DNS rebinding; it refuses requests whose
// Origin is another site's, against web pages; and every mutation (POST
// /savepoint) needs the server's token as "Authorization: Bearer TOKEN"
// (Config.Token, Server.Token). Reads need no token. It bounds its
// connections (Config.MaxConnections) and their time (the timeouts in
// Config), so that clients cannot exhaust the process's file descriptors
// or hold connections forever. Keep it on a loopback address (the
// default) unless a proxy or a firewall guards it.
//
// Endpoints:
//
//	GET  /            an HTML overview linking the others
//	GET  /status      JSON: Status
//	GET  /plan        the job's plan (arrowflow.Job.Explain), plain text
//	GET  /metrics     Prometheus text exposition format 0.0.4
//	POST /savepoint   take a savepoint (?stop=true: and stop the job);
//	                  needs the token; JSON: SavepointResponse, or
//	                  ErrorResponse
//
// Wrong methods get 405 with an Allow header, unknown paths 404, foreign
// hosts and origins 403, mutations without the token 401.
package status

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// DefaultAddr is the address Start listens on when given "": loopback
// only, on the port of Flink's REST API.
const DefaultAddr = "127.0.0.1:8081"

// closeTimeout bounds how long Close waits for requests in flight (a
// savepoint being taken, a scrape) before it closes their connections.
const closeTimeout = 5 * time.Second

// lagTimeout bounds each lag provider's call during a request.
const lagTimeout = 2 * time.Second

// Defaults of the limits in Config.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading a whole request.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds writing an answer, from the end of the
	// request's headers (POST /savepoint, which waits for the savepoint,
	// is not bounded by it).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a kept-alive connection may wait for
	// its next request.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConnections is how many connections the server holds at
	// once; more wait in the listen backlog.
	DefaultMaxConnections = 256
)

// State is the state of a job as the server reports it.
type State string

const (
	// Starting: the job is being planned or recovered from its checkpoint
	// folder; it has no counters yet.
	Starting State = "starting"
	// Running: the job runs.
	Running State = "running"
	// Finished: the job ended by itself (a bounded job committed its final
	// epoch) or stopped after a savepoint.
	Finished State = "finished"
	// Failed: the job ended with an error (Status.Error).
	Failed State = "failed"
	// Cancelled: the job was cancelled (Ctrl-C, SIGTERM).
	Cancelled State = "cancelled"
)

// states lists every State, in the order the metrics show them.
var states = []State{Starting, Running, Finished, Failed, Cancelled}

// ended reports whether s is a final state.
func (s State) ended() bool { return s == Finished || s == Failed || s == Cancelled }

// LagFunc reports a source's lag: records available to the source that
// the job has not committed yet.
type LagFunc func(ctx context.Context) (int64, error)

// SavepointFunc takes a savepoint of the running job, stopping it
// afterwards with stop, and returns the savepoint's epoch and location
// (a folder). It is called only while the job runs.
type SavepointFunc func(ctx context.Context, stop bool) (epoch uint64, location string, err error)

// Config configures a Server.
type Config struct {
	// Name is the job's name (default: Graph's name).
	Name string
	// Graph is the job's graph. Optional: the server uses it to tell the
	// source tasks apart, whose rows in are the job's records in.
	Graph *arrowflow.Graph
	// Lag holds, per source name, a function reporting that source's lag
	// (optional).
	Lag map[string]LagFunc
	// Savepoint takes savepoints for POST /savepoint. When nil, POST
	// /savepoint answers 409 Conflict with NoSavepointReason.
	Savepoint SavepointFunc
	// NoSavepointReason says why the job cannot take savepoints when
	// Savepoint is nil, e.g. "the job runs without --checkpoint-dir".
	NoSavepointReason string
	// Rejected holds, per source name, a function reporting the records
	// that source rejected (optional); /status and /metrics show them.
	Rejected map[string]RejectedFunc

	// Token is the secret every mutation (POST /savepoint) needs, sent as
	// "Authorization: Bearer TOKEN"; at least MinTokenLength bytes. Empty:
	// New makes one with NewToken (see Server.Token).
	Token string
	// TokenFile, when set, is where the server writes Token (mode 0600)
	// for the clients of the machine to find: when SetJob hands it the
	// job (by then the caller holds the job's checkpoint folder, so that a
	// second instance refused by the folder's lock never replaces the
	// file of the one running), and removes it on Close.
	TokenFile string
	// TokenHelp says where a client finds the token, in the answers to
	// requests without it (default: the TokenFile).
	TokenHelp string
	// AllowedHosts are more host names or addresses (a port is ignored)
	// that requests may name in their Host and Origin headers, besides
	// loopback names and addresses (localhost, 127.0.0.0/8, ::1) and the
	// address the server listens on (with 0.0.0.0 or ::, those of the
	// machine's interfaces). "*" allows any host: only behind a proxy that
	// checks it.
	AllowedHosts []string
	// Warnf, when set, receives warnings (a token file that could not be
	// written or removed).
	Warnf func(format string, args ...any)

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout and
	// MaxHeaderBytes configure the http.Server that Start runs, as their
	// namesakes do (zero: the Default constants).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// MaxConnections is how many connections Start's server holds at
	// once (zero: DefaultMaxConnections); clients beyond wait in the
	// listen backlog until a connection closes.
	MaxConnections int
}

// RejectedFunc reports how many records a source rejected so far.
type RejectedFunc func() RejectedCounts

// RejectedCounts are the records a source's format rejected, by what
// the source's error policy did with them.
type RejectedCounts struct {
	// Skipped were dropped and counted (policy skip).
	Skipped int64
	// DeadLettered were written to the dead-letter destination (policy
	// dlq).
	DeadLettered int64
}

// Server serves one job's status over HTTP. Create it with New before the
// job is planned (it reports Starting), hand it the job with SetJob, and
// report the job's end with Done. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	sources map[string]bool // names of source nodes
	start   time.Time
	guard   *guard

	mu         sync.Mutex
	state      State
	err        string
	end        time.Time
	job        *arrowflow.Job
	recorded   checkpointMark  // the last epoch the Recorder recorded
	savepoint  *SavepointInfo  // the last savepoint POST /savepoint took
	stateful   map[string]bool // operators that reported state
	httpServer *http.Server
	serveDone  chan struct{}
	cancelBase context.CancelFunc
	closed     bool
	tokenFile  string // the token file written, to remove on Close
}

// checkpointMark is an epoch and when it was recorded.
type checkpointMark struct {
	epoch uint64
	at    time.Time
}

// New returns a server in state Starting. It does not listen yet: see
// Start, or use Handler with a server of your own. It fails when
// Config.Token is set but shorter than MinTokenLength.
func New(cfg Config) (*Server, error) {
	if cfg.Name == "" && cfg.Graph != nil {
		cfg.Name = cfg.Graph.Name()
	}
	cfg.Lag = maps.Clone(cfg.Lag)
	cfg.Rejected = maps.Clone(cfg.Rejected)
	switch {
	case cfg.Token == "":
		cfg.Token = NewToken()
	case len(cfg.Token) < MinTokenLength:
		return nil, fmt.Errorf("status server: the token is %d bytes long, at least %d are needed", len(cfg.Token), MinTokenLength)
	case strings.TrimSpace(cfg.Token) != cfg.Token || strings.ContainsAny(cfg.Token, " \t\r\n"):
		return nil, errors.New("status server: the token holds white space")
	}
	g := &guard{names: map[string]bool{}, token: sha256.Sum256([]byte(cfg.Token))}
	for _, h := range cfg.AllowedHosts {
		if strings.TrimSpace(h) == "*" {
			g.anyHost = true
		} else if n := normalHost(h); n != "" {
			g.names[n] = true
		}
	}
	s := &Server{cfg: cfg, start: time.Now(), state: Starting, sources: map[string]bool{}, stateful: map[string]bool{}, guard: g}
	if cfg.Graph != nil {
		for _, n := range cfg.Graph.Nodes() {
			if n.Kind() == arrowflow.SourceNode {
				s.sources[n.Name()] = true
			}
		}
	}
	return s, nil
}

// Token returns the token mutations need (Config.Token, or the one New
// made).
func (s *Server) Token() string { return s.cfg.Token }

// SetJob hands the server the planned job, whose counters it reports from
// now on, and moves it to Running unless it already ended; the first
// call writes Config.TokenFile. Call it just before job.Run.
func (s *Server) SetJob(j *arrowflow.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.job = j
	if !s.state.ended() {
		s.state = Running
	}
	if s.cfg.TokenFile != "" && s.tokenFile == "" && !s.closed {
		if err := s.writeTokenFile(); err != nil {
			s.warnf("status server: writing the token file: %v", err)
		} else {
			s.tokenFile = s.cfg.TokenFile
		}
	}
}

func (s *Server) warnf(format string, args ...any) {
	if s.cfg.Warnf != nil {
		s.cfg.Warnf(format, args...)
	}
}

// Job returns the job SetJob handed over, nil before.
func (s *Server) Job() *arrowflow.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.job
}

// Done records how the job ended: nil is Finished, an error wrapping
// context.Canceled is Cancelled, any other error is Failed with its text.
// Later calls change nothing.
func (s *Server) Done(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.ended() {
		return
	}
	s.end = time.Now()
	switch {
	case err == nil:
		s.state = Finished
	case errors.Is(err, context.Canceled):
		s.state, s.err = Cancelled, err.Error()
	default:
		s.state, s.err = Failed, err.Error()
	}
}

// State returns the job's state.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Recorder wraps the job's epoch recorder (nil: none) so that the server
// knows when each checkpoint was recorded, for Status.LatestCheckpoint's
// time. Set arrowflow.Options.Recorder to its result before planning;
// without it, the status shows the latest checkpoint without a time.
func (s *Server) Recorder(next arrowflow.EpochRecorder) arrowflow.EpochRecorder {
	return arrowflow.EpochRecorderFunc(func(ctx context.Context, cp *arrowflow.Checkpoint) error {
		if next != nil {
			if err := next.RecordEpoch(ctx, cp); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.recorded = checkpointMark{epoch: cp.Epoch, at: time.Now()}
		s.mu.Unlock()
		return nil
	})
}

// Start listens on addr (host:port; "" is DefaultAddr, and a missing
// host, ":8081", means 127.0.0.1; "0.0.0.0:8081" listens on every
// interface) and serves in the background until Close. It returns the
// address it listens on, with the port chosen when addr's was 0.
func (s *Server) Start(addr string) (net.Addr, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("status server: address %q: %w (want host:port, e.g. 127.0.0.1:8081)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1" // loopback unless the user names another interface
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpServer != nil || s.closed {
		return nil, errors.New("status server: already started")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("status server: %w", err)
	}
	s.guard.setBound(ln.Addr()) // before serving: the handlers read it
	c := s.cfg
	base, cancel := context.WithCancel(context.Background())
	s.cancelBase = cancel
	s.httpServer = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: orDefault(c.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(c.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(c.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(c.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    orDefault(c.MaxHeaderBytes, DefaultMaxHeaderBytes),
		BaseContext:       func(net.Listener) context.Context { return base },
		// Errors of clients (bad requests, accept errors while the
		// process is short of descriptors, retried) are theirs, not the
		// job's: not printed amid the job's output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	s.serveDone = make(chan struct{})
	limited := newLimitListener(ln, orDefault(c.MaxConnections, DefaultMaxConnections))
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		// Serve retries temporary accept errors (EMFILE) itself and
		// returns http.ErrServerClosed after Close; whatever it returns,
		// the job goes on: its status server is never a reason to stop.
		_ = srv.Serve(limited)
	}(s.httpServer, s.serveDone)
	return ln.Addr(), nil
}

// orDefault is v, or def when v is zero.
func orDefault[T time.Duration | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Close stops serving: it stops listening, waits up to 5 s for requests in
// flight (a savepoint being taken) and then cancels them, and removes the
// token file. It is safe to call more than once, and without Start.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, done, cancel := s.httpServer, s.serveDone, s.cancelBase
	s.httpServer, s.closed = nil, true
	tokenFile := s.tokenFile
	s.tokenFile = ""
	s.mu.Unlock()
	if tokenFile != "" {
		if err := os.Remove(tokenFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.warnf("status server: removing the token file: %v", err)
		}
	}
	if srv == nil {
		return nil
	}
	ctx, stop := context.WithTimeout(context.Background(), closeTimeout)
	defer stop()
	err := srv.Shutdown(ctx)
	cancel() // requests still running see their context end
	if err != nil {
		err = srv.Close()
	}
	<-done
	return err
}

// view is what the handlers read under the server's lock.
type view struct {
	state     State
	err       string
	job       *arrowflow.Job
	end       time.Time
	recorded  checkpointMark
	savepoint *SavepointInfo
}

func (s *Server) view() view {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := view{state: s.state, err: s.err, job: s.job, end: s.end, recorded: s.recorded}
	if s.savepoint != nil {
		c := *s.savepoint
		v.savepoint = &c
	}
	return v
}

// lags calls every lag provider, concurrently, each bounded by lagTimeout,
// and returns the results sorted by source name.
func (s *Server) lags(ctx context.Context) []SourceLag {
	if len(s.cfg.Lag) == 0 {
		return nil
	}
	out := make([]SourceLag, 0, len(s.cfg.Lag))
	for name := range s.cfg.Lag {
		out = append(out, SourceLag{Source: name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	var wg sync.WaitGroup
	for i := range out {
		f := s.cfg.Lag[out[i].Source]
		if f == nil {
			out[i].Error = "no lag provider"
			continue
		}
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, lagTimeout)
			defer cancel()
			n, err := f(lctx)
			if err != nil {
				out[i].Error = err.Error()
				return
			}
			out[i].Records = &n
		})
	}
	wg.Wait()
	return out
}

// sourceTask reports whether the task named task (a chain "a -> b")
// starts with a source node.
func (s *Server) sourceTask(task string) bool {
	head, _, _ := strings.Cut(task, " -> ")
	return s.sources[head]
}
