package box

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
)

// Golden is a golden image and the boxes cloned from it.
type Golden struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Boxes  []string `json:"boxes"`
}

// Goldens lists golden images (Lima instances named golden-*).
func (s *Service) Goldens(ctx context.Context) ([]Golden, error) {
	insts, err := s.Lima.List(ctx)
	if err != nil {
		return nil, err
	}
	metas, _ := boxmeta.List(s.Layout)
	var out []Golden
	for _, in := range insts {
		if !strings.HasPrefix(in.Name, "golden-") {
			continue
		}
		g := Golden{Name: in.Name, Status: string(in.Status)}
		for _, m := range metas {
			if m.Golden == in.Name {
				g.Boxes = append(g.Boxes, m.Name)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// RemoveGolden deletes a golden image. Boxes cloned from it keep working
// (a clone is a full copy); force is needed while boxes still name it.
func (s *Service) RemoveGolden(ctx context.Context, name string, force bool) error {
	if !strings.HasPrefix(name, "golden-") {
		return fmt.Errorf("%q is not a golden image name (golden-<12 hex>)", name)
	}
	gs, err := s.Goldens(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.Name == name && len(g.Boxes) > 0 && !force {
			return hint.New(fmt.Errorf("golden image %s is the origin of %v", name, g.Boxes), fmt.Sprintf("corral golden rm -f %s (the boxes keep working)", name))
		}
	}
	if err := s.Lima.Delete(ctx, name, true); err != nil {
		if errors.Is(err, lima.ErrNotFound) {
			return fmt.Errorf("no golden image %s", name)
		}
		return fmt.Errorf("removing golden image %s: %w", name, err)
	}
	return nil
}
