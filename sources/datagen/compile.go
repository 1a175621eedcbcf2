package datagen

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// supportedTypes is listed in errors about unsupported types.
const supportedTypes = "int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, bool, string, timestamp, date32"

// compileField checks field i of cfg (defaults applied) and returns its
// generator. The type switch here is the only per-type dispatch: the
// generator's loops are typed.
func compileField(cfg *Config, i int) (generator, error) {
	f := cfg.Fields[i]
	fail := func(format string, args ...any) error {
		return fmt.Errorf("datagen: field %q: %s", f.Name, fmt.Sprintf(format, args...))
	}
	if f.Type == nil {
		return nil, fail("no Type")
	}
	switch {
	case f.Kind != Random && f.Kind != Sequence:
		return nil, fail("Kind %v is neither Random nor Sequence", f.Kind)
	case math.IsNaN(f.Min) || math.IsNaN(f.Max) || math.IsInf(f.Min, 0) || math.IsInf(f.Max, 0):
		return nil, fail("Min %v and Max %v must be finite", f.Min, f.Max)
	case f.Min > f.Max && f.Kind == Random:
		return nil, fail("Min %v > Max %v", f.Min, f.Max)
	case f.Kind == Sequence && f.Max != 0:
		return nil, fail("Max does not apply to a Sequence (it counts up from Min)")
	case !(f.NullRate >= 0 && f.NullRate <= 1): // also rejects NaN
		return nil, fail("NullRate %v is not in [0, 1]", f.NullRate)
	case f.Length < 0:
		return nil, fail("Length %d is negative", f.Length)
	case f.Decimals < 0 || f.Decimals > 15:
		return nil, fail("Decimals %d is not in [0, 15]", f.Decimals)
	}
	id := f.Type.ID()
	if id != arrow.STRING {
		switch {
		case len(f.Values) > 0:
			return nil, fail("Values apply only to string fields, not %v", f.Type)
		case f.Length != 0:
			return nil, fail("Length applies only to string fields, not %v", f.Type)
		}
	}
	if f.Decimals != 0 && (f.Kind != Random || (id != arrow.FLOAT32 && id != arrow.FLOAT64)) {
		return nil, fail("Decimals applies only to Random float fields")
	}
	nulls := newNullGen(cfg.Seed, i, f.NullRate)
	key := streamKey(cfg.Seed, i, purposeValue)
	switch id {
	case arrow.INT8:
		return newIntGen[int8](f, key, nulls, math.MinInt8, math.MaxInt8, 0, 0)
	case arrow.INT16:
		return newIntGen[int16](f, key, nulls, math.MinInt16, math.MaxInt16, 0, 0)
	case arrow.INT32:
		return newIntGen[int32](f, key, nulls, math.MinInt32, math.MaxInt32, 0, 0)
	case arrow.INT64:
		return newIntGen[int64](f, key, nulls, -0x1p63, 0x1p63, 0, 0)
	case arrow.UINT8:
		return newIntGen[uint8](f, key, nulls, 0, math.MaxUint8, 0, 0)
	case arrow.UINT16:
		return newIntGen[uint16](f, key, nulls, 0, math.MaxUint16, 0, 0)
	case arrow.UINT32:
		return newIntGen[uint32](f, key, nulls, 0, math.MaxUint32, 0, 0)
	case arrow.UINT64:
		return newIntGen[uint64](f, key, nulls, 0, 0x1p64, 0, 0)
	case arrow.FLOAT32:
		return newFloatGen[float32](f, key, nulls, math.MaxFloat32)
	case arrow.FLOAT64:
		return newFloatGen[float64](f, key, nulls, math.MaxFloat64)
	case arrow.BOOL:
		if f.Kind == Sequence || f.Min != 0 || f.Max != 0 {
			return nil, fail("bool fields are Random and take no Min or Max")
		}
		return &boolGen{key: key, nulls: nulls}, nil
	case arrow.STRING:
		return newStringGen(f, key, nulls)
	case arrow.TIMESTAMP:
		ts := f.Type.(*arrow.TimestampType)
		mult := int64(ts.Unit.Multiplier())
		if f.Name == cfg.EventTime.Column {
			et := cfg.EventTime
			return &eventTimeGen{
				dt:       ts,
				start:    et.Start.UnixNano(),
				interval: int64(et.Interval),
				jitter:   jitterSpan(et.MaxOutOfOrderness),
				mult:     mult,
				key:      streamKey(cfg.Seed, i, purposeJitter),
			}, nil
		}
		lo, hi := yearFrom(cfg.EventTime.Start, mult)
		return newIntGen[arrow.Timestamp](f, key, nulls, -0x1p63, 0x1p63, lo, hi)
	case arrow.DATE32:
		lo, hi := yearFrom(cfg.EventTime.Start, int64(24*time.Hour))
		return newIntGen[arrow.Date32](f, key, nulls, math.MinInt32, math.MaxInt32, lo, hi)
	}
	return nil, fail("type %v is not supported (supported: %s)", f.Type, supportedTypes)
}

// jitterSpan is the number of possible jitters, MaxOutOfOrderness+1 ns, or
// 0 for none.
func jitterSpan(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d) + 1
}

// yearFrom returns the range of one year (365 days) from start in units of
// mult nanoseconds, the default range of timestamp and date32 fields.
func yearFrom(start time.Time, mult int64) (lo, hi int64) {
	ns := start.UnixNano()
	lo = floorDiv(ns, mult)
	year := int64(365 * 24 * time.Hour)
	if ns > math.MaxInt64-year {
		return lo, floorDiv(math.MaxInt64, mult)
	}
	return lo, floorDiv(ns+year-1, mult)
}

// newIntGen builds an integer generator for a type whose values lie in
// [tmin, tmax] (tmax exclusive when it is a power of two beyond float64's
// exact integers: 2^63, 2^64). When Min and Max are both zero, a Random
// field takes [dlo, dhi], or every value of the type when dlo == dhi == 0.
func newIntGen[T integer](f Field, key uint64, nulls nullGen, tmin, tmax float64, dlo, dhi int64) (generator, error) {
	g := &intGen[T]{dt: f.Type, seq: f.Kind == Sequence, key: key, nulls: nulls}
	inRange := func(x float64) bool {
		if tmax == 0x1p63 || tmax == 0x1p64 {
			return x >= tmin && x < tmax
		}
		return x >= tmin && x <= tmax
	}
	for _, b := range [...]struct {
		name string
		v    float64
	}{{"Min", f.Min}, {"Max", f.Max}} {
		if math.Trunc(b.v) != b.v || !inRange(b.v) {
			return nil, fmt.Errorf("datagen: field %q: %s %v is not a whole number in the range of %v", f.Name, b.name, b.v, f.Type)
		}
	}
	toBits := func(x float64) uint64 {
		if x >= 0x1p63 {
			return uint64(x) // uint64 values beyond int64
		}
		return uint64(int64(x))
	}
	lo, hi := toBits(f.Min), toBits(f.Max)
	if f.Kind == Random && f.Min == 0 && f.Max == 0 {
		lo, hi = uint64(dlo), uint64(dhi)
		if dlo == 0 && dhi == 0 {
			// All 2^64 values truncated to T: uniform over T's range.
			g.min, g.span = 0, 0
			return g, nil
		}
	}
	g.min, g.span = lo, hi-lo+1 // modulo 2^64; 0 means all values
	return g, nil
}

// newFloatGen builds a float generator; tmax is the largest finite T.
func newFloatGen[T ~float32 | ~float64](f Field, key uint64, nulls nullGen, tmax float64) (generator, error) {
	if math.Abs(f.Min) > tmax || math.Abs(f.Max) > tmax {
		return nil, fmt.Errorf("datagen: field %q: Min %v or Max %v is beyond the range of %v", f.Name, f.Min, f.Max, f.Type)
	}
	g := &floatGen[T]{dt: f.Type, seq: f.Kind == Sequence, min: f.Min, key: key, nulls: nulls}
	lo, hi := f.Min, f.Max
	if g.seq {
		return g, nil
	}
	if lo == 0 && hi == 0 {
		lo, hi = 0, 1
	}
	g.min, g.width = lo, hi-lo
	if math.IsInf(g.width, 0) {
		return nil, fmt.Errorf("datagen: field %q: Max - Min overflows float64; narrow the range", f.Name)
	}
	g.max = T(hi)
	g.top = nextBelow(g.max)
	if f.Decimals > 0 {
		if lo == hi {
			return nil, fmt.Errorf("datagen: field %q: Decimals needs Min < Max", f.Name)
		}
		g.decimals = true
		g.scale = math.Pow10(f.Decimals)
		kmin, kmax := scaledCeil(lo, g.scale), scaledCeil(hi, g.scale)-1
		if math.Abs(kmin) > 1<<53 || math.Abs(kmax) > 1<<53 {
			return nil, fmt.Errorf("datagen: field %q: Min and Max times 10^%d exceed 2^53; use fewer Decimals", f.Name, f.Decimals)
		}
		if kmin > kmax {
			return nil, fmt.Errorf("datagen: field %q: no multiple of 10^-%d in [%v, %v)", f.Name, f.Decimals, lo, hi)
		}
		g.kmin, g.kspan = int64(kmin), uint64(kmax-kmin)+1
	}
	return g, nil
}

// scaledCeil is ceil(x*scale), treating products within rounding error of
// a whole number as that number (1.15*100 is 114.99999999999999).
func scaledCeil(x, scale float64) float64 {
	p := x * scale
	if r := math.Round(p); math.Abs(p-r) <= 1e-9*math.Max(1, math.Abs(p)) {
		return r
	}
	return math.Ceil(p)
}

// newStringGen builds a string generator.
func newStringGen(f Field, key uint64, nulls nullGen) (generator, error) {
	g := &stringGen{seq: f.Kind == Sequence, length: f.Length, key: key, nulls: nulls}
	for _, v := range f.Values {
		g.values = append(g.values, []byte(v))
	}
	switch {
	case !g.seq && (f.Min != 0 || f.Max != 0):
		return nil, fmt.Errorf("datagen: field %q: Min and Max do not apply to Random strings", f.Name)
	case g.seq && (math.Trunc(f.Min) != f.Min || math.Abs(f.Min) >= 0x1p63):
		return nil, fmt.Errorf("datagen: field %q: Min %v must be a whole number in the range of int64", f.Name, f.Min)
	case len(f.Values) > 0 && f.Length != 0:
		return nil, fmt.Errorf("datagen: field %q: Length does not apply when Values is set", f.Name)
	case g.seq && len(f.Values) == 0 && f.Length != 0:
		return nil, fmt.Errorf("datagen: field %q: Length does not apply to a string Sequence", f.Name)
	}
	g.min = int64(f.Min)
	return g, nil
}
