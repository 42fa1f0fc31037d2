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
	// Snapshot, when set, is the repository's file as read earlier (by
	// ReadSnapshot, at box start): Load checks and applies it instead of
	// reading the box-writable file again. A running box's broker loads
	// with the snapshot taken when it started, so nothing the box writes
	// into its project reaches its policy before the next start.
	Snapshot *Snapshot
}

// Snapshot is a repository's .corral.toml as read at one moment.
type Snapshot struct {
	Layer Layer // decoded; empty when the file was missing or refused
	Err   error // why the file was refused, or nil
}

// ReadSnapshot reads and decodes the repository file of projectDir now.
// It does not apply the trust policy: Load does, against the host layers
// in force at each load.
func ReadSnapshot(projectDir string) *Snapshot {
	l, err := LoadFile(KindProject, filepath.Join(projectDir, ProjectFile))
	return &Snapshot{Layer: l, Err: err}
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
		snap := req.Snapshot
		if snap == nil {
			snap = ReadSnapshot(req.ProjectDir)
		}
		proj, ok := snap.Layer, snap.Err == nil
		if snap.Err != nil {
			errs = append(errs, snap.Err)
		}
		errs = append(errs, validate(proj)...)
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
