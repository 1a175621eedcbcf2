package files

import "testing"

// FuzzDecodePosition feeds arbitrary bytes to the decoder of checkpointed
// file positions: it must never panic, and whatever it accepts must
// satisfy the decoder's invariants and encode to a position that decodes
// to the same one. (The decoder accepts varints with redundant bytes,
// which weir never writes: they decode to the position they spell.)
func FuzzDecodePosition(f *testing.F) {
	for _, p := range []position{
		{},
		{size: 1000, rows: 10, offset: 500, line: 7, prev: "a.json", next: "b.json"},
		{done: true, size: 1 << 40, rows: 1 << 30, offset: 1 << 40},
	} {
		f.Add(byte(kindText), p.encode(kindText))
		f.Add(byte(kindParquet), p.encode(kindParquet))
	}
	f.Add(byte(kindText), []byte{positionVersion, kindText, 2})
	f.Add(byte(kindText), []byte{positionVersion, kindText, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, kind byte, b []byte) {
		p, err := decodePosition("fuzz", kind, b)
		if err != nil {
			return
		}
		if p.rows < 0 || p.line < 0 || p.offset < 0 || p.offset > p.size {
			t.Fatalf("decoded %x to an inconsistent position %+v", b, p)
		}
		again := p.encode(kind)
		q, err := decodePosition("fuzz", kind, again)
		if err != nil || q != p {
			t.Fatalf("position %x -> %+v -> %x -> %+v, %v", b, p, again, q, err)
		}
	})
}
