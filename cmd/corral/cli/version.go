package cli

import (
	"fmt"
	"runtime"

	"github.com/corral-dev/corral/core/version"
	"github.com/spf13/cobra"
)

// VersionOptions are the options of `corral version`.
type VersionOptions struct {
	IO   *IOStreams
	JSON bool
	// RunDir is this corral's run directory, reported with --json: a
	// laptop's corral puts the socket of its credential relay there when
	// it runs a session on this host (core/remote).
	RunDir func() (string, error)
}

// NewCmdVersion builds `corral version`.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, RunDir: func() (string, error) {
		l, err := f.Layout()
		return l.RunDir(), err
	}}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print corral's version, commit and the Lima version it was tested with",
		Example: "  corral version\n  corral version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func versionRun(opts *VersionOptions) error {
	if opts.JSON {
		out := map[string]string{
			"version": version.Version, "commit": version.Commit, "lima_tested": version.LimaTested,
			"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH,
		}
		if opts.RunDir != nil {
			if d, err := opts.RunDir(); err == nil {
				out["run_dir"] = d
			}
		}
		return jsonLine(opts.IO.Out, SchemaVersion, out)
	}
	fmt.Fprintf(opts.IO.Out, "corral %s (commit %s, %s/%s)\ntested with Lima %s\n",
		version.Version, version.Commit, runtime.GOOS, runtime.GOARCH, version.LimaTested)
	return nil
}
