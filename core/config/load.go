package config

import (
	"errors"
	"path/filepath"
)

// ProjectFile is the name of a repository's config file.
const ProjectFile = ".corral.toml"

// Request says which layers to load for a project.
type Request struct {
	Platform    Platform
	ProjectDir  string // absolute, symlink-free; "" loads no project layer
	GlobalPath  string
	TrustedPath string
	Flags       Config // the flags layer; unset fields are not applied
	HostMemory  uint64
	HostCPUs    int
}

// Result is a loaded configuration.
type Result struct {
	Effective
	Layers []Layer
}

// Load reads every layer, validates each, applies the repository policy,
// and merges them. Any error wraps ErrViolation or is an I/O error; on
// error the partial result still carries every layer that parsed, so
// `config check` can report everything at once.
func Load(req Request) (Result, error) {
	var res Result
	var errs []error
	res.Layers = append(res.Layers, Defaults(req.Platform))

	// load reads a layer and validates it. A layer with unknown or
	// mistyped keys is never applied (ok is false), but what did decode is
	// still validated and, for the project, checked against the policy, so
	// that one run reports every problem.
	load := func(kind Kind, path string) (l Layer, ok bool) {
		l, err := LoadFile(kind, path)
		if err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, validate(l)...)
		return l, err == nil
	}

	global, ok := load(KindGlobal, req.GlobalPath)
	if ok {
		res.Layers = append(res.Layers, global)
	}
	if req.ProjectDir != "" {
		proj, ok := load(KindProject, filepath.Join(req.ProjectDir, ProjectFile))
		below := Merge(res.Layers...).Config
		perrs, checked := checkProject(proj, below, PolicyInput{
			ProjectDir: req.ProjectDir, TrustedPath: req.TrustedPath,
			HostMemory: req.HostMemory, HostCPUs: req.HostCPUs,
		})
		errs = append(errs, perrs...)
		if ok {
			res.Layers = append(res.Layers, proj)
			errs = append(errs, unchecked(proj, below, Merge(res.Layers...).Config, checked)...)
		}
	}
	if req.TrustedPath != "" {
		if trusted, ok := load(KindTrusted, req.TrustedPath); ok {
			res.Layers = append(res.Layers, trusted)
		}
	}
	flags := Layer{Kind: KindFlags, Path: "flags", Config: req.Flags, Set: setKeys(&req.Flags)}
	errs = append(errs, validate(flags)...)
	res.Layers = append(res.Layers, flags)

	res.Effective = Merge(res.Layers...)
	errs = append(errs, checkFloors(&res.Effective)...)
	errs = append(errs, checkPlatform(req.Platform, &res.Effective)...)
	return res, errors.Join(errs...)
}
