package chart

import "math"

// valueAxis is a linear axis from 0 to Max with ticks at every multiple of
// Step. Invariant: Step is 1, 2 or 5 times a power of ten, and Max is a
// positive multiple of Step no smaller than the largest value drawn.
type valueAxis struct {
	Max, Step float64
}

// newValueAxis returns an axis for values up to max with about
// targetTicks intervals. With max 0 (all values zero or missing) the axis
// runs to 1 so that the chart still has a scale.
func newValueAxis(max float64, targetTicks int) valueAxis {
	if max <= 0 {
		return valueAxis{Max: 1, Step: 0.2}
	}
	step := niceStep(max / float64(targetTicks))
	// The 1e-9 slack keeps a max that is already a tick (1e6 with step
	// 2e5) from gaining an extra interval through division rounding.
	n := math.Ceil(max/step - 1e-9)
	if n*step < max {
		n++
	}
	return valueAxis{Max: n * step, Step: step}
}

// niceStep returns the smallest value of the form {1, 2, 5} × 10^k that
// is at least raw (raw > 0).
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * mag; s >= raw*(1-1e-12) {
			return s
		}
	}
	return 10 * mag // unreachable: raw/mag < 10
}

// Ticks returns the tick values 0, Step, 2·Step, ..., Max. Each is
// computed as i·Step rather than by repeated addition so that errors do
// not accumulate.
func (a valueAxis) Ticks() []float64 {
	n := int(math.Round(a.Max / a.Step))
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = float64(i) * a.Step
	}
	return ticks
}
