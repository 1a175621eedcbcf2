package nexmark

import (
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
// pairTable[rnd%676 + 675] holds both characters.
func appendExactString(dst []byte, r *javaRandom, length int) []byte {
	start := len(dst)
	dst = slices.Grow(dst, length)[:start+length]
	s := dst[start:]
	for len(s) >= 6 {
		rnd := r.nextInt32()
		q := rnd / 676
		p := &pairTable[rnd-q*676+675]
		s[0], s[1] = p[0], p[1]
		rnd = q
		q = rnd / 676
		p = &pairTable[rnd-q*676+675]
		s[2], s[3] = p[0], p[1]
		rnd = q
		q = rnd / 676
		p = &pairTable[rnd-q*676+675]
		s[4], s[5] = p[0], p[1]
		s = s[6:]
	}
	if len(s) > 0 {
		rnd := r.nextInt32()
		for i := range s {
			s[i] = byte('a' + rnd%26)
			rnd /= 26
		}
	}
	return dst
}

// pairTable[v+675], for v in [-675, 675], holds the two characters
// appendExactString makes of v: 'a' + v%26 and 'a' + (v/26)%26.
var pairTable = func() (t [1351][2]byte) {
	for v := int32(-675); v <= 675; v++ {
		t[v+675] = [2]byte{byte('a' + v%26), byte('a' + v/26%26)}
	}
	return t
}()
