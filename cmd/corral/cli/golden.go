package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdGolden builds `corral golden ls|build|rm`; each subcommand is its
// own file (golden_ls.go, golden_build.go, golden_rm.go).
func NewCmdGolden(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "golden",
		Short: "Manage golden images, the shared project-independent base of boxes",
		Long: `A golden image holds everything of a box that does not depend on the
project: base system, packages, toolchains and agent. corral builds one per
distinct set (golden-<12 hex of its template>) and clones new boxes from it,
so only the project part is provisioned per box.`,
		Example: "  corral golden ls\n  corral golden build\n  corral golden rm golden-4576f2bc1b3e",
	}
	cmd.AddCommand(NewCmdGoldenLs(f, nil), NewCmdGoldenBuild(f, nil), NewCmdGoldenRm(f, nil))
	return cmd
}
