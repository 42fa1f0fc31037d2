package picker

import (
	"fmt"
	"strings"
)

// AcceptLabel is the chooser's confirm button (NSOpenPanel's prompt, the
// portal's accept_label).
const AcceptLabel = "Open in corral"

// panelSetting is one NSOpenPanel property the macOS picker sets before it
// shows the panel: a setter selector and its one argument (a bool or a
// string, which darwinkit's objc.Call passes as BOOL and NSString).
type panelSetting struct {
	selector string
	value    any
}

// panelSettings are what the macOS picker asks of NSOpenPanel, in order:
// one folder (never a file, never several), new folders allowed, corral's
// title and button. The darwin file only applies them, so what the panel
// does is decided and tested here.
var panelSettings = []panelSetting{
	{"setCanChooseDirectories:", true},
	{"setCanChooseFiles:", false},
	{"setAllowsMultipleSelection:", false},
	{"setCanCreateDirectories:", true},
	{"setMessage:", Title},
	{"setPrompt:", AcceptLabel},
}

// activationSelector is the NSApplication method the picker calls to
// bring the menu-bar app (an accessory app, with no window of its own) to
// the front before the panel opens, or the panel comes up behind the
// front app: -activate where NSApplication has it (macOS 14 and later,
// where activateIgnoringOtherApps: is deprecated and its flag ignored),
// else activateIgnoringOtherApps: with YES.
func activationSelector(hasActivate bool) (selector string, withYES bool) {
	if hasActivate {
		return "activate", false
	}
	return "activateIgnoringOtherApps:", true
}

// modalResponseOK is AppKit's NSModalResponseOK: the user chose.
const modalResponseOK = 1

// panelAnswer maps NSOpenPanel's completion (its NSModalResponse and the
// paths of its URLs) to Pick's result: any response but OK is a cancel;
// OK with anything but one absolute path is an error (the settings allow
// one folder, so it would be AppKit misbehaving, not the user).
func panelAnswer(response int, paths []string) (string, error) {
	if response != modalResponseOK {
		return "", ErrCancelled
	}
	if len(paths) != 1 {
		return "", fmt.Errorf("choosing a folder: the panel returned %d folders, want 1", len(paths))
	}
	p := paths[0]
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("choosing a folder: the panel returned %q, not an absolute path", p)
	}
	return p, nil
}
