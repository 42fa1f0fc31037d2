// Command genassets draws corral's icons with the standard library, so the
// PNGs in assets/ are reproducible from code rather than hand-edited.
//
// The glyph is a fence: three pointed posts and two rails, defined once on
// an 18-unit grid (the 18 pt menu-bar size) so the template icons land on
// whole pixels at 18 and 36 px. Edges are anti-aliased by supersampling.
//
// Usage:
//
//	go run ./cmd/genassets                     # rewrite the PNGs in assets/
//	go run ./cmd/genassets -out DIR            # write them to DIR instead
//	go run ./cmd/genassets -iconset X.iconset  # also write a macOS .iconset (for iconutil)
//
// Files written to -out (see Files):
//
//	tray-template.png     18×18  black + alpha, macOS menu-bar template (1x)
//	tray-template@2x.png  36×36  black + alpha, macOS menu-bar template (2x)
//	tray-color.png        44×44  teal fence on transparent, for Linux panels
//	icon-1024.png         1024×1024 app icon (macOS icon grid: 824 px rounded square)
//	icon-256.png          256×256 app icon (Linux hicolor theme)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "assets", "directory for the PNGs")
	iconset := flag.String("iconset", "", "also write a macOS .iconset `directory` (input of iconutil -c icns)")
	flag.Parse()
	if err := run(*out, *iconset); err != nil {
		fmt.Fprintln(os.Stderr, "genassets:", err)
		os.Exit(1)
	}
}

func run(out, iconset string) error {
	if err := writeAll(out, Files()); err != nil {
		return err
	}
	if iconset != "" {
		return writeAll(iconset, Iconset())
	}
	return nil
}

func writeAll(dir string, files map[string]image.Image) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for name, img := range files {
		b, err := encode(img)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

func encode(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Files are the images committed under assets/, by file name.
func Files() map[string]image.Image {
	return map[string]image.Image{
		"tray-template.png":    Template(18),
		"tray-template@2x.png": Template(36),
		"tray-color.png":       Glyph(44, teal),
		"icon-1024.png":        AppIcon(1024),
		"icon-256.png":         AppIcon(256),
	}
}

// Iconset is the content of a macOS .iconset directory: every size iconutil
// expects, each drawn at its own resolution rather than scaled down.
func Iconset() map[string]image.Image {
	m := map[string]image.Image{}
	for _, pt := range []int{16, 32, 128, 256, 512} {
		m[fmt.Sprintf("icon_%dx%d.png", pt, pt)] = AppIcon(pt)
		m[fmt.Sprintf("icon_%dx%d@2x.png", pt, pt)] = AppIcon(2 * pt)
	}
	return m
}

var (
	teal     = color.NRGBA{0x1a, 0xa3, 0x9a, 0xff} // the Linux tray colour app/tray.go uses
	bgTop    = color.NRGBA{0x2f, 0x9e, 0x8f, 0xff}
	bgBottom = color.NRGBA{0x14, 0x52, 0x4c, 0xff}
	wood     = color.NRGBA{0xf6, 0xec, 0xdc, 0xff}
)

// inFence reports whether (x, y), in 18-unit glyph coordinates (origin top
// left), is inside the fence: posts 2 units wide centred on x = 4, 9, 14
// from y = 3 down to 16 with a point up to y = 1, and rails from x = 1 to
// 17 at y = 6..8 and 11..13.
func inFence(x, y float64) bool {
	if x >= 1 && x <= 17 && ((y >= 6 && y <= 8) || (y >= 11 && y <= 13)) {
		return true
	}
	for _, c := range []float64{4, 9, 14} {
		dx := x - c
		if dx < -1 || dx > 1 || y > 16 {
			continue
		}
		if y >= 3 {
			return true
		}
		// The point: apex (c, 1), shoulders (c±1, 3).
		if y >= 1+2*abs(dx) {
			return true
		}
	}
	return false
}

// inRoundRect reports whether (x, y) is inside the rounded rectangle
// [x0, x1]×[y0, y1] with corner radius r.
func inRoundRect(x, y, x0, y0, x1, y1, r float64) bool {
	if x < x0 || x > x1 || y < y0 || y > y1 {
		return false
	}
	cx := clamp(x, x0+r, x1-r)
	cy := clamp(y, y0+r, y1-r)
	dx, dy := x-cx, y-cy
	return dx*dx+dy*dy <= r*r
}

// render builds a size×size image whose pixel colour is the average of
// ss×ss samples of shade, which returns a colour and whether the sample
// point (in pixel units) is covered.
func render(size, ss int, shade func(x, y float64) (color.NRGBA, bool)) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	n := float64(ss * ss)
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, a float64 // premultiplied sums
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := float64(px) + (float64(sx)+0.5)/float64(ss)
					y := float64(py) + (float64(sy)+0.5)/float64(ss)
					c, ok := shade(x, y)
					if !ok {
						continue
					}
					ca := float64(c.A) / 255
					r += float64(c.R) * ca
					g += float64(c.G) * ca
					b += float64(c.B) * ca
					a += ca
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{
				R: uint8(r/a + 0.5), G: uint8(g/a + 0.5), B: uint8(b/a + 0.5),
				A: uint8(a/n*255 + 0.5),
			})
		}
	}
	return img
}

// Template is the fence in black with alpha coverage: a macOS template
// image, which AppKit tints for light and dark menu bars.
func Template(size int) *image.NRGBA { return Glyph(size, color.NRGBA{0, 0, 0, 0xff}) }

// Glyph is the fence in one colour on a transparent size×size square.
func Glyph(size int, c color.NRGBA) *image.NRGBA {
	k := float64(size) / 18
	return render(size, 8, func(x, y float64) (color.NRGBA, bool) {
		return c, inFence(x/k, y/k)
	})
}

// AppIcon is the application icon at size×size, laid out on Apple's
// 1024-point icon grid: a rounded square of 824 with corner radius 185,
// a vertical teal gradient, and the fence in off-white inside it.
func AppIcon(size int) *image.NRGBA {
	k := float64(size) / 1024
	const glyph = 560.0 // the fence's 18 units, in grid points
	const off = (1024 - glyph) / 2
	ss := 4
	if size <= 64 {
		ss = 8
	}
	return render(size, ss, func(x, y float64) (color.NRGBA, bool) {
		gx, gy := x/k, y/k // grid points
		if !inRoundRect(gx, gy, 100, 100, 924, 924, 185) {
			return color.NRGBA{}, false
		}
		if inFence((gx-off)*18/glyph, (gy-off)*18/glyph) {
			return wood, true
		}
		return lerp(bgTop, bgBottom, (gy-100)/824), true
	})
}

func lerp(a, b color.NRGBA, t float64) color.NRGBA {
	t = clamp(t, 0, 1)
	mix := func(p, q uint8) uint8 { return uint8(float64(p) + (float64(q)-float64(p))*t + 0.5) }
	return color.NRGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), mix(a.A, b.A)}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func clamp(v, lo, hi float64) float64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
