package files

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/weirflow/weir/arrowflow"
)

// DeadLetter is one line of a dead-letter file (JSON Lines): a line the
// format rejected under DeadLetterOnError.
type DeadLetter struct {
	// File is the path of the file the line is from.
	File string `json:"file"`
	// Line is its line number, from 1.
	Line int64 `json:"line"`
	// Offset is the byte offset where the line starts.
	Offset int64 `json:"offset"`
	// Error is the format's reason for rejecting it.
	Error string `json:"error"`
	// Value is the line without its line break when it is valid UTF-8;
	// otherwise ValueBase64 holds its bytes in standard base64.
	Value       string `json:"value"`
	ValueBase64 []byte `json:"value_base64,omitempty"`
}

// deadLetters appends a reader's rejected lines to its own file under
// the dead-letter folder, created at the first rejected line. Writes are
// buffered; flush, called before the reader reports positions, makes them
// durable, so a checkpoint never covers a rejected line whose dead letter
// could be lost (at least once).
type deadLetters struct {
	dir, name string
	stats     *stats
	f         *os.File
	bw        *bufio.Writer
}

// newDeadLetters names a reader's dead-letter file
// "<job>-<source>-<subtask>-<start time in ns>.jsonl": one per reader and
// run, so restarts never overwrite earlier dead letters.
func newDeadLetters(dir string, info *arrowflow.TaskInfo, st *stats) *deadLetters {
	job, src := info.Job, info.Name
	if job == "" {
		job = "job"
	}
	if src == "" {
		src = "files"
	}
	name := fmt.Sprintf("%s-%s-%05d-%d.jsonl", url.PathEscape(job), url.PathEscape(src), info.Subtask, time.Now().UnixNano())
	return &deadLetters{dir: dir, name: name, stats: st}
}

func (d *deadLetters) write(file string, line, offset int64, value []byte, reason error) error {
	if d.f == nil {
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return fmt.Errorf("files source: dead-letter folder: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(d.dir, d.name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("files source: dead-letter file: %w", err)
		}
		d.f, d.bw = f, bufio.NewWriter(f)
	}
	dl := DeadLetter{File: file, Line: line, Offset: offset, Error: reason.Error()}
	if utf8.Valid(value) {
		dl.Value = string(value)
	} else {
		dl.ValueBase64 = value
	}
	b, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("BUG: files source: dead letter: %w", err)
	}
	if _, err := d.bw.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("files source: dead-letter file %s: %w", d.f.Name(), err)
	}
	d.stats.deadLettered.Add(1)
	return nil
}

// flush makes the dead letters written so far durable.
func (d *deadLetters) flush() error {
	if d.f == nil {
		return nil
	}
	if err := d.bw.Flush(); err != nil {
		return fmt.Errorf("files source: dead-letter file %s: %w", d.f.Name(), err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("files source: dead-letter file %s: %w", d.f.Name(), err)
	}
	return nil
}

func (d *deadLetters) close() error {
	if d.f == nil {
		return nil
	}
	err := d.flush()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	d.f = nil
	return err
}
