package files

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// position is a split's progress: how far its file was read, what the file
// looked like, and its neighbours in the listing of the run that first
// read it.
type position struct {
	// size is the file's size in bytes. A restored position whose file
	// has another size now is an error: the file changed.
	size int64
	// rows is the number of rows emitted from the file. Parquet resumes
	// after them.
	rows int64
	// offset is the byte offset of the next line of a text file, and line
	// the number of lines before it (for error messages). Text resumes at
	// offset. Both are 0 for Parquet.
	offset, line int64
	// prev and next are the ids of the files before and after this one
	// in the listing when the split was first read, carried unchanged
	// through restores: a restored job checks that they still exist, so
	// that a file that vanished since the checkpoint (whose own position
	// the runtime drops, as it is no split any more) is named in an error
	// rather than silently missing.
	prev, next string
	// done reports that the file was read to its end.
	done bool
}

// Position encoding: a version byte, a kind byte ('p' Parquet, 't' text),
// a flags byte (1: done), then size, rows, offset and line as unsigned
// varints, then prev and next as varint-length-prefixed strings.
const (
	positionVersion = 1
	kindParquet     = 'p'
	kindText        = 't'
	flagDone        = 1
)

func (p position) encode(kind byte) []byte {
	b := make([]byte, 0, 3+4*binary.MaxVarintLen64+2+len(p.prev)+len(p.next))
	var flags byte
	if p.done {
		flags |= flagDone
	}
	b = append(b, positionVersion, kind, flags)
	for _, v := range []int64{p.size, p.rows, p.offset, p.line} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	b = binary.AppendUvarint(b, uint64(len(p.prev)))
	b = append(b, p.prev...)
	b = binary.AppendUvarint(b, uint64(len(p.next)))
	return append(b, p.next...)
}

var errMalformed = errors.New("malformed")

// decodePosition parses what encode wrote for a split of the given kind.
func decodePosition(split string, kind byte, b []byte) (position, error) {
	var p position
	fail := func(why string) (position, error) {
		return position{}, fmt.Errorf("files source: split %s: %w position %x: %s", split, errMalformed, b, why)
	}
	if len(b) < 3 || b[0] != positionVersion {
		return fail(fmt.Sprintf("want version %d", positionVersion))
	}
	if b[1] != kind {
		return fail(fmt.Sprintf("it is a position of a %s file, and the source reads %s; was Format changed since the checkpoint?",
			kindName(b[1]), kindName(kind)))
	}
	if b[2]&^flagDone != 0 {
		return fail("unknown flags")
	}
	p.done = b[2]&flagDone != 0
	rest := b[3:]
	for _, v := range []*int64{&p.size, &p.rows, &p.offset, &p.line} {
		x, n := binary.Uvarint(rest)
		if n <= 0 || x > 1<<62 {
			return fail("bad number")
		}
		*v, rest = int64(x), rest[n:]
	}
	for _, s := range []*string{&p.prev, &p.next} {
		x, n := binary.Uvarint(rest)
		if n <= 0 || x > uint64(len(rest)-n) {
			return fail("bad name")
		}
		*s, rest = string(rest[n:n+int(x)]), rest[n+int(x):]
	}
	if len(rest) != 0 {
		return fail("trailing bytes")
	}
	if p.rows < 0 || p.offset > p.size || p.line < 0 {
		return fail("inconsistent numbers")
	}
	return p, nil
}

func kindName(k byte) string {
	switch k {
	case kindParquet:
		return "Parquet"
	case kindText:
		return "text"
	}
	return fmt.Sprintf("unknown (%q)", k)
}
