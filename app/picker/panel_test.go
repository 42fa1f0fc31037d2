package picker

import (
	"errors"
	"testing"
)

// TestPanelSettings: the macOS panel is asked for one folder, never a
// file, with corral's words; every value is one objc.Call can pass (a
// bool or a string).
func TestPanelSettings(t *testing.T) {
	want := map[string]any{
		"setCanChooseDirectories:":    true,
		"setCanChooseFiles:":          false,
		"setAllowsMultipleSelection:": false,
		"setCanCreateDirectories:":    true,
		"setMessage:":                 Title,
		"setPrompt:":                  AcceptLabel,
	}
	seen := map[string]bool{}
	for _, s := range panelSettings {
		if seen[s.selector] {
			t.Errorf("%s set twice", s.selector)
		}
		seen[s.selector] = true
		switch s.value.(type) {
		case bool, string:
		default:
			t.Errorf("%s: value %T, want bool or string", s.selector, s.value)
		}
		if w, ok := want[s.selector]; !ok || w != s.value {
			t.Errorf("%s = %v, want %v", s.selector, s.value, w)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d settings, want %d", len(seen), len(want))
	}
}

func TestPanelAnswer(t *testing.T) {
	tests := []struct {
		name     string
		response int
		paths    []string
		want     string
		wantErr  error // nil with want "" means some other error
	}{
		{name: "chosen", response: 1, paths: []string{"/Users/me/src/my project"}, want: "/Users/me/src/my project"},
		{name: "cancel", response: 0, wantErr: ErrCancelled},
		{name: "cancel with a stale selection", response: 0, paths: []string{"/a"}, wantErr: ErrCancelled},
		{name: "other response", response: -1000, wantErr: ErrCancelled},
		{name: "ok without a folder", response: 1},
		{name: "two folders", response: 1, paths: []string{"/a", "/b"}},
		{name: "relative", response: 1, paths: []string{"src/web"}},
		{name: "empty", response: 1, paths: []string{""}},
		{name: "NUL", response: 1, paths: []string{"/a\x00b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := panelAnswer(tt.response, tt.paths)
			switch {
			case tt.want != "":
				if err != nil || got != tt.want {
					t.Fatalf("panelAnswer = %q, %v; want %q", got, err, tt.want)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || got != "" {
					t.Fatalf("panelAnswer = %q, %v; want %v", got, err, tt.wantErr)
				}
			default:
				if err == nil || errors.Is(err, ErrCancelled) || got != "" {
					t.Fatalf("panelAnswer = %q, %v; want an error", got, err)
				}
			}
		})
	}
}

// macOS 14 and later: -activate (activateIgnoringOtherApps: is deprecated
// there); before: activateIgnoringOtherApps:YES.
func TestActivationSelector(t *testing.T) {
	if sel, yes := activationSelector(true); sel != "activate" || yes {
		t.Errorf("with -activate: %q %v", sel, yes)
	}
	if sel, yes := activationSelector(false); sel != "activateIgnoringOtherApps:" || !yes {
		t.Errorf("without: %q %v", sel, yes)
	}
}
