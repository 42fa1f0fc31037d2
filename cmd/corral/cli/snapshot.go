package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/hint"
	"github.com/spf13/cobra"
)

// snapshotService is what `corral snapshot` needs of the lifecycle service.
type snapshotService interface {
	Snapshots(ctx context.Context, box string) ([]box.Snapshot, error)
	CreateSnapshot(ctx context.Context, box, name string) (string, error)
	RestoreSnapshot(ctx context.Context, box, name string, confirm func(box.Snapshot) error) error
	RemoveSnapshot(ctx context.Context, box, name string) error
}

var _ snapshotService = (*box.Service)(nil)

// SnapshotOptions are the options of `corral snapshot`.
type SnapshotOptions struct {
	IO      *IOStreams
	Factory *Factory
	Service func() (snapshotService, error)
	Box     string
	Name    string
	JSON    bool
	Yes     bool
}

// NewCmdSnapshot builds `corral snapshot ls|create|restore|rm`.
func NewCmdSnapshot(f *Factory, runF func(verb string, opts *SnapshotOptions) error) *cobra.Command {
	opts := &SnapshotOptions{IO: f.IO, Factory: f, Service: func() (snapshotService, error) { return f.Service() }}
	run := func(verb string, fn func(*SnapshotOptions) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Box = args[0]
			}
			if len(args) > 1 {
				opts.Name = args[1]
			}
			if runF != nil {
				return runF(verb, opts)
			}
			return fn(opts)
		}
	}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Keep and restore snapshots of a stopped box's disk",
		Long: `A snapshot keeps the disk of a stopped box: packages, tools and files in
the box. The project directory is a host mount and is never part of it.

With snapshots = "auto" in the config, corral takes one (auto-<UTC time>)
each time a stopped box starts and keeps the newest snapshots_keep.

Snapshots are taken and restored only while the box is stopped: a running
guest holds a cached view of the project mount, and bringing that back
would write stale data into the project.`,
		Example: "  corral snapshot ls web-3f2a1c\n  corral snapshot create web-3f2a1c before-upgrade\n  corral snapshot restore web-3f2a1c before-upgrade",
	}
	ls := &cobra.Command{
		Use: "ls [BOX]", Short: "List a box's snapshots (default: the project's box)",
		Example: "  corral snapshot ls\n  corral snapshot ls web-3f2a1c --json",
		Args:    cobra.MaximumNArgs(1), RunE: run("ls", snapshotLsRun),
	}
	ls.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	create := &cobra.Command{
		Use: "create BOX [NAME]", Short: "Snapshot a stopped box (default name: auto-<UTC time>)",
		Example: "  corral snapshot create web-3f2a1c before-upgrade",
		Args:    cobra.RangeArgs(1, 2), RunE: run("create", snapshotCreateRun),
	}
	restore := &cobra.Command{
		Use: "restore BOX NAME", Short: "Roll a stopped box's disk back to a snapshot",
		Long: `Restore rolls a stopped box's disk back to a snapshot. Everything written
to the box's disk since then is lost; the project directory is not touched.
It asks first on a terminal; scripts pass --yes.`,
		Example: "  corral snapshot restore web-3f2a1c before-upgrade\n  corral snapshot restore web-3f2a1c auto-20260102T150405Z --yes",
		Args:    cobra.ExactArgs(2), RunE: run("restore", snapshotRestoreRun),
	}
	restore.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "restore without asking")
	rm := &cobra.Command{
		Use: "rm BOX NAME", Short: "Remove a snapshot of a stopped box",
		Example: "  corral snapshot rm web-3f2a1c before-upgrade",
		Args:    cobra.ExactArgs(2), RunE: run("rm", snapshotRmRun),
	}
	cmd.AddCommand(ls, create, restore, rm)
	return cmd
}

func snapshotLsRun(opts *SnapshotOptions) error {
	if opts.Box == "" {
		b, err := boxArg(opts.Factory, nil)
		if err != nil {
			return err
		}
		opts.Box = b
	}
	s, err := opts.Service()
	if err != nil {
		return err
	}
	snaps, err := s.Snapshots(context.Background(), opts.Box)
	if err != nil {
		return err
	}
	if opts.JSON {
		if snaps == nil {
			snaps = []box.Snapshot{}
		}
		return printJSONList(opts.IO.Out, SchemaSnapshots, "snapshots", snaps)
	}
	if len(snaps) == 0 {
		fmt.Fprintf(opts.IO.Out, "box %s has no snapshots\n", opts.Box)
		return nil
	}
	tw := newTable(opts.IO.Out, opts.IO.OutTTY)
	tw.Row("SNAPSHOT", "CREATED", "KIND")
	for _, sn := range snaps {
		created, kind := "-", "manual"
		if !sn.Created.IsZero() {
			created = sn.Created.UTC().Format(time.RFC3339)
		}
		if sn.Auto {
			kind = "auto"
		}
		tw.Row(sn.Name, created, kind)
	}
	return tw.Flush()
}

func snapshotCreateRun(opts *SnapshotOptions) error {
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	name, err := s.CreateSnapshot(ctx, opts.Box, opts.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "snapshot %s of box %s created\n", name, opts.Box)
	return nil
}

// errDeclined ends a restore the user said no to.
var errDeclined = errors.New("restore cancelled")

func snapshotRestoreRun(opts *SnapshotOptions) error {
	if !opts.Yes && !opts.IO.InTTY {
		return hint.New(fmt.Errorf("restoring box %s: refusing without confirmation (no terminal to ask on)", opts.Box),
			"pass --yes to restore from a script")
	}
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	confirm := func(sn box.Snapshot) error {
		if opts.Yes {
			return nil
		}
		return confirmRestore(opts.IO, opts.Box, sn)
	}
	if err := s.RestoreSnapshot(ctx, opts.Box, opts.Name, confirm); err != nil {
		if errors.Is(err, errDeclined) {
			fmt.Fprintln(opts.IO.ErrOut, "nothing restored")
			return &ExitCodeError{Code: ExitError}
		}
		return err
	}
	fmt.Fprintf(opts.IO.Out, "box %s restored to snapshot %s\n", opts.Box, opts.Name)
	return nil
}

// confirmRestore says what a restore loses and asks; only "y" or "yes"
// goes ahead.
func confirmRestore(io *IOStreams, boxName string, sn box.Snapshot) error {
	taken := ""
	if !sn.Created.IsZero() {
		taken = " (taken " + sn.Created.UTC().Format(time.RFC3339) + ")"
	}
	fmt.Fprintf(io.ErrOut, `Restoring box %[1]s to snapshot %[2]s%[3]s discards everything written to
the box's disk since then: packages and tools installed in the box, files in
its home directory and box_dirs, and agent state kept inside the box.
The project directory is a host mount and is not changed.
To keep the current state first: corral snapshot create %[1]s NAME
Restore box %[1]s to %[2]s? [y/N] `, boxName, sn.Name, taken)
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}

func snapshotRmRun(opts *SnapshotOptions) error {
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	if err := s.RemoveSnapshot(ctx, opts.Box, opts.Name); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "snapshot %s of box %s removed\n", opts.Name, opts.Box)
	return nil
}
