package guest

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
// (re)started in that order; at the next boot only what changed is done.
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
	// The next boot: the same unit, already enabled. No reload, no enable
	// (each costs seconds under TCG), but the restart still runs (the
	// inputs of EXEC may have changed since the boot ran it).
	wants := filepath.Join(dir, "multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../corral-project.service", filepath.Join(wants, "corral-project.service")); err != nil {
		t.Fatal(err)
	}
	os.Remove(calls)
	again := func(description string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", Unit(), "corral-unit", "corral-project", description,
			"local-fs.target remote-fs.target", ApplyProjectPath)
		cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "CORRAL_UNIT_DIR=" + dir}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("corral-unit again: %v %s", err, out)
		}
		b, _ := os.ReadFile(calls)
		os.Remove(calls)
		return string(b)
	}
	if got := again("corral project paths (hide, box_dirs)"); got != "restart corral-project.service\n" {
		t.Errorf("systemctl calls for an unchanged, enabled unit:\n%s", got)
	}
	// A changed unit file is written and reloaded; no temporary file stays.
	if got := again("another description"); got != "daemon-reload\nrestart corral-project.service\n" {
		t.Errorf("systemctl calls for a changed unit:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "corral-project.service")); !strings.Contains(string(b), "Description=another description\n") {
		t.Errorf("changed unit file not written:\n%s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".corral-project.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
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

// launcher writes corral-launch to a file and returns a function running
// it with a private tmux socket directory and the unit status present.
func launcher(t *testing.T) (run func(env []string, args ...string) (string, string, error), tmux func(args ...string) string, dir string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir = t.TempDir()
	self := dir + "/corral-launch"
	if err := os.WriteFile(self, []byte(Launch()), 0o755); err != nil {
		t.Fatal(err)
	}
	ready := dir + "/ready"
	_ = os.MkdirAll(ready, 0o755)
	for _, u := range Units {
		_ = os.WriteFile(ready+"/"+u, nil, 0o644)
	}
	sock := dir + "/tmux"
	_ = os.MkdirAll(sock, 0o700)
	home := dir + "/home"
	_ = os.MkdirAll(home, 0o700)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMUX_TMPDIR=" + sock, "TMPDIR=" + dir, "CORRAL_LAUNCH_READY=" + ready, "TERM=xterm"}
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-L", "corral", "kill-server")
		cmd.Env = base
		_ = cmd.Run()
	})
	run = func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(self, args...)
		cmd.Env = append(append([]string{}, base...), env...)
		cmd.Dir = home
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	tmux = func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", "corral"}, args...)...)
		cmd.Env = base
		b, _ := cmd.CombinedOutput()
		return string(b)
	}
	return run, tmux, dir
}

func TestLaunchForeground(t *testing.T) {
	run, _, _ := launcher(t)
	out, errOut, err := run([]string{"CORRAL_FWD_GREETING=hi there"}, "/", "sh", "-c", `printf '[%s][%s][%s]' "$GREETING" "$1" "$CORRAL_FWD_GREETING"`, "x", "two words")
	if err != nil || out != "[hi there][two words][]" {
		t.Errorf("out %q err %v stderr %q", out, err, errOut)
	}
}

// A detached session gets its variables from the private pipe: they are
// in no argv, in no file, and not in tmux's environment tables or in the
// tmux server's own environment.
func TestLaunchDetachedSessionKeepsSecretsOutOfTmux(t *testing.T) {
	run, tmux, dir := launcher(t)
	secret := fmt.Sprintf("unit-secret-%d", time.Now().UnixNano())
	out, errOut, err := run([]string{"CORRAL_FWD_E2E_SECRET=" + secret, "CORRAL_FWD_ODD=line1\nline2 = x"}, "--tmux", "new", "job-1", "shell", "/",
		"sh", "-c", `echo "v=$E2E_SECRET"; printf '%s' "$ODD" | wc -l; echo "term=$TERM"; sleep 30`)
	if err != nil || out != "job-1\n" {
		t.Fatalf("new: out %q err %v stderr %q", out, err, errOut)
	}
	var screen string
	for i := 0; i < 50; i++ {
		screen = tmux("capture-pane", "-p", "-t", "=job-1:")
		if strings.Contains(screen, "term=") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(screen, "v="+secret) || !strings.Contains(screen, "\n1\n") || strings.Contains(screen, "term=xterm") {
		t.Errorf("the session's screen:\n%s", screen)
	}
	for _, args := range [][]string{{"show-environment", "-g"}, {"show-environment", "-t", "=job-1"}, {"show-options", "-g"}, {"list-panes", "-a", "-F", "#{pane_start_command}"}} {
		if got := tmux(args...); strings.Contains(got, secret) {
			t.Errorf("tmux %v shows the value:\n%s", args, got)
		}
	}
	pid := strings.TrimSpace(tmux("display-message", "-p", "#{pid}"))
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile("/proc/" + pid + "/" + f)
		if err != nil {
			t.Fatalf("tmux server %s: %v", f, err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("the tmux server's %s holds the value", f)
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("pid %s has the value in its argv: %q", e.Name(), b)
		}
	}
	// The home, the tmux socket directory and TMPDIR (where the FIFO was).
	if b, _ := exec.Command("grep", "-rl", "--devices=skip", secret, dir).CombinedOutput(); len(b) > 0 {
		t.Errorf("files hold the value: %s", b)
	}
	if ents, _ := filepath.Glob(dir + "/corral-pane.*"); len(ents) > 0 {
		t.Errorf("the FIFO directory is left: %v", ents)
	}
	list, _, err := run(nil, "--list")
	if err != nil || !regexp.MustCompile(`^job-1 shell \d+ 0 \d+\n$`).MatchString(list) {
		t.Errorf("list = %q, %v", list, err)
	}
	// A second "new" with the same name fails; an invalid name is refused.
	if _, _, err := run(nil, "--tmux", "new", "job-1", "shell", "/", "true"); err == nil {
		t.Errorf("a second session job-1 was created")
	}
	if _, _, err := run(nil, "--tmux", "new", "../x", "shell", "/", "true"); err == nil {
		t.Errorf("an invalid name was accepted")
	}
	// The session ends with its command.
	tmux("send-keys", "-t", "=job-1:", "C-c")
	for i := 0; i < 50 && strings.Contains(tmux("list-sessions"), "job-1"); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if list, _, _ := run(nil, "--list"); list != "" {
		t.Errorf("list after the end = %q", list)
	}
}

// A unit without its status file (stopped, or failed to start) refuses the
// session with 125 when systemd does not say it is active either.
func TestLaunchRefusesWithoutUnitStatus(t *testing.T) {
	run, _, dir := launcher(t)
	bin := t.TempDir()
	// systemctl says inactive for everything.
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "ready", Units[1])); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := run([]string{"PATH=" + bin + ":" + os.Getenv("PATH")}, "/", "true")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(errOut, strings.TrimSuffix(Units[1], ".service")+" is not active") {
		t.Errorf("err %v stderr %q", err, errOut)
	}
	_, _, err = run([]string{"PATH=" + bin + ":" + os.Getenv("PATH")}, "--tmux", "new", "x", "shell", "/", "true")
	if !errors.As(err, &ee) || ee.ExitCode() != 125 {
		t.Errorf("detachable session not refused: %v", err)
	}
}

// TestAgentInstallStep runs provision/30-agent.sh under a temporary root:
// the install step gets the pinned tarballs in order, only after each
// matched its hash; it runs once (the marker names the step's hash); a
// tarball that does not match, or a file name that is a path, refuses the
// install and the step never runs.
func TestAgentInstallStep(t *testing.T) {
	var script string
	for _, s := range Provision() {
		if s.Name == "30-agent.sh" {
			script = s.Content
		}
	}
	root := t.TempDir()
	npm := filepath.Join(root, "corral", "npm")
	if err := os.MkdirAll(npm, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(s string) string { h := sha512.Sum512([]byte(s)); return hex.EncodeToString(h[:]) }
	write(filepath.Join(npm, "a-1.0.0.tgz"), "tarball a", 0o644)
	write(filepath.Join(npm, "b-2.0.0.tgz"), "tarball b", 0o644)
	ran := filepath.Join(root, "ran")
	step := filepath.Join(root, "usr", "local", "lib", "corral", "agent-install")
	write(step, "#!/bin/sh\nprintf '%s\\n' \"$@\" >> "+ran+"\n", 0o755)
	good := "a-1.0.0.tgz:" + sum("tarball a") + " b-2.0.0.tgz:" + sum("tarball b")
	runScript := func(npmParam string) (string, error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "CORRAL_TEST_ROOT="+root, "PARAM_AGENT=codex", "PARAM_AGENT_NPM="+npmParam)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, bad := range []string{
		"a-1.0.0.tgz:" + sum("another tarball"),
		"../b-2.0.0.tgz:" + sum("tarball b"),
		".hidden.tgz:" + sum("x"),
		"missing.tgz:" + sum("x"),
	} {
		if out, err := runScript(bad); err == nil {
			t.Errorf("PARAM_AGENT_NPM=%q installed: %s", bad, out)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("the step ran for %q", bad)
		}
	}
	for range 2 {
		if out, err := runScript(good); err != nil {
			t.Fatalf("30-agent.sh: %v\n%s", err, out)
		}
	}
	b, _ := os.ReadFile(ran)
	want := filepath.Join(npm, "a-1.0.0.tgz") + "\n" + filepath.Join(npm, "b-2.0.0.tgz") + "\n"
	if string(b) != want {
		t.Errorf("the step got %q, want %q (once, in pin order)", b, want)
	}
	if st, err := os.Stat(filepath.Join(root, "corral", "agents", "codex")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", st, err)
	}
	// A changed step runs again.
	write(step, "#!/bin/sh\necho changed >> "+ran+"\n", 0o755)
	if out, err := runScript(good); err != nil {
		t.Fatalf("30-agent.sh: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(ran); !strings.HasSuffix(string(b), "changed\n") {
		t.Errorf("a changed step did not run: %q", b)
	}
	if out, err := runScriptAgent(script, root, "../etc"); err == nil {
		t.Errorf("PARAM_AGENT=../etc accepted: %s", out)
	}
}

func runScriptAgent(script, root, agent string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "CORRAL_TEST_ROOT="+root, "PARAM_AGENT="+agent)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// corral-suspend takes only its verbs, and resume only a time in seconds
// on stdin (it runs as root through a fixed sudo rule).
func TestSuspendRefusesOtherInput(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
	}{
		{nil, ""},
		{[]string{"all"}, ""},
		{[]string{"resume"}, "now\n"},
		{[]string{"resume"}, "1700000000; reboot\n"},
		{[]string{"resume"}, ""},
	} {
		cmd := exec.Command("sh", append([]string{"-c", Suspend(), "corral-suspend"}, tc.args...)...)
		cmd.Stdin = strings.NewReader(tc.stdin)
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("corral-suspend %v <%q: %v, want exit 2", tc.args, tc.stdin, err)
		}
	}
}

// runRequire runs provision/05-require.sh with PATH holding only stubs of
// the given programs and an apt-get that logs its argv (and fails when
// aptFails), and returns the apt-get log, stderr and the error.
func runRequire(t *testing.T, have []string, network string, aptFails bool, aptEtc ...string) (string, string, error) {
	t.Helper()
	var script string
	for _, s := range Provision() {
		if s.Name == "05-require.sh" {
			script = s.Content
		}
	}
	if script == "" {
		t.Fatal("no provision/05-require.sh")
	}
	bin := t.TempDir()
	aptLog := filepath.Join(t.TempDir(), "apt.log")
	for _, p := range have {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rc := "0"
	if aptFails {
		rc = "100"
	}
	apt := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + aptLog + "\nexit " + rc + "\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(apt), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	etc := t.TempDir() // no apt sources unless the caller gives an /etc/apt
	if len(aptEtc) > 0 {
		etc = aptEtc[0]
	}
	for _, p := range []string{"grep", "printf", "true"} {
		if real, err := exec.LookPath(p); err == nil {
			_ = os.Symlink(real, filepath.Join(bin, p))
		}
	}
	cmd.Env = []string{"PATH=" + bin, "PARAM_NETWORK=" + network, "PARAM_PROXY_HOST=192.168.5.4", "PARAM_PROXY_PORT=4242", "CORRAL_APT_ETC=" + etc, "CORRAL_APT_RETRY_SLEEP=0"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	b, _ := os.ReadFile(aptLog)
	return string(b), stderr.String(), err
}

// The provision installs what corral's guest scripts run when the image
// lacks it, through the broker in broker mode, and refuses the boot naming
// the packages when it cannot.
func TestProvisionRequires(t *testing.T) {
	all := []string{"nft", "tmux", "git", "curl", "sudo", "visudo", "findmnt", "mountpoint", "runuser"}
	_, caErr := os.Stat("/etc/ssl/certs/ca-certificates.crt")
	ca := ""
	if caErr != nil {
		ca = " ca-certificates"
	}
	apt, _, err := runRequire(t, all, "broker", false)
	if err != nil || (ca == "" && apt != "") {
		t.Errorf("everything present: apt %q, err %v", apt, err)
	}
	noNftTmux := []string{"git", "curl", "sudo", "visudo", "findmnt", "mountpoint", "runuser"}
	apt, _, err = runRequire(t, noNftTmux, "full", false)
	want := "-q update\n-q install -y --no-install-recommends -- nftables tmux" + ca + "\n"
	if err != nil || apt != want {
		t.Errorf("full: apt %q, want %q (err %v)", apt, want, err)
	}
	apt, _, err = runRequire(t, noNftTmux, "broker", false)
	proxy := "-o Acquire::http::Proxy=http://192.168.5.4:4242 -o Acquire::https::Proxy=http://192.168.5.4:4242 "
	want = proxy + "-q update\n" + proxy + "-q install -y --no-install-recommends -- nftables tmux" + ca + "\n"
	if err != nil || apt != want {
		t.Errorf("broker: apt %q, want %q (err %v)", apt, want, err)
	}
	// visudo alone missing still means the sudo package.
	apt, _, _ = runRequire(t, []string{"nft", "tmux", "git", "curl", "sudo", "findmnt", "mountpoint", "runuser"}, "full", false)
	if !strings.Contains(apt, "-- sudo") {
		t.Errorf("no visudo: apt %q", apt)
	}
	for _, tc := range []struct {
		network  string
		aptFails bool
		reason   string
	}{{"offline", false, "an offline box cannot install them"}, {"full", true, "apt-get update failed"}} {
		apt, stderr, err := runRequire(t, noNftTmux, tc.network, tc.aptFails)
		if err == nil || !strings.Contains(stderr, "this image lacks nftables tmux") || !strings.Contains(stderr, tc.reason) {
			t.Errorf("%s: err %v, stderr %q", tc.network, err, stderr)
		}
		if tc.network == "offline" && apt != "" {
			t.Errorf("offline box ran apt-get: %q", apt)
		}
	}
	// A package source inside the image (file: URIs only, as the offline
	// test image has): an offline box installs from it, and no mode sends
	// apt through the broker for it.
	etc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(etc, "sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "sources.list.d", "corral-local.list"), []byte("deb [trusted=yes] file:/var/lib/corral/local-debs ./\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"offline", "broker"} {
		apt, stderr, err := runRequire(t, noNftTmux, network, false, etc)
		want := "-q update\n-q install -y --no-install-recommends -- nftables tmux" + ca + "\n"
		if err != nil || apt != want {
			t.Errorf("%s with a local source: apt %q, want %q (err %v, stderr %q)", network, apt, want, err, stderr)
		}
	}
	// One network source among them: offline refuses again.
	if err := os.WriteFile(filepath.Join(etc, "sources.list"), []byte("deb http://mirror.example.test/debian bookworm main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if apt, stderr, err := runRequire(t, noNftTmux, "offline", false, etc); err == nil || apt != "" || !strings.Contains(stderr, "an offline box cannot install them") {
		t.Errorf("offline with a network source: apt %q, err %v, stderr %q", apt, err, stderr)
	}
}
