package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdHost builds `corral host` and its subcommands.
func NewCmdHost(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host <command>",
		Short: "Add, list and remove the remote hosts boxes can run on",
		Long: `A remote host is another Linux machine, reached with the system ssh client,
whose own corral (the same version as this one) runs the boxes: Lima, qemu,
the broker and the funnel all work there. corral host writes only this
machine's ~/.corral/hosts.toml (recording each change in the audit log
first). Then corral --host NAME COMMAND runs a box command there, and
host = "NAME" in a project's ~/.corral/projects/<box>.toml runs all of its
box commands there. A host's sessions use none of the credentials this
machine holds until corral host grant names them. See docs/REMOTE.md.`,
		Example: `  corral host add gpu ssh://me@gpu.internal
  corral --host gpu version
  corral host grant gpu anthropic
  corral host ls
  corral host rm gpu`,
	}
	cmd.AddCommand(
		NewCmdHostAdd(f, nil),
		NewCmdHostLs(f, nil),
		NewCmdHostRm(f, nil),
		NewCmdHostGrant(f, nil),
		NewCmdHostRevoke(f, nil),
	)
	return cmd
}
