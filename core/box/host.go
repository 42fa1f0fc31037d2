package box

import (
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
)

// ChooseHost says where a command runs: on the host named by flag
// (--host NAME), else on the project's host (ProjectHost); ok is false for
// this machine (no host, or "local"). A named host that hosts.toml does
// not list is an error, never a silent run here.
func ChooseHost(l paths.Layout, flag, dir string) (h remote.Host, ok bool, err error) {
	name := flag
	if name == "" {
		if name, err = ProjectHost(l, dir); err != nil {
			return remote.Host{}, false, err
		}
	}
	if name == "" || name == remote.Local {
		return remote.Host{}, false, nil
	}
	h, err = remote.Find(l, name)
	return h, err == nil, err
}

// ProjectHost is the remote host the project in dir runs on: the host key
// of the global layer and of the box's trusted layer, the later winning
// ("" = this machine, and also when dir is no project directory here: the
// command then reports that itself). Only those layers are read: host is
// host-only, so a repository's .corral.toml cannot set it (loading it would
// refuse the file), and choosing where to run costs no read of the
// repository.
func ProjectHost(l paths.Layout, dir string) (string, error) {
	proj, err := ResolveProject(l, dir)
	if err != nil {
		return "", nil //nolint:nilerr // no project here: the command says so
	}
	var layers []config.Layer
	for _, f := range []struct {
		kind config.Kind
		path string
	}{{config.KindGlobal, l.GlobalConfig()}, {config.KindTrusted, l.ProjectConfig(proj.Box)}} {
		layer, err := config.LoadFile(f.kind, f.path)
		if err != nil {
			return "", err
		}
		layers = append(layers, layer)
	}
	return config.Merge(layers...).Settings().Host, nil
}
