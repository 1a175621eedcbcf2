package kafka

import "testing"

// FuzzDecodePosition feeds arbitrary bytes to the decoder of checkpointed
// split positions: it must never panic, and whatever it accepts must
// encode to a position that decodes to the same one.
func FuzzDecodePosition(f *testing.F) {
	for _, s := range []string{"0", "42", "42:100", "9223372036854775807", "-1", "1:", ":5", "1:2:3", "", "0x10", " 7", "+7"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePosition("fuzz-0", b)
		if err != nil {
			return
		}
		if p.next < 0 || p.end < -1 {
			t.Fatalf("decoded %q to a negative offset: %+v", b, p)
		}
		q, err := decodePosition("fuzz-0", p.encode())
		if err != nil || q != p {
			t.Fatalf("position %q -> %+v -> %q -> %+v, %v", b, p, p.encode(), q, err)
		}
	})
}
