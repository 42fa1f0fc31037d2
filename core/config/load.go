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
	Layers   []Layer
	Warnings []Warning
}

// Load reads every layer, validates each, applies the repository policy,
// and merges them. Any error wraps ErrViolation or is an I/O error; on
// error the partial result still carries the warnings and every layer that
// parsed, so `config check` can report everything at once.
func Load(req Request) (Result, error) {
	var res Result
	var errs []error
	res.Layers = append(res.Layers, Defaults(req.Platform))

	load := func(kind Kind, path string) (Layer, bool) {
		l, warns, err := LoadFile(kind, path)
		res.Warnings = append(res.Warnings, warns...)
		if err != nil {
			errs = append(errs, err)
			return l, false
		}
		errs = append(errs, validate(l)...)
		return l, true
	}

	global, ok := load(KindGlobal, req.GlobalPath)
	if ok {
		res.Layers = append(res.Layers, global)
	}
	if req.ProjectDir != "" {
		proj, ok := load(KindProject, filepath.Join(req.ProjectDir, ProjectFile))
		if ok {
			base := Merge(res.Layers...).Config
			errs = append(errs, checkProject(proj, base, PolicyInput{
				ProjectDir: req.ProjectDir, TrustedPath: req.TrustedPath,
				HostMemory: req.HostMemory, HostCPUs: req.HostCPUs,
			})...)
			res.Layers = append(res.Layers, proj)
		}
	}
	if req.TrustedPath != "" {
		if trusted, ok := load(KindTrusted, req.TrustedPath); ok {
			res.Layers = append(res.Layers, trusted)
		}
	}
	flags := Layer{Kind: KindFlags, Path: "flags", Config: req.Flags}
	for _, k := range Schema {
		if isSet(&flags.Config, k.Name) {
			flags.Set = append(flags.Set, k.Name)
		}
	}
	errs = append(errs, validate(flags)...)
	res.Layers = append(res.Layers, flags)

	res.Effective = Merge(res.Layers...)
	errs = append(errs, checkFloors(&res.Effective)...)
	return res, errors.Join(errs...)
}
