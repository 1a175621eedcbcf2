package nexmark

import (
	"math/bits"
	"strconv"
)

// stringTable is a list of strings stored back to back, as an Arrow
// string column stores them, so that appending one to a column is one
// copy.
type stringTable struct {
	data []byte
	offs []int32 // string i is data[offs[i]:offs[i+1]]
}

func (t *stringTable) add(s []byte) {
	if len(t.offs) == 0 {
		t.offs = append(t.offs, 0)
	}
	t.data = append(t.data, s...)
	t.offs = append(t.offs, int32(len(t.data)))
}

func (t *stringTable) get(i int32) []byte { return t.data[t.offs[i]:t.offs[i+1]] }

// channels holds the bid channels and their urls: the four hot channels
// and the numbered ones "channel-0" to "channel-9999".
//
// Flink's nexmark (where channels come from) draws each url once per
// process from an unseeded random generator, so its urls differ between
// runs. Here url k is drawn from java.util.Random seeded with a value
// derived from k and the Config's seed: the same in every run and on
// every subtask, in the same shape as Flink's.
type channels struct {
	hotNames, hotURLs stringTable
	names, urls       stringTable
}

func newChannels(seedMix int64) *channels {
	ch := &channels{}
	var buf []byte
	for i, name := range hotChannels {
		r := newJavaRandom(channelSeed(seedMix, numChannels+i))
		ch.hotNames.add([]byte(name))
		ch.hotURLs.add(appendBaseURL(buf[:0], &r))
	}
	for c := range numChannels {
		r := newJavaRandom(channelSeed(seedMix, c))
		buf = strconv.AppendInt(append(buf[:0], "channel-"...), int64(c), 10)
		ch.names.add(buf)
		buf = appendBaseURL(buf[:0], &r)
		if r.nextInt(10) > 0 {
			// Flink: "&channel_id=" + Math.abs(Integer.reverse(c)); the
			// absolute value of MinInt32 (for c = 1) stays negative, in Java
			// and in Go alike.
			id := int32(bits.Reverse32(uint32(c)))
			if id < 0 {
				id = -id
			}
			buf = strconv.AppendInt(append(buf, "&channel_id="...), int64(id), 10)
		}
		ch.urls.add(buf)
	}
	return ch
}

// channelSeed is the seed of the generator of channel k's url: the bitwise
// complement of k, a negative number, so it never equals an event's seed
// (event ids are never negative), mixed with the Config's seed.
func channelSeed(seedMix int64, k int) int64 { return ^int64(k) ^ seedMix }

// appendBaseURL appends a url in the shape of Flink's nexmark
// getBaseUrl: "https://www.nexmark.com/" and three path segments of 3 or 4
// random letters or underscores, then "/item.htm?query=1".
func appendBaseURL(dst []byte, r *javaRandom) []byte {
	dst = append(dst, "https://www.nexmark.com/"...)
	for range 3 {
		dst = appendRandomString(dst, r, 5, '_')
		dst = append(dst, '/')
	}
	return append(dst, "item.htm?query=1"...)
}
