package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedAssetsMatch fails when the PNGs in assets/ differ (pixel by
// pixel) from what the code draws: run `go run ./cmd/genassets` and commit.
func TestCommittedAssetsMatch(t *testing.T) {
	for name, want := range Files() {
		t.Run(name, func(t *testing.T) {
			have := decode(t, filepath.Join("..", "..", "assets", name))
			if have.Bounds() != want.Bounds() {
				t.Fatalf("bounds %v, want %v", have.Bounds(), want.Bounds())
			}
			b := want.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					h := color.NRGBAModel.Convert(have.At(x, y))
					w := color.NRGBAModel.Convert(want.At(x, y))
					if h != w {
						t.Fatalf("pixel (%d,%d) = %v, want %v; run: go run ./cmd/genassets", x, y, h, w)
					}
				}
			}
		})
	}
}

func TestTemplateIsBlackAndAlpha(t *testing.T) {
	for _, size := range []int{18, 36} {
		img := Template(size)
		if img.Bounds().Dx() != size || img.Bounds().Dy() != size {
			t.Fatalf("template %d has bounds %v", size, img.Bounds())
		}
		opaque, clear := 0, 0
		for i := 0; i < len(img.Pix); i += 4 {
			if img.Pix[i] != 0 || img.Pix[i+1] != 0 || img.Pix[i+2] != 0 {
				t.Fatalf("template %d: pixel %d is not black: %v", size, i/4, img.Pix[i:i+4])
			}
			switch img.Pix[i+3] {
			case 0xff:
				opaque++
			case 0:
				clear++
			}
		}
		// A glyph, not an empty or a filled square.
		if opaque == 0 || clear == 0 {
			t.Errorf("template %d: %d opaque and %d clear pixels", size, opaque, clear)
		}
	}
}

func TestIconsetHasEverySizeIconutilWants(t *testing.T) {
	set := Iconset()
	want := map[string]int{
		"icon_16x16.png": 16, "icon_16x16@2x.png": 32,
		"icon_32x32.png": 32, "icon_32x32@2x.png": 64,
		"icon_128x128.png": 128, "icon_128x128@2x.png": 256,
		"icon_256x256.png": 256, "icon_256x256@2x.png": 512,
		"icon_512x512.png": 512, "icon_512x512@2x.png": 1024,
	}
	if len(set) != len(want) {
		t.Errorf("iconset has %d files, want %d", len(set), len(want))
	}
	for name, px := range want {
		img, ok := set[name]
		if !ok {
			t.Errorf("iconset lacks %s", name)
			continue
		}
		if b := img.Bounds(); b.Dx() != px || b.Dy() != px {
			t.Errorf("%s is %v, want %dx%d", name, b, px, px)
		}
	}
}

func TestAppIconCornersAreTransparent(t *testing.T) {
	img := AppIcon(256)
	for _, p := range []image.Point{{0, 0}, {255, 0}, {0, 255}, {255, 255}, {30, 30}} {
		if a := img.NRGBAAt(p.X, p.Y).A; a != 0 {
			t.Errorf("pixel %v has alpha %d, want 0 (outside the rounded square)", p, a)
		}
	}
	if a := img.NRGBAAt(128, 128).A; a != 0xff {
		t.Errorf("centre alpha %d, want 255", a)
	}
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return img
}
