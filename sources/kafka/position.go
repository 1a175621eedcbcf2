package kafka

import (
	"bytes"
	"fmt"
	"strconv"
)

// position is a split's progress: the next offset to read and, for a
// bounded split, the offset it ends before.
type position struct {
	next int64
	end  int64 // exclusive; -1 when unbounded
}

// encode returns the checkpointed form: the next offset in decimal, then
// ":" and the end offset for a bounded split ("42", "42:100"). Recording
// the end keeps a restored bounded job reading exactly the range its first
// run resolved at start.
func (p position) encode() []byte {
	b := strconv.AppendInt(make([]byte, 0, 24), p.next, 10)
	if p.end >= 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, p.end, 10)
	}
	return b
}

// decodePosition parses what encode wrote.
func decodePosition(split string, b []byte) (position, error) {
	next, end, bounded := bytes.Cut(b, []byte{':'})
	p := position{end: -1}
	var err error
	if p.next, err = strconv.ParseInt(string(next), 10, 64); err != nil || p.next < 0 {
		return position{}, fmt.Errorf("kafka source: split %s: malformed position %q: want the next offset in decimal, optionally followed by \":\" and the end offset", split, b)
	}
	if bounded {
		if p.end, err = strconv.ParseInt(string(end), 10, 64); err != nil || p.end < 0 {
			return position{}, fmt.Errorf("kafka source: split %s: malformed end offset in position %q", split, b)
		}
	}
	return p, nil
}
