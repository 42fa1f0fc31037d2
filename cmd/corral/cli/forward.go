package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// forwardRemote makes every runnable command of the tree honour --host
// and the project's host key, by the one list of where each command runs
// (remote.ScopeOf): a remote command runs on the chosen host through ssh,
// a local one refuses an explicit --host, and a command that cannot run
// remotely yet says so. It wraps RunE and adds nothing else: parsing,
// flags and help stay the command's own, so the remote side (the same
// corral) parses the same argv the same way.
func forwardRemote(f *Factory, root *cobra.Command) {
	for _, top := range root.Commands() {
		scope := remote.ScopeOf(top.Name())
		walk(top, func(c *cobra.Command) {
			run := c.RunE
			if run == nil {
				if c.Run == nil {
					return
				}
				r := c.Run
				run = func(cmd *cobra.Command, args []string) error { r(cmd, args); return nil }
				c.Run = nil
			}
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if scope == remote.ScopeLocal {
					if f.Host != "" && f.Host != remote.Local {
						return hint.New(fmt.Errorf("corral %s runs on this machine only, not on host %s", strings.TrimPrefix(cmd.CommandPath(), "corral "), f.Host), "drop --host")
					}
					return run(cmd, args)
				}
				l, err := f.Layout()
				if err != nil {
					return err
				}
				h, ok, err := box.ChooseHost(l, f.Host, f.Dir)
				switch {
				case err != nil:
					return err
				case !ok:
					return run(cmd, args)
				case scope == remote.ScopeNotYet:
					return remote.NotYet(top.Name(), h.Name)
				case scope == remote.ScopeProject && f.Dir == "":
					return remote.NeedsDir(top.Name(), h.Name)
				}
				if f.RelaySocket != "" || f.RelayToken != "" {
					return fmt.Errorf("%s and %s are set by corral on the host, not given to a forwarded command", remote.RelayFlag, remote.RelayTokenFlag)
				}
				in, out, errOut := f.IO.Terminal()
				// A remote terminal only when there is a local one to pass
				// through: a terminal on the remote side turns "\n" into
				// "\r\n", which would corrupt output piped to a file here.
				inv := remote.Invocation{Args: remote.StripHostFlag(f.args), TTY: f.IO.InTTY && f.IO.OutTTY}
				if remote.OpensSession(top.Name()) {
					// The credentials this machine holds stay here: its
					// relay serves them through the session's ssh
					// connection for as long as the session runs.
					var store secret.Store
					if f.SecretStore != nil {
						store = f.SecretStore()
					}
					relay, stop, err := broker.LaptopRelay(l, f.Dir, store, f.lookupEnv, f.Logger)
					if err != nil {
						return err
					}
					defer stop()
					if relay != nil {
						inv.Relay = &remote.RelayForward{Local: relay.Socket, Token: relay.Token}
					}
				}
				code, err := f.Remote.Run(context.Background(), h, inv, in, out, errOut)
				if err != nil {
					return err
				}
				if code != 0 {
					return &ExitCodeError{Code: code}
				}
				return nil
			}
		})
	}
}

// walk calls fn for c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}
