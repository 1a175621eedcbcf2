package chart

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
)

// Geometry in pixels.
const (
	defaultWidth = 900
	margin       = 12 // around the whole image
	defaultBar   = 16 // bar thickness at the default height
	barGap       = 2  // between the bars of one group
	groupGap     = 14 // between groups
	swatch       = 12 // legend colour square
	labelGap     = 6  // between a bar, tick or swatch and its text
	tickLen      = 4
	minPlotWidth = 100
)

// Colours other than the series'. All are greys, so that no pixel of
// them or of anti-aliased text on white can equal a palette colour.
var (
	background = color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}
	ink        = color.RGBA{0x22, 0x22, 0x22, 0xFF} // text
	mutedInk   = color.RGBA{0x6E, 0x6E, 0x6E, 0xFF} // "n/a"
	axisInk    = color.RGBA{0x44, 0x44, 0x44, 0xFF}
	gridInk    = color.RGBA{0xE3, 0xE3, 0xE3, 0xFF}
)

// layout is where everything of one chart goes. The plot area is
// [plotLeft, plotLeft+plotWidth] × [plotTop, plotBottom); x = plotLeft is
// the value 0 and x = plotLeft+plotWidth is axis.Max.
type layout struct {
	width, height         int
	titleMid              int     // y of the title's middle
	legendRows            [][]int // series indices per legend row
	legendTop             int     // y of the first legend row's top
	plotLeft, plotWidth   int
	plotTop, plotBottom   int
	groupOffset, groupPad int // first group's top is plotTop+groupOffset; groupPad is above each group's first bar
	band                  int // height of one group, gaps included
	bar                   int // bar thickness
	axis                  valueAxis
}

func newLayout(c Chart, f faces) (*layout, error) {
	l := &layout{width: c.Width, height: c.Height}
	if l.width == 0 {
		l.width = defaultWidth
	}
	textLine := lineHeight(f.text)

	// Top: title, then legend rows.
	y := margin
	if c.Title != "" {
		th := lineHeight(f.title)
		l.titleMid = y + th/2
		y += th + labelGap
	}
	l.legendRows = legendRows(c.Series, f, l.width-2*margin)
	l.legendTop = y
	y += len(l.legendRows)*textLine + labelGap*2
	l.plotTop = y

	// Bottom: tick marks and labels, then the unit.
	bottom := tickLen + labelGap/2 + textLine + margin
	if c.Unit != "" {
		bottom += textLine
	}

	// Left: category labels. Right: room for the longest value label
	// after a full-length bar.
	labelW := 0
	for _, g := range c.Groups {
		labelW = max(labelW, textWidth(f.text, g.Label))
	}
	valueW := textWidth(f.text, Short(math.NaN()))
	maxV := 0.0
	for _, g := range c.Groups {
		for _, v := range g.Values {
			if !math.IsNaN(v) {
				valueW = max(valueW, textWidth(f.text, Short(v)))
				maxV = max(maxV, v)
			}
		}
	}
	l.plotLeft = margin + labelW + labelGap*2
	l.plotWidth = l.width - margin - valueW - labelGap - l.plotLeft
	if l.plotWidth < minPlotWidth {
		return nil, fmt.Errorf("chart: width %d px leaves %d px for bars, want at least %d (labels take the rest)", l.width, l.plotWidth, minPlotWidth)
	}
	// About one tick per 90 px leaves room for labels such as "1.5M".
	l.axis = newValueAxis(maxV, min(max(l.plotWidth/90, 2), 10))

	// Groups: a fixed bar thickness sets the height by default; a given
	// height sets the thickness.
	n, s := len(c.Groups), len(c.Series)
	if l.height == 0 {
		l.bar = defaultBar
		l.band = s*l.bar + (s-1)*barGap + groupGap
		l.plotBottom = l.plotTop + n*l.band
		l.height = l.plotBottom + bottom
	} else {
		l.plotBottom = l.height - bottom
		l.band = (l.plotBottom - l.plotTop) / n
		l.bar = (l.band - groupGap - (s-1)*barGap) / s
		if l.bar < 1 {
			need := l.plotTop + n*(s+(s-1)*barGap+groupGap) + bottom
			return nil, fmt.Errorf("chart: height %d px too small for %d groups of %d bars, want at least %d", l.height, n, s, need)
		}
		// Centre the groups in the space left by integer division.
		l.groupOffset = (l.plotBottom - l.plotTop - n*l.band) / 2
	}
	l.groupPad = (l.band - s*l.bar - (s-1)*barGap) / 2
	return l, nil
}

// legendRows lays the legend entries out left to right, starting a new
// row when the next entry would not fit in width.
func legendRows(series []string, f faces, width int) [][]int {
	var rows [][]int
	x := width // force a new row for the first entry
	for i, name := range series {
		w := legendEntryWidth(f, name)
		if x+w > width && x > 0 {
			rows = append(rows, nil)
			x = 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		x += w
	}
	return rows
}

// legendEntryWidth is the width of a swatch, its name and the space after.
func legendEntryWidth(f faces, name string) int {
	return swatch + labelGap + textWidth(f.text, name) + 3*labelGap
}

// barRect is the rectangle of the bar of group g and series s for value
// v, which must not be NaN. A bar of length 0 is an empty rectangle.
func (l *layout) barRect(g, s int, v float64) image.Rectangle {
	top := l.barTop(g, s)
	length := int(math.Round(v / l.axis.Max * float64(l.plotWidth)))
	return image.Rect(l.plotLeft, top, l.plotLeft+length, top+l.bar)
}

// barTop is the top y of the bar of group g and series s.
func (l *layout) barTop(g, s int) int {
	return l.plotTop + l.groupOffset + g*l.band + l.groupPad + s*(l.bar+barGap)
}

// valueX is the x of value v on the axis.
func (l *layout) valueX(v float64) int {
	return l.plotLeft + int(math.Round(v/l.axis.Max*float64(l.plotWidth)))
}

func (l *layout) draw(c Chart, f faces) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, l.width, l.height))
	fill(img, img.Bounds(), background)
	textLine := lineHeight(f.text)

	if c.Title != "" {
		drawText(img, f.title, ink, c.Title, l.width/2, l.titleMid, alignCenter)
	}

	// Legend rows, each centred.
	for r, row := range l.legendRows {
		w := 0
		for _, s := range row {
			w += legendEntryWidth(f, c.Series[s])
		}
		w -= 3 * labelGap // no space after the last entry
		x := (l.width - w) / 2
		mid := l.legendTop + r*textLine + textLine/2
		for _, s := range row {
			fill(img, image.Rect(x, mid-swatch/2, x+swatch, mid-swatch/2+swatch), palette[s])
			drawText(img, f.text, ink, c.Series[s], x+swatch+labelGap, mid, alignLeft)
			x += legendEntryWidth(f, c.Series[s])
		}
	}

	// Grid lines and ticks first, so that bars cover them.
	for _, t := range l.axis.Ticks() {
		x := l.valueX(t)
		if t > 0 {
			fill(img, image.Rect(x, l.plotTop, x+1, l.plotBottom), gridInk)
		}
		fill(img, image.Rect(x, l.plotBottom, x+1, l.plotBottom+tickLen), axisInk)
		drawText(img, f.text, ink, Short(t), x, l.plotBottom+tickLen+labelGap/2+textLine/2, alignCenter)
	}
	// The zero line sits just left of the bars and the base line just
	// below them, so neither overlaps a bar.
	fill(img, image.Rect(l.plotLeft-1, l.plotTop, l.plotLeft, l.plotBottom+1), axisInk)
	fill(img, image.Rect(l.plotLeft-1, l.plotBottom, l.plotLeft+l.plotWidth+1, l.plotBottom+1), axisInk)
	if c.Unit != "" {
		drawText(img, f.text, ink, c.Unit, l.plotLeft+l.plotWidth/2, l.plotBottom+tickLen+labelGap/2+textLine+textLine/2, alignCenter)
	}

	// Groups: label, then one bar and value label per series.
	for g, grp := range c.Groups {
		mid := l.plotTop + l.groupOffset + g*l.band + l.band/2
		drawText(img, f.text, ink, grp.Label, l.plotLeft-labelGap*2, mid, alignRight)
		for s, v := range grp.Values {
			barMid := l.barTop(g, s) + l.bar/2
			if math.IsNaN(v) {
				drawText(img, f.text, mutedInk, Short(v), l.plotLeft+labelGap, barMid, alignLeft)
				continue
			}
			r := l.barRect(g, s, v)
			fill(img, r, palette[s])
			drawText(img, f.text, ink, Short(v), r.Max.X+labelGap, barMid, alignLeft)
		}
	}
	return img
}

// fill paints r with the opaque colour c.
func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}
