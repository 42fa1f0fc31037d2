package app

import (
	"bytes"
	"context"
	"github.com/corral-dev/corral/assets"
	"image"
	"image/color"
	"image/png"
	"runtime"

	"fyne.io/systray"
)

// runTray runs systray until Quit or ctx is done.
func runTray(ctx context.Context, opts Options, l *loop) {
	// fyne.io/systray v1.12.0 on Linux (not rechecked on v1.12.1) runs onReady concurrently with
	// exporting the D-Bus properties, so an icon or title set in onReady
	// is sometimes lost (and setting them twice races inside godbus/prop).
	// Values set before Run are picked up by the export. On macOS they
	// must be set in onReady, once NSApp exists.
	if runtime.GOOS == "linux" {
		systray.SetIcon(opts.Icon)
		systray.SetTitle("corral")
		systray.SetTooltip("corral boxes")
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			systray.Quit()
		case <-stop:
		}
	}()
	// systray drops an opening nobody receives at that instant: keep a
	// receiver, and hand each opening to the loop without waiting (remote
	// hosts are read again when the menu opens).
	go func() {
		for {
			select {
			case <-systray.TrayOpenedCh:
				l.menuOpened()
			case <-stop:
				return
			}
		}
	}()
	systray.Run(func() {
		if runtime.GOOS != "linux" {
			systray.SetTemplateIcon(templateIcon(), opts.Icon)
			systray.SetTooltip("corral boxes")
		}
		l.start(ctx)
	}, nil)
	l.cancel()
}

// defaultIcon is a 22×22 fence (three posts, two rails) in teal, for
// Linux panels of either brightness.
func defaultIcon() []byte {
	if len(assets.TrayIconColor) > 0 {
		return assets.TrayIconColor
	}
	return fenceIcon(color.RGBA{0x1a, 0xa3, 0x9a, 0xff}, 22)
}

// templateIcon is the same fence in black at 32×32 (16 pt @2x) for a
// macOS template image, which AppKit tints for light and dark menu bars.
func templateIcon() []byte {
	if len(assets.TrayIcon) > 0 {
		return assets.TrayIcon
	}
	return fenceIcon(color.RGBA{0, 0, 0, 0xff}, 32)
}

func fenceIcon(c color.RGBA, size int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	u := size / 11 // unit: 2 px at 22, 2 px at 32
	if u < 1 {
		u = 1
	}
	set := func(x0, y0, x1, y1 int) {
		for y := y0; y < y1 && y < size; y++ {
			for x := x0; x < x1 && x < size; x++ {
				img.Set(x, y, c)
			}
		}
	}
	for _, x := range []int{size/6 - u/2, size/2 - u, size - size/6 - u} {
		set(x, size/6, x+2*u, size-size/6) // posts
	}
	set(size/12, size/3, size-size/12, size/3+u)     // upper rail
	set(size/12, size*2/3-u, size-size/12, size*2/3) // lower rail
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}
