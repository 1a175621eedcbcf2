package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/format"
)

// textReadBuffer is the buffer size of text files; longer lines are
// gathered in a scratch slice.
const textReadBuffer = 256 << 10

// utf8BOM starts some UTF-8 files written on Windows; it is dropped from
// a file's first line.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// textFile reads the lines of one text file from its position's offset,
// up to the size it had when listed (bytes appended later are not read).
type textFile struct {
	rd     *reader
	sp     *split
	f      *os.File
	br     *bufio.Reader
	consts []arrow.Array
	long   []byte // scratch for lines longer than the buffer
	// raw keeps blank lines: for the raw format every line is a value.
	raw bool
}

func openText(rd *reader, sp *split, f *os.File) (splitFile, error) {
	consts, err := rd.newConstants(sp.entry)
	if err != nil {
		return nil, err
	}
	section := io.NewSectionReader(f, sp.pos.offset, sp.pos.size-sp.pos.offset)
	return &textFile{rd: rd, sp: sp, f: f, br: bufio.NewReaderSize(section, textReadBuffer), consts: consts,
		raw: rd.src.opts.Format == "raw"}, nil
}

// readLine returns the next line without its line break ("\n" or
// "\r\n") and the number of bytes it took, line break included; io.EOF
// when the file has no more bytes. The line is valid until the next call.
func (t *textFile) readLine() (line []byte, n int, err error) {
	line, err = t.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		t.long = append(t.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = t.br.ReadSlice('\n')
			t.long = append(t.long, line...)
		}
		line = t.long
	}
	n = len(line)
	if err == io.EOF {
		if n == 0 {
			return nil, 0, io.EOF
		}
		err = nil // a last line without a line break
	}
	if err != nil {
		return nil, 0, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, n, nil
}

// next decodes lines until the batch has BatchSize rows, the file ends, or
// it has read 4 × BatchSize lines (so that a run of rejected lines does
// not hold up barriers).
func (t *textFile) next(ctx context.Context) (arrow.RecordBatch, bool, error) {
	batch := t.rd.src.opts.BatchSize
	vb := t.rd.vb
	pos := &t.sp.pos
	eof := false
	for lines := 0; vb.Len() < batch && lines < 4*batch; lines++ {
		start := pos.offset
		line, n, err := t.readLine()
		if err == io.EOF {
			eof = true
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("files source: reading %s: %w", t.sp.entry.path, err)
		}
		pos.offset += int64(n)
		pos.line++
		if start == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if !t.raw && len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines separate nothing in JSON Lines and CSV
		}
		if err := vb.Append(line); err != nil {
			if err := t.reject(line, start, pos.line, err); err != nil {
				return nil, false, err
			}
		}
	}
	if !eof && pos.offset == pos.size {
		eof = true
	}
	n := vb.Len()
	if n == 0 {
		return nil, eof, nil
	}
	vals := vb.NewRecord()
	cols := make([]arrow.Array, vals.NumCols())
	for i := range cols {
		cols[i] = vals.Column(i)
		cols[i].Retain()
	}
	vals.Release()
	rec := t.rd.assemble(cols, t.consts, n)
	pos.rows += int64(n)
	return rec, eof, nil
}

// reject applies the error policy to a line the format rejected.
func (t *textFile) reject(line []byte, offset, lineNo int64, reason error) error {
	var re *format.RecordError
	path := t.sp.entry.path
	if !errors.As(reason, &re) {
		// Not about the line: fail whatever the policy.
		return fmt.Errorf("files source: file %s line %d: %w", path, lineNo, reason)
	}
	switch t.rd.src.opts.OnError {
	case SkipOnError:
		t.rd.src.stats.skipped.Add(1)
		return nil
	case DeadLetterOnError:
		return t.rd.dlq.write(path, lineNo, offset, line, reason)
	}
	return fmt.Errorf("files source: file %s line %d: %w "+
		"(error policy fail; the skip or dlq policy would go on past bad lines)", path, lineNo, reason)
}

func (t *textFile) close() error {
	releaseArrays(t.consts)
	return t.f.Close()
}
