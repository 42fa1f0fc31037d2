package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

func runReview(t *testing.T, home string, browsed *string, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := Test(false)
	f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return paths.Layout{Home: home}, nil }}
	cmd := NewCmdReview(f, func(o *ReviewOptions) error {
		o.Now, o.Location = func() time.Time { return auditNow }, time.UTC
		o.Browse = func(p string) error { *browsed = p; return nil }
		return reviewRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		printError(errOut, err)
	}
	return exitCode(err), out.String(), errOut.String()
}

// TestReview: the latest session of a box as Markdown, as JSON with its
// schema, and as a page written 0600 under the run directory and handed
// to the browser; a box with no session says so.
func TestReview(t *testing.T) {
	home := t.TempDir()
	writeAudit(t, home)
	l := paths.Layout{Home: home}
	proj := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "web-1", Project: proj, Network: config.NetworkBroker, VMType: config.VMTypeQEMU}); err != nil {
		t.Fatal(err)
	}
	var browsed string
	code, out, errOut := runReview(t, home, &browsed, "web-1")
	if code != 0 || !strings.HasPrefix(out, "# Session ab12 of box web-1\n") || !strings.Contains(out, "- still running\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runReview(t, home, &browsed, "web-1", "--json")
	if code != 0 || !strings.HasPrefix(out, "{\n  \"schema\": \"corral.review/v1\",\n  \"box\": \"web-1\",\n  \"session\": \"ab12\"") {
		t.Errorf("--json: exit %d\n%s", code, out)
	}
	code, out, errOut = runReview(t, home, &browsed, "web-1", "--open")
	want := filepath.Join(home, "run", "review", "web-1-ab12.html")
	if code != 0 || strings.TrimSpace(out) != want || browsed != want {
		t.Fatalf("--open: exit %d, printed %q, browsed %q\n%s", code, out, browsed, errOut)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the page: %v %v", fi, err)
	}
	code, _, errOut = runReview(t, home, &browsed, "web-1", "--session", "zz")
	if code == 0 || !strings.Contains(errOut, "no such session") {
		t.Errorf("a missing session: exit %d %q", code, errOut)
	}
}

func TestBrowserArgv(t *testing.T) {
	if got := browserArgv("darwin", "/p.html"); strings.Join(got, " ") != "/usr/bin/open /p.html" {
		t.Errorf("darwin: %q (never open -t: the text editor)", got)
	}
	if got := browserArgv("linux", "/p.html"); strings.Join(got, " ") != "xdg-open /p.html" {
		t.Errorf("linux: %q", got)
	}
}
