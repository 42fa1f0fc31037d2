package box

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/toolreg"
	"github.com/corral-dev/corral/guest"
)

// okRecord, at the start of a fake guest's sh -c, answers the record
// script (guest.ProvisionRecord, recognised by its first lines on stdin)
// with every step's success and exits; any other script goes on.
var okRecord = `stdin=$(mktemp); cat >"$stdin"; if grep -q 'guest.s record of this boot' "$stdin"; then ` +
	`for s in ` + strings.Join(golden.ProvisionSteps(), " ") + `; do echo "$s 0"; done; exit 0; fi; exec <"$stdin"; `

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
		return exec.CommandContext(ctx, "sh", "-c", okRecord+`cat >"$0"; printf '%s\n' '# corral toolchain registries 1' '@npm registry' '| https://npm.mirror.example/' '@go GOPROXY' '| https://10.0.0.1/,https://goproxy.mirror.example'`, got)
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
		return exec.CommandContext(ctx, "sh", "-c", okRecord+"echo 'connection refused' >&2; exit 255")
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

// TestGoldenFailedStep: Lima reports the golden ready, but
// the guest's record says a step failed: the image is deleted, never
// stopped and kept, and the error names the step, the hint the boot log
// corral kept.
func TestGoldenFailedStep(t *testing.T) {
	for _, c := range []struct{ name, record, want string }{
		{"failed", "00-base.sh 0\n05-require.sh 0\n10-packages.sh 100\n", "provision step guest/provision/10-packages.sh failed (exit status 100)"},
		{"no record", "00-base.sh 0\n", "provision step guest/provision/05-require.sh left no record (it did not run to its end)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
			s, r := newTestService(t, f)
			s.GuestCommand = func(ctx context.Context, a []string) *exec.Cmd {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.calls = append(f.calls, "ssh")
				return exec.CommandContext(ctx, "sh", "-c", `cat >/dev/null; printf "$0"`, c.record)
			}
			_, err := s.EnsureGolden(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not kept") {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if h := hint.Of(err); !strings.Contains(h, "boot log") || !strings.Contains(h, "run the command again") {
				t.Errorf("hint %q", h)
			}
			calls := strings.Join(f.calls, "\n")
			if !strings.Contains(calls, "delete") || strings.Contains(calls, "stop") {
				t.Errorf("the failed golden was kept:\n%s", calls)
			}
		})
	}
}
