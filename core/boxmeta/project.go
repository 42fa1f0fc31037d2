package boxmeta

import (
	"path/filepath"

	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// ResolveProject is project.Resolve with one rule more: the clone of a
// project another machine sent here (paths.RemoteProject) keeps that
// machine's box name, so that a box has one name on both machines and
// its commits come back under refs/remotes/corral/<that name>/.
func ResolveProject(l paths.Layout, dir string) (project.Project, error) {
	abs, err := project.ResolveDir(dir)
	if err != nil {
		return project.Project{}, err
	}
	if name, ok := remoteProjectName(l, abs); ok {
		return project.Project{Dir: abs, Box: name}, nil
	}
	return project.Resolve(abs, l.LimaHome())
}

// remoteProjectName is the box name of abs when abs is a remote project's
// clone: a valid box name directly under the remote projects directory.
func remoteProjectName(l paths.Layout, abs string) (string, bool) {
	name := filepath.Base(abs)
	if project.CheckName(name, l.LimaHome()) != nil {
		return "", false
	}
	parent, err := project.ResolveDir(l.RemoteProjectsDir())
	if err != nil || filepath.Dir(abs) != parent {
		return "", false
	}
	return name, true
}
