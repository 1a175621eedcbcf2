package chart

import (
	"fmt"
	"image"
	"image/color"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// Font sizes in pixels (the faces are made at 72 DPI, so points are
// pixels).
const (
	titleSize = 16
	textSize  = 12
)

// parsedFonts parses the embedded Go fonts once. An sfnt.Font is safe for
// concurrent use; the faces made from it are not, so every Render makes
// its own (see newFaces).
var parsedFonts = sync.OnceValues(func() ([2]*sfnt.Font, error) {
	var fonts [2]*sfnt.Font
	for i, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return fonts, fmt.Errorf("chart: parse embedded Go font: %w", err)
		}
		fonts[i] = f
	}
	return fonts, nil
})

// faces holds the font faces of one Render call.
type faces struct {
	text, title font.Face
}

func newFaces() (faces, error) {
	fonts, err := parsedFonts()
	if err != nil {
		return faces{}, err
	}
	text, err := opentype.NewFace(fonts[0], &opentype.FaceOptions{Size: textSize, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return faces{}, fmt.Errorf("chart: text face: %w", err)
	}
	title, err := opentype.NewFace(fonts[1], &opentype.FaceOptions{Size: titleSize, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return faces{}, fmt.Errorf("chart: title face: %w", err)
	}
	return faces{text: text, title: title}, nil
}

// textWidth is the advance of s in face f, in whole pixels.
func textWidth(f font.Face, s string) int {
	return font.MeasureString(f, s).Ceil()
}

// lineHeight is the recommended distance between baselines of f.
func lineHeight(f font.Face) int {
	return f.Metrics().Height.Ceil()
}

// anchor says where a text's reference point is, horizontally.
type anchor int

const (
	alignLeft anchor = iota
	alignCenter
	alignRight
)

// drawText draws s with face f and colour c so that its horizontal anchor
// is at x and its vertical middle (half the cap height above the
// baseline) is at midY. Centring on the cap height rather than on the
// line box keeps labels visually centred on bars.
func drawText(dst *image.RGBA, f font.Face, c color.Color, s string, x, midY int, a anchor) {
	switch a {
	case alignCenter:
		x -= textWidth(f, s) / 2
	case alignRight:
		x -= textWidth(f, s)
	}
	capHeight := f.Metrics().CapHeight.Ceil()
	if capHeight == 0 {
		capHeight = f.Metrics().Ascent.Ceil() * 7 / 10
	}
	d := font.Drawer{
		Dst:  dst,
		Src:  image.NewUniform(c),
		Face: f,
		Dot:  fixed.P(x, midY+capHeight/2),
	}
	d.DrawString(s)
}
