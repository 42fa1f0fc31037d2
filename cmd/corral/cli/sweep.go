package cli

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// noSweep are commands that must not stop boxes on their own: long-running
// helpers and shell completion.
var noSweep = map[string]bool{"broker": true, "app": true, "__complete": true, "__completeNoDesc": true, "completion": true}

// sweepIdle stops idle boxes at the start of a command: corral has no
// daemon, so every invocation does the housekeeping. Failures only warn.
func sweepIdle(f *Factory, cmd *cobra.Command) {
	if noSweep[cmd.Name()] || (cmd.Parent() != nil && noSweep[cmd.Parent().Name()]) || os.Geteuid() == 0 || f.Executable == nil {
		return
	}
	l, err := f.Layout()
	if err != nil {
		return
	}
	if _, err := os.Stat(l.BoxesDir()); err != nil {
		return // nothing created yet
	}
	s, err := service(f)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped, _ := s.Sweep(ctx) // failures only delay the housekeeping
	for _, b := range stopped {
		f.Logger.Info("stopped idle box", "box", b)
	}
}
