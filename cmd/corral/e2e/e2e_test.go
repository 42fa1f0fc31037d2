//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// h is the shared state of the suite: one box reused by every step, since
// a TCG boot costs about a minute.
type h struct {
	t       *testing.T
	bin     string
	home    string
	project string
	box     string
	env     []string
}

func setup(t *testing.T) *h {
	t.Helper()
	if os.Getenv("CORRAL_E2E") != "1" {
		t.Skip("set CORRAL_E2E=1 (packaging/ci/e2e.sh) to run end-to-end tests on real VMs")
	}
	bin := os.Getenv("CORRAL_BIN")
	image := os.Getenv("CORRAL_E2E_IMAGE")
	home := os.Getenv("CORRAL_HOME")
	if bin == "" || image == "" || home == "" {
		t.Fatal("CORRAL_BIN, CORRAL_E2E_IMAGE and CORRAL_HOME must be set")
	}
	diag.root(t) // failure diagnostics (diagnose_e2e_test.go)
	base, _ := os.Getwd()
	project := filepath.Join(base, "proj")
	must(t, os.MkdirAll(project, 0o755))
	must(t, os.WriteFile(filepath.Join(project, "README.txt"), []byte("hello from the host\n"), 0o644))
	must(t, os.MkdirAll(home, 0o700))
	global := fmt.Sprintf(`# e2e: the offline test image, small VMs
image = %q
cpus = 2
memory = "1GiB"
disk = "4GiB"
agent = "shell"
network = "full"
forward_env = ["E2E_SECRET"]
idle_stop = "30m"
%s
`, image, e2ePorts)
	must(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(global), 0o600))
	x := &h{t: t, bin: bin, home: home, project: project,
		env: append(os.Environ(), "CORRAL_HOME="+home, "CORRAL_QEMU_TB_MB=128")}
	out, _, code := x.corral("config", "show", "--json")
	if code != 0 {
		t.Fatalf("config show: %d %s", code, out)
	}
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(out), &cfg))
	x.box = cfg.Box
	return x
}

// argvCount is a guest shell command that prints how many processes in
// the box have the value of the variable name in their argv. grep reads
// the value from a here-document on fd 3, not from its argv, so the count
// is of other processes only (a pattern in grep's own argv is counted or
// not depending on whether grep has exec'd when the loop reads /proc).
func argvCount(name string) string {
	return `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done | grep -c -F -f /dev/fd/3 3<<EOF || true
$` + name + `
EOF`
}

// jsonList decodes a list corral prints with --json: the object
// {"schema": "corral.KIND/v1", KEY: [...]} (docs/JSON.md), into v.
func jsonList(t *testing.T, out, schema, key string, v any) {
	t.Helper()
	var doc map[string]json.RawMessage
	must(t, json.Unmarshal([]byte(out), &doc))
	if got := string(doc["schema"]); got != `"`+schema+`"` {
		t.Fatalf("schema %s, want %q:\n%s", got, schema, out)
	}
	must(t, json.Unmarshal(doc[key], v))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (x *h) corral(args ...string) (string, string, int) {
	x.t.Helper()
	return x.corralEnv(nil, args...)
}

func (x *h) corralEnv(extra []string, args ...string) (string, string, int) {
	x.t.Helper()
	diag.command(x, args) // before an rm: the box is still there to diagnose
	cmd := exec.Command(x.bin, append([]string{"-C", x.project}, args...)...)
	cmd.Env = append(append([]string{}, x.env...), extra...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		x.t.Fatalf("corral %v: %v", args, err)
	}
	x.t.Logf("corral %s -> %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), code
}

func (x *h) okEnv(extra []string, args ...string) string {
	x.t.Helper()
	out, errOut, code := x.corralEnv(extra, args...)
	if code != 0 {
		x.t.Fatalf("corral %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func (x *h) ok(args ...string) string {
	x.t.Helper()
	out, errOut, code := x.corral(args...)
	if code != 0 {
		x.t.Fatalf("corral %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

type lsEntry struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	MemBytes uint64 `json:"mem_bytes"`
	Project  string `json:"project"`
}

func (x *h) ls() []lsEntry {
	var out []lsEntry
	jsonList(x.t, x.ok("ls", "--json"), "corral.boxes/v1", "boxes", &out)
	return out
}

func TestRenderValidates(t *testing.T) {
	x := setup(t)
	for _, args := range [][]string{{"render"}, {"render", "--golden"}} {
		out := x.ok(args...)
		p := filepath.Join(t.TempDir(), "box.yaml")
		must(t, os.WriteFile(p, []byte(out), 0o644))
		cmd := exec.Command("limactl", "validate", p)
		cmd.Env = append(os.Environ(), "LIMA_HOME="+filepath.Join(t.TempDir(), "lh"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("limactl validate (corral %v): %v\n%s", args, err, b)
		}
	}
}

func TestBoxLifecycle(t *testing.T) {
	x := setup(t)
	defer x.corral("rm", "-f")
	writeLifecycleProject(t, x)

	t.Run("up from a golden clone", func(t *testing.T) {
		x.t = t
		x.ok("up")
		meta := x.meta(t)
		if !strings.HasPrefix(meta.Golden, "golden-") {
			t.Errorf("box not cloned from a golden image: %q", meta.Golden)
		}
	})
	t.Run("the provision installed what the image lacks, from the image's own package source", func(t *testing.T) {
		x.t = t
		// The test image leaves nftables and tmux out and carries them in a
		// file: package source (packaging/linux/build-image.sh): the golden
		// build's guest/provision/05-require.sh installed them, offline.
		got := x.ok("run", "--", "sh", "-c", `dpkg-query -W -f='${Package} ${Status}\n' nftables tmux; ls /usr/sbin/nft /usr/bin/tmux`)
		for _, want := range []string{"nftables install ok installed", "tmux install ok installed", "/usr/sbin/nft", "/usr/bin/tmux"} {
			if !strings.Contains(got, want) {
				t.Errorf("the box lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("the guest user is the one Lima made, as the template names it", func(t *testing.T) {
		x.t = t
		guestUserIsLimas(t, x)
	})
	t.Run("run reads the project mount", func(t *testing.T) {
		x.t = t
		if got := x.ok("run", "--", "cat", "README.txt"); got != "hello from the host\n" {
			t.Errorf("cat = %q", got)
		}
	})
	t.Run("run writes back to the host", func(t *testing.T) {
		x.t = t
		x.ok("run", "--", "sh", "-c", "echo 'written in the box' > out.txt")
		b, err := os.ReadFile(filepath.Join(x.project, "out.txt"))
		if err != nil || string(b) != "written in the box\n" {
			t.Errorf("host sees %q, %v", b, err)
		}
	})
	t.Run("hide and box_dirs, for the box user and guest root", func(t *testing.T) {
		x.t = t
		hiddenAndBoxDirs(t, x)
	})
	t.Run("no repository can be made in a project without git", func(t *testing.T) {
		x.t = t
		noRepositoryInProject(t, x)
	})
	t.Run("arguments arrive as given", func(t *testing.T) {
		x.t = t
		got := x.ok("run", "--", "printf", "[%s]", "two words", "it's", "$HOME", "*")
		if got != "[two words][it's][$HOME][*]" {
			t.Errorf("argv = %q", got)
		}
	})
	t.Run("exit codes and stderr propagate", func(t *testing.T) {
		x.t = t
		_, errOut, code := x.corral("run", "--", "sh", "-c", "echo oops >&2; exit 7")
		if code != 7 || errOut != "oops\n" {
			t.Errorf("code %d stderr %q", code, errOut)
		}
	})
	t.Run("ls shows it running with host memory", func(t *testing.T) {
		x.t = t
		found := false
		for _, e := range x.ls() {
			if e.Name == x.box {
				found = true
				if e.State != "Running" || e.MemBytes == 0 {
					t.Errorf("ls entry %+v", e)
				}
			}
		}
		if !found {
			t.Errorf("box %s missing from ls", x.box)
		}
	})
	t.Run("SendEnv delivers a value that no argv carries", func(t *testing.T) {
		x.t = t
		secret := fmt.Sprintf("e2e-secret-%d", time.Now().UnixNano())
		// The guest command scans every process's argv in the box for the
		// value while the session runs, then prints the variable.
		script := argvCount("E2E_SECRET") + `
echo "value=$E2E_SECRET"`
		// The host side: scan the argv of this user's processes from
		// before the session starts until it has ended (the window is the
		// session's whole life, however slow the host).
		stop, done := make(chan struct{}), make(chan string, 1)
		go func() {
			seen := ""
			for {
				ents, _ := os.ReadDir("/proc")
				for _, e := range ents {
					b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
					if err == nil && bytes.Contains(b, []byte(secret)) {
						seen = string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
					}
				}
				select {
				case <-stop:
					done <- seen
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		out, errOut, code := x.corralEnv([]string{"E2E_SECRET=" + secret}, "run", "--", "sh", "-c", script)
		close(stop)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || lines[1] != "value="+secret {
			t.Fatalf("output %q", out)
		}
		if lines[0] != "0" {
			t.Errorf("the value appears in %s guest argv lines", lines[0])
		}
		if seen := <-done; seen != "" {
			t.Errorf("the value appears in a host process's argv: %s", seen)
		}
		logs, _ := filepath.Glob(filepath.Join(x.home, "logs", "*"))
		for _, p := range logs {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the value", p)
			}
		}
		audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
		if !bytes.Contains(audit, []byte(`"E2E_SECRET"`)) {
			t.Errorf("the audit log lacks the variable's name")
		}
	})
	t.Run("sessions share corral's ssh master, each with its own variables", func(t *testing.T) {
		x.t = t
		sessionsThroughMaster(t, x)
	})
	t.Run("a detached session survives its client and is re-attached", func(t *testing.T) {
		x.t = t
		detachableSessions(t, x)
	})
	t.Run("a keychain secret reaches the session", func(t *testing.T) {
		x.t = t
		keychainSecret(t, x)
	})
	t.Run("codex and gemini run through their corral commands", func(t *testing.T) {
		x.t = t
		agentVersions(t, x)
	})
	t.Run("a configured port answers on the host's 127.0.0.1, an unconfigured one does not", func(t *testing.T) {
		x.t = t
		forwardedPorts(t, x)
	})
	t.Run("benchmark: run overhead", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		runOverhead(t, x, 10)
	})
	t.Run("benchmark: the name rule on an unpack of 10,000 files", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		nameRuleUnpack(t, x)
	})
	t.Run("benchmark: memory given back after the guest frees 1 GiB", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		balloonGivesBack(t, x)
	})
	t.Run("benchmark: memory pressure saves the least recently used idle box", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		lowMemorySave(t, x)
	})
	t.Run("a failed guest unit refuses the session", func(t *testing.T) {
		x.t = t
		x.ok("run", "--", "sudo", "systemctl", "stop", "corral-project.service")
		_, errOut, code := x.corral("run", "--", "true")
		if code == 0 || !strings.Contains(errOut, "corral-project is not active") {
			t.Errorf("session not refused: code %d stderr %q", code, errOut)
		}
		// Repair through a raw ssh, as an admin would.
		cfg := filepath.Join(x.home, "lima", x.box, "ssh.config")
		out, err := exec.Command("ssh", "-F", cfg, "lima-"+x.box, "sudo systemctl start corral-project.service").CombinedOutput()
		if err != nil {
			t.Fatalf("repair: %v %s", err, out)
		}
		x.ok("run", "--", "true")
	})
	t.Run("doctor explains a broken box", func(t *testing.T) {
		x.t = t
		doctorChecks(t, x)
	})
	t.Run("stop --save and up resume the box", func(t *testing.T) {
		x.t = t
		suspendResume(t, x)
	})
	t.Run("the menu-bar app shows the box and stops it", func(t *testing.T) {
		x.t = t
		// The snapshot below keeps a file written before this stop (one
		// boot fewer than a stop of its own: a TCG boot is minutes).
		x.ok("run", "--", "sh", "-c", "echo keep > ~/marker")
		appStopsBox(t, x)
	})
	t.Run("stop and up again", func(t *testing.T) {
		x.t = t
		x.ok("stop") // a no-op when the app stopped it
		x.ok("snapshot", "create", x.box, "before")
		for _, e := range x.ls() {
			if e.Name == x.box && e.State != "Stopped" {
				t.Errorf("after stop: %+v", e)
			}
		}
		boot := time.Now()
		x.ok("up")
		logWarmBoot(t, x, time.Since(boot))
		if got := x.ok("run", "--", "cat", "out.txt"); got != "written in the box\n" {
			t.Errorf("after restart cat = %q", got)
		}
		x.ok("run", "--", "sh", "-c", "rm -f ~/marker")
	})
	t.Run("a port added with corral port is forwarded after a restart", func(t *testing.T) {
		x.t = t
		portAfterRestart(t, x)
	})
	t.Run("the menu's Stop idle boxes stops an idle box", func(t *testing.T) {
		x.t = t
		trusted := filepath.Join(x.home, "projects", x.box+".toml")
		must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
		must(t, os.WriteFile(trusted, []byte("idle_stop = \"2s\"\n"), 0o600))
		defer os.Remove(trusted)
		x.ok("up") // picks up the new idle_stop
		// No corral command from here until the box is stopped: every
		// command sweeps idle boxes first (TestPullCloneAndAgentState
		// proves that path); the click must be what stops it.
		appStopsIdle(t, x) // returns once the stop is audited as idle-stop
		for _, e := range x.ls() {
			if e.Name == x.box && e.State != "Stopped" {
				t.Errorf("after Stop idle boxes: %+v", e)
			}
		}
	})
	t.Run("a snapshot restores a file deleted in the box", func(t *testing.T) {
		x.t = t
		x.ok("stop") // the idle sweep above stopped it already, or it failed
		x.ok("snapshot", "restore", x.box, "before", "--yes")
		x.ok("up")
		if got := x.ok("run", "--", "sh", "-c", "cat ~/marker"); got != "keep\n" {
			t.Errorf("after restore ~/marker = %q", got)
		}
	})
	t.Run("snapshots = auto kept the newest two and the manual one", func(t *testing.T) {
		x.t = t
		autoSnapshots(t, x)
	})
	t.Run("drift after a config change, then rebuild: an offline box with a read-only project", func(t *testing.T) {
		x.t = t
		driftThenRebuildOffline(t, x)
	})
	t.Run("stop closes corral's ssh master", func(t *testing.T) {
		x.t = t
		x.ok("run", "--", "true")
		pid := x.masterPID()
		if pid == 0 {
			t.Fatalf("no master before stop")
		}
		x.ok("stop")
		if _, err := os.Stat(x.masterSock()); !os.IsNotExist(err) {
			t.Errorf("stop left the ssh master's socket: %v", err)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("the master (pid %d) outlived the stop", pid)
		}
	})
	t.Run("rm leaves nothing behind", func(t *testing.T) {
		x.t = t
		x.ok("rm", "-f")
		if _, err := os.Stat(filepath.Join(x.home, "boxes", x.box+".json")); !os.IsNotExist(err) {
			t.Errorf("metadata left: %v", err)
		}
		if _, err := os.Stat(filepath.Join(x.home, "lima", x.box)); !os.IsNotExist(err) {
			t.Errorf("instance dir left: %v", err)
		}
		for _, e := range x.ls() {
			if e.Name == x.box {
				t.Errorf("still listed: %+v", e)
			}
		}
	})
}

// boxMeta is the part of a box's metadata (core/box Meta, in
// ~/.corral/boxes/BOX.json) the tests read.
type boxMeta struct {
	BrokerPort int             `json:"broker_port"`
	BrokerPID  int             `json:"broker_pid"`
	Network    string          `json:"network"`
	VMType     string          `json:"vm_type"`
	Golden     string          `json:"golden"`
	Saved      json.RawMessage `json:"saved"`
}

// meta reads x's box metadata, failing t when it cannot.
func (x *h) meta(t *testing.T) boxMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(x.home, "boxes", x.box+".json"))
	must(t, err)
	var m boxMeta
	must(t, json.Unmarshal(b, &m))
	return m
}
