//go:build !corral_noapp

package main

import (
	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/cmd/corral/cli"
)

// appMain is the menu-bar app (`corral app`). Building with the tag
// corral_noapp leaves it out (noapp_main.go), and with it fyne.io/systray,
// darwinkit and on macOS AppKit: a CLI-only binary, to measure what the
// app's frameworks cost every CLI run (docs/PLATFORMS.md, "Start-up cost
// of the darwin binary").
var appMain cli.AppFunc = app.Main
