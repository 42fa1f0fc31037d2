package cli

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/spf13/cobra"
)

// goldenBuilder is what `corral golden build` needs of the lifecycle
// service.
type goldenBuilder interface {
	EnsureGolden(ctx context.Context, r boxmeta.Resolved) (string, error)
}

var _ goldenBuilder = (*box.Service)(nil)

// GoldenBuildOptions are the options of `corral golden build`.
type GoldenBuildOptions struct {
	IO      *IOStreams
	Resolve func() (boxmeta.Resolved, error)
	Service func() (goldenBuilder, error)
}

// NewCmdGoldenBuild builds `corral golden build`.
func NewCmdGoldenBuild(f *Factory, runF func(*GoldenBuildOptions) error) *cobra.Command {
	opts := &GoldenBuildOptions{IO: f.IO,
		Resolve: func() (boxmeta.Resolved, error) { return f.Resolve(config.Config{}) },
		Service: func() (goldenBuilder, error) { return f.Service() }}
	return &cobra.Command{
		Use: "build", Short: "Build the golden image the project's box would use",
		Long: `Build builds the golden image the project's box would be cloned from, if
it is not built yet: the base system, packages, toolchains and agent.

Lima reports a VM ready even when one of its provision steps failed, so
each of corral's steps records its own exit status in the guest, and the
build reads that record before it keeps the image. An image whose step
failed (or left no record) is deleted, never cloned: the error names the
step, and its boot log, with every step's output, is kept in
~/.corral/logs/<golden>-boot.log.`,
		Example: "  corral golden build -C ~/src/web", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return goldenBuildRun(opts)
		},
	}
}

func goldenBuildRun(opts *GoldenBuildOptions) error {
	r, err := opts.Resolve()
	if err != nil {
		return err
	}
	s, err := opts.Service()
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
}
