package nexmark

import (
	"encoding/binary"
	"math"
	"slices"
)

// minStringLength is the reference's MIN_STRING_LENGTH.
const minStringLength = 3

// appendRandomString appends the reference's StringsGenerator.nextString
// (random, maxLength, special): 3 to maxLength-1 characters, each special
// with probability 1/13 and otherwise a lower-case letter, then trimmed of
// leading and trailing spaces (Java's String.trim; only a space special
// can be trimmed).
func appendRandomString(dst []byte, r *javaRandom, maxLength int32, special byte) []byte {
	n := int(minStringLength + r.nextInt(maxLength-minStringLength))
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	s := dst[start:]
	for i := range s {
		if r.nextInt(13) == 0 {
			s[i] = special
		} else {
			s[i] = byte('a' + r.nextInt(26))
		}
	}
	if special != ' ' {
		return dst
	}
	lead, end := 0, len(s)
	for lead < end && s[lead] == ' ' {
		lead++
	}
	for end > lead && s[end-1] == ' ' {
		end--
	}
	if lead > 0 {
		copy(s, s[lead:end])
	}
	return dst[:start+end-lead]
}

// appendExtra appends the reference's StringsGenerator.nextExtra(random,
// currentSize, desiredAverageSize): padding that brings an event of
// currentSize bytes to desiredAverageSize bytes on average, its length
// uniform within ±20% of the difference; nothing when the event is
// already larger.
func appendExtra(dst []byte, r *javaRandom, currentSize, desiredAverageSize int) []byte {
	if currentSize > desiredAverageSize {
		return dst
	}
	avg := desiredAverageSize - currentSize
	// Java: (int) Math.round(avg * 0.2); Math.round rounds half up, which
	// for a non-negative value is math.Round.
	delta := int(math.Round(float64(avg) * 0.2))
	size := avg - delta
	if delta != 0 {
		size += int(r.nextInt(int32(2 * delta)))
	}
	return appendExactString(dst, r, size)
}

// appendExactString appends the reference's
// StringsGenerator.nextExactString(random, length): each draw of 32
// random bits gives six characters, 'a' + rnd%26 with rnd /= 26 after
// each. rnd is a signed Java int, so a negative draw yields characters
// below 'a' (down to 'H'): the reference's quirk, kept.
//
// Two characters are taken at once: for truncated division,
// rnd%676 = (rnd%26) + 26*((rnd/26)%26) and rnd/676 = (rnd/26)/26, so
// pairTable[rnd%676 + 675] holds both characters. Truncated divisions
// compose (rnd/676/676 = rnd/676²), so the three pairs of a draw come from
// three independent divisions, and their six bytes are stored at once.
func appendExactString(dst []byte, r *javaRandom, length int) []byte {
	start := len(dst)
	// Two bytes of slack for the 8-byte stores, cut off again below.
	dst = slices.Grow(dst, length+2)[:start+length+2]
	s := dst[start:]
	for len(s) >= 8 {
		rnd := r.nextInt32()
		q1 := rnd / 676
		q2 := rnd / (676 * 676)
		q3 := rnd / (676 * 676 * 676)
		w := uint64(pairTable[rnd-q1*676+675]) |
			uint64(pairTable[q1-q2*676+675])<<16 |
			uint64(pairTable[q2-q3*676+675])<<32
		binary.LittleEndian.PutUint64(s, w)
		s = s[6:]
	}
	s = s[:len(s)-2]
	if len(s) > 0 {
		rnd := r.nextInt32()
		for i := range s {
			s[i] = byte('a' + rnd%26)
			rnd /= 26
		}
	}
	return dst[:start+length]
}

// pairTable[v+675], for v in [-675, 675], holds the two characters
// appendExactString makes of v, 'a' + v%26 and then 'a' + (v/26)%26, as
// a little-endian pair of bytes.
var pairTable = func() (t [1351]uint16) {
	for v := int32(-675); v <= 675; v++ {
		t[v+675] = uint16(byte('a'+v%26)) | uint16(byte('a'+v/26%26))<<8
	}
	return t
}()
