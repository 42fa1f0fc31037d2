package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// doctorService is what `corral doctor` needs of the lifecycle service.
type doctorService interface {
	HostFacts(ctx context.Context, store secret.Store, opt box.HostFactsOptions) box.HostFacts
	DoctorBox(ctx context.Context, box string, opt box.DoctorBoxOptions) []box.Check
}

var _ doctorService = (*box.Service)(nil)

// DoctorOptions are the options of `corral doctor`.
type DoctorOptions struct {
	IO      *IOStreams
	Factory *Factory
	Service func() (doctorService, error)
	// BoxOptions resolves a box's project and assembles its session
	// environment; it returns "" as the box when there is none to check.
	BoxOptions func(ctx context.Context, boxName string) (string, box.DoctorBoxOptions, []box.Check)
	Box        string
	JSON       bool
	// Offline skips the one network check (HEAD requests for the guest
	// image a new box would download).
	Offline bool
}

// NewCmdDoctor builds `corral doctor`.
func NewCmdDoctor(f *Factory, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{IO: f.IO, Factory: f, Service: func() (doctorService, error) { return f.Service() }}
	opts.BoxOptions = func(ctx context.Context, b string) (string, box.DoctorBoxOptions, []box.Check) {
		return doctorBoxOptions(ctx, f, b)
	}
	cmd := &cobra.Command{
		Use:   "doctor [BOX]",
		Short: "Check the host and a box, and say how to fix what is wrong",
		Long: `Doctor checks the host (Lima, qemu or vz, KVM, the state directory,
socket path length, the memory budget, the keychain) and a box (default:
the project's box, when it exists): its config and session environment
and, while it runs, from inside the guest over one ssh round trip, its
provisioning (the marker and the guest's record of each provision step of
this boot), guest units, network mode, forwarded variable names and git
credentials. It asks whether the guest image a new box would download is
there (HEAD requests; --offline skips them) and whether a keychain item
a box reads would ask you (a Keychain dialog on macOS, the keyring's
unlock prompt on Linux) without asking. It prints variable names, never values. Every failed check
names its fix; the exit status is 1 when any check fails.`,
		Example: "  corral doctor\n  corral doctor web-3f2a1c\n  corral doctor --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON: {schema, checks: [{check, ok, detail, fix}]}")
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "skip the network check of the guest image")
	return cmd
}

// doctorBoxOptions finds the box to check (named, or the project's when
// it has one), resolves its project and assembles its session environment
// the way a session does, so doctor checks what a session would send.
func doctorBoxOptions(ctx context.Context, f *Factory, name string) (string, box.DoctorBoxOptions, []box.Check) {
	var opt box.DoctorBoxOptions
	l, err := f.Layout()
	if err != nil {
		return name, opt, []box.Check{{Check: "state directory", Detail: err.Error(), Fix: "set CORRAL_HOME"}}
	}
	if name == "" {
		loc, _ := boxmeta.Locate(l, "", f.Dir)
		if loc.Meta == nil {
			return "", opt, nil // no box for this project: host checks only
		}
		name = loc.Box
	}
	m, err := boxmeta.Read(l, name)
	if err != nil {
		return name, opt, nil // DoctorBox reports it
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: m.Project, Platform: f.Platform})
	if err != nil {
		fix := "corral config check -C " + m.Project
		if !errors.Is(err, config.ErrViolation) {
			fix = hint.Or(err, fix)
		}
		return name, opt, []box.Check{{Check: "config", Detail: err.Error(), Fix: fix}}
	}
	opt.Resolved, opt.Host = r, sessionHost(f, false)
	return name, opt, nil
}

func doctorRun(opts *DoctorOptions) error {
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	var store secret.Store
	if opts.Factory != nil && opts.Factory.SecretStore != nil {
		store = opts.Factory.SecretStore()
	}
	var hopt box.HostFactsOptions
	if !opts.Offline {
		hopt.ImagesFor, _ = os.Getwd()
	}
	checks := box.HostChecks(s.HostFacts(ctx, store, hopt))
	if opts.BoxOptions != nil {
		name, bopt, pre := opts.BoxOptions(ctx, opts.Box)
		checks = append(checks, pre...)
		if name != "" {
			checks = append(checks, s.DoctorBox(ctx, name, bopt)...)
		}
	}
	if err := printChecks(opts.IO, checks, opts.JSON); err != nil {
		return err
	}
	if box.Failed(checks) {
		return &ExitCodeError{Code: ExitError}
	}
	return nil
}

func printChecks(io *IOStreams, checks []box.Check, asJSON bool) error {
	if asJSON {
		if checks == nil {
			checks = []box.Check{}
		}
		return printJSONList(io.Out, SchemaDoctor, "checks", checks)
	}
	failed := 0
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(io.Out, "%s  %s: %s\n", mark, display.Text(c.Check, 0), textLines(c.Detail, "      "))
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(io.Out, "      fix: %s\n", textLines(c.Fix, "           "))
		}
	}
	if failed > 0 {
		fmt.Fprintf(io.Out, "%d of %d checks failed\n", failed, len(checks))
	} else {
		fmt.Fprintf(io.Out, "all %d checks passed\n", len(checks))
	}
	return nil
}
