package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/spf13/cobra"
)

// RenderOptions are the options of `corral render`.
type RenderOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
	Golden  bool
}

// NewCmdRender builds `corral render`.
func NewCmdRender(f *Factory, runF func(*RenderOptions) error) *cobra.Command {
	opts := &RenderOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the Lima template of a project's box and its hash",
		Long: `Render prints the Lima instance YAML corral would create the project's
box from, followed by its template hash as a YAML comment. Nothing is
created or started.`,
		Example: "  corral render > box.yaml && limactl validate box.yaml\n  corral render --golden",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return renderRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON with the YAML and hash")
	cmd.Flags().BoolVar(&opts.Golden, "golden", false, "render the project-independent golden template")
	return cmd
}

func renderRun(opts *RenderOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: f.Dir, Platform: f.Platform})
	if err != nil {
		return err
	}
	port := box.BrokerPortFor(l, r.Project.Box)
	out, err := box.Render(l, r, port, opts.Golden)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO.Out, SchemaRender, map[string]any{"box": r.Project.Box, "hash": out.Hash, "yaml": string(out.YAML)})
	}
	fmt.Fprintf(dataOut(opts.IO.Out), "%s# template hash: sha256:%s\n", out.YAML, out.Hash)
	return nil
}
