package box

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/toolreg"
	"github.com/corral-dev/corral/guest"
)

// A golden build asks the running golden's toolchains (the guest script on
// ssh's stdin) before it stops it, and records the answer.
func TestEnsureGoldenRecordsToolchains(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	var argv []string
	got := t.TempDir() + "/stdin"
	s.GuestCommand = func(ctx context.Context, a []string) *exec.Cmd {
		argv = a
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "ssh")
		return exec.CommandContext(ctx, "sh", "-c", `cat >"$0"; printf '%s\n' '# corral toolchain registries 1' '@npm registry' '| https://npm.mirror.example/' '@go GOPROXY' '| https://10.0.0.1/,https://goproxy.mirror.example'`, got)
	}
	name, err := s.EnsureGolden(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv[len(argv)-2:], " "); got != "-- sh -s" || argv[0] != "ssh" {
		t.Errorf("ssh argv %v", argv)
	}
	if b, _ := os.ReadFile(got); string(b) != guest.ToolchainRegistries() {
		t.Errorf("the guest got %q on stdin, not the script", b)
	}
	calls := strings.Join(f.calls, "\n")
	if i, j := strings.Index(calls, "ssh"), strings.LastIndex(calls, "stop"); i < 0 || j < i {
		t.Errorf("the toolchains were not asked while the golden ran:\n%s", calls)
	}
	rec, err := toolreg.Read(s.Layout, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"npm.mirror.example", "goproxy.mirror.example"}; !reflect.DeepEqual(rec.Entries(), want) || len(rec.Notes) != 1 {
		t.Errorf("record %+v", rec)
	}

	// A failing guest is a note, never a failed build.
	f2 := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s2, r2 := newTestService(t, f2)
	s2.GuestCommand = func(ctx context.Context, a []string) *exec.Cmd {
		return exec.CommandContext(ctx, "sh", "-c", "echo 'connection refused' >&2; exit 255")
	}
	name, err = s2.EnsureGolden(context.Background(), r2)
	if err != nil {
		t.Fatal(err)
	}
	rec, err = toolreg.Read(s2.Layout, name)
	if err != nil || len(rec.Registries) != 0 || len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "connection refused") {
		t.Errorf("record %+v, %v", rec, err)
	}
}
