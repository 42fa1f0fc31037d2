package cli

import (
	"context"
	"os"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/launchenv"
	"golang.org/x/term"
)

// launchInput gathers what a session's environment is assembled from
// (core/launchenv) for this command: the config, the agent, this shell's
// environment, the keychain and the terminal. It decides nothing about
// credentials: core/box asks the box's broker, which owns that plan.
func launchInput(f *Factory, r box.Resolved, agentName string, tty bool) (launchenv.Input, error) {
	a, err := agent.Find(r.Loaded.Config.Agents, agentName)
	if err != nil {
		return launchenv.Input{}, err
	}
	in := launchenv.Input{
		Config: r.Loaded.Config, Agent: a, Getenv: f.lookupEnv,
		Box: r.Project.Box, Project: r.Project.Dir, Logger: f.Logger,
	}
	// The git identity is read once per change of the git config files,
	// not by two git processes per session.
	if l, err := f.Layout(); err == nil {
		in.GitConfig = launchenv.CachedGitConfig(r.Project.Dir, l.CacheDir())
	}
	if f.SecretStore != nil {
		in.Secrets = f.SecretStore()
	}
	if tty {
		if w, h, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			in.Terminal = &launchenv.Terminal{Cols: w, Rows: h}
		}
	}
	return in, nil
}

// launchEnv assembles the session environment doctor's guest checks run
// with (core/box DoctorEnv asks the box's broker like a session), as
// CORRAL_FWD_ entries plus the names for the report.
func launchEnv(ctx context.Context, f *Factory, r box.Resolved, agentName string) ([]string, []string, error) {
	in, err := launchInput(f, r, agentName, false)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.Service()
	if err != nil {
		return nil, nil, err
	}
	env, err := s.DoctorEnv(ctx, r, in)
	if err != nil {
		return nil, nil, err
	}
	return env.SSHEnviron(), env.Names(), nil
}
