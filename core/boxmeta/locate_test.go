package boxmeta

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// TestLocate: the box named (from its metadata, or the current project's
// when not created yet), else the current project's box.
func TestLocate(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	here, _ := filepath.EvalSymlinks(t.TempDir())
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	cur, err := project.Resolve(here, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(l, Meta{Name: "other-1", Project: elsewhere}); err != nil {
		t.Fatal(err)
	}

	// No name, no box yet: the project's box, without metadata.
	loc, err := Locate(l, "", here)
	if err != nil || loc.Box != cur.Box || loc.Project != here || loc.Meta != nil {
		t.Errorf("no name: %+v, %v", loc, err)
	}
	// A created box: its metadata's project, wherever the command runs.
	loc, err = Locate(l, "other-1", here)
	if err != nil || loc.Box != "other-1" || loc.Project != elsewhere || loc.Meta == nil {
		t.Errorf("other-1: %+v, %v", loc, err)
	}
	// The current project's box, named before it is created.
	loc, err = Locate(l, cur.Box, here)
	if err != nil || loc.Box != cur.Box || loc.Project != here || loc.Meta != nil {
		t.Errorf("%s: %+v, %v", cur.Box, loc, err)
	}
	// Any other unknown box: ErrNotFound with a hint.
	_, err = Locate(l, "nosuch-1", here)
	if !errors.Is(err, ErrNotFound) || hint.Of(err) == "" {
		t.Errorf("nosuch-1: %v", err)
	}
	// A name that is not a box name never names a file.
	if _, err := Locate(l, "../x", here); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("../x: %v", err)
	}
	// With its metadata written, the project's box has it.
	if err := Write(l, Meta{Name: cur.Box, Project: here}); err != nil {
		t.Fatal(err)
	}
	if loc, err := Locate(l, "", here); err != nil || loc.Meta == nil {
		t.Errorf("no name, created: %+v, %v", loc, err)
	}
}
