// Package assets embeds corral's icons. The PNGs are drawn by
// cmd/genassets (go run ./cmd/genassets rewrites them); do not edit them by
// hand.
package assets

import _ "embed"

// TrayIcon is the 36×36 macOS menu-bar template image (black and alpha
// only; 18 pt at 2x). Pass it to systray.SetTemplateIcon: AppKit tints it
// for light and dark menu bars. On a Linux panel it would show as black, so
// use TrayIconColor there.
//
//go:embed tray-template@2x.png
var TrayIcon []byte

// TrayIconColor is the same fence, 44×44, in teal on transparent: readable
// on light and dark Linux panels (StatusNotifierItem).
//
//go:embed tray-color.png
var TrayIconColor []byte

// AppIcon is the 1024×1024 application icon (the source of the bundle's
// .icns on macOS and of the hicolor icon on Linux).
//
//go:embed icon-1024.png
var AppIcon []byte
