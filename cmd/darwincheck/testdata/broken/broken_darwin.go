//go:build darwin

// Package broken is a deliberately wrong darwin file: the darwin type
// check must fail on it (see main_test.go).
package broken

import "fyne.io/systray"

func wrong() {
	systray.SetTitle(1, 2) // SetTitle takes one string
}
