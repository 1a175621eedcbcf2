package chart

import (
	"math"
	"strconv"
	"strings"
)

// siSuffixes are the multipliers Short uses, smallest first: thousand,
// million, billion (SI giga) and trillion (SI tera).
var siSuffixes = []string{"", "K", "M", "G", "T"}

// Short formats v in a short human form with at most three significant
// digits and a thousands suffix: 0 → "0", 950 → "950", 1500 → "1.5K",
// 500000 → "500K", 1234567 → "1.23M", 2e9 → "2G". Trailing zeros are
// dropped, so round tick values read as "200K" and not "200.0K". A value
// that rounds up to the next suffix moves to it (999999 → "1M").
// Magnitudes below 1 use Go's %g with three digits (0.25 → "0.25"),
// magnitudes of 1000T and above fall back to exponent form. NaN is "n/a"
// (the chart's word for a missing value), infinities are "+Inf" and
// "-Inf".
func Short(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0" // also for -0
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	if v < 1 {
		return sign + strconv.FormatFloat(v, 'g', 3, 64)
	}
	for i, suffix := range siSuffixes {
		x := v / math.Pow(1000, float64(i))
		if x >= 1000 {
			continue
		}
		s := threeDigits(x)
		if s == "1000" {
			// Rounding carried into the next suffix (999.6 → 1000).
			if i+1 < len(siSuffixes) {
				return sign + "1" + siSuffixes[i+1]
			}
			break
		}
		return sign + s + suffix
	}
	return sign + strconv.FormatFloat(v, 'g', 3, 64)
}

// threeDigits formats x, 1 <= x < 1000, with three significant digits and
// no trailing zeros.
func threeDigits(x float64) string {
	decimals := 0
	switch {
	case x < 10:
		decimals = 2
	case x < 100:
		decimals = 1
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}
