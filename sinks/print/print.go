// Package print is a sink that writes every row, human-readable, to a
// writer (standard output by default), as it arrives. It is not
// transactional: rows appear before their epoch commits, and a restarted
// job prints replayed rows again.
package print

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// Options configure a print sink.
type Options struct {
	// Writer receives the lines (default os.Stdout).
	Writer io.Writer
	// Prefix starts every line, e.g. the sink's name.
	Prefix string
}

// Sink prints rows, one per line, in the style of Flink's print connector:
// "prefix subtask> +I[v1, v2, ...]" (the subtask, from 1, only when the
// sink has more than one). Lines of one batch are written together.
type Sink struct {
	opts Options
	mu   sync.Mutex // serialises writes of all subtasks
}

// New returns a print sink.
func New(opts Options) *Sink {
	if opts.Writer == nil {
		opts.Writer = os.Stdout
	}
	return &Sink{opts: opts}
}

// Open implements arrowflow.Sink.
func (s *Sink) Open(info *arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	prefix := s.opts.Prefix
	if info.Parallelism > 1 {
		if prefix != "" {
			prefix += " "
		}
		prefix += strconv.Itoa(info.Subtask+1) + ">"
	}
	if prefix != "" {
		prefix += " "
	}
	return &writer{s: s, prefix: prefix}, nil
}

// Commit implements arrowflow.Sink; printed rows are already visible.
func (s *Sink) Commit(context.Context, uint64, [][]byte) error { return nil }

// Abort implements arrowflow.Sink; printed rows cannot be taken back.
func (s *Sink) Abort(context.Context, uint64, [][]byte) error { return nil }

type writer struct {
	s      *Sink
	prefix string
	buf    []byte
}

func (w *writer) Write(_ context.Context, b arrowflow.Batch) error {
	defer b.Release()
	buf := w.buf[:0]
	n := b.NumRows()
	for k := 0; k < n; k++ {
		buf = append(buf, w.prefix...)
		buf = append(buf, b.Kind(k).String()...) // +I, -U, +U, -D as Flink prints them
		buf = append(buf, '[')
		for c, v := range b.RowValues(k) {
			if c > 0 {
				buf = append(buf, ", "...)
			}
			buf = AppendValue(buf, v)
		}
		buf = append(buf, "]\n"...)
	}
	w.buf = buf
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	_, err := w.s.opts.Writer.Write(buf)
	return err
}

func (w *writer) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }

func (w *writer) Close() error { return nil }

// AppendValue appends a value as arrowflow.ValueAt returns it, formatted
// for people: null, numbers in their shortest exact form (decimal
// notation between 1e-6 and 1e21), strings as they
// are, timestamps as "2006-01-02 15:04:05.000" (UTC).
func AppendValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case float64:
		// Plain decimals in the usual range, exponents only beyond it.
		if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(dst, x, 'f', -1, 64)
		}
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return append(dst, x...)
	case []byte:
		return append(dst, fmt.Sprintf("%x", x)...)
	case time.Time:
		return x.UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
	}
	return append(dst, strings.TrimSpace(fmt.Sprint(v))...)
}
