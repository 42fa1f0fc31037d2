package cli

import (
	"errors"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
)

// sessionRun is shared by run, shell and claude: resolve, assemble the
// launch environment, run the session, and pass its exit code through.
// mode and name make it a detachable session (see box.SessionMode).
func sessionRun(f *Factory, agentName string, argv []string, tty bool, mode box.SessionMode, name string) error {
	r, err := f.Resolve(config.Config{})
	if err != nil {
		return err
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	environ, names, err := launchEnv(ctx, f, r, agentName, tty)
	if err != nil {
		return err
	}
	err = s.Session(ctx, r, box.SessionOptions{
		Agent: agentName, Argv: argv, TTY: tty, Mode: mode, Name: name,
		Environ: environ, EnvNames: names, BrokerEnv: brokerEnv(f, r),
		Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut,
	})
	var ee *box.ExitError
	if errors.As(err, &ee) {
		return &ExitCodeError{Code: ee.Code}
	}
	return err
}
