package box

import (
	"fmt"
	"os"
	"os/user"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
)

// Render renders the Lima template of a resolved box.
func Render(l paths.Layout, r boxmeta.Resolved, brokerPort int, golden bool) (limayaml.Rendered, error) {
	in, err := renderInput(l, r, brokerPort, golden)
	if err != nil {
		return limayaml.Rendered{}, err
	}
	rendered, err := limayaml.Render(in)
	if err != nil {
		return rendered, fmt.Errorf("rendering the template of box %s: %w", r.Project.Box, err)
	}
	return rendered, nil
}

// renderInput is everything Render reads besides the corral binary.
func renderInput(l paths.Layout, r boxmeta.Resolved, brokerPort int, golden bool) (limayaml.Input, error) {
	c := r.Loaded.Settings()
	var gitDirs []string
	if !golden && c.GitShadow {
		d, err := gitshadow.Find(r.Project.Dir)
		if err != nil {
			return limayaml.Input{}, fmt.Errorf("box %s: %w", r.Project.Box, err)
		}
		gitDirs = d.Outside()
	}
	return limayaml.Input{
		GitShadowDirs: gitDirs,
		Platform:      r.Platform,
		Settings:      c,
		Box:           r.Project.Box,
		ProjectDir:    r.Project.Dir,
		AgentDir:      l.AgentDir(c.Agent),
		SeedDir:       l.SeedDir(r.Project.Box),
		BrokerHost:    funnel.BrokerGuestHostFor(r.Platform, c),
		BrokerPort:    brokerPort,
		Golden:        golden,
		NPMDir:        l.NPMCacheDir(),
		User:          limaUser(),
	}, nil
}

// deref is an optional key's value, the zero value when unset.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// BrokerPortFor returns the broker port persisted in the box's metadata,
// or the deterministic default for a box that has none yet.
func BrokerPortFor(l paths.Layout, box string) int {
	if m, err := boxmeta.Read(l, box); err == nil && m.BrokerPort != 0 {
		return m.BrokerPort
	}
	return egress.BrokerPort(box)
}

// limaUser is the host user's name, as Lima reads it (user.Current);
// limayaml.Render names the guest user Lima makes for it (GuestUser).
func limaUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
