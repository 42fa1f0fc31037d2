package box

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/guest"
)

// serveFunc is the host's corral in a test: corral's arguments after
// --host local, its stdin and stdout the exchange; it returns the exit
// code.
type serveFunc func(args []string, in io.Reader, out, errOut io.Writer) int

// fakeSSH stands in for ssh: the remote command (ssh's last argument) is
// read by a real sh, as the remote login shell reads it, into words that
// must start with the corral binary and --host local; the rest go to
// serve, the host's corral.
func fakeSSH(t *testing.T, serve serveFunc) remote.Exec {
	return func(ctx context.Context, _ string, argv []string, in io.Reader, out, errOut io.Writer) (int, error) {
		cmd := argv[len(argv)-1]
		b, err := exec.CommandContext(ctx, "sh", "-c", "set -- "+cmd+`; for a; do printf '%s\0' "$a"; done`).Output()
		if err != nil {
			return 255, nil
		}
		words := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(words) < 4 || words[1] != "--host" || words[2] != "local" {
			t.Errorf("remote command %q", cmd)
			return 2, nil
		}
		return serve(words[3:], in, out, errOut), nil
	}
}

// exitWith prints err as corral's printError does and returns the code.
func exitWith(errOut io.Writer, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(errOut, "corral: %s\n", err)
	for _, h := range hint.All(err) {
		fmt.Fprintf(errOut, "hint: %s\n", h)
	}
	return 1
}

var gpu = remote.Host{Name: "gpu", URL: "ssh://gpu", Target: remote.Target{Host: "gpu"}}

// remoteFixture is a laptop with a git project and a host with its own
// corral home and lifecycle service (a fake limactl), joined by fakeSSH.
type remoteFixture struct {
	laptop, host *Remote
	svc          *Service // the host's
	proj         string   // the laptop's project
	fake         *fakeLima
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	hl := paths.Layout{Home: filepath.Join(root, "host")}
	must(t, hl.Ensure())
	must(t, os.WriteFile(hl.GlobalConfig(), []byte("network = \"full\"\ngolden = false\n"), 0o600))
	fx := &remoteFixture{fake: &fakeLima{insts: map[string]string{}, fail: map[string]string{}, home: hl.LimaHome()}}
	fx.svc = &Service{Layout: hl, Exe: "/bin/false", Logger: discard(), Now: time.Now, Actor: audit.ActorCLI,
		Lima: &lima.Client{Limactl: "limactl", LimaHome: hl.LimaHome(), Command: fx.fake.command}}
	fx.host = &Remote{Layout: hl, Actor: audit.ActorCLI, Logger: discard()}
	fx.laptop = &Remote{Layout: paths.Layout{Home: filepath.Join(root, "laptop")}, Actor: audit.ActorCLI, Logger: discard()}
	fx.laptop.Runner = remote.Runner{Exec: fakeSSH(t, fx.serve)}
	fx.proj = filepath.Join(root, "src", "web")
	must(t, os.MkdirAll(fx.proj, 0o755))
	gitIn(t, fx.proj, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(fx.proj, "README"), []byte("web\n"), 0o644))
	gitIn(t, fx.proj, "add", ".")
	gitIn(t, fx.proj, "commit", "-q", "-m", "first")
	return fx
}

// serve is the host's corral: the two commands of the exchange.
func (fx *remoteFixture) serve(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx := context.Background()
	switch {
	case len(args) == 3 && args[0] == "project" && args[1] == "receive":
		_, err := fx.host.Receive(ctx, args[2], in, out)
		return exitWith(errOut, err)
	case len(args) >= 3 && args[0] == "project" && args[1] == "pull-bundle":
		haves, err := hostgit.ReadHaves(bufio.NewReader(in))
		if err != nil {
			return exitWith(errOut, err)
		}
		opt := PullOptions{AllowSubmodules: len(args) == 4 && args[3] == "--allow-submodules"}
		if _, err := fx.svc.Pull(ctx, args[2], opt); err != nil {
			return exitWith(errOut, err)
		}
		return exitWith(errOut, fx.svc.PullBundle(ctx, args[2], haves, out))
	}
	fmt.Fprintf(errOut, "corral: unknown command %q\n", args)
	return 1
}

func (fx *remoteFixture) project(t *testing.T) (p boxmeta.Resolved) {
	t.Helper()
	pr, err := boxmeta.ResolveProject(fx.laptop.Layout, fx.proj)
	must(t, err)
	return boxmeta.Resolved{Project: pr}
}

// startBox creates the host's box from the clone at dir (clone mode: the
// seed bundle is made from it), marks it running, and makes boxRepo the
// box's own clone: its guest commands run there.
func (fx *remoteFixture) startBox(t *testing.T, dir string) (box, boxRepo string) {
	t.Helper()
	r, err := boxmeta.Resolve(fx.svc.Layout, boxmeta.ResolveOptions{Dir: dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	must(t, err)
	if r.Loaded.Config.Source == nil || *r.Loaded.Config.Source != config.SourceClone {
		t.Fatalf("the host's box is not a clone: source %v", r.Loaded.Config.Source)
	}
	if _, err := fx.svc.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	box = r.Project.Box
	inst := filepath.Join(fx.svc.Layout.LimaHome(), box)
	must(t, os.WriteFile(filepath.Join(inst, "ha.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600))
	must(t, os.WriteFile(filepath.Join(inst, "qemu.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600))
	boxRepo = filepath.Join(t.TempDir(), "box")
	gitIn(t, filepath.Dir(boxRepo), "clone", "-q", dir, boxRepo)
	script := filepath.Join(t.TempDir(), "corral-repo")
	must(t, os.WriteFile(script, []byte(guest.Repo()), 0o755))
	fx.svc.GuestCommand = func(ctx context.Context, argv []string) *exec.Cmd {
		cmd := argv[len(argv)-1]
		cmd = strings.Replace(cmd, guest.RepoPath, script, 1)
		cmd = strings.Replace(cmd, shellQuote(dir), shellQuote(boxRepo), 1)
		return exec.CommandContext(ctx, "sh", "-c", cmd)
	}
	return box, boxRepo
}

func auditKinds(t *testing.T, l paths.Layout, kind audit.Kind) []audit.Event {
	t.Helper()
	b, _ := os.ReadFile(l.AuditLog())
	var out []audit.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev audit.Event
		if line != "" && json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestRemoteProjectRoundTrip: the laptop's project goes to the host as a
// clone (its box name the laptop's, source = "clone" in its trusted
// layer), the host's box starts from that clone, the box's commits come
// back to the laptop as refs/remotes/corral/<box>/*, and a later send
// carries only the laptop's new commits, keeping what the host pulled.
func TestRemoteProjectRoundTrip(t *testing.T) {
	fx := newRemoteFixture(t)
	ctx := context.Background()
	p := fx.project(t).Project
	got, err := fx.laptop.Send(ctx, gpu, p)
	must(t, err)
	hl := fx.host.Layout
	if got.Dir != hl.RemoteProject(p.Box) || got.Branch != "main" || got.NewCommits != 1 || got.Commit != gitIn(t, fx.proj, "rev-parse", "main") {
		t.Fatalf("sent: %+v", got)
	}
	if b, err := os.ReadFile(filepath.Join(got.Dir, "README")); err != nil || string(b) != "web\n" {
		t.Errorf("the clone's work tree: %q %v", b, err)
	}
	if hp, err := boxmeta.ResolveProject(hl, got.Dir); err != nil || hp.Box != p.Box {
		t.Errorf("the host names the clone's box %q (%v), the laptop %q", hp.Box, err, p.Box)
	}
	if evs := auditKinds(t, hl, audit.KindReceive); len(evs) != 1 || evs[0].Box != p.Box || evs[0].Fields["branch"] != "main" {
		t.Errorf("host audit: %+v", evs)
	}

	box, boxRepo := fx.startBox(t, got.Dir)
	if box != p.Box {
		t.Fatalf("host box %s, laptop box %s", box, p.Box)
	}
	gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "made in the box")
	gitIn(t, boxRepo, "checkout", "-q", "-b", "topic")
	gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "on a topic")
	res, err := fx.laptop.PullFrom(ctx, gpu, box, fx.proj, PullOptions{})
	if err != nil || res.NewCommits != 2 || len(res.Updates) != 2 {
		t.Fatalf("pull: %+v %v", res, err)
	}
	for _, br := range []string{"main", "topic"} {
		if got, want := gitIn(t, fx.proj, "rev-parse", hostgit.RemotePrefix(box)+br), gitIn(t, boxRepo, "rev-parse", br); got != want {
			t.Errorf("laptop %s = %s, box %s", br, got, want)
		}
	}
	if evs := auditKinds(t, fx.laptop.Layout, audit.KindPull); len(evs) != 1 || evs[0].Fields["host"] != "gpu" {
		t.Errorf("laptop audit: %+v", evs)
	}
	if res, err := fx.laptop.PullFrom(ctx, gpu, box, fx.proj, PullOptions{}); err != nil || len(res.Updates) != 0 {
		t.Errorf("second pull: %+v %v", res, err)
	}

	// The laptop merges the box's work and commits: the next send
	// carries one new commit and keeps the box's branches in the clone.
	gitIn(t, fx.proj, "merge", "-q", "--ff-only", "corral/"+box+"/main")
	must(t, os.WriteFile(filepath.Join(fx.proj, "NEW"), []byte("new\n"), 0o644))
	gitIn(t, fx.proj, "add", ".")
	gitIn(t, fx.proj, "commit", "-q", "-m", "after review")
	got, err = fx.laptop.Send(ctx, gpu, p)
	if err != nil || got.NewCommits != 1 {
		t.Fatalf("second send: %+v %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(got.Dir, "NEW")); err != nil || string(b) != "new\n" {
		t.Errorf("the clone's work tree after the second send: %q %v", b, err)
	}
	if refs := gitIn(t, got.Dir, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main\nrefs/remotes/corral/"+box+"/main\nrefs/remotes/corral/"+box+"/topic" {
		t.Errorf("clone refs:\n%s", refs)
	}
	evs := auditKinds(t, hl, audit.KindReceive)
	if len(evs) != 2 || evs[1].Fields["bundle_bytes"].(float64) >= evs[0].Fields["bundle_bytes"].(float64)*4 {
		t.Errorf("host audit after the second send: %+v", evs)
	}

	// Another branch: it is checked out, main stays.
	gitIn(t, fx.proj, "checkout", "-q", "-b", "feature")
	gitIn(t, fx.proj, "commit", "-q", "--allow-empty", "-m", "feature")
	got, err = fx.laptop.Send(ctx, gpu, p)
	if err != nil || got.Branch != "feature" {
		t.Fatalf("send of a branch: %+v %v", got, err)
	}
	if head := gitIn(t, got.Dir, "symbolic-ref", "HEAD"); head != "refs/heads/feature" || gitIn(t, got.Dir, "rev-parse", "main") != gitIn(t, fx.proj, "rev-parse", "main") {
		t.Errorf("clone HEAD %s", head)
	}
}

// TestSendRefusesWhatIsNoBranch: no repository, a detached HEAD and a
// branch without a commit are refused here, before ssh runs.
func TestSendRefusesWhatIsNoBranch(t *testing.T) {
	fx := newRemoteFixture(t)
	ran := false
	fx.laptop.Runner = remote.Runner{Exec: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) (int, error) {
		ran = true
		return 0, nil
	}}
	ctx := context.Background()
	p := fx.project(t).Project
	gitIn(t, fx.proj, "checkout", "-q", "--detach")
	if _, err := fx.laptop.Send(ctx, gpu, p); !errors.Is(err, hostgit.ErrDetached) || hint.Of(err) == "" {
		t.Errorf("detached: %v", err)
	}
	gitIn(t, fx.proj, "checkout", "-q", "--orphan", "empty")
	if _, err := fx.laptop.Send(ctx, gpu, p); !errors.Is(err, hostgit.ErrNoCommit) {
		t.Errorf("no commit: %v", err)
	}
	plain := p
	plain.Dir = t.TempDir()
	if _, err := fx.laptop.Send(ctx, gpu, plain); !errors.Is(err, hostgit.ErrNotRepository) {
		t.Errorf("no repository: %v", err)
	}
	if ran {
		t.Error("ssh ran")
	}
}

// stream is a branch stream of the laptop project's main.
func (fx *remoteFixture) stream(t *testing.T, heads hostgit.Heads) []byte {
	t.Helper()
	repo, err := hostgit.Open(fx.proj)
	must(t, err)
	if heads == nil {
		heads = hostgit.Heads{"refs/heads/main": gitIn(t, fx.proj, "rev-parse", "main")}
	}
	var b bytes.Buffer
	must(t, repo.WriteBranches(context.Background(), &b, heads, nil, t.TempDir()))
	return b.Bytes()
}

// TestReceiveRefusals: the host checks a sent project as a box's bundle
// (size, branch list, refs, the bundle against the list), refuses a name
// that belongs to another project or a trusted layer that mounts, and a
// refused first send leaves no clone.
func TestReceiveRefusals(t *testing.T) {
	fx := newRemoteFixture(t)
	ctx := context.Background()
	p := fx.project(t).Project
	good := fx.stream(t, nil)
	sep := bytes.Index(good, []byte("\n\n")) + 2
	list, bundle := good[:sep], good[sep:]
	main := gitIn(t, fx.proj, "rev-parse", "main")
	other := strings.Repeat("b", 40)
	big := make([]byte, 64<<10)
	_, _ = rand.Read(big)
	must(t, os.WriteFile(filepath.Join(fx.proj, "big"), big, 0o644))
	gitIn(t, fx.proj, "add", "big")
	gitIn(t, fx.proj, "commit", "-q", "-m", "big")
	oversized := fx.stream(t, nil)

	for _, c := range []struct {
		name string
		in   []byte
		max  int64
		want string
	}{
		{"garbage bundle", append(append([]byte{}, list...), "not a bundle\n\n"...), 0, "not a git bundle"},
		{"no stream", []byte("PACK...."), 0, "not a corral branch stream"},
		{"a tag", []byte("# corral branches v1\n" + main + " refs/tags/v1\n\n"), 0, "no valid branch"},
		{"HEAD", []byte("# corral branches v1\n" + main + " HEAD\n\n"), 0, "no valid branch"},
		{"two branches", []byte("# corral branches v1\n" + main + " refs/heads/main\n" + main + " refs/heads/x\n\n"), 0, "a project sends one"},
		{"list and bundle disagree", append([]byte("# corral branches v1\n"+other+" refs/heads/main\n\n"), bundle...), 0, "its branch list"},
		{"oversized", oversized, 16 << 10, "larger than 16384 bytes"},
		{"cut short", good[:len(good)-20], 0, ""},
	} {
		fx.host.MaxBundle = c.max
		var out bytes.Buffer
		_, err := fx.host.Receive(ctx, p.Box, bytes.NewReader(c.in), &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "box "+p.Box) {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if _, err := os.Stat(fx.host.Layout.RemoteProject(p.Box)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a clone was left: %v", c.name, err)
		}
	}
	fx.host.MaxBundle = 0
	if evs := auditKinds(t, fx.host.Layout, audit.KindReceive); len(evs) == 0 || evs[0].Fields["refused"] == nil {
		t.Errorf("no refusal audited: %+v", evs)
	}

	if _, err := fx.host.Receive(ctx, "../etc", bytes.NewReader(good), io.Discard); err == nil {
		t.Error("a box name with a path was taken")
	}
	// A box of that name that belongs to a project on the host itself.
	must(t, boxmeta.Write(fx.host.Layout, boxmeta.Meta{Name: p.Box, Project: "/srv/web"}))
	_, err := fx.host.Receive(ctx, p.Box, bytes.NewReader(good), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is the box of /srv/web") {
		t.Errorf("another project's box: %v", err)
	}
	must(t, os.Remove(fx.host.Layout.BoxMeta(p.Box)))
	// A trusted layer that mounts the project.
	must(t, os.WriteFile(fx.host.Layout.ProjectConfig(p.Box), []byte("source = \"mount\"\n"), 0o600))
	if _, err := fx.host.Receive(ctx, p.Box, bytes.NewReader(good), io.Discard); !errors.Is(err, config.ErrNotClone) {
		t.Errorf("mount: %v", err)
	}
	if _, err := os.Stat(fx.host.Layout.RemoteProject(p.Box)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a clone was made for a mounting layer: %v", err)
	}
}

// TestSendFromAHostileHost: what the host answers is checked: its haves,
// its answer, and its own refusal reaches the user with its hint, naming
// the host.
func TestSendFromAHostileHost(t *testing.T) {
	fx := newRemoteFixture(t)
	p := fx.project(t).Project
	for _, c := range []struct {
		name  string
		serve serveFunc
		want  string
	}{
		{"bad haves", func(_ []string, in io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "# corral haves v1\n--all\n\n")
			_, _ = io.Copy(io.Discard, in)
			return 0
		}, "host gpu: the list of commits the other side has holds \"--all\""},
		{"another directory", func(_ []string, in io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "# corral haves v1\n\n")
			_, _ = io.Copy(io.Discard, in)
			fmt.Fprintf(out, `{"dir":"/etc","branch":"main","commit":%q,"new_commits":1}`+"\n", gitIn(t, fx.proj, "rev-parse", "main"))
			return 0
		}, "host gpu: it names /etc as the project's directory"},
		{"an unknown field", func(_ []string, in io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "# corral haves v1\n\n")
			_, _ = io.Copy(io.Discard, in)
			fmt.Fprintf(out, `{"dir":"/h/remote-projects/%s","branch":"main","commit":%q,"new_commits":1,"run":"x"}`+"\n", p.Box, gitIn(t, fx.proj, "rev-parse", "main"))
			return 0
		}, "is not what corral project receive writes"},
		{"refused there", func(_ []string, _ io.Reader, _, errOut io.Writer) int {
			io.WriteString(errOut, "corral: receiving the project for box x: refusing the box's bundle: \x1b[31mred\n\nhint: do this\n")
			return 1
		}, "host gpu: corral project receive " + p.Box + " failed: receiving the project for box x: refusing the box's bundle: \\x1b[31mred"},
		{"unreachable", func(_ []string, _ io.Reader, _, errOut io.Writer) int {
			io.WriteString(errOut, "ssh: connect to host gpu port 22: Connection refused\n")
			return 255
		}, "cannot reach the host over ssh"},
	} {
		fx.laptop.Runner = remote.Runner{Exec: fakeSSH(t, c.serve)}
		_, err := fx.laptop.Send(context.Background(), gpu, p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if c.name == "refused there" && hint.Of(err) != "do this" {
			t.Errorf("%s: hint %q", c.name, hint.Of(err))
		}
	}
}

// TestPullFromAHostileHost: a host's branch stream is checked as a box's
// bundle; nothing it sends moves the laptop's refs when refused, and the
// refusal is audited with the host's name.
func TestPullFromAHostileHost(t *testing.T) {
	fx := newRemoteFixture(t)
	ctx := context.Background()
	p := fx.project(t).Project
	main := gitIn(t, fx.proj, "rev-parse", "main")
	// The "box's" commits: a clone of the project with a big commit and
	// one that adds a submodule, streamed as the host would.
	boxRepo := filepath.Join(t.TempDir(), "box")
	gitIn(t, filepath.Dir(boxRepo), "clone", "-q", fx.proj, boxRepo)
	big := make([]byte, 64<<10)
	_, _ = rand.Read(big)
	must(t, os.WriteFile(filepath.Join(boxRepo, "big"), big, 0o644))
	gitIn(t, boxRepo, "add", "big")
	gitIn(t, boxRepo, "commit", "-q", "-m", "big")
	bigTip := gitIn(t, boxRepo, "rev-parse", "HEAD")
	gitIn(t, boxRepo, "update-index", "--add", "--cacheinfo", "160000,"+main+",sub")
	gitIn(t, boxRepo, "commit", "-q", "-m", "a submodule")
	subTip := gitIn(t, boxRepo, "rev-parse", "HEAD")
	repo, err := hostgit.Open(boxRepo)
	must(t, err)
	streamOf := func(heads hostgit.Heads) []byte {
		var b bytes.Buffer
		must(t, repo.WriteBranches(ctx, &b, heads, nil, t.TempDir()))
		return b.Bytes()
	}
	sends := func(stream []byte) serveFunc {
		return func(_ []string, in io.Reader, out, _ io.Writer) int {
			_, _ = io.Copy(io.Discard, in)
			_, _ = out.Write(stream)
			return 0
		}
	}
	for _, c := range []struct {
		name  string
		serve serveFunc
		max   int64
		want  string
	}{
		{"a tag", sends([]byte("# corral branches v1\n" + main + " refs/tags/v1\n\n")), 0, "no valid branch"},
		{"garbage", sends([]byte("# corral branches v1\n" + main + " refs/heads/main\n\nPACK\x00\x00")), 0, "refusing the box's bundle: the header is cut short"},
		{"not a stream", sends([]byte("Welcome to gpu!\n")), 0, "not a corral branch stream"},
		{"oversized", sends(streamOf(hostgit.Heads{"refs/heads/main": bigTip})), 16 << 10, "larger than 16384 bytes"},
		{"submodule", sends(streamOf(hostgit.Heads{"refs/heads/main": subTip})), 0, "--host gpu pull --allow-submodules " + p.Box},
	} {
		fx.laptop.Runner = remote.Runner{Exec: fakeSSH(t, c.serve)}
		_, err := fx.laptop.PullFrom(ctx, gpu, p.Box, fx.proj, PullOptions{MaxBundle: c.max})
		msg := fmt.Sprint(err) + " " + hint.Of(err)
		if err == nil || !strings.Contains(msg, c.want) || !strings.Contains(msg, "pulling from box "+p.Box+" on host gpu") {
			t.Errorf("%s: err = %v", c.name, msg)
		}
		if refs := gitIn(t, fx.proj, "for-each-ref", "refs/remotes/"); refs != "" {
			t.Errorf("%s: refs arrived: %s", c.name, refs)
		}
	}
	evs := auditKinds(t, fx.laptop.Layout, audit.KindPull)
	if len(evs) != 1 || evs[0].Fields["host"] != "gpu" || evs[0].Fields["refused"] == nil {
		t.Errorf("laptop audit: %+v", evs)
	}
	// Taken when asked, as a local pull takes it.
	fx.laptop.Runner = remote.Runner{Exec: fakeSSH(t, sends(streamOf(hostgit.Heads{"refs/heads/main": subTip})))}
	res, err := fx.laptop.PullFrom(ctx, gpu, p.Box, fx.proj, PullOptions{AllowSubmodules: true})
	if err != nil || len(res.Submodules) != 1 {
		t.Errorf("--allow-submodules: %+v %v", res, err)
	}
}
