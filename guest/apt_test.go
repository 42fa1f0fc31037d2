package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runApt runs the provision script name with stubs: apt-get logs its argv
// and fails its first failUpdates `update` runs (as while a first-boot
// apt run holds the lists lock); dpkg-query reports nothing installed;
// the programs 05-require.sh checks for are absent but for those in have.
// etc is the image's /etc/apt (CORRAL_APT_ETC).
func runApt(t *testing.T, name string, failUpdates int, have []string, etc string, env ...string) (log, stderr string, err error) {
	t.Helper()
	var script string
	for _, s := range Provision() {
		if s.Name == name {
			script = s.Content
		}
	}
	if script == "" {
		t.Fatalf("no provision/%s", name)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	logf, count := filepath.Join(dir, "apt.log"), filepath.Join(dir, "updates")
	stubs := map[string]string{
		"apt-get": `printf '%s\n' "$*" >>` + logf + `
case " $* " in *" update "*)
	n=$(cat ` + count + ` 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" >` + count + `
	[ "$n" -gt ` + strconv.Itoa(failUpdates) + ` ] || { echo "E: Could not get lock /var/lib/apt/lists/lock" >&2; exit 100; } ;;
esac
exit 0`,
		"dpkg-query": `exit 1`,
	}
	for _, p := range have {
		stubs[p] = "exit 0"
	}
	for p, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"grep", "printf", "true", "cat"} {
		if real, err := exec.LookPath(p); err == nil {
			_ = os.Symlink(real, filepath.Join(bin, p))
		}
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=" + bin, "CORRAL_APT_ETC=" + etc, "CORRAL_APT_RETRY_SLEEP=0"}, env...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	b, _ := os.ReadFile(logf)
	return string(b), errb.String(), err
}

// apt at a first boot: update is tried again (3 times at most) while a
// first-boot apt run holds its lock, then the install runs; the dpkg lock
// wait is set for every later apt run; three failures refuse the boot.
func TestProvisionAptWaitsAndRetries(t *testing.T) {
	present := []string{"git", "curl", "sudo", "visudo", "findmnt", "mountpoint", "runuser"}
	etc := t.TempDir()
	if err := os.Mkdir(filepath.Join(etc, "apt.conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	log, stderr, err := runApt(t, "05-require.sh", 2, present, etc, "PARAM_NETWORK=full")
	if err != nil || strings.Count(log, "-q update\n") != 3 || !strings.Contains(log, "install -y --no-install-recommends -- nftables tmux") {
		t.Errorf("05-require.sh, two failed updates: %v\napt: %q\nstderr: %q", err, log, stderr)
	}
	conf, err := os.ReadFile(filepath.Join(etc, "apt.conf.d", "90corral-lock-wait"))
	if err != nil || !strings.Contains(string(conf), `DPkg::Lock::Timeout "300";`) {
		t.Errorf("lock wait: %q, %v", conf, err)
	}
	log, stderr, err = runApt(t, "05-require.sh", 3, present, etc, "PARAM_NETWORK=full")
	if err == nil || strings.Count(log, "-q update\n") != 3 || strings.Contains(log, "install") || !strings.Contains(stderr, "apt-get update failed 3 times") {
		t.Errorf("05-require.sh, three failed updates: %v\napt: %q\nstderr: %q", err, log, stderr)
	}

	log, stderr, err = runApt(t, "10-packages.sh", 1, nil, etc, "PARAM_PACKAGES=ripgrep jq")
	if err != nil || log != "update -q\nupdate -q\ninstall -y --no-install-recommends -- ripgrep jq\n" {
		t.Errorf("10-packages.sh, one failed update: %v\napt: %q\nstderr: %q", err, log, stderr)
	}
	log, stderr, err = runApt(t, "10-packages.sh", 3, nil, etc, "PARAM_PACKAGES=ripgrep")
	if err == nil || strings.Count(log, "update -q\n") != 3 || strings.Contains(log, "install") || !strings.Contains(stderr, "apt-get update failed 3 times") {
		t.Errorf("10-packages.sh, three failed updates: %v\napt: %q\nstderr: %q", err, log, stderr)
	}
}
