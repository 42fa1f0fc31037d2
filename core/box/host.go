package box

import (
	"github.com/corral-dev/corral/core/boxmeta"
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
	c, box, err := hostLayers(l, dir)
	if err != nil || box == "" {
		return "", err // no project here: the command says so
	}
	return c.Host, nil
}

// RelayConfig is this machine's config for the project in dir when it
// runs a session on a remote host: the global layer and the box's trusted
// layer here, the later winning (only the global layer when dir is no
// project here). It names the credentials this machine's relay serves
// (core/credential StartRelay); a repository cannot set a credential, so
// its .corral.toml is not read. box is the project's box here ("" when
// none).
func RelayConfig(l paths.Layout, dir string) (c config.Settings, box string, err error) {
	return hostLayers(l, dir)
}

// hostLayers merges the global and the box's trusted layer of the project
// in dir (the global layer alone when dir is no project here).
func hostLayers(l paths.Layout, dir string) (config.Settings, string, error) {
	files := []struct {
		kind config.Kind
		path string
	}{{config.KindGlobal, l.GlobalConfig()}}
	box := ""
	if proj, err := boxmeta.ResolveProject(l, dir); err == nil {
		box = proj.Box
		files = append(files, struct {
			kind config.Kind
			path string
		}{config.KindTrusted, l.ProjectConfig(proj.Box)})
	}
	var layers []config.Layer
	for _, f := range files {
		layer, err := config.LoadFile(f.kind, f.path)
		if err != nil {
			return config.Settings{}, "", err
		}
		layers = append(layers, layer)
	}
	return config.Merge(layers...).Settings(), box, nil
}
