package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// forwardRemote makes every runnable command of the tree honour --host
// and the project's host key, by the one list of where each command runs
// (remote.ScopeOf): a remote command runs on the chosen host through ssh
// (a project command without -C in the host's clone of this project, sent
// first), a local one refuses an explicit --host, and one that needs both
// machines (pull) runs here with the host in f.remoteHost. It wraps RunE and adds nothing else: parsing,
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
				case scope == remote.ScopeBoth:
					// The command talks to the host itself (pull).
					f.remoteHost = &h
					return run(cmd, args)
				}
				// Checked before ssh runs or anything is sent.
				if f.RelaySocket != "" || f.RelayToken != "" {
					return fmt.Errorf("%s and %s are set by corral on the host, not given to a forwarded command", remote.RelayFlag, remote.RelayTokenFlag)
				}
				var p project.Project
				send := scope == remote.ScopeProject && f.Dir == ""
				if send {
					if p, err = sendable(l, top.Name(), h.Name); err != nil {
						return err
					}
				}
				ctx := context.Background()
				runDir, err := f.Remote.VersionRunDir(ctx, h)
				if err != nil {
					return err
				}
				fwd := remote.StripHostFlag(f.args)
				if send {
					got, err := f.remoteMover(l).Send(ctx, h, p)
					if err != nil {
						return err
					}
					// The project's clone on the host is the command's
					// project there (-C before everything, so never after
					// "--": f.Dir is empty, no -C was given).
					fwd = append([]string{"-C", got.Dir}, fwd...)
				}
				in, out, errOut := f.IO.Terminal()
				// A remote terminal only when there is a local one to pass
				// through: a terminal on the remote side turns "\n" into
				// "\r\n", which would corrupt output piped to a file here.
				inv := remote.Invocation{Args: fwd, TTY: f.IO.InTTY && f.IO.OutTTY}
				if remote.OpensSession(top.Name()) {
					// The credentials this machine holds stay here: its
					// relay serves them through the session's ssh
					// connection for as long as the session runs. The
					// project here is the one sent (its trusted layer
					// names what this machine holds for it).
					var store secret.Store
					if f.SecretStore != nil {
						store = f.SecretStore()
					}
					localDir := f.Dir
					if send {
						localDir = p.Dir
					}
					cfg, boxName, err := box.RelayConfig(l, localDir)
					if err != nil {
						return fmt.Errorf("the credential relay: %w", err)
					}
					relay, stop, err := broker.LaptopRelay(l, cfg, boxName, store, f.lookupEnv, f.Logger)
					if err != nil {
						return err
					}
					defer stop()
					if relay != nil {
						inv.Relay = &remote.RelayForward{Local: relay.Socket, Token: relay.Token}
						// The relay never raises a Keychain dialog while
						// the remote session waits: each item is settled
						// here, at the terminal, before ssh starts.
						if store != nil && f.IO.InTTY && len(relay.Keychain) > 0 {
							dctx, cancel := secret.Interactive(ctx, true)
							secret.Decide(dctx, store, relay.Keychain, errOut)
							cancel()
						}
					}
				}
				code, err := f.Remote.RunChecked(ctx, h, runDir, inv, in, out, errOut)
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

// sendable is the project in the working directory when it can be sent to
// host (a git repository): a project command forwarded without -C runs in
// the host's clone of it. Anything else is refused naming -C, before ssh
// is run.
func sendable(l paths.Layout, command, host string) (project.Project, error) {
	p, err := boxmeta.ResolveProject(l, "")
	if err != nil {
		return p, err
	}
	if _, err := hostgit.Open(p.Dir); errors.Is(err, hostgit.ErrNotRepository) {
		return p, remote.NeedsDir(command, host, p.Dir+" is not a git repository")
	} else if err != nil {
		return p, err
	}
	return p, nil
}

// remoteMover moves projects between this machine and its hosts.
func (f *Factory) remoteMover(l paths.Layout) box.Remote {
	logger := f.Logger
	if logger == nil {
		logger = discardLogger()
	}
	return box.Remote{Layout: l, Runner: f.Remote, Actor: audit.ActorCLI, Logger: logger, Progress: f.IO.ErrOut}
}

// walk calls fn for c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}
