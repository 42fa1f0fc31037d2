package cli

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/config"
	"github.com/spf13/cobra"
)

// GoldenOptions are the options of `corral golden`.
type GoldenOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
	Force   bool
}

// NewCmdGolden builds `corral golden ls|build|rm`.
func NewCmdGolden(f *Factory) *cobra.Command {
	opts := &GoldenOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "golden",
		Short: "Manage golden images, the shared project-independent base of boxes",
		Long: `A golden image holds everything of a box that does not depend on the
project: base system, packages, toolchains and agent. corral builds one per
distinct set (golden-<12 hex of its template>) and clones new boxes from it,
so only the project part is provisioned per box.`,
		Example: "  corral golden ls\n  corral golden build\n  corral golden rm golden-4576f2bc1b3e",
	}
	ls := &cobra.Command{
		Use: "ls", Short: "List golden images and the boxes cloned from them",
		Example: "  corral golden ls --json", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := service(f)
			if err != nil {
				return err
			}
			gs, err := s.Goldens(cmd.Context())
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO.Out, gs)
			}
			tw := newTable(opts.IO.Out, opts.IO.OutTTY)
			tw.Row("GOLDEN", "STATUS", "BOXES")
			for _, g := range gs {
				tw.Row(g.Name, g.Status, strings.Join(g.Boxes, ","))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	build := &cobra.Command{
		Use: "build", Short: "Build the golden image the project's box would use",
		Example: "  corral golden build -C ~/src/web", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := resolve(f, config.Config{})
			if err != nil {
				return err
			}
			s, err := service(f)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			name, err := s.EnsureGolden(ctx, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.Out, "golden image %s is ready\n", name)
			return nil
		},
	}
	rm := &cobra.Command{
		Use: "rm GOLDEN...", Short: "Remove golden images",
		Example: "  corral golden rm golden-4576f2bc1b3e", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := service(f)
			if err != nil {
				return err
			}
			for _, g := range args {
				if err := s.RemoveGolden(cmd.Context(), g, opts.Force); err != nil {
					return err
				}
				fmt.Fprintf(opts.IO.Out, "removed %s\n", g)
			}
			return nil
		},
	}
	rm.Flags().BoolVarP(&opts.Force, "force", "f", false, "remove even if boxes were cloned from it")
	cmd.AddCommand(ls, build, rm)
	return cmd
}
