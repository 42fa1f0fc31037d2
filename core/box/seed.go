package box

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/guest"
)

// prepareSeed writes what a new box copies at its first boot into its seed
// directory (paths.SeedDir, shared read-only at guest.SeedMount): the
// box's copy of the agent state template, and with source = "clone" a
// bundle of the host repository. It runs before the instance starts; the
// old directory is removed first (os.RemoveAll does not follow links), so
// nothing an earlier box of the same name left there can redirect a write.
// corral never reads back from the directory.
func (s *Service) prepareSeed(ctx context.Context, r boxmeta.Resolved) error {
	c := r.Loaded.Settings()
	dir := s.Layout.SeedDir(r.Project.Box)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing the seed of box %s: %w", r.Project.Box, err)
	}
	if !limayaml.Seeds(c) {
		return nil
	}
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		return fmt.Errorf("creating the seed of box %s: %w", r.Project.Box, err)
	}
	if c.AgentState == agentstate.Seeded {
		a, err := agent.Find(c.Agents, c.Agent)
		if err != nil {
			return err
		}
		tmpl := s.Layout.AgentTemplate(a.Name)
		if err := agentstate.EnsureTemplate(tmpl, a); err != nil {
			return err
		}
		if err := agentstate.WriteSeed(filepath.Join(dir, guest.SeedAgent), tmpl, a, r.Project.Dir); err != nil {
			return err
		}
	}
	if c.Source == config.SourceClone {
		repo, err := hostgit.Open(r.Project.Dir)
		if err != nil {
			return hint.New(fmt.Errorf("source = \"clone\" needs a git repository: %w", err), "git init and commit, or use source = \"mount\"")
		}
		s.progress("bundling %s for the box's clone", r.Project.Dir)
		if _, err := repo.CreateBundle(ctx, filepath.Join(dir, guest.SeedBundle)); err != nil {
			return err
		}
	}
	return nil
}

// clearSeed empties a box's seed once its first boot copied it (the
// directory stays when the box's template mounts it).
func (s *Service) clearSeed(r boxmeta.Resolved) error {
	dir := s.Layout.SeedDir(r.Project.Box)
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clearing the seed of box %s: %w", r.Project.Box, err)
	}
	return s.ensureSeedDir(r)
}

// ensureSeedDir makes sure the seed share exists before a start (Lima
// refuses a mount whose directory is missing).
func (s *Service) ensureSeedDir(r boxmeta.Resolved) error {
	if !limayaml.Seeds(r.Loaded.Settings()) {
		return nil
	}
	return os.MkdirAll(s.Layout.SeedDir(r.Project.Box), atomicfile.DirMode)
}

// warnSharedAgentState states the risk where shared agent state is used.
func (s *Service) warnSharedAgentState(r boxmeta.Resolved) {
	if r.Loaded.Settings().AgentState == agentstate.Shared {
		s.progress("warning: %s", agentstate.SharedRisk)
	}
}
