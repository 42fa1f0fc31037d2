package cli

import (
	"context"
	"os"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/secret"
	"golang.org/x/term"
)

// launchEnv assembles the session environment (core/launchenv: the one
// function every session uses) as CORRAL_FWD_ entries for the ssh
// process's environment, never its argv, plus the names for the audit log.
func launchEnv(ctx context.Context, f *Factory, r box.Resolved, agentName string, tty bool) ([]string, []string, error) {
	a, err := agent.Find(r.Loaded.Config.Agents, agentName)
	if err != nil {
		return nil, nil, err
	}
	lookup := f.lookupEnv
	if err := credential.Check(r.Loaded.Config); err != nil {
		return nil, nil, err
	}
	in := launchenv.Input{
		Config: r.Loaded.Config, Agent: a, Getenv: lookup,
		Box: r.Project.Box, Project: r.Project.Dir, Logger: f.Logger,
		Withhold: credential.Withheld(credential.Plan(r.Loaded.Config, lookup)),
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
	// A Keychain read may raise an "allow access" dialog: with a person at
	// the terminal, wait for the answer instead of secret.DefaultTimeout.
	ctx, cancel := secret.Interactive(ctx, tty)
	defer cancel()
	env, err := launchenv.Assemble(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return env.SSHEnviron(), env.Names(), nil
}

// brokerEnv returns the session variables of the box's brokered
// credentials (core/credential: base URLs, placeholders, git's insteadOf),
// for box.SessionOptions.BrokerEnv; none holds a secret.
func brokerEnv(f *Factory, r box.Resolved) func(string) ([]string, []string) {
	lookup := f.lookupEnv
	specs := credential.Plan(r.Loaded.Config, lookup)
	if len(specs) == 0 {
		return nil
	}
	return func(broker string) ([]string, []string) {
		var env, names []string
		for _, v := range credential.SessionVars(specs, broker) {
			env = append(env, launchenv.ForwardPrefix+v.Name+"="+v.Value)
			names = append(names, v.Name)
		}
		return env, names
	}
}
