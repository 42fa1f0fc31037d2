package boxmeta

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// Located is the box a command is about and its project directory.
type Located struct {
	Box     string
	Project string
	// Meta is the box's metadata; nil when the box is not created yet (or
	// its metadata cannot be read, for a box found by its project).
	Meta *Meta
}

// Locate is the one rule of "the box named, else the current project's":
// with a name, the box of that name, whose metadata says its project (a box
// not created yet is found only when it is the box of the project at dir);
// without one, the box of the project at dir.
func Locate(l paths.Layout, name, dir string) (Located, error) {
	if name == "" {
		p, err := ResolveProject(l, dir)
		if err != nil {
			return Located{}, err
		}
		loc := Located{Box: p.Box, Project: p.Dir}
		if m, err := Read(l, p.Box); err == nil {
			loc.Meta = &m
		}
		return loc, nil
	}
	if err := project.CheckName(name, l.LimaHome()); err != nil {
		return Located{}, err
	}
	m, err := Read(l, name)
	switch {
	case err == nil:
		return Located{Box: m.Name, Project: m.Project, Meta: &m}, nil
	case !errors.Is(err, ErrNotFound):
		return Located{}, err // an Error: its hint says what to do with the file
	}
	if p, perr := ResolveProject(l, dir); perr == nil && p.Box == name {
		return Located{Box: name, Project: p.Dir}, nil
	}
	return Located{}, hint.New(fmt.Errorf("%w", err), "corral ls lists the boxes")
}
