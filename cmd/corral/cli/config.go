package cli

import "github.com/spf13/cobra"

// NewCmdConfig is the config command group.
func NewCmdConfig(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and check a project's layered config",
		Example: `  corral config show --origin
  corral config check -C ~/src/untrusted`,
	}
	cmd.AddCommand(NewCmdConfigShow(f, nil), NewCmdConfigCheck(f, nil))
	return cmd
}
