package nexmark

import (
	"math"
	"testing"
)

// TestPow10MatchesMathPow checks pow10 against math.Pow bit for bit on
// the exponents prices draw (nextDouble()*6), on every whole and half
// exponent, and on the neighbours of the points where its path changes.
func TestPow10MatchesMathPow(t *testing.T) {
	check := func(e float64) {
		t.Helper()
		if got, want := pow10(e), math.Pow(10, e); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("pow10(%v) = %v, math.Pow = %v", e, got, want)
		}
	}
	for k := range 13 {
		e := float64(k) / 2
		check(e)
		for _, d := range []float64{math.Nextafter(e, -1), math.Nextafter(e, 7)} {
			if d >= 0 && d < 6 {
				check(d)
			}
		}
	}
	n := 2_000_000
	if testing.Short() {
		n = 200_000
	}
	r := newJavaRandom(42)
	for range n {
		check(float64(r.nextDouble() * 6.0))
	}
}
