package limayaml

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/guest"
	"go.yaml.in/yaml/v3"
)

// Lima's rule (Lima 2.2.0 pkg/osutil/user.go): a host user name outside
// ^[a-z_][a-z0-9_-]*$, or "admin", gives the guest user "lima"; any other
// is kept, whatever its length.
func TestGuestUser(t *testing.T) {
	for host, want := range map[string]string{
		"dev": "dev", "corral-e2e": "corral-e2e", "_svc": "_svc", "a1_b-2": "a1_b-2",
		strings.Repeat("x", 40): strings.Repeat("x", 40), // Lima caps no length
		"john.doe":              "lima", "John": "lima", "1user": "lima", "admin": "lima", "": "lima",
		"jöhn": "lima", "bob$": "lima", "-x": "lima", "a b": "lima", "corral.e2e": "lima",
	} {
		if got := GuestUser(host); got != want {
			t.Errorf("GuestUser(%q) = %q, want %q", host, got, want)
		}
	}
}

// The rendered template names the guest user Lima makes, never the Mac's
// short name when Linux refuses it.
func TestRenderNamesLimasGuestUser(t *testing.T) {
	for host, want := range map[string]string{"john.doe": "lima", "John": "lima", "1user": "lima", "dev": "dev"} {
		for _, golden := range []bool{false, true} {
			in := input(t, config.Platform{OS: "darwin", Arch: "arm64"})
			in.User, in.Golden = host, golden
			r, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := params(t, r)["USER"]; got != want {
				t.Errorf("host user %q (golden %v): param USER %q, want %q", host, golden, got, want)
			}
			if host != want && strings.Contains(string(r.YAML), host) {
				t.Errorf("host user %q appears in the rendered template", host)
			}
		}
	}
}

// params is the rendered template's param map.
func params(t *testing.T, r Rendered) map[string]string {
	t.Helper()
	var tmpl struct {
		Param map[string]string `yaml:"param"`
	}
	if err := yaml.Unmarshal(r.YAML, &tmpl); err != nil {
		t.Fatal(err)
	}
	return tmpl.Param
}

// The provision steps that name the guest user (30-agent.sh, 41-sudo.sh,
// 45-clone.sh), run with the rendered params of a host user Linux refuses,
// in a fake guest whose only user is the one Lima made: every chown,
// runuser and sudoers rule names that user, and every step succeeds (with
// the Mac's name, chown and runuser fail on a user that does not exist,
// and set -eu stops the provision).
func TestProvisionNamesLimasGuestUser(t *testing.T) {
	for _, host := range []string{"john.doe", "John", "1user", "dev"} {
		t.Run(host, func(t *testing.T) {
			in := input(t, config.Platform{OS: "darwin", Arch: "arm64"})
			in.User = host
			in.Settings.Source = config.SourceClone
			r, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			guestUser := GuestUser(host)
			log, sudoers := runUserSteps(t, params(t, r), guestUser)
			if !strings.Contains(log, "chown "+guestUser+":") || !strings.Contains(log, "runuser -u "+guestUser+" ") {
				t.Errorf("log does not name %s:\n%s", guestUser, log)
			}
			var rules int
			for _, line := range strings.Split(sudoers, "\n") {
				if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "Cmnd_Alias") || strings.HasPrefix(line, "\t") {
					continue
				}
				rules++
				if who, _, _ := strings.Cut(line, " "); who != guestUser {
					t.Errorf("sudoers rule for %q, want %q: %q", who, guestUser, line)
				}
			}
			if rules != 2 {
				t.Errorf("%d sudoers rules, want 2:\n%s", rules, sudoers)
			}
		})
	}
}

// runUserSteps runs 30-agent.sh, 41-sudo.sh and 45-clone.sh with param's
// values and stub programs over a fake guest whose passwd holds only
// guestUser. It returns the stubs' log and the sudoers file 41-sudo.sh
// installed. Nothing outside the test's directories is written: rm,
// gpasswd, visudo and install are stubs.
func runUserSteps(t *testing.T, param map[string]string, guestUser string) (log, sudoers string) {
	t.Helper()
	dir := t.TempDir()
	bin, out, root := filepath.Join(dir, "bin"), filepath.Join(dir, "out"), filepath.Join(dir, "root")
	home := filepath.Join(dir, "home", guestUser+".guest")
	for _, d := range []string{bin, out, root, home, filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	passwd := filepath.Join(dir, "passwd")
	if err := os.WriteFile(passwd, []byte(guestUser+":x:501:1000::"+home+":/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(dir, "log")
	known := `known() { grep -q "^$1:" "$PASSWD" || { echo "$0: invalid user: '$1'" >&2; exit 1; }; }
`
	stubs := map[string]string{
		"chown":      known + `u=${1%%:*}; known "$u"; echo "chown $*" >>"$LOG"`,
		"runuser":    known + `[ "$1" = -u ] || exit 2; known "$2"; echo "runuser $*" >>"$LOG"`,
		"getent":     `[ "$1" = passwd ] && grep "^$2:" "$PASSWD"; exit 0`,
		"install":    `case " $* " in *" -d "*) for a; do case $a in -*|0*) ;; *) mkdir -p "$a";; esac; done;; *) for a; do dst=$a; done; for a; do case $a in -*|0*|"$dst") ;; *) src=$a;; esac; done; cp "$src" "$OUT/$(basename "$dst")";; esac`,
		"visudo":     `exit 0`,
		"gpasswd":    `exit 0`,
		"rm":         `exit 0`,
		"mountpoint": `exit 1`,
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"cat", "mktemp", "cut", "tr", "grep", "ls", "dirname", "mkdir", "cp", "basename"} {
		real, err := exec.LookPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "PASSWD=" + passwd, "LOG=" + logf, "OUT=" + out, "TMPDIR=" + filepath.Join(dir, "tmp"), "CORRAL_TEST_ROOT=" + root}
	for k, v := range param {
		env = append(env, "PARAM_"+k+"="+v)
	}
	// The project of a source = "clone" box, under the test's directory.
	env = append(env, "PARAM_PROJECT="+filepath.Join(dir, "project"), "PARAM_SUDO=lima")
	steps := map[string]bool{"30-agent.sh": true, "41-sudo.sh": true, "45-clone.sh": true}
	for _, s := range guest.Provision() {
		if !steps[s.Name] {
			continue
		}
		delete(steps, s.Name)
		cmd := exec.Command("/bin/sh", "-c", s.Content)
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s with guest user %s: %v\n%s", s.Name, guestUser, err, b)
		}
	}
	if len(steps) > 0 {
		t.Fatalf("provision steps not found: %v", steps)
	}
	l, _ := os.ReadFile(logf)
	s, err := os.ReadFile(filepath.Join(out, "90-corral"))
	if err != nil {
		t.Fatalf("41-sudo.sh installed no sudoers file: %v", err)
	}
	return string(l), string(s)
}
