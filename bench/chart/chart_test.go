package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// render draws c and decodes the PNG it wrote.
func render(t *testing.T, c Chart) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, c); err != nil {
		t.Fatalf("Render: %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("decode the PNG Render wrote: %v", err)
	}
	return img
}

// solidRects finds the axis-aligned rectangles of pixels exactly equal to
// c: runs of c on consecutive rows with the same horizontal extent merge
// into one rectangle. A shape that is not a rectangle comes out as
// several, which the callers' counts then catch. The result is ordered by
// top edge.
func solidRects(img image.Image, c color.RGBA) []image.Rectangle {
	b := img.Bounds()
	var rects []image.Rectangle
	open := map[[2]int]int{} // run [x0, x1) on the previous row → index in rects
	for y := b.Min.Y; y < b.Max.Y; y++ {
		next := map[[2]int]int{}
		for x := b.Min.X; x < b.Max.X; {
			if color.RGBAModel.Convert(img.At(x, y)) != c {
				x++
				continue
			}
			x0 := x
			for x < b.Max.X && color.RGBAModel.Convert(img.At(x, y)) == c {
				x++
			}
			key := [2]int{x0, x}
			if i, ok := open[key]; ok {
				rects[i].Max.Y = y + 1
				next[key] = i
			} else {
				rects = append(rects, image.Rect(x0, y, x, y+1))
				next[key] = len(rects) - 1
			}
		}
		open = next
	}
	return rects
}

// drawn is one coloured rectangle found in an image and the series whose
// colour it has.
type drawn struct {
	series int
	r      image.Rectangle
}

// barsAndLegend splits the rectangles of every series colour into the
// legend swatches (the topmost rectangle of each colour, which must be a
// square above every bar) and the bars, ordered top to bottom.
func barsAndLegend(t *testing.T, img image.Image, nSeries int) (bars []drawn) {
	t.Helper()
	var swatches []image.Rectangle
	for s := range nSeries {
		rects := solidRects(img, palette[s])
		if len(rects) == 0 {
			t.Fatalf("series %d: no pixel of its colour %v (want at least the legend swatch)", s, palette[s])
		}
		sw := rects[0]
		if sw.Dx() != sw.Dy() {
			t.Errorf("series %d: topmost rectangle %v is not a square legend swatch", s, sw)
		}
		swatches = append(swatches, sw)
		for _, r := range rects[1:] {
			bars = append(bars, drawn{s, r})
		}
	}
	for _, b := range bars {
		for s, sw := range swatches {
			if sw.Max.Y > b.r.Min.Y {
				t.Errorf("legend swatch %d %v is not above bar %v", s, sw, b.r)
			}
		}
	}
	slices.SortFunc(bars, func(a, b drawn) int { return a.r.Min.Y - b.r.Min.Y })
	return bars
}

// checkBars is the oracle for the bars of c drawn in img: one bar per
// finite non-zero value, top to bottom in group order and within a group
// in series order, all starting at the same x (the value 0), all equally
// thick, and with lengths proportional to their values within 1 px.
func checkBars(t *testing.T, img image.Image, c Chart) {
	t.Helper()
	type want struct {
		group, series int
		v             float64
	}
	var wants []want
	maxV := 0.0
	for g, grp := range c.Groups {
		for s, v := range grp.Values {
			if !math.IsNaN(v) && v > 0 {
				wants = append(wants, want{g, s, v})
				maxV = max(maxV, v)
			}
		}
	}
	bars := barsAndLegend(t, img, len(c.Series))
	if len(bars) != len(wants) {
		t.Fatalf("found %d bars, want %d (one per finite non-zero value): %v", len(bars), len(wants), bars)
	}
	// The scale in pixels per unit comes from the longest bar; every other
	// bar must then have the length its value gives.
	longest := 0
	for _, b := range bars {
		longest = max(longest, b.r.Dx())
	}
	scale := float64(longest) / maxV
	for i, w := range wants {
		b := bars[i]
		name := fmt.Sprintf("group %q series %d", c.Groups[w.group].Label, w.series)
		if b.series != w.series {
			t.Errorf("bar %d from the top has the colour of series %d, want %s", i, b.series, name)
			continue
		}
		if b.r.Min.X != bars[0].r.Min.X {
			t.Errorf("%s: bar starts at x=%d, want %d like the others (the value 0)", name, b.r.Min.X, bars[0].r.Min.X)
		}
		if b.r.Dy() != bars[0].r.Dy() {
			t.Errorf("%s: bar is %d px thick, want %d like the others", name, b.r.Dy(), bars[0].r.Dy())
		}
		if got, want := float64(b.r.Dx()), w.v*scale; math.Abs(got-want) > 1 {
			t.Errorf("%s: bar is %v px long, want %.1f (value %v at %.6f px per unit)", name, got, want, w.v, scale)
		}
	}
	// Grouping: bars of one group are closer to each other than to the
	// bars of the next group.
	maxInner, minOuter := 0, math.MaxInt
	for i := 1; i < len(bars); i++ {
		gap := bars[i].r.Min.Y - bars[i-1].r.Max.Y
		if gap < 0 {
			t.Errorf("bars %v and %v overlap", bars[i-1].r, bars[i].r)
		}
		if wants[i].group == wants[i-1].group && wants[i].series == wants[i-1].series+1 {
			// Adjacent series: a missing bar in between would widen the gap.
			maxInner = max(maxInner, gap)
		} else if wants[i].group == wants[i-1].group+1 && wants[i].series <= wants[i-1].series {
			// Only adjacent groups with no missing bar in between tell the
			// plain group gap.
			minOuter = min(minOuter, gap)
		}
	}
	if minOuter != math.MaxInt && maxInner >= minOuter {
		t.Errorf("largest gap inside a group %d px >= smallest gap between groups %d px", maxInner, minOuter)
	}
}

func TestRenderBars(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		c    Chart
	}{
		{"two series", Chart{
			Title:  "per-core throughput",
			Unit:   "events/s per core",
			Series: []string{"weir (this run)", "Flink 2.0 (published)"},
			Groups: []Group{
				{"q0", []float64{2_400_000, 1_200_000}},
				{"q1", []float64{300_000, 150_000}},
				{"q5", []float64{612_345, nan}}, // Flink has no figure
				{"q7", []float64{nan, 99_000}},
				{"q8", []float64{1_000_000, 1_000_001}},
			},
		}},
		{"one series no title", Chart{
			Series: []string{"only"},
			Groups: []Group{{"a", []float64{1}}, {"b", []float64{0.5}}, {"c", []float64{0.25}}},
		}},
		{"three series given size", Chart{
			Title:  "t",
			Series: []string{"x", "y", "z"},
			Groups: []Group{
				{"g1", []float64{10, 20, 30}},
				{"g2", []float64{45, 0, 5}}, // 0 draws no bar
				{"g3", []float64{nan, nan, 7}},
			},
			Width: 640, Height: 480,
		}},
		{"values below one", Chart{
			Series: []string{"a", "b"},
			Groups: []Group{{"g", []float64{0.003, 0.0071}}, {"h", []float64{0.0005, 0.001}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBars(t, render(t, tc.c), tc.c)
		})
	}
}

// TestRenderBarsRandom runs the bar oracle on charts with random values,
// including missing ones, and random sizes.
func TestRenderBarsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		c := Chart{Title: fmt.Sprintf("random %d", i)}
		for s := range 1 + rng.IntN(MaxSeries) {
			c.Series = append(c.Series, fmt.Sprintf("series %d", s))
		}
		magnitude := math.Pow(10, float64(rng.IntN(10)-2))
		for g := range 1 + rng.IntN(12) {
			grp := Group{Label: fmt.Sprintf("q%d", g)}
			for range c.Series {
				v := rng.Float64() * magnitude
				if rng.IntN(8) == 0 {
					v = math.NaN()
				}
				grp.Values = append(grp.Values, v)
			}
			c.Groups = append(c.Groups, grp)
		}
		if rng.IntN(2) == 0 {
			c.Width = 500 + rng.IntN(800)
		}
		t.Run(c.Title, func(t *testing.T) {
			checkBars(t, render(t, c), c)
		})
	}
}

func TestRenderAllMissing(t *testing.T) {
	c := Chart{
		Series: []string{"a", "b"},
		Groups: []Group{{"g", []float64{math.NaN(), math.NaN()}}, {"h", []float64{0, math.NaN()}}},
	}
	img := render(t, c)
	for s := range c.Series {
		if rects := solidRects(img, palette[s]); len(rects) != 1 {
			t.Errorf("series %d: %d rectangles of its colour, want 1 (the legend swatch only): %v", s, len(rects), rects)
		}
	}
}

func TestRenderSize(t *testing.T) {
	groups := func(n int) []Group {
		var gs []Group
		for i := range n {
			gs = append(gs, Group{fmt.Sprintf("q%d", i), []float64{float64(i + 1), 2}})
		}
		return gs
	}
	series := []string{"weir", "Flink"}

	for _, size := range []image.Point{{640, 480}, {1200, 300}, {300, 900}} {
		img := render(t, Chart{Series: series, Groups: groups(4), Width: size.X, Height: size.Y})
		if got := img.Bounds().Size(); got != size {
			t.Errorf("Width, Height = %v: image is %v", size, got)
		}
	}

	// The default fits the groups: same width, taller with more groups,
	// and every bar at least as thick as a line of text is tall, so that
	// category and value labels do not run into each other.
	small := render(t, Chart{Series: series, Groups: groups(2)}).Bounds().Size()
	c := Chart{Title: "t", Unit: "u", Series: series, Groups: groups(11)}
	img := render(t, c)
	big := img.Bounds().Size()
	if small.X != defaultWidth || big.X != defaultWidth {
		t.Errorf("default widths %d and %d, want %d", small.X, big.X, defaultWidth)
	}
	if big.Y <= small.Y {
		t.Errorf("default height with 11 groups %d, want more than with 2 groups (%d)", big.Y, small.Y)
	}
	f, err := newFaces()
	if err != nil {
		t.Fatal(err)
	}
	bars := barsAndLegend(t, img, len(series))
	if len(bars) != 22 {
		t.Fatalf("%d bars, want 22", len(bars))
	}
	capHeight := f.text.Metrics().CapHeight.Ceil()
	for _, b := range bars {
		if b.r.Dy() < capHeight+2 {
			t.Errorf("bar %v is %d px thick, want at least the text's cap height %d + 2", b.r, b.r.Dy(), capHeight)
		}
	}
	if maxY := bars[len(bars)-1].r.Max.Y; maxY > big.Y {
		t.Errorf("last bar ends at y=%d, below the image (%d)", maxY, big.Y)
	}
}

func TestRenderErrors(t *testing.T) {
	series := []string{"weir", "Flink"}
	ok := []Group{{"q0", []float64{1, 2}}}
	for _, tc := range []struct {
		name string
		c    Chart
		want string
	}{
		{"no series", Chart{Groups: ok}, "chart: no series"},
		{"too many series", Chart{Series: make([]string, MaxSeries+1), Groups: ok}, "8 series, at most 7"},
		{"no groups", Chart{Series: series}, "chart: no groups"},
		{"too few values", Chart{Series: series, Groups: []Group{{"q0", []float64{1, 2}}, {"q5", []float64{1}}}},
			`chart: group "q5" has 1 values, want 2 (one per series)`},
		{"too many values", Chart{Series: series, Groups: []Group{{"q7", []float64{1, 2, 3}}}},
			`chart: group "q7" has 3 values, want 2 (one per series)`},
		{"negative", Chart{Series: series, Groups: []Group{{"q8", []float64{1, -3}}}},
			`chart: group "q8" series "Flink": value -3 is negative`},
		{"negative zero is fine but negative tiny is not", Chart{Series: series, Groups: []Group{{"q1", []float64{math.Copysign(0, -1), -1e-300}}}},
			`chart: group "q1" series "Flink": value -1e-300 is negative`},
		{"+Inf", Chart{Series: series, Groups: []Group{{"q2", []float64{math.Inf(1), 1}}}},
			`chart: group "q2" series "weir": value +Inf is infinite`},
		{"-Inf", Chart{Series: series, Groups: []Group{{"q3", []float64{1, math.Inf(-1)}}}},
			`chart: group "q3" series "Flink": value -Inf is infinite`},
		{"negative width", Chart{Series: series, Groups: ok, Width: -1}, "size -1x0 is negative"},
		{"too narrow", Chart{Series: series, Groups: ok, Width: 120}, "chart: width 120 px leaves"},
		{"too short", Chart{Series: series, Groups: ok, Height: 60}, "chart: height 60 px too small for 1 groups of 2 bars"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Render(&buf, tc.c)
			if err == nil {
				t.Fatalf("Render succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render error %q, want it to contain %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Render wrote %d bytes before failing, want none", buf.Len())
			}
		})
	}
}

// TestRenderConcurrent checks that concurrent Render calls (each with its
// own font faces) produce the same bytes as a lone call.
func TestRenderConcurrent(t *testing.T) {
	c := Chart{Title: "t", Unit: "u", Series: []string{"a", "b"}, Groups: []Group{{"q0", []float64{1e6, 2e6}}, {"q1", []float64{3e5, math.NaN()}}}}
	var want bytes.Buffer
	if err := Render(&want, c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]bytes.Buffer, 4)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() { errs[i] = Render(&got[i], c) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Errorf("goroutine %d: %v", i, errs[i])
		} else if !bytes.Equal(got[i].Bytes(), want.Bytes()) {
			t.Errorf("goroutine %d: PNG differs from a lone Render's", i)
		}
	}
}

func TestValueAxis(t *testing.T) {
	for _, tc := range []struct {
		max       float64
		ticks     int
		wantMax   float64
		wantStep  float64
		wantTicks []string
	}{
		{2_630_000, 8, 3_000_000, 500_000, []string{"0", "500K", "1M", "1.5M", "2M", "2.5M", "3M"}},
		{1_000_000, 5, 1_000_000, 200_000, []string{"0", "200K", "400K", "600K", "800K", "1M"}},
		{1_000_001, 5, 1_500_000, 500_000, nil}, // 200K would need 6 intervals
		{99, 10, 100, 10, nil},
		{0.7, 4, 0.8, 0.2, []string{"0", "0.2", "0.4", "0.6", "0.8"}},
		{0, 5, 1, 0.2, nil},
	} {
		a := newValueAxis(tc.max, tc.ticks)
		if a.Max != tc.wantMax || a.Step != tc.wantStep {
			t.Errorf("newValueAxis(%v, %d) = %+v, want Max %v Step %v", tc.max, tc.ticks, a, tc.wantMax, tc.wantStep)
		}
		if tc.wantTicks != nil {
			var got []string
			for _, v := range a.Ticks() {
				got = append(got, Short(v))
			}
			if !slices.Equal(got, tc.wantTicks) {
				t.Errorf("newValueAxis(%v, %d) tick labels %q, want %q", tc.max, tc.ticks, got, tc.wantTicks)
			}
		}
	}

	// Properties on random maxima: the step is 1, 2 or 5 times a power of
	// ten, the axis covers the maximum with less than one step to spare,
	// and the step is the smallest such that there are at most the
	// requested number of intervals.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		maxV := math.Pow(10, rng.Float64()*16-4)
		target := 2 + rng.IntN(9)
		a := newValueAxis(maxV, target)
		mant := a.Step / math.Pow(10, math.Floor(math.Log10(a.Step)+1e-9))
		if !slices.ContainsFunc([]float64{1, 2, 5}, func(m float64) bool { return math.Abs(mant-m) < 1e-9 }) {
			t.Fatalf("newValueAxis(%v, %d) step %v is not 1, 2 or 5 × 10^k", maxV, target, a.Step)
		}
		if a.Max < maxV || a.Max-a.Step >= maxV {
			t.Fatalf("newValueAxis(%v, %d) = %+v: want Max-Step < max <= Max", maxV, target, a)
		}
		intervals := len(a.Ticks()) - 1
		if intervals > target {
			t.Fatalf("newValueAxis(%v, %d) = %+v: %d intervals, want at most %d", maxV, target, a, intervals, target)
		}
		if smaller := prevNice(a.Step); math.Ceil(maxV/smaller-1e-9) <= float64(target) {
			t.Fatalf("newValueAxis(%v, %d) = %+v: the smaller step %v would also give at most %d intervals", maxV, target, a, smaller, target)
		}
	}
}

// prevNice is the 1-2-5 step just below step.
func prevNice(step float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	switch m := math.Round(step / mag); m {
	case 1:
		return mag / 2
	case 2:
		return mag
	default:
		return 2 * mag
	}
}

func TestShort(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{7.25, "7.25"},
		{12.34, "12.3"},
		{999, "999"},
		{999.4, "999"},
		{999.6, "1K"},
		{1000, "1K"},
		{1500, "1.5K"},
		{1234, "1.23K"},
		{12_345, "12.3K"},
		{99_999, "100K"},
		{500_000, "500K"},
		{999_999, "1M"},
		{1_500_000, "1.5M"},
		{1_234_567, "1.23M"},
		{2_000_000, "2M"},
		{2.5e9, "2.5G"},
		{7e12, "7T"},
		{999.9e12, "1e+15"},
		{0.25, "0.25"},
		{0.30000000000000004, "0.3"},
		{0.001234, "0.00123"},
		{-1500, "-1.5K"},
		{-0.5, "-0.5"},
		{math.NaN(), "n/a"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
	} {
		if got := Short(tc.v); got != tc.want {
			t.Errorf("Short(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
