package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/approval"

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
	return sessionRunResolved(f, r, agentName, argv, tty, mode, name)
}

// sessionRunResolved is sessionRun for a project already resolved.
func sessionRunResolved(f *Factory, r box.Resolved, agentName string, argv []string, tty bool, mode box.SessionMode, name string) error {
	if p := r.Loaded.Pending(); len(p) > 0 && r.Loaded.Config.NetworkMode() == config.NetworkBroker {
		// One line: the broker denies these until the user approves them.
		fmt.Fprintf(f.IO.ErrOut, "corral: the repository requests %d host(s), port(s), toolchain(s) or package(s) not granted yet; review them with: corral approve %s\n", len(p), r.Project.Box)
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	learningBanner(f, r, time.Now())
	ctx, cancel := signalContext()
	defer cancel()
	in, err := launchInput(f, r, agentName, tty)
	if err != nil {
		return err
	}
	stdin, out, errOut := f.IO.Terminal() // the session draws on the terminal itself
	err = s.Session(ctx, r, box.SessionOptions{
		Agent: agentName, Argv: argv, TTY: tty, Mode: mode, Name: name, Env: in,
		Stdin: stdin, Stdout: out, Stderr: errOut,
	})
	var ee *box.ExitError
	if errors.As(err, &ee) {
		return &ExitCodeError{Code: ee.Code}
	}
	return err
}

// learningBanner says, in one line at the session's start, that the box
// is learning: its broker allows public hosts off the allow-list.
func learningBanner(f *Factory, r box.Resolved, now time.Time) {
	l, err := f.Layout()
	if err != nil || r.Loaded.Config.NetworkMode() != config.NetworkBroker {
		return
	}
	if lr, err := approval.ReadLearning(l, r.Project.Box); err == nil && lr.ActiveAt(now) {
		fmt.Fprintf(f.IO.ErrOut, "corral: box %s is learning until %s: its broker allows public hosts off the allow-list and logs them; corral egress learn %s proposes an allow-list\n",
			r.Project.Box, clock(lr.Until, now), r.Project.Box)
	}
}
