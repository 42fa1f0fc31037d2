package cli

import (
	"context"

	"github.com/corral-dev/corral/core/box"
)

// launchEnv assembles the session environment as CORRAL_FWD_ entries for
// the ssh process (never its argv) and the names for the audit log.
func launchEnv(ctx context.Context, f *Factory, r box.Resolved, agentName string, tty bool) ([]string, []string, error) {
	vars := map[string]string{"CORRAL_BOX": r.Project.Box, "CORRAL_PROJECT": r.Project.Dir}
	for _, n := range r.Config.Config.ForwardEnv {
		if v := f.Getenv(n); v != "" {
			vars[n] = v
		}
	}
	if tty {
		for _, n := range []string{"TERM", "COLORTERM", "LANG"} {
			if v := f.Getenv(n); v != "" {
				vars[n] = v
			}
		}
	}
	var environ, names []string
	for n, v := range vars {
		environ = append(environ, "CORRAL_FWD_"+n+"="+v)
		names = append(names, n)
	}
	return environ, names, nil
}
