// Package chart draws grouped bar charts as PNG images in pure Go, for
// the benchmark reports of weir bench (for example weir's Nexmark
// throughput per core next to Flink's published figures).
//
// Bars are horizontal: categories (queries) are listed down the left
// edge, where labels of any length stay readable, and values grow to the
// right along a linear axis that starts at 0. Every bar is labelled with
// its value in the form of Short, and a legend maps series to colours
// from the Okabe–Ito palette, which stays distinct under the common forms
// of colour blindness.
package chart

import (
	"bufio"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Chart describes a grouped bar chart: one group of bars per category,
// one bar per series in each group.
type Chart struct {
	// Title is drawn at the top; empty means no title.
	Title string
	// Unit labels the value axis, e.g. "events/s per core"; empty means
	// no axis label.
	Unit string
	// Series are the legend names, e.g. {"weir (this run)", "Flink 2.0
	// (published)"}. Series i is drawn in the i-th palette colour; at
	// most MaxSeries are supported.
	Series []string
	// Groups are the categories, drawn top to bottom in this order.
	Groups []Group
	// Width and Height are the image size in pixels. 0 means a default:
	// 900 pixels wide, and tall enough for every group at a comfortable
	// bar thickness. A given Height spreads the groups over it.
	Width, Height int
}

// Group is one category of a Chart, e.g. one Nexmark query.
type Group struct {
	// Label names the category, e.g. "q5".
	Label string
	// Values holds one value per series, in the order of Chart.Series.
	// Values must be finite and non-negative; NaN means "no value": no
	// bar is drawn and "n/a" is written in its place. A 0 is labelled
	// "0" and, having no length, shows no bar either.
	Values []float64
}

// MaxSeries is the largest number of series a Chart can have: the size
// of the palette. Beyond it colours would repeat and bars could not be
// told apart.
const MaxSeries = 7

// palette holds the Okabe–Ito colours (Okabe and Ito, "Color Universal
// Design", 2008) without black, which would read as text. The order puts
// the two most contrasting colours, blue and orange, first, since most
// charts compare two series.
var palette = [MaxSeries]color.RGBA{
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0xF0, 0xE4, 0x42, 0xFF}, // yellow
}

// Render draws c and writes it to w as a PNG image. It checks c first and
// writes nothing if c is not drawable: no series, more than MaxSeries
// series, no groups, a group whose value count differs from the number of
// series, a negative or infinite value, a negative size, or a size too
// small for the groups and labels.
func Render(w io.Writer, c Chart) error {
	if err := c.validate(); err != nil {
		return err
	}
	f, err := newFaces()
	if err != nil {
		return err
	}
	l, err := newLayout(c, f)
	if err != nil {
		return err
	}
	img := l.draw(c, f)
	bw := bufio.NewWriter(w)
	if err := png.Encode(bw, img); err != nil {
		return fmt.Errorf("chart: encode PNG: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("chart: write PNG: %w", err)
	}
	return nil
}

// validate reports the first reason c cannot be drawn, naming the group
// and series at fault.
func (c Chart) validate() error {
	switch {
	case len(c.Series) == 0:
		return fmt.Errorf("chart: no series (want at least one legend name in Series)")
	case len(c.Series) > MaxSeries:
		return fmt.Errorf("chart: %d series, at most %d supported (one distinct colour each)", len(c.Series), MaxSeries)
	case len(c.Groups) == 0:
		return fmt.Errorf("chart: no groups (want at least one category in Groups)")
	case c.Width < 0 || c.Height < 0:
		return fmt.Errorf("chart: size %dx%d is negative (0 means the default)", c.Width, c.Height)
	}
	for _, g := range c.Groups {
		if len(g.Values) != len(c.Series) {
			return fmt.Errorf("chart: group %q has %d values, want %d (one per series)", g.Label, len(g.Values), len(c.Series))
		}
		for i, v := range g.Values {
			switch {
			case math.IsInf(v, 0):
				return fmt.Errorf("chart: group %q series %q: value %v is infinite (want a finite value, or NaN for no value)", g.Label, c.Series[i], v)
			case v < 0:
				return fmt.Errorf("chart: group %q series %q: value %v is negative (want >= 0, or NaN for no value)", g.Label, c.Series[i], v)
			}
		}
	}
	return nil
}
