// Package failpoint kills the process at named points of the exactly-once
// protocol, for crash tests. It is inert unless the WEIR_FAILPOINT
// environment variable names a point: "after-manifest" kills at the first
// hit, "after-manifest@3" at the third. The kill is SIGKILL, as a real
// crash: no deferred function runs and nothing is flushed.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// The named points of the protocol, in the order an epoch passes them.
const (
	AfterSnapshot  = "after-snapshot"  // an operator subtask wrote its snapshot
	AfterPreCommit = "after-precommit" // a sink subtask pre-committed
	AfterManifest  = "after-manifest"  // the epoch's manifest is written
	// AfterOutputManifest: the manifest is written of an epoch in which
	// some sink subtask pre-committed output (a non-nil payload), not yet
	// committed.
	AfterOutputManifest = "after-output-manifest"
	MidCommit           = "mid-commit" // a sink committed part of an epoch
	// NextEpochWritten: a Kafka sink subtask has records of an epoch in
	// the broker (flushed, its transaction open) while an earlier epoch
	// may be pre-committed but not committed, and before the epoch's own
	// manifest can exist.
	NextEpochWritten = "next-epoch-written"
)

// Armed reports whether point is the armed failpoint, for callers that
// must prepare the moment of the kill (flush first, say).
func Armed(point string) bool { return armed && point == name }

var (
	name  string
	nth   int64
	hits  atomic.Int64
	armed bool
)

func init() {
	spec := os.Getenv("WEIR_FAILPOINT")
	if spec == "" {
		return
	}
	name, nth = spec, 1
	if i := strings.LastIndexByte(spec, '@'); i >= 0 {
		n, err := strconv.ParseInt(spec[i+1:], 10, 64)
		if err == nil && n > 0 {
			name, nth = spec[:i], n
		}
	}
	armed = true
}

// Inject kills the process if point is the armed failpoint and this is
// its armed hit.
func Inject(point string) {
	if !armed || point != name {
		return
	}
	if hits.Add(1) == nth {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill() // SIGKILL on Unix
		}
		select {} // the signal is on its way
	}
}
