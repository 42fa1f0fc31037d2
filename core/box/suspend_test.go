package box

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/qemu/qemutest"
	"github.com/corral-dev/corral/core/qemuwrap"
	"github.com/corral-dev/corral/core/qmp/qmptest"
)

// suspendRig is a box under test for save and resume: a fake limactl that
// keeps the disk's snapshot tags and the instance's pid files, a fake QMP
// socket in the instance directory, and a fake guest (corral-suspend
// exits with guestExit[verb]).
type suspendRig struct {
	t   *testing.T
	s   *Service
	r   boxmeta.Resolved
	f   *fakeLima
	box string
	dir string

	mu        sync.Mutex
	tags      []string
	qmp       []string // commands (HMP command lines for human-monitor-command)
	guest     []string // corral-suspend verbs run
	guestExit map[string]int
	guestErr  map[string]string
	saveOut   string // savevm's output ("" = success)
}

func newSuspendRig(t *testing.T) *suspendRig {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	g := &suspendRig{t: t, s: s, r: r, f: f, box: r.Project.Box, guestExit: map[string]int{}, guestErr: map[string]string{}}
	g.dir = filepath.Join(s.Layout.LimaHome(), g.box)
	s.Lima.Command = g.command
	s.GuestCommand = g.guestCommand
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	m := g.meta()
	m.VMType = "qemu"
	must(t, boxmeta.Write(s.Layout, m))
	g.setRunning(true)
	g.serveQMP()
	return g
}

func (g *suspendRig) meta() boxmeta.Meta {
	m, err := boxmeta.Read(g.s.Layout, g.box)
	if err != nil {
		g.t.Fatal(err)
	}
	return m
}

func (g *suspendRig) setRunning(on bool) {
	for _, f := range []string{"ha.pid", "qemu.pid"} {
		if on {
			_ = os.WriteFile(filepath.Join(g.dir, f), []byte(fmt.Sprint(os.Getpid())), 0o600)
		} else {
			_ = os.Remove(filepath.Join(g.dir, f))
		}
	}
}

func (g *suspendRig) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	switch args[0] {
	case "snapshot":
		g.f.mu.Lock()
		g.f.calls = append(g.f.calls, strings.Join(args, " "))
		g.f.mu.Unlock()
		g.mu.Lock()
		defer g.mu.Unlock()
		switch args[1] {
		case "list":
			return exec.Command("printf", "%s", strings.Join(g.tags, "\n")+"\n")
		case "delete":
			g.tags = slices.DeleteFunc(g.tags, func(t string) bool { return t == args[3] })
		}
		return exec.Command("true")
	case "start":
		g.setRunning(true)
	case "stop":
		g.setRunning(false)
	}
	return g.f.command(ctx, name, args...)
}

var suspendCmdRe = regexp.MustCompile(`^sudo -n /usr/local/lib/corral/suspend (prepare|resume)$`)

func (g *suspendRig) guestCommand(ctx context.Context, argv []string) *exec.Cmd {
	m := suspendCmdRe.FindStringSubmatch(argv[len(argv)-1])
	if m == nil || argv[0] != "ssh" || !slices.Contains(argv, "ControlPath=none") {
		g.t.Errorf("guest argv %q", argv)
		return exec.CommandContext(ctx, "false")
	}
	verb := m[1]
	g.mu.Lock()
	g.guest = append(g.guest, verb)
	code, msg := g.guestExit[verb], g.guestErr[verb]
	g.mu.Unlock()
	// The fake guest keeps its stdin in the instance directory.
	in := filepath.Join(g.dir, "stdin-"+verb)
	cmd := exec.CommandContext(ctx, "sh", "-c", `cat >"$0"; [ -z "$2" ] || echo "$2" >&2; exit "$1"`, in, fmt.Sprint(code), msg)
	return cmd
}

// serveQMP answers QMP on the instance's qmp.sock until the test ends
// (qmptest.Serve): it records each command, keeps the disk's snapshot
// tags for savevm and delvm, and quit ends the connection.
func (g *suspendRig) serveQMP() {
	qmptest.Serve(g.t, filepath.Join(g.dir, "qmp.sock"), `{"QMP": {"version": {}, "capabilities": []}}`, g.qmpAnswer)
}

func (g *suspendRig) qmpAnswer(execute string, args map[string]any) []string {
	name := execute
	if name == "human-monitor-command" {
		name, _ = args["command-line"].(string)
	}
	g.mu.Lock()
	g.qmp = append(g.qmp, name)
	out := ""
	if strings.HasPrefix(name, "savevm ") {
		out = g.saveOut
		if out == "" {
			g.tags = append(g.tags, strings.TrimPrefix(name, "savevm "))
		}
	}
	if strings.HasPrefix(name, "delvm ") {
		tag := strings.TrimPrefix(name, "delvm ")
		g.tags = slices.DeleteFunc(g.tags, func(t string) bool { return t == tag })
	}
	g.mu.Unlock()
	switch {
	case name == "quit":
		return []string{qmptest.Close}
	case execute == "human-monitor-command":
		b, _ := json.Marshal(map[string]string{"return": out})
		return []string{string(b)}
	}
	return []string{`{"return": {}}`}
}

// seen returns copies of what the fake guest and QMP server recorded: the
// server records from its own goroutine, so reads take g.mu too.
func (g *suspendRig) seen() (guest, qmp, tags []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.guest), slices.Clone(g.qmp), slices.Clone(g.tags)
}

func (g *suspendRig) calls() string {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	return strings.Join(g.f.calls, "\n")
}

func (g *suspendRig) resetCalls() {
	g.f.mu.Lock()
	g.f.calls = nil
	g.f.mu.Unlock()
	g.mu.Lock()
	g.qmp, g.guest = nil, nil
	g.mu.Unlock()
}

// A save unmounts the guest's shares, pauses and saves the VM, records
// it, and ends qemu with Lima's forced stop; the next launch of qemu
// resumes it (-loadvm), and Up brings the guest back (resume, with the
// host's time) and deletes the saved state.
func TestSaveThenUpResumes(t *testing.T) {
	g := newSuspendRig(t)
	ctx := context.Background()
	var progress strings.Builder
	g.s.Progress = &progress
	g.resetCalls()
	if err := g.s.Save(ctx, g.box, audit.KindSave); err != nil {
		t.Fatal(err)
	}
	guest, qmp, _ := g.seen()
	if want := []string{"prepare"}; !slices.Equal(guest, want) {
		t.Errorf("guest ran %v, want %v", guest, want)
	}
	if want := []string{"qmp_capabilities", "stop", "savevm corral-suspend", "qmp_capabilities", "quit"}; !slices.Equal(qmp, want) {
		t.Errorf("qmp %v, want %v", qmp, want)
	}
	if !strings.Contains(g.calls(), "stop --force "+g.box) {
		t.Errorf("no forced stop:\n%s", g.calls())
	}
	m := g.meta()
	if m.Saved == nil || m.Saved.Tag != SuspendTag || m.Saved.At.IsZero() {
		t.Fatalf("metadata %+v", m.Saved)
	}
	st := g.s.StatusOf(m)
	if st.State != boxstate.Stopped {
		t.Errorf("state %s", st.State)
	}
	// The qemu wrapper resumes it.
	p, err := qemuwrap.NewPlan(qemutest.LimaLaunch(t, g.s.Layout.LimaHome(), g.box), g.s.Layout, "/usr/bin/corral")
	if err != nil || p.Options.LoadVM != SuspendTag || p.DescribeResume() == "" {
		t.Errorf("plan %+v, %v", p.Options, err)
	}
	// A user's snapshot list does not show it, nor may a user take its name.
	if snaps, err := g.s.Snapshots(ctx, g.box); err != nil || len(snaps) != 0 {
		t.Errorf("snapshots %v, %v", snaps, err)
	}
	if err := CheckSnapshotName(SuspendTag); err == nil {
		t.Error("a user may name a snapshot " + SuspendTag)
	}

	g.resetCalls()
	before := time.Now().Unix()
	m, err = g.s.Up(ctx, g.r, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Saved != nil || g.meta().Saved != nil {
		t.Errorf("still saved after the resume")
	}
	guest, qmp, tags := g.seen()
	if !slices.Equal(guest, []string{"resume"}) {
		t.Errorf("guest ran %v", guest)
	}
	if !slices.Contains(qmp, "delvm corral-suspend") || len(tags) != 0 {
		t.Errorf("saved state not deleted: qmp %v, tags %v", qmp, tags)
	}
	if !strings.Contains(progress.String(), "resumed box") {
		t.Errorf("progress %q", progress.String())
	}
	b, _ := os.ReadFile(filepath.Join(g.dir, "stdin-resume"))
	var sec int64
	if _, err := fmt.Sscanf(string(b), "%d\n", &sec); err != nil || sec < before || sec > time.Now().Unix() {
		t.Errorf("resume got %q on stdin, want the host's time", b)
	}
	if p, err := qemuwrap.NewPlan(qemutest.LimaLaunch(t, g.s.Layout.LimaHome(), g.box), g.s.Layout, "/usr/bin/corral"); err != nil || p.Options.LoadVM != "" {
		t.Errorf("a resumed box's next launch still loads: %+v %v", p.Options, err)
	}
}

// Something using the box refuses the save before anything changes in it.
func TestSaveRefusedWhenBusy(t *testing.T) {
	g := newSuspendRig(t)
	ctx := context.Background()
	g.guestExit["prepare"] = 3
	g.guestErr["prepare"] = "corral-suspend: in use by: node(812)"
	err := g.s.Save(ctx, g.box, audit.KindSave)
	if !errors.Is(err, ErrBoxBusy) || !strings.Contains(err.Error(), "node(812)") || !strings.Contains(hint.Of(err), "corral stop "+g.box) {
		t.Fatalf("err = %v (hint %q)", err, hint.Of(err))
	}
	if _, qmp, _ := g.seen(); len(qmp) != 0 || g.meta().Saved != nil || strings.Contains(g.calls(), "stop") {
		t.Errorf("a refused save changed something: qmp %v, calls %s", qmp, g.calls())
	}

	// A live host session refuses it without asking the box.
	g.guest = nil
	must(t, g.s.addSession(g.box, Session{ID: "abc", PID: os.Getpid(), Agent: "claude", Started: time.Now()}))
	if err := g.s.Save(ctx, g.box, audit.KindSave); !errors.Is(err, ErrBoxBusy) || len(g.guest) != 0 {
		t.Errorf("with a session: %v, guest %v", err, g.guest)
	}
}

// A box whose guest lacks the helper says how to get it; a savevm qemu
// refuses leaves the VM running with its shares back.
func TestSaveFailures(t *testing.T) {
	g := newSuspendRig(t)
	ctx := context.Background()
	g.guestExit["prepare"] = 1
	g.guestErr["prepare"] = "sudo: a password is required"
	err := g.s.Save(ctx, g.box, audit.KindSave)
	if !errors.Is(err, errGuestRefused) || !strings.Contains(hint.Of(err), "corral rebuild "+g.box) {
		t.Errorf("no helper: %v (hint %q)", err, hint.Of(err))
	}

	g.guestExit["prepare"], g.guestErr["prepare"] = 0, ""
	g.saveOut = "Error: Migration is disabled when VirtFS export path '/p' is mounted in the guest using mount_tag 'm0'\r\n"
	g.resetCalls()
	err = g.s.Save(ctx, g.box, audit.KindSave)
	if err == nil || !strings.Contains(err.Error(), "Migration is disabled") {
		t.Fatalf("savevm error: %v", err)
	}
	if guest, qmp, _ := g.seen(); !slices.Equal(guest, []string{"prepare", "resume"}) || !slices.Contains(qmp, "cont") {
		t.Errorf("after a failed savevm: guest %v, qmp %v", guest, qmp)
	}
	if g.meta().Saved != nil || strings.Contains(g.calls(), "stop") {
		t.Errorf("a failed save stopped or marked the box: %s", g.calls())
	}
}

func TestSaveUnsupportedOnVZ(t *testing.T) {
	g := newSuspendRig(t)
	m := g.meta()
	m.VMType = "vz"
	must(t, boxmeta.Write(g.s.Layout, m))
	err := g.s.Save(context.Background(), g.box, audit.KindSave)
	if !errors.Is(err, ErrSaveUnsupported) || !strings.Contains(hint.Of(err), "vm_type = \"qemu\"") {
		t.Errorf("vz: %v (hint %q)", err, hint.Of(err))
	}
}

// saved marks the rig's box saved and stopped, with the state in its disk
// when inDisk.
func (g *suspendRig) saved(inDisk bool) {
	m := g.meta()
	m.Saved = &boxmeta.Saved{Tag: SuspendTag, At: time.Now()}
	must(g.t, boxmeta.Write(g.s.Layout, m))
	g.setRunning(false)
	g.f.insts[g.box] = "Stopped"
	if inDisk {
		g.tags = []string{SuspendTag}
	}
}

// A resume that cannot happen boots the box instead, after deleting the
// saved state, and says so.
func TestResumeFallback(t *testing.T) {
	t.Run("nostate", func(t *testing.T) {
		g := newSuspendRig(t)
		g.saved(false)
		var progress strings.Builder
		g.s.Progress = &progress
		g.resetCalls()
		if _, err := g.s.Up(context.Background(), g.r, UpOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(g.guest) != 0 || g.meta().Saved != nil || !strings.Contains(g.calls(), "start") {
			t.Errorf("guest %v, saved %v, calls %s", g.guest, g.meta().Saved, g.calls())
		}
		if !strings.Contains(progress.String(), "booting it instead") {
			t.Errorf("no warning: %q", progress.String())
		}
	})
	t.Run("refused", func(t *testing.T) {
		g := newSuspendRig(t)
		g.saved(true)
		g.guestExit["resume"] = 1
		g.guestErr["resume"] = "sudo: a password is required"
		g.resetCalls()
		if _, err := g.s.Up(context.Background(), g.r, UpOptions{}); err != nil {
			t.Fatal(err)
		}
		calls := g.calls()
		// start (resume), forced stop, state deleted while stopped, start (boot)
		order := []string{"start", "stop --force", "snapshot delete --tag " + SuspendTag, "start"}
		at := 0
		for _, line := range strings.Split(calls, "\n") {
			if at < len(order) && strings.HasPrefix(line, order[at]) {
				at++
			}
		}
		if at != len(order) {
			t.Errorf("calls, want %v in order:\n%s", order, calls)
		}
		if _, _, tags := g.seen(); g.meta().Saved != nil || len(tags) != 0 {
			t.Errorf("saved state kept: %v %v", g.meta().Saved, tags)
		}
	})
	t.Run("stop", func(t *testing.T) {
		g := newSuspendRig(t)
		g.saved(true)
		if err := g.s.Stop(context.Background(), g.box, ""); err != nil {
			t.Fatal(err)
		}
		if _, _, tags := g.seen(); g.meta().Saved != nil || len(tags) != 0 {
			t.Errorf("stop kept the saved state")
		}
	})
	t.Run("restore", func(t *testing.T) {
		g := newSuspendRig(t)
		g.saved(true)
		g.tags = append(g.tags, "before")
		err := g.s.RestoreSnapshot(context.Background(), g.box, "before", nil)
		if err == nil || !strings.Contains(hint.Of(err), "corral stop") {
			t.Errorf("restore of a saved box: %v", err)
		}
	})
}

// idle_action = "save": an idle box is saved; one that cannot be saved is
// stopped.
func TestSweepSaves(t *testing.T) {
	for _, busyGuest := range []bool{false, true} {
		g := newSuspendRig(t)
		m := g.meta()
		m.IdleAction, m.IdleStop, m.LastActivity = config.IdleActionSave, "1m", time.Now().Add(-time.Hour)
		must(t, boxmeta.Write(g.s.Layout, m))
		if busyGuest {
			g.guestExit["prepare"] = 3
		}
		stopped, err := g.s.Sweep(context.Background())
		if err != nil || !slices.Equal(stopped, []string{g.box}) {
			t.Fatalf("busy %v: Sweep = %v, %v", busyGuest, stopped, err)
		}
		if saved := g.meta().Saved != nil; saved == busyGuest {
			t.Errorf("busy %v: saved = %v", busyGuest, saved)
		}
	}
}
