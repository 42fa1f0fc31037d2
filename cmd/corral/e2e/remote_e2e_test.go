//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
)

// remoteHost is issue 30's remote host on this machine: a real sshd on
// 127.0.0.1 (inside the suite's network namespace: loopback only), run as
// the suite's user with its own host key, whose sessions run the same
// corral under the suite's CORRAL_HOME, where the box lives. The "laptop"
// is a second CORRAL_HOME of its own (its config, its hosts.toml, its
// audit log) that reaches the box only through `corral --host e2e`.
// One user stands for both machines (Lima refuses root, and the suite
// runs as one unprivileged user); what the boundary needs is apart: the
// two corral homes, and the two process trees (the laptop's corral and
// its ssh client on one side; sshd, the remote corral, the broker and
// the VM on the other).
type remoteHost struct {
	dir    string   // sshd's keys and configs, the remote wrapper
	bin    string   // corral
	laptop string   // the laptop's CORRAL_HOME
	env    []string // the laptop's environment: no key, its own CORRAL_HOME
	name   string   // the host's name in the laptop's hosts.toml
}

// startRemoteHost starts sshd for x's home and adds it to a new laptop
// home as host "e2e"; the laptop's corral starts from x's environment
// (without keys) with its own CORRAL_HOME.
func startRemoteHost(t *testing.T, x *h) *remoteHost {
	t.Helper()
	sshd := "/usr/sbin/sshd" // by its absolute path: it re-executes itself
	if _, err := os.Stat(sshd); err != nil {
		t.Fatalf("no sshd (packaging/linux/test-deps.sh installs openssh-server): %v", err)
	}
	u, err := user.Current()
	must(t, err)
	dir, err := os.MkdirTemp("", "cr-") // short: the laptop's relay socket lives under it
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &remoteHost{dir: dir, bin: x.bin, laptop: filepath.Join(dir, "l"), name: "e2e"}
	must(t, os.Mkdir(r.laptop, 0o700))
	for _, k := range []string{"hostkey", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "corral-e2e-"+k, "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600))
	hostPub, err := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	must(t, os.WriteFile(filepath.Join(dir, "known_hosts"), fmt.Appendf(nil, "[127.0.0.1]:%d %s", port, hostPub), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "sshd_config"), fmt.Appendf(nil, `ListenAddress 127.0.0.1:%d
HostKey %s
AuthorizedKeysFile %s
PidFile none
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AllowUsers %s
LogLevel ERROR
`, port, filepath.Join(dir, "hostkey"), filepath.Join(dir, "authorized_keys"), u.Username), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "ssh_config"), fmt.Appendf(nil, `Host *
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
`, filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")), 0o600))
	// The remote side's corral: the suite's binary under the suite's
	// home, with the suite's PATH (its limactl), whatever sshd's session
	// environment is. It is what `host add --corral` names.
	wrapper := filepath.Join(dir, "corral-remote")
	var env strings.Builder
	for _, k := range []string{"HOME", "PATH", "CORRAL_QEMU_TB_MB"} {
		fmt.Fprintf(&env, " %s=%s", k, shellQuote(envOf(x.env, k)))
	}
	must(t, os.WriteFile(wrapper, fmt.Appendf(nil, "#!/bin/sh\nexec env%s CORRAL_HOME=%s %s \"$@\"\n", env.String(), shellQuote(x.home), shellQuote(x.bin)), 0o700))

	var sshdLog bytes.Buffer
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = &sshdLog, &sshdLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our sshd, by its PID
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", sshdLog.String())
		}
	})
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("sshd did not listen on 127.0.0.1:%d\n%s", port, sshdLog.String())
	}

	for _, kv := range x.env {
		if !strings.HasPrefix(kv, "CORRAL_HOME=") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "CORRAL_HOME="+r.laptop)
	r.ok(t, nil, "", "host", "add", r.name, fmt.Sprintf("ssh://%s@127.0.0.1:%d", u.Username, port),
		"--corral", wrapper, "--ssh-config", filepath.Join(dir, "ssh_config"))
	// A host uses none of the laptop's credentials until granted (issue
	// 35): this one may use Claude's key through the laptop's relay.
	r.ok(t, nil, "", "host", "grant", r.name, "anthropic")
	return r
}

func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// command is the laptop's corral with args, extra added to its
// environment.
func (r *remoteHost) command(extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(append([]string{}, r.env...), extra...)
	return cmd
}

// corral runs the laptop's corral to the end.
func (r *remoteHost) corral(t *testing.T, extra []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := r.command(extra, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("laptop corral %v: %v", args, err)
	}
	t.Logf("laptop: corral %s -> %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), code
}

func (r *remoteHost) ok(t *testing.T, extra []string, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := r.corral(t, extra, stdin, args...)
	if code != 0 {
		t.Fatalf("laptop corral %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// on is args for a box command on the remote host, in the host's project
// directory dir (-C: nothing is sent).
func (r *remoteHost) on(dir string, args ...string) []string {
	return append([]string{"--host", r.name, "-C", dir}, args...)
}

// laptopTrust writes the laptop's trusted layer for the project in dir
// (its box name as the laptop computes it): layer names where the
// laptop's keys are.
func (r *remoteHost) laptopTrust(t *testing.T, dir, layer string) {
	t.Helper()
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(r.ok(t, nil, "", "-C", dir, "config", "show", "--json")), &cfg))
	must(t, os.MkdirAll(filepath.Join(r.laptop, "projects"), 0o700))
	must(t, os.WriteFile(filepath.Join(r.laptop, "projects", cfg.Box+".toml"), []byte(layer), 0o600))
}

// remoteSubtests is issue 30's proof on the running box x (broker mode,
// Claude's key configured as env_from_host E2E_ANTHROPIC_KEY on both
// sides, the broker not yet holding it; proj a git repository): from the
// laptop, through `corral --host`, a command with its stdio and exit
// code; claude answering with the laptop's key through the laptop's
// relay; no laptop-held key on the remote side's disk or in any of its
// processes' environments while the relay serves; a denial there in the
// laptop's `corral egress --host` and menu, whose Allow opens it; pull
// bringing the box's commit into the laptop's repository.
func remoteSubtests(t *testing.T, x *h, r *remoteHost, api *fakeAnthropic, key string) {
	withKey := []string{"E2E_ANTHROPIC_KEY=" + key}
	proj := x.project
	t.Run("run passes stdin, stdout, stderr and the exit code", func(t *testing.T) {
		out, errOut, code := r.corral(t, nil, "from the laptop\n", r.on(proj, "run", "--", "sh", "-c", "cat; echo on-stderr >&2; exit 7")...)
		if code != 7 || out != "from the laptop\n" || !strings.Contains(errOut, "on-stderr") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 7, the stdin, on-stderr", code, out, errOut)
		}
	})
	t.Run("claude answers with the laptop's key through the laptop's relay", func(t *testing.T) {
		before := anthropicUses(t, api.all(), key)
		out, errOut, code := r.corral(t, withKey, "", r.on(proj, "claude", "--", "-p", "say hello")...)
		if code != 0 || !strings.Contains(out, fakeAnswer) {
			t.Fatalf("corral --host claude -p: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		if anthropicUses(t, api.all(), key) <= before {
			t.Error("the fake API saw no request with the laptop's key")
		}
		// The laptop counted the use in its own audit log; the relay's
		// socket is gone from both sides.
		b, err := os.ReadFile(filepath.Join(r.laptop, "logs", "audit.jsonl"))
		if err != nil || !strings.Contains(string(b), `"kind":"credential-use"`) {
			t.Errorf("the laptop's audit log has no credential-use (%v):\n%s", err, b)
		}
		for _, run := range []string{filepath.Join(r.laptop, "run"), filepath.Join(x.home, "run")} {
			if left, _ := filepath.Glob(filepath.Join(run, "relay-*")); len(left) > 0 {
				t.Errorf("the relay outlived its session: %v", left)
			}
		}
	})
	t.Run("no laptop-held key on the remote side's disk or in its processes' environments", func(t *testing.T) {
		// A session that uses the route once, says so, and holds the relay
		// open until the laptop's stdin ends.
		cmd := r.command(withKey, r.on(proj, "run", "--", "sh", "-c",
			`c=$(curl -sS --noproxy '*' --max-time 60 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d '{}' "$ANTHROPIC_BASE_URL/v1/messages"); echo "used $c"; read -r _ || true`)...)
		stdin, err := cmd.StdinPipe()
		must(t, err)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		must(t, cmd.Start())
		used := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if s, ok := strings.CutPrefix(sc.Text(), "used "); ok {
					used <- s
					break
				}
			}
			io.Copy(io.Discard, stdout)
			close(used)
		}()
		select {
		case c := <-used:
			if c != "200" {
				t.Errorf("the route through the relay answered %q, want 200", c)
			}
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("the session never used the route; stderr:\n%s", errOut.String())
		}
		laptop := processTree(cmd.Process.Pid)
		var scanned int
		for _, pid := range allPIDs() {
			if laptop[pid] || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
			if err != nil {
				continue // gone, or not ours to read
			}
			scanned++
			if bytes.Contains(env, []byte(key)) {
				comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
				t.Errorf("process %d (%s) on the remote side has the laptop's key in its environment", pid, strings.TrimSpace(string(comm)))
			}
		}
		if scanned == 0 {
			t.Error("no remote process was scanned")
		}
		files, skipped := scanTree(t, x.home, key)
		t.Logf("scanned %d processes' environments and %d files of the remote home (%d VM disks over 32 MiB left to the disk scan after stop)", scanned, files, skipped)
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the session: %v\nstderr:\n%s", err, errOut.String())
		}
	})
	t.Run("a denial there shows in corral egress --host and the menu, whose Allow opens it", func(t *testing.T) {
		x.t = t
		srv := startHostServer(t)
		hostport := "localhost:" + srv.port
		get := func(path string) string {
			return x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "http://"+hostport+path)
		}
		if got := r.ok(t, nil, "", r.on(proj, "run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "http://"+hostport+"/remote-denied")...); got != "403" {
			t.Fatalf("before any allow: HTTP %q, want 403", got)
		}
		var eg struct {
			Destinations []struct {
				Host    string `json:"host"`
				Port    int    `json:"port"`
				Allowed bool   `json:"allowed"`
			} `json:"destinations"`
		}
		must(t, json.Unmarshal([]byte(r.ok(t, nil, "", r.on(proj, "egress", "--json")...)), &eg))
		found := false
		for _, d := range eg.Destinations {
			found = found || (d.Host == "localhost" && strconv.Itoa(d.Port) == srv.port && !d.Allowed)
		}
		if !found {
			t.Errorf("corral --host egress --json lacks the denial of %s: %+v", hostport, eg.Destinations)
		}

		item, _ := startApp(t, x, false, "CORRAL_HOME="+r.laptop)
		allow, _ := waitMenu(t, item, 2*time.Minute, "host e2e's box with the denied "+hostport+" and Allow for 1 hour", func(root *desktoptest.MenuNode) *desktoptest.MenuNode {
			if on := findPrefix(root, "on "+r.name); on == nil {
				return nil
			}
			if b := findPrefix(root, "● "+x.box); b != nil {
				if d := findPrefix(b, hostport); d != nil {
					return d.Find("Allow for 1 hour")
				}
			}
			return nil
		})
		if err := item.Click(allow.ID); err != nil {
			t.Fatal(err)
		}
		got := ""
		for deadline := time.Now().Add(time.Minute); got != "200" && time.Now().Before(deadline); time.Sleep(time.Second) {
			got = get("/remote-allowed")
		}
		if got != "200" || srv.count("/remote-allowed") == 0 {
			t.Errorf("after the laptop menu's Allow for 1 hour: HTTP %q, server hits %d; want 200", got, srv.count("/remote-allowed"))
		}
	})
	t.Run("pull brings the box's commit into the laptop's repository", func(t *testing.T) {
		x.t = t
		r.ok(t, nil, "", r.on(proj, "run", "--", "sh", "-c",
			"git checkout -q -b from-remote && echo made-there > remote.txt && git add remote.txt && git -c user.name=box -c user.email=box@example.test commit -q -m 'made on the remote host' && git checkout -q main")...)
		boxRev := strings.TrimSpace(x.ok("run", "--", "git", "rev-parse", "from-remote"))
		repo := filepath.Join(r.dir, "repo") // the laptop's clone of the project
		runGit(t, r.dir, "clone", "-q", proj, repo)
		out := r.ok(t, nil, "", "--host", r.name, "-C", repo, "pull", x.box)
		if !strings.Contains(out, "made on the remote host") {
			t.Errorf("pull output:\n%s", out)
		}
		if got := gitOnHost(t, repo, "rev-parse", "refs/remotes/corral/"+x.box+"/from-remote"); got != boxRev {
			t.Errorf("the laptop's refs/remotes/corral/%s/from-remote = %q, the box has %q", x.box, got, boxRev)
		}
	})
}

// processTree is pid and its descendants.
func processTree(pid int) map[int]bool {
	parent := map[int]int{}
	for _, p := range allPIDs() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parens.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	tree := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if tree[pp] && !tree[p] {
				tree[p], changed = true, true
			}
		}
	}
	return tree
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// scanTree fails t for each regular file under root holding secret,
// leaving out files over 32 MiB (a VM's disks: the disk scan after stop
// reads those). It returns the files read and left out.
func scanTree(t *testing.T, root, secret string) (files, skipped int) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 32<<20 {
			skipped++
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s on the remote side holds the laptop's key", p)
		}
		return nil
	})
	return files, skipped
}
