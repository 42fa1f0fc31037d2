package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProjectPathsQuoted: provision/50-project.sh writes the env file that
// apply-project.sh sources as root. A project path with spaces, quotes and
// a command substitution, and two hide entries, come back as the same
// strings; nothing in them runs; apply-project covers each hide entry
// (a stub mount records the calls) and skips one that climbs out.
func TestProjectPathsQuoted(t *testing.T) {
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{etc, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(dir, "ran")
	project := filepath.Join(dir, "A B 'q' $(touch "+marker+")")
	for _, p := range []string{"secret", ".env"} {
		if err := os.MkdirAll(filepath.Join(project, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile(filepath.Join("provision", "50-project.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", string(script))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CORRAL_ETC=" + etc, "PARAM_PROJECT=" + project,
		"PARAM_HIDE=secret .env ../up", "PARAM_BOX_DIRS="}
	_ = cmd.Run() // the unit helper at its end is not here; the env file is written first
	out, err := exec.Command("sh", "-c", `. "$1/project.env"; printf '%s|%s|%s' "$PROJECT" "$HIDE" "$BOX_DIRS"`, "sh", etc).CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing project.env: %v\n%s", err, out)
	}
	if want := project + "|secret .env ../up|"; string(out) != want {
		t.Errorf("project.env gives %q, want %q", out, want)
	}

	// apply-project with stubs: mountpoint says no, mount logs its argv.
	log := filepath.Join(dir, "mount.log")
	for name, body := range map[string]string{
		"mountpoint": "exit 1",
		"mount":      `printf '%s\n' "$*" >> "` + log + `"`,
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	apply := exec.Command("sh", "-c", ApplyProject())
	apply.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "CORRAL_ETC=" + etc}
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply-project: %v\n%s", err, b)
	}
	got, _ := os.ReadFile(log)
	for _, p := range []string{"secret", ".env"} {
		if !strings.Contains(string(got), "corral-hide "+filepath.Join(project, p)+"\n") {
			t.Errorf("no cover mounted over %s:\n%s", p, got)
		}
	}
	if strings.Contains(string(got), "up") {
		t.Errorf("an entry climbing out of the project was mounted:\n%s", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command substitution in the project path ran")
	}
}
