package format

import (
	"errors"
	"unicode/utf8"
)

// One rule for text, in every format (doc.go, "Strings and UTF-8"):
// decoders take only valid UTF-8 into string columns and reject the record
// otherwise, naming the field and the offset of the first bad byte;
// encoders write a string column's invalid bytes as U+FFFD, so that what
// they write is well-formed and reads back.

// ErrInvalidUTF8 is the reason (RecordError.Err) of a record rejected
// because a value bound for a string column, or any part of a JSON text,
// is not valid UTF-8. RecordError.Offset is the offset of the first byte
// that does not begin a valid UTF-8 sequence.
var ErrInvalidUTF8 = errors.New("invalid UTF-8 in a string")

// invalidUTF8At returns the offset of the first byte of b that does not
// begin a valid UTF-8 sequence, or -1 when b is valid UTF-8.
func invalidUTF8At(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

const replacementChar = "\ufffd"

// appendValidUTF8 appends b to dst with every byte that does not begin a
// valid UTF-8 sequence replaced by U+FFFD (one per byte, as encoding/json
// and the json encoder do).
func appendValidUTF8(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	start := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, replacementChar...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, b[start:]...)
}
