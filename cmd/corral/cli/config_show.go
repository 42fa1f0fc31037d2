package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/display"
	"github.com/spf13/cobra"
)

// ConfigShowOptions are the options of `corral config show`.
type ConfigShowOptions struct {
	IO      *IOStreams
	Factory *Factory
	Origin  bool
	JSON    bool
}

// NewCmdConfigShow builds `corral config show`.
func NewCmdConfigShow(f *Factory, runF func(*ConfigShowOptions) error) *cobra.Command {
	opts := &ConfigShowOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:     "show",
		Short:   "Print the effective config of a project",
		Example: "  corral config show --origin\n  corral config show -C ~/src/web --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return configShowRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Origin, "origin", false, "name the file that set each key")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func configShowRun(opts *ConfigShowOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: f.Dir, Platform: f.Platform})
	if r.Project.Box == "" {
		return err
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		out := map[string]any{"box": r.Project.Box, "project": r.Project.Dir, "config": r.Loaded.Values()}
		if opts.Origin {
			out["origin"] = r.Loaded.Origin
		}
		return printJSON(opts.IO.Out, out)
	}
	fmt.Fprintf(opts.IO.Out, "# box %s for %s\n%s", display.Text(r.Project.Box, 0), display.Text(r.Project.Dir, maxCell), r.Loaded.TOML(opts.Origin))
	return nil
}

// violations splits a joined config error into its parts.
func violations(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, violations(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
