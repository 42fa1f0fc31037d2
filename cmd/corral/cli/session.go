package cli

import (
	"errors"
	"os"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/launchenv"
	"golang.org/x/term"
)

// sessionRun is shared by run, shell and claude: resolve, find the agent
// (once), make one call to core (box.Service.Session: the notices, the
// environment, the session), and pass its exit code through. opt's mode
// and name make it a detachable session (see box.SessionMode).
func sessionRun(f *Factory, agentName string, opt box.SessionOptions) error {
	r, err := f.Resolve(config.Config{})
	if err != nil {
		return err
	}
	if opt.Agent, err = r.Agent(agentName); err != nil {
		return err
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	opt.Host = sessionHost(f, opt.TTY)
	opt.Stdin, opt.Stdout, opt.Stderr = f.IO.Terminal() // the session draws on the terminal itself
	err = s.Session(ctx, r, opt)
	var ee *box.ExitError
	if errors.As(err, &ee) {
		return &ExitCodeError{Code: ee.Code}
	}
	return err
}

// sessionHost is what this command's process gives a session's
// environment: its environment, the keychain and, at a terminal, its size.
func sessionHost(f *Factory, tty bool) box.SessionHost {
	h := box.SessionHost{Getenv: f.lookupEnv}
	if f.RelaySocket != "" || f.RelayToken != "" {
		// Checked by the box's broker before it dials (a socket in its run
		// directory, named as ssh's forward is named, this user's).
		h.Relay = &egress.Relay{Socket: f.RelaySocket, Token: f.RelayToken}
	}
	if f.SecretStore != nil {
		h.Secrets = f.SecretStore()
	}
	if tty {
		if w, ht, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			h.Terminal = &launchenv.Terminal{Cols: w, Rows: ht}
		}
	}
	return h
}
