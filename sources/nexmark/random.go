package nexmark

import "math"

// javaRandom is the linear congruential generator of java.util.Random, as
// its specification (the Java SE API documentation) defines it: 48 bits of
// state, seeded with (seed XOR 0x5DEECE66D) mod 2^48, advanced by
// state*0x5DEECE66D + 0xB mod 2^48, handing out the state's high bits. The
// reference generator (Apache Beam's Nexmark) draws every value of event
// n from a java.util.Random seeded with n, so reproducing the algorithm
// bit for bit reproduces the reference's events.
type javaRandom struct {
	state uint64
}

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = 1<<48 - 1
)

// newJavaRandom returns the generator java.util.Random(seed) would be.
func newJavaRandom(seed int64) javaRandom {
	return javaRandom{state: (uint64(seed) ^ javaMultiplier) & javaMask}
}

// next advances the state and returns its top bits (1 <= bits <= 32), as
// a signed 32-bit value like Java's next(bits).
func (r *javaRandom) next(bits uint) int32 {
	r.state = (r.state*javaMultiplier + javaAddend) & javaMask
	return int32(r.state >> (48 - bits))
}

// nextInt32 is Java's nextInt(): 32 uniform bits.
func (r *javaRandom) nextInt32() int32 { return r.next(32) }

// nextInt is Java's nextInt(bound) for bound > 0: uniform in [0, bound),
// with Java's rejection loop (and its power-of-two shortcut) so that the
// same draws are consumed.
func (r *javaRandom) nextInt(bound int32) int32 {
	if bound&(bound-1) == 0 { // a power of two
		return int32((int64(bound) * int64(r.next(31))) >> 31)
	}
	for {
		bits := r.next(31)
		val := bits % bound
		// Java: bits - val + (bound-1) < 0 in 32-bit arithmetic, i.e. the
		// draw fell in the incomplete last interval.
		if bits-val+(bound-1) >= 0 {
			return val
		}
	}
}

// nextInt64 is Java's nextLong(): two draws of 32 bits.
func (r *javaRandom) nextInt64() int64 {
	hi := int64(r.next(32))
	lo := int64(r.next(32))
	return hi<<32 + lo
}

// nextDouble is Java's nextDouble(): 53 random bits scaled into [0, 1).
func (r *javaRandom) nextDouble() float64 {
	hi := int64(r.next(26))
	lo := int64(r.next(27))
	return float64(hi<<27+lo) * (1.0 / (1 << 53))
}

// nextLong is the reference's LongGenerator.nextLong(random, n) for n > 0:
// nextInt(n) when n fits in an int, else |nextLong() mod n| (the
// reference's own, skewed, fallback).
func (r *javaRandom) nextLong(n int64) int64 {
	if n < math.MaxInt32 {
		return int64(r.nextInt(int32(n)))
	}
	v := r.nextInt64() % n
	if v < 0 {
		v = -v
	}
	return v
}

// nextPrice is the reference's PriceGenerator.nextPrice: a price in cents,
// log-uniform between 1 and 10^6 units, Math.round(10^(6u) * 100).
func (r *javaRandom) nextPrice() int64 {
	// The products are kept apart by explicit conversions so that no
	// compiler fuses them into a multiply-add, which would round
	// differently from Java.
	e := float64(r.nextDouble() * 6.0)
	p := float64(pow10(e) * 100.0)
	// Java's Math.round rounds half up; for positive values that is
	// math.Round (half away from zero), computed without the error of
	// Floor(p + 0.5).
	return int64(math.Round(p))
}

// ln10 is math.Log(10), as math.Pow computes it on every call.
var ln10 = math.Log(10)

// pow10 is math.Pow(10, e) for 0 <= e < 6, bit for bit: it follows
// math.Pow's own algorithm (the pure Go one, which every platform but
// s390x uses; there it falls back to math.Pow) with Log(10) computed once
// instead of on every call. The special cases math.Pow answers otherwise
// (e 0, 0.5, 1 and whole numbers) go to math.Pow itself.
func pow10(e float64) float64 {
	yi, yf := math.Modf(e)
	if yf == 0 || e == 0.5 || !pow10Exact {
		return math.Pow(10, e)
	}
	if yf > 0.5 {
		yf--
		yi++
	}
	a1 := math.Exp(yf * ln10)
	// 10 = 0.625 * 2^4: multiply in the successive squarings of 0.625
	// (renormalised into [0.5, 1)) for the bits of yi, as math.Pow does.
	x1, xe, ae := 0.625, 4, 0
	for i := int64(yi); i != 0; i >>= 1 {
		if i&1 == 1 {
			a1 *= x1
			ae += xe
		}
		x1 *= x1
		xe <<= 1
		if x1 < .5 {
			x1 += x1
			xe--
		}
	}
	return math.Ldexp(a1, ae)
}
