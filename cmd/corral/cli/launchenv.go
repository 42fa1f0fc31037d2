package cli

import (
	"context"
	"os"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/launchenv"
	"golang.org/x/term"
)

// launchEnv assembles the session environment (core/launchenv: the one
// function every session uses) as CORRAL_FWD_ entries for the ssh
// process's environment, never its argv, plus the names for the audit log.
func launchEnv(ctx context.Context, f *Factory, r box.Resolved, agentName string, tty bool) ([]string, []string, error) {
	a, err := agent.Lookup(agentName)
	if err != nil {
		return nil, nil, err
	}
	lookup := func(n string) (string, bool) { return os.LookupEnv(n) }
	if f.Getenv != nil {
		lookup = func(n string) (string, bool) { v := f.Getenv(n); return v, v != "" }
	}
	in := launchenv.Input{
		Config: r.Config.Config, Agent: a, Getenv: lookup,
		Box: r.Project.Box, Project: r.Project.Dir, Logger: f.Logger,
	}
	if f.SecretStore != nil {
		in.Secrets = f.SecretStore()
	}
	if tty {
		if w, h, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			in.Terminal = &launchenv.Terminal{Cols: w, Rows: h}
		}
	}
	env, err := launchenv.Assemble(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return env.SSHEnviron(), env.Names(), nil
}
