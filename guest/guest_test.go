package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// credential runs corral-git-credential with sh, the given arguments,
// environment and stdin, in an empty working directory and HOME.
func credential(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", append([]string{"-c", GitCredential(), "corral-git-credential"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("corral-git-credential %v: %v\n%s", args, err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("helper wrote files: %v", ents)
	}
	return string(out)
}

func TestGitCredentialHelper(t *testing.T) {
	env := []string{
		"CORRAL_GIT_TOKEN_GITHUB_COM=ghp-abc",
		"CORRAL_GIT_TOKEN_GIT_EXAMPLE_TEST_8443=tok with spaces",
	}
	const answer = "username=x-access-token\npassword=ghp-abc\n"
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"get", "protocol=https\nhost=github.com\n\n", []string{"get"}, answer},
		{"get with other attributes, no blank line", "capability[]=authtype\nprotocol=https\nhost=github.com\npath=o/r.git", []string{"get"}, answer},
		{"host with port", "protocol=https\nhost=git.example.test:8443\n\n", []string{"get"},
			"username=x-access-token\npassword=tok with spaces\n"},
		{"unknown host", "protocol=https\nhost=other.example.test\n\n", []string{"get"}, ""},
		{"plain http is never answered", "protocol=http\nhost=github.com\n\n", []string{"get"}, ""},
		{"no host", "protocol=https\n\n", []string{"get"}, ""},
		{"store does nothing", "protocol=https\nhost=github.com\nusername=u\npassword=p\n\n", []string{"store"}, ""},
		{"erase does nothing", "protocol=https\nhost=github.com\n\n", []string{"erase"}, ""},
		{"no operation", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := credential(t, env, tt.stdin, tt.args...); got != tt.want {
				t.Errorf("output %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProvisionOrder(t *testing.T) {
	var names []string
	for _, s := range Provision() {
		names = append(names, s.Name)
	}
	joined := strings.Join(names, " ")
	if !strings.Contains(joined, "35-git.sh 40-network.sh") {
		t.Errorf("35-git.sh must run right before 40-network.sh: %s", joined)
	}
	for _, s := range Provision() {
		if strings.Contains(s.Content, ">/etc/gitconfig") {
			t.Errorf("%s overwrites /etc/gitconfig; use git config --system", s.Name)
		}
	}
}

// TestGitProvisionIdempotent runs 35-git.sh twice (as at every boot) against
// a scratch system config, then sets the proxy the way 40-network.sh does.
func TestGitProvisionIdempotent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	var script string
	for _, s := range Provision() {
		if s.Name == "35-git.sh" {
			script = s.Content
		}
	}
	sys := t.TempDir() + "/gitconfig"
	env := append(os.Environ(), "GIT_CONFIG_SYSTEM="+sys)
	for range 2 {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("35-git.sh: %v %s", err, out)
		}
	}
	cmd := exec.Command("git", "config", "--system", "http.proxy", "http://127.0.0.1:3128")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	cmd = exec.Command("git", "config", "--system", "--get-all", "credential.helper")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil || string(out) != GitCredentialPath+"\n" {
		t.Errorf("credential.helper = %q, %v", out, err)
	}
}

// TestUnitHelper runs corral-unit with a fake systemctl: the whole unit
// file it writes is compared, and the unit is reloaded, enabled and
// (re)started in that order.
func TestUnitHelper(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$*\" >>" + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", Unit(), "corral-unit", "corral-project", "corral project paths (hide, box_dirs)",
		"local-fs.target remote-fs.target", ApplyProjectPath)
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "CORRAL_UNIT_DIR=" + dir}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("corral-unit: %v %s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "corral-project.service"))
	want := `[Unit]
Description=corral project paths (hide, box_dirs)
After=local-fs.target remote-fs.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/lib/corral/apply-project
# The status corral-launch reads with one stat instead of asking systemctl
# on every session; /run is empty at boot, and stopping the unit (or a
# failed start) removes it.
ExecStartPost=/bin/sh -c 'mkdir -p /run/corral/ready && : >/run/corral/ready/%n'
ExecStopPost=/bin/rm -f /run/corral/ready/%n
[Install]
WantedBy=multi-user.target
`
	if string(got) != want {
		t.Errorf("unit file:\n%s\nwant:\n%s", got, want)
	}
	if b, _ := os.ReadFile(calls); string(b) != "daemon-reload\nenable corral-project.service\nrestart corral-project.service\n" {
		t.Errorf("systemctl calls:\n%s", b)
	}
	cmd = exec.Command("sh", "-c", Unit(), "corral-unit", "only-a-name")
	if err := cmd.Run(); err == nil {
		t.Error("corral-unit with one argument succeeded")
	}
}

// TestUnitsComeFromTheHelper: every unit corral-launch requires is written
// by a provision script through corral-unit, and no provision script
// writes a unit file or an executable by itself (they are real files:
// guest/*.sh, installed by Lima's data provisioning).
func TestUnitsComeFromTheHelper(t *testing.T) {
	all := ""
	for _, s := range Provision() {
		all += s.Content
		for _, bad := range []string{"/etc/systemd/system/", "install -m 0755 /dev/stdin"} {
			if strings.Contains(s.Content, bad) {
				t.Errorf("%s writes %q itself", s.Name, bad)
			}
		}
	}
	for _, u := range Units {
		if !strings.Contains(all, UnitPath+" "+strings.TrimSuffix(u, ".service")+" ") {
			t.Errorf("no provision script runs %s %s", UnitPath, u)
		}
		// The launcher stats each unit's status file (see TestUnitHelper).
		if !strings.Contains(Launch(), strings.TrimSuffix(u, ".service")) {
			t.Errorf("corral-launch does not check %s", u)
		}
	}
}
