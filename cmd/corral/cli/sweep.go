package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/display"

	"github.com/spf13/cobra"
)

// noSweep are commands that must not stop boxes on their own (long-running
// helpers) and commands that have no business with boxes, so that nothing
// in a box's state can stop them: version and help, shell completion,
// config show/check (the config files only) and render (a template from the
// config; it reads its own box's broker port and nothing else). A subcommand
// of one of them is exempt too.
var noSweep = map[string]bool{
	broker.Command: true, "app": true,
	"version": true, "help": true, "__complete": true, "__completeNoDesc": true, "completion": true,
	"config": true, "render": true,
}

// sweepIdle stops idle boxes at the start of a command: corral has no
// daemon, so every invocation does the housekeeping. Failures only warn.
func sweepIdle(f *Factory, cmd *cobra.Command) {
	if noSweep[cmd.Name()] || (cmd.Parent() != nil && noSweep[cmd.Parent().Name()]) || f.geteuid() == 0 || f.Executable == nil {
		return
	}
	l, err := f.Layout()
	if err != nil {
		return
	}
	if _, err := os.Stat(l.BoxesDir()); err != nil {
		return // nothing created yet
	}
	s, err := f.Service()
	if err != nil {
		return
	}
	// The git guard first: a change to what git executes must be reverted
	// before this command (or the user's next git) can trip over it.
	for _, rep := range s.GuardGit() {
		printGitGuard(f.IO.ErrOut, rep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped, err := s.Sweep(ctx) // failures only delay the housekeeping
	for _, b := range stopped {
		f.Logger.Info("stopped idle box", "box", b)
	}
	// A box whose metadata corral cannot read is skipped; say so once, so
	// that the user can repair it, and carry on with the command. ls says
	// it itself, with the list.
	if cmd.Name() != "ls" {
		warnMeta(f.IO.ErrOut, err)
	}
}

// warnMeta prints one warning for each box whose metadata cannot be read
// (the boxmeta.Errors of err), with what to do, and returns the rest of err.
func warnMeta(w io.Writer, err error) error {
	mes := boxmeta.Errors(err)
	for _, me := range mes {
		fmt.Fprintf(w, "corral: warning: skipping box %s: %s\nhint: %s\n",
			display.Text(me.Box, 80), display.Text(me.Error(), 400), display.Text(me.Hint(), 400))
	}
	if len(mes) == 0 {
		return err
	}
	var rest []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if len(boxmeta.Errors(e)) == 0 {
				rest = append(rest, e)
			}
		}
	}
	return errors.Join(rest...)
}

// printGitGuard reports a git guard revert on stderr. The paths come from
// a directory the box could write: sanitised for the terminal.
func printGitGuard(w io.Writer, rep box.GitGuardReport) {
	var list []string
	for _, c := range rep.Changes {
		list = append(list, string(c.Kind)+" "+display.Text(c.Path, 200))
	}
	if rep.Err != nil {
		fmt.Fprintf(w, "corral: WARNING: box %s changed what git executes in its project and corral could not revert all of it: %s\n  %s\nhint: do not run git in that project until corral doctor %s passes\n",
			rep.Box, display.Text(rep.Err.Error(), 300), strings.Join(list, "\n  "), rep.Box)
		return
	}
	fmt.Fprintf(w, "corral: box %s changed what git executes in its project; reverted from the copy recorded at session start:\n  %s\n",
		rep.Box, strings.Join(list, "\n  "))
}
