package changelog

import "slices"

// rankChunkMax is the most entries a chunk of a rankList holds before it
// splits in two (Rank.chunkMax overrides it in tests).
const rankChunkMax = 512

// rankList is a partition's row references in rank order, as a list of
// sorted chunks: their concatenation is the order. Inserting into or
// deleting from a partition of n rows moves at most a chunk's entries and
// finds its chunk by binary search, where one flat slice would move O(n)
// entries (a retracting Top-N keeps every row of a partition). Only the
// first entries, the top N, are read by position.
type rankList struct {
	chunks [][]int32 // non-empty
	n      int
}

// rankPos is a position in a rankList: entry off of chunk ci.
type rankPos struct{ ci, off int }

func (l *rankList) len() int { return l.n }

// search returns the first position whose key ranks after key (after all
// rows tied with it, upper true) or does not rank before it (lower).
func (l *rankList) search(o *rankOp, key []byte, upper bool) rankPos {
	after := func(ref int32) bool {
		c := o.cmpKey(ref, key)
		return c > 0 || (!upper && c == 0)
	}
	// The first chunk whose last entry is after key.
	lo, hi := 0, len(l.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := l.chunks[m]
		if after(ch[len(ch)-1]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == len(l.chunks) {
		if lo == 0 {
			return rankPos{}
		}
		return rankPos{lo - 1, len(l.chunks[lo-1])}
	}
	ch := l.chunks[lo]
	a, b := 0, len(ch)
	for a < b {
		m := int(uint(a+b) >> 1)
		if after(ch[m]) {
			b = m
		} else {
			a = m + 1
		}
	}
	return rankPos{lo, a}
}

// index is the number of entries before position p, or limit when that
// is more than limit (positions are compared with the top N only).
func (l *rankList) index(p rankPos, limit int) int {
	n := 0
	for _, ch := range l.chunks[:p.ci] {
		if n += len(ch); n > limit {
			return limit
		}
	}
	return min(n+p.off, limit)
}

// at is the entry at position p.
func (l *rankList) at(p rankPos) int32 { return l.chunks[p.ci][p.off] }

// prev is the position before p, ok false at the start.
func (l *rankList) prev(p rankPos) (rankPos, bool) {
	if p.off > 0 {
		return rankPos{p.ci, p.off - 1}, true
	}
	if p.ci == 0 {
		return p, false
	}
	return rankPos{p.ci - 1, len(l.chunks[p.ci-1]) - 1}, true
}

// insert puts ref at position p; a chunk of more than max entries splits.
func (l *rankList) insert(p rankPos, ref int32, max int) {
	l.n++
	if len(l.chunks) == 0 {
		l.chunks = [][]int32{{ref}}
		return
	}
	ch := slices.Insert(l.chunks[p.ci], p.off, ref)
	if len(ch) <= max {
		l.chunks[p.ci] = ch
		return
	}
	half := len(ch) / 2
	l.chunks[p.ci] = slices.Clip(ch[:half])
	l.chunks = slices.Insert(l.chunks, p.ci+1, slices.Clone(ch[half:]))
}

// delete removes the entry at position p.
func (l *rankList) delete(p rankPos) {
	l.n--
	ch := slices.Delete(l.chunks[p.ci], p.off, p.off+1)
	if len(ch) > 0 {
		l.chunks[p.ci] = ch
		return
	}
	l.chunks = slices.Delete(l.chunks, p.ci, p.ci+1)
	if len(l.chunks) == 0 {
		l.chunks = nil
	}
}

// first returns the first c entries, appended to dst.
func (l *rankList) first(c int, dst []int32) []int32 {
	for _, ch := range l.chunks {
		if c <= 0 {
			break
		}
		k := min(c, len(ch))
		dst = append(dst, ch[:k]...)
		c -= k
	}
	return dst
}

// truncate keeps the first c entries, calling drop for each other one.
func (l *rankList) truncate(c int, drop func(ref int32)) {
	if c >= l.n {
		return
	}
	n := 0
	for i, ch := range l.chunks {
		if n+len(ch) <= c {
			n += len(ch)
			continue
		}
		keep := c - n
		for _, r := range ch[keep:] {
			drop(r)
		}
		for _, rest := range l.chunks[i+1:] {
			for _, r := range rest {
				drop(r)
			}
		}
		if keep > 0 {
			l.chunks[i] = ch[:keep]
			i++
		}
		clear(l.chunks[i:])
		l.chunks = l.chunks[:i]
		break
	}
	l.n = c
}

// each calls fn with a pointer to every entry, in order, to read or
// rewrite it.
func (l *rankList) each(fn func(ref *int32)) {
	for _, ch := range l.chunks {
		for i := range ch {
			fn(&ch[i])
		}
	}
}

// push appends ref at the end.
func (l *rankList) push(ref int32, max int) {
	if len(l.chunks) == 0 {
		l.insert(rankPos{}, ref, max)
		return
	}
	last := len(l.chunks) - 1
	l.insert(rankPos{last, len(l.chunks[last])}, ref, max)
}

// walk calls fn with the index and entry of each entry in order, until fn
// returns false.
func (l *rankList) walk(fn func(i int, ref int32) bool) {
	i := 0
	for _, ch := range l.chunks {
		for _, r := range ch {
			if !fn(i, r) {
				return
			}
			i++
		}
	}
}

// set makes the list hold refs (in rank order), in chunks of at most half
// max entries.
func (l *rankList) set(refs []int32, max int) {
	l.chunks, l.n = nil, len(refs)
	for len(refs) > 0 {
		k := min(len(refs), (max+1)/2)
		l.chunks = append(l.chunks, slices.Clone(refs[:k]))
		refs = refs[k:]
	}
}
