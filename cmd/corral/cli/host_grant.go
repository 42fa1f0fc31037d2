package cli

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/remote"
	"github.com/spf13/cobra"
)

// HostGrantOptions are the options of `corral host grant` and `corral
// host revoke`.
type HostGrantOptions struct {
	IO          *IOStreams
	Factory     *Factory
	Name        string
	Credentials []string
	Revoke      bool
}

// NewCmdHostGrant builds `corral host grant NAME CREDENTIAL...`.
func NewCmdHostGrant(f *Factory, runF func(*HostGrantOptions) error) *cobra.Command {
	opts := &HostGrantOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "grant NAME CREDENTIAL...",
		Short: "Let a remote host's sessions use credentials this machine holds",
		Long: `Grant lets sessions that this machine starts on host NAME (corral --host NAME
claude|run|shell|...) use the named credentials through this machine's
relay: keys in this machine's keychain or environment that the remote box's
broker asks for ([credentials.NAME] of this machine's config, or an agent's
own key: anthropic, openai, gemini). A host may use none until it is
granted; a session that asks for another prints this command. The key never
reaches the host: each request is checked here and the key added here.
The grant is written to ~/.corral/hosts.toml (recorded in the audit log
first); corral host ls shows it, corral host revoke takes it back.`,
		Example: `  corral host grant gpu anthropic
  corral host grant gpu github openai`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Credentials = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return hostGrantRun(opts)
		},
	}
	return cmd
}

// NewCmdHostRevoke builds `corral host revoke NAME CREDENTIAL...`.
func NewCmdHostRevoke(f *Factory, runF func(*HostGrantOptions) error) *cobra.Command {
	opts := &HostGrantOptions{IO: f.IO, Factory: f, Revoke: true}
	cmd := &cobra.Command{
		Use:   "revoke NAME CREDENTIAL...",
		Short: "Stop a remote host's sessions using credentials this machine holds",
		Long: `Revoke takes back what corral host grant gave: sessions this machine starts
on host NAME from now on can no longer use the named credentials through
its relay. Sessions already running keep what they had until they end.`,
		Example: "  corral host revoke gpu anthropic",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Credentials = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return hostGrantRun(opts)
		},
	}
	return cmd
}

func hostGrantRun(opts *HostGrantOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	if err := remote.Grant(l, opts.Name, opts.Credentials, opts.Revoke, audit.ActorCLI); err != nil {
		return err
	}
	h, err := remote.Find(l, opts.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "host %s may use: %s\n", h.Name, credentialList(h.Credentials))
	return nil
}

// credentialList is a host's granted credentials as shown: "none" when
// there are none.
func credentialList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
