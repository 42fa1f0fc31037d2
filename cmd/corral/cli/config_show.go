package cli

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/core/config"

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
		Use:   "show",
		Short: "Print the effective config of a project",
		Long: `Show prints the effective config of a project: every layer merged, with
--origin the file that set each key. With --json it prints the effective
config and, beside it, every problem and request (as corral config check
--json), and exits 2 when there is a problem; without --json a problem
stops it (see corral config check).`,
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
	if opts.JSON {
		// The effective config, and beside it every problem (config check's
		// document): when the repository's file has a problem is when the
		// user needs to see what corral made of it.
		if err != nil && !errors.Is(err, config.ErrViolation) {
			return err
		}
		problems := problemsOf(err)
		out := configCheckJSON(r.Project.Box, r.Loaded, problems)
		out["project"], out["config"] = r.Project.Dir, r.Loaded.Values()
		if opts.Origin {
			out["origin"] = r.Loaded.Origin
		}
		if perr := printJSON(opts.IO.Out, SchemaConfig, out); perr != nil {
			return perr
		}
		if len(problems) > 0 {
			return &ExitCodeError{Code: ExitViolation}
		}
		return nil
	}
	if err != nil {
		return err
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
