// Package status serves a running weir job's status over HTTP, as
// Flink's REST API does for its jobs: state, progress, per-task counters,
// the plan, Prometheus metrics, and a savepoint trigger.
//
// The server has no authentication: anyone who can reach its address can
// read the job's status and take savepoints (and stop the job with one).
// Keep it on a loopback address (the default) or behind a proxy that
// authenticates.
//
// Endpoints:
//
//	GET  /            an HTML overview linking the others
//	GET  /status      JSON: Status
//	GET  /plan        the job's plan (arrowflow.Job.Explain), plain text
//	GET  /metrics     Prometheus text exposition format 0.0.4
//	POST /savepoint   take a savepoint (?stop=true: and stop the job);
//	                  JSON: SavepointResponse, or ErrorResponse
//
// Wrong methods get 405 with an Allow header, unknown paths 404.
package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
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
}

// Server serves one job's status over HTTP. Create it with New before the
// job is planned (it reports Starting), hand it the job with SetJob, and
// report the job's end with Done. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	sources map[string]bool // names of source nodes
	start   time.Time

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
}

// checkpointMark is an epoch and when it was recorded.
type checkpointMark struct {
	epoch uint64
	at    time.Time
}

// New returns a server in state Starting. It does not listen yet: see
// Start, or use Handler with a server of your own.
func New(cfg Config) *Server {
	if cfg.Name == "" && cfg.Graph != nil {
		cfg.Name = cfg.Graph.Name()
	}
	cfg.Lag = maps.Clone(cfg.Lag)
	s := &Server{cfg: cfg, start: time.Now(), state: Starting, sources: map[string]bool{}, stateful: map[string]bool{}}
	if cfg.Graph != nil {
		for _, n := range cfg.Graph.Nodes() {
			if n.Kind() == arrowflow.SourceNode {
				s.sources[n.Name()] = true
			}
		}
	}
	return s
}

// SetJob hands the server the planned job, whose counters it reports from
// now on, and moves it to Running unless it already ended. Call it just
// before job.Run.
func (s *Server) SetJob(j *arrowflow.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.job = j
	if !s.state.ended() {
		s.state = Running
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
	base, cancel := context.WithCancel(context.Background())
	s.cancelBase = cancel
	s.httpServer = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	s.serveDone = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln) // http.ErrServerClosed after Close
	}(s.httpServer, s.serveDone)
	return ln.Addr(), nil
}

// Close stops serving: it stops listening, waits up to 5 s for requests in
// flight (a savepoint being taken) and then cancels them. It is safe to
// call more than once, and without Start.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, done, cancel := s.httpServer, s.serveDone, s.cancelBase
	s.httpServer, s.closed = nil, true
	s.mu.Unlock()
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
