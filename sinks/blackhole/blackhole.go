// Package blackhole is a sink that discards every row, counting what it
// received. It still takes part in every epoch (pre-commit and commit), so
// benchmarks that end in it measure the whole protocol.
package blackhole

import (
	"context"
	"sync/atomic"

	"github.com/weirflow/weir/arrowflow"
)

// Sink discards rows. Its counters are shared by all subtasks.
type Sink struct {
	rows    atomic.Int64
	batches atomic.Int64
	commits atomic.Int64
}

// New returns a blackhole sink.
func New() *Sink { return &Sink{} }

// Rows is the number of rows received by all subtasks.
func (s *Sink) Rows() int64 { return s.rows.Load() }

// Batches is the number of batches received by all subtasks.
func (s *Sink) Batches() int64 { return s.batches.Load() }

// Commits is the number of epochs committed.
func (s *Sink) Commits() int64 { return s.commits.Load() }

// Open implements arrowflow.Sink.
func (s *Sink) Open(*arrowflow.TaskInfo) (arrowflow.SinkWriter, error) { return writer{s}, nil }

// Commit implements arrowflow.Sink.
func (s *Sink) Commit(context.Context, uint64, [][]byte) error {
	s.commits.Add(1)
	return nil
}

// Abort implements arrowflow.Sink.
func (s *Sink) Abort(context.Context, uint64, [][]byte) error { return nil }

type writer struct{ s *Sink }

func (w writer) Write(_ context.Context, b arrowflow.Batch) error {
	w.s.rows.Add(int64(b.NumRows()))
	w.s.batches.Add(1)
	b.Release()
	return nil
}

func (w writer) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }

func (w writer) Close() error { return nil }
