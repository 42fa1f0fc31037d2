package box

import (
	"fmt"
	"path/filepath"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/limayaml"
)

// Drift says whether box m's current config (its project's layers as they
// are now) renders a template other than the one the box was created
// from: what `corral rebuild` would apply. Up warns about it; info shows it.
func (s *Service) Drift(m boxmeta.Meta) (bool, error) {
	r, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: m.Project})
	if err != nil {
		return false, fmt.Errorf("box %s: %w", m.Name, err)
	}
	if r.Project.Box != m.Name {
		return false, fmt.Errorf("box %s: its project %s resolves to box %s now", m.Name, m.Project, r.Project.Box)
	}
	hash, err := s.templateHash(r, m.BrokerPort)
	if err != nil {
		return false, fmt.Errorf("box %s: %w", m.Name, err)
	}
	return hash != m.TemplateHash, nil
}

// Mounts are the host directories box name has, read from its Lima
// instance (what it was created with, not what its config says now).
func (s *Service) Mounts(name string) ([]limayaml.Mount, error) {
	return limayaml.ReadMounts(filepath.Join(s.Layout.LimaHome(), name, "lima.yaml"))
}
