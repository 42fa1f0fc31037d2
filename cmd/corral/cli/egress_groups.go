package cli

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/toolreg"
	"github.com/spf13/cobra"
)

// EgressGroupsOptions are the options of `corral egress groups`.
type EgressGroupsOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
	JSON    bool
}

// NewCmdEgressGroups builds `corral egress groups`.
func NewCmdEgressGroups(f *Factory, runF func(*EgressGroupsOptions) error) *cobra.Command {
	opts := &EgressGroupsOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "groups [BOX]",
		Short: "List the egress groups and the toolchains group a box's golden recorded",
		Long: `Groups lists the named egress groups a box can opt into with
egress_groups = ["NAME", ...] in ~/.corral/config.toml or the box's trusted
layer, with their hosts, and whether the box (BOX, or the current
project's) uses them.

It also shows the box's "toolchains" group: the registries, proxies and
mirrors its golden image's toolchains are configured for, asked from the
toolchains when the golden was built, each with the tool and setting it
came from, and what was skipped. The box's broker allows that group
without being told.`,
		Example: `  corral egress groups
  corral egress groups web-3f2a1c --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return egressGroupsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// groupJSON is a named group in --json output.
type groupJSON struct {
	Name    string   `json:"name"`
	Doc     string   `json:"doc"`
	Entries []string `json:"entries"`
	InUse   bool     `json:"in_use"`
}

// toolchainsJSON is the box's recorded group in --json output.
type toolchainsJSON struct {
	Golden     string             `json:"golden,omitempty"`
	Built      time.Time          `json:"built,omitzero"`
	Registries []toolreg.Registry `json:"registries"`
	Notes      []string           `json:"notes"`
	// Missing says why there is no record, when there is none.
	Missing string `json:"missing,omitempty"`
}

func egressGroupsRun(opts *EgressGroupsOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	name, projectDir, err := egressTarget(&EgressOptions{Box: opts.Box, Factory: f}, l)
	if err != nil {
		return err
	}
	// Which groups the box uses is its config's: a config that cannot be
	// read (a project directory it may not read, a broken layer) is an
	// error, not every group "unused".
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: projectDir, Platform: f.Platform})
	if err != nil {
		return fmt.Errorf("egress groups of box %s: reading its config (which groups it uses): %w", name, err)
	}
	using := r.Loaded.Settings().EgressGroups
	tc := recordedToolchains(l, name)
	var groups []groupJSON
	for _, g := range egress.Groups() {
		groups = append(groups, groupJSON{g.Name, g.Doc, g.Entries, slices.Contains(using, g.Name)})
	}
	if opts.JSON {
		return printJSON(opts.IO.Out, SchemaEgressGroups, map[string]any{"box": name, "groups": groups, "toolchains": tc})
	}
	if !opts.IO.OutTTY {
		t := newTable(opts.IO.Out, false)
		for _, g := range groups {
			for _, e := range g.Entries {
				t.Row(g.Name, e, inUse(g.InUse))
			}
		}
		for _, r := range tc.Registries {
			t.Row(egress.ToolchainsGroup, r.Entry, inUse(true), r.Tool, safeText(r.Source))
		}
		return t.Flush()
	}
	w := opts.IO.Out
	for _, g := range groups {
		state := fmt.Sprintf("not used by %s: add egress_groups = [%q] to %s", name, g.Name, l.ProjectConfig(name))
		if g.InUse {
			state = "used by " + name
		}
		fmt.Fprintf(w, "%s: %s\n  (%s)\n", g.Name, g.Doc, state)
		for _, e := range g.Entries {
			fmt.Fprintf(w, "  %s\n", e)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s: the registries the toolchains of %s's golden image use\n", egress.ToolchainsGroup, name)
	if tc.Missing != "" {
		fmt.Fprintf(w, "  (none recorded: %s)\n", tc.Missing)
		return nil
	}
	fmt.Fprintf(w, "  (recorded by %s on %s, used by %s)\n", tc.Golden, tc.Built.Local().Format(time.DateOnly), name)
	tw := newTable(w, true)
	for _, r := range tc.Registries {
		tw.Row("  "+display.Authority(r.Entry, 0), string(r.Tool)+" "+display.Text(r.Source, 0))
	}
	if len(tc.Registries) == 0 {
		tw.Row("  none found")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range tc.Notes {
		fmt.Fprintf(w, "  note: %s\n", display.Text(n, 0))
	}
	return nil
}

func inUse(b bool) string {
	if b {
		return "in-use"
	}
	return "unused"
}

// recordedToolchains is the toolchains group of a box, or why it has none.
func recordedToolchains(l paths.Layout, name string) toolchainsJSON {
	out := toolchainsJSON{Registries: []toolreg.Registry{}, Notes: []string{}}
	m, err := boxmeta.Read(l, name)
	switch {
	case err != nil:
		out.Missing = "the box is not created yet (its golden image records the group when it is built)"
		return out
	case m.Golden == "":
		out.Missing = "the box was made without a golden image (golden = false)"
		return out
	}
	rec, err := toolreg.Read(l, m.Golden)
	switch {
	case errors.Is(err, toolreg.ErrNoRecord):
		out.Missing = fmt.Sprintf("golden image %s was built before corral recorded toolchain registries; corral golden rm -f %s && corral rebuild -C %s records them", m.Golden, m.Golden, m.Project)
		return out
	case err != nil:
		out.Missing = display.Text(err.Error(), 0)
		return out
	}
	out.Golden, out.Built = rec.Golden, rec.Built
	out.Registries = append(out.Registries, rec.Registries...)
	out.Notes = append(out.Notes, rec.Notes...)
	return out
}
