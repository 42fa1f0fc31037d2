package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"

	"github.com/corral-dev/corral/core/review"
	"github.com/spf13/cobra"
)

// ReviewOptions are the options of `corral review`.
type ReviewOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
	Session string
	JSON    bool
	// Open writes the review as an HTML page under the run directory and
	// opens it in the browser; Browse does the opening (tests fake it).
	Open   bool
	Browse func(path string) error
	// Now and Location are the clock and time zone of the report; tests
	// fix them.
	Now      func() time.Time
	Location *time.Location
}

// NewCmdReview builds `corral review`.
func NewCmdReview(f *Factory, runF func(*ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{IO: f.IO, Factory: f, Now: time.Now, Location: time.Local, Browse: browse}
	cmd := &cobra.Command{
		Use:   "review [BOX]",
		Short: "Review what a session did: network, requests, grants, credentials, git, files",
		Long: `Review prints one report of a box's session (the latest by default):
when it started and ended, the agent, every egress decision in its time,
what the box asked for and what was granted, the brokered credentials it
used, the git guard's reverts, the name rule's refusals and repositories
that appeared, and the work tree's files modified in its time.

Everything the box wrote (hosts, reasons, paths, process names) is shown
escaped. Modification times are the box's to set: the file list is a hint;
git status and git diff on the host show the content. Other sessions of the
box running at the same time share its egress lines. Session IDs are in
"corral sessions" and "corral audit".`,
		Example: "  corral review\n  corral review web-3f2a1c --session 3f2a\n  corral review --json | jq '.egress[] | select(.Allowed == false)'",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return reviewRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Session, "session", "", "review session `ID` (or a prefix of it; \"last\" is the latest)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON (schema corral.review/v1)")
	cmd.Flags().BoolVar(&opts.Open, "open", false, "write the report as one HTML page and open it in the browser")
	return cmd
}

func reviewRun(opts *ReviewOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	r, err := review.Build(l, review.Options{Box: opts.Box, Dir: opts.Factory.Dir, Session: opts.Session, Now: opts.Now()})
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	if opts.JSON {
		return printJSON(opts.IO.Out, SchemaReview, r)
	}
	if opts.Open {
		page, err := r.HTML()
		if err != nil {
			return err
		}
		dir := filepath.Join(l.RunDir(), "review")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("review: %w", err)
		}
		// Box and session names passed their rules: the file name is theirs.
		path := filepath.Join(dir, r.Box+"-"+r.Session+".html")
		if err := atomicfile.WriteFile(path, []byte(page), 0o600); err != nil {
			return fmt.Errorf("review: %w", err)
		}
		fmt.Fprintln(opts.IO.Out, path)
		return opts.Browse(path)
	}
	_, err = fmt.Fprint(opts.IO.Out, r.Markdown(opts.Location))
	return err
}

// browserArgv is how a page is opened in the default browser: open(1) on
// macOS (without -t, which would pick the text editor), xdg-open elsewhere.
func browserArgv(goos, path string) []string {
	if goos == "darwin" {
		return []string{"/usr/bin/open", path}
	}
	return []string{"xdg-open", path}
}

func browse(path string) error {
	argv := browserArgv(runtime.GOOS, path)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("opening %s with %s: %w: %s", path, argv[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}
