package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
)

type fakePull struct {
	res     hostgit.Result
	err     error
	opt     box.PullOptions
	stopped bool
	started bool
}

func (f *fakePull) Pull(_ context.Context, _ string, opt box.PullOptions) (hostgit.Result, error) {
	f.opt = opt
	if f.err != nil {
		return hostgit.Result{}, f.err
	}
	if f.stopped {
		return hostgit.Result{}, fmt.Errorf("%w: web-1", box.ErrNotRunning)
	}
	return f.res, nil
}

func (f *fakePull) Start(context.Context, string) error {
	f.stopped, f.started = false, true
	return nil
}

func runPull(t *testing.T, fp *fakePull, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := Test(false)
	f := &Factory{IO: io}
	cmd := NewCmdPull(f, func(o *PullOptions) error {
		o.Service = func() (pullService, error) { return fp, nil }
		return pullRun(o)
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

var (
	oidA = strings.Repeat("a", 40)
	oidB = strings.Repeat("b", 40)
)

func TestPullOutput(t *testing.T) {
	fp := &fakePull{res: hostgit.Result{
		Updates: []hostgit.Update{
			{Branch: "gone", Old: oidA},
			{Branch: "main", Old: oidA, New: oidB},
			{Branch: "topic/x", New: oidB},
		},
		Commits:    []string{"bbbbbbb second", "ccccccc first"},
		NewCommits: 3,
	}}
	code, out, errOut := runPull(t, fp, "web-1")
	want := `from box web-1 into refs/remotes/corral/web-1/:
  gone     deleted  (was aaaaaaaaaa)
  main     updated  aaaaaaaaaa..bbbbbbbbbb
  topic/x  new      bbbbbbbbbb
3 new commits:
  bbbbbbb second
  ccccccc first
  … 1 more
review: git log -p HEAD..corral/web-1/main
merge:  git merge corral/web-1/main
`
	if code != 0 || out != want || errOut != "" {
		t.Errorf("code %d\nout:\n%s\nwant:\n%s\nerr: %s", code, out, want, errOut)
	}
}

func TestPullNothingNew(t *testing.T) {
	code, out, _ := runPull(t, &fakePull{}, "web-1")
	if code != 0 || out != "box web-1: nothing new\n" {
		t.Errorf("%d %q", code, out)
	}
}

func TestPullStartsAStoppedBox(t *testing.T) {
	fp := &fakePull{stopped: true}
	code, out, errOut := runPull(t, fp, "web-1")
	if code != 0 || !fp.started || errOut != "starting box web-1 to pull from it\n" || out != "box web-1: nothing new\n" {
		t.Errorf("%d %q %q", code, out, errOut)
	}
}

func TestPullJSON(t *testing.T) {
	fp := &fakePull{res: hostgit.Result{Updates: []hostgit.Update{{Branch: "main", New: oidB}}, NewCommits: 1, Commits: []string{"bbbbbbb c"}}}
	_, out, _ := runPull(t, fp, "web-1", "--json")
	var got pullResultJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Box != "web-1" || got.Updates[0].Ref != "refs/remotes/corral/web-1/main" || got.NewCommits != 1 {
		t.Errorf("%+v", got)
	}
}

// TestPullAllowSubmodules: the flag reaches the service, and the summary
// names what it let in.
func TestPullAllowSubmodules(t *testing.T) {
	fp := &fakePull{res: hostgit.Result{
		Updates:           []hostgit.Update{{Branch: "main", Old: oidA, New: oidB}},
		Commits:           []string{"bbbbbbb add vendor"},
		NewCommits:        1,
		Submodules:        []hostgit.SubmoduleChange{{Path: "vendor/lib", Kind: hostgit.KindGitlink, Commit: oidB}},
		SubmoduleBranches: []string{"main"},
	}}
	code, out, _ := runPull(t, fp, "web-1", "--allow-submodules")
	want := `from box web-1 into refs/remotes/corral/web-1/:
  main  updated  aaaaaaaaaa..bbbbbbbbbb
1 new commit:
  bbbbbbb add vendor
submodules and .git entries taken with --allow-submodules (on main); the host's git will enter these once merged:
  vendor/lib  gitlink  bbbbbbbbbb
review: git log -p HEAD..corral/web-1/main
merge:  git merge corral/web-1/main
`
	if code != 0 || out != want || !fp.opt.AllowSubmodules {
		t.Errorf("code %d allow %v\nout:\n%s\nwant:\n%s", code, fp.opt.AllowSubmodules, out, want)
	}
	_, out, _ = runPull(t, fp, "web-1", "--json")
	var got pullResultJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Submodules) != 1 || got.Submodules[0].Kind != "gitlink" {
		t.Errorf("json %+v %v", got, err)
	}
	if fp.opt.AllowSubmodules {
		t.Error("AllowSubmodules without the flag")
	}
}

// TestPullRefusedSubmodule: the refusal, its paths and its hint, on
// stderr, exit code 1.
func TestPullRefusedSubmodule(t *testing.T) {
	refusal := &hostgit.SubmoduleError{Branches: []string{"topic"}, Changes: []hostgit.SubmoduleChange{{Path: "evil", Kind: hostgit.KindGitlink, Commit: oidB}}}
	fp := &fakePull{err: hint.New(fmt.Errorf("pulling from box web-1: %w", refusal), "corral pull --allow-submodules web-1")}
	code, out, errOut := runPull(t, fp, "web-1")
	want := "corral: pulling from box web-1: refusing the box's commits: they add or change a submodule or git metadata, which the host's git would enter and run (its config, core.fsmonitor, hooks) once merged; on branch topic:\n" +
		"  evil (gitlink, commit bbbbbbbbbb)\n" +
		"nothing was taken: the host's refs and work tree are unchanged\n" +
		"hint: corral pull --allow-submodules web-1\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("code %d out %q\nerr:\n%s\nwant:\n%s", code, out, errOut, want)
	}
}
