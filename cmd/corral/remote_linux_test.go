package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RequireSSHDEnv turns a missing sshd from a skip into a failure (make
// test-all sets it: packaging/linux/test-deps.sh installs openssh-server).
const RequireSSHDEnv = "CORRAL_REQUIRE_SSHD"

const versionPkg = "github.com/corral-dev/corral/core/version"

// sshFixture is a real sshd on 127.0.0.1 run as the current user, with
// its own host key, authorized key and client config, and corral binaries
// built for the test. The "remote host" is this machine under another
// CORRAL_HOME (sshd's SetEnv), so no VM and no second machine are needed.
type sshFixture struct {
	dir       string // short: sockets and keys
	port      int
	sshConfig string
	corralA   string // version 0.0.0-remote-a: this side and host t
	corralB   string // version 0.0.0-remote-b: host tb
	local     string // this side's CORRAL_HOME
	remote    string // the remote side's CORRAL_HOME
	user      string
}

func findSSHD(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p // sshd must be started by its absolute path (it re-executes itself)
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	if os.Getenv(RequireSSHDEnv) != "" {
		t.Fatalf("sshd not found and %s is set: apt-get install openssh-server", RequireSSHDEnv)
	}
	t.Skip("sshd not installed (apt-get install openssh-server)")
	return ""
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startSSHD(t *testing.T) *sshFixture {
	t.Helper()
	sshd := findSSHD(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("ssh client not installed")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd started as root insists on its privilege separation
		// directory (the package's service unit creates it at boot).
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("creating /run/sshd for sshd: %v", err)
		}
	}
	dir, err := os.MkdirTemp("", "corral-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fx := &sshFixture{dir: dir, user: u.Username, local: filepath.Join(dir, "local"), remote: filepath.Join(dir, "remote")}
	mustRun(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "corral-test-host", "-f", filepath.Join(dir, "hostkey"))
	mustRun(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "corral-test-client", "-f", filepath.Join(dir, "id"))
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "authorized_keys"), string(pub))
	hostPub, err := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	if err != nil {
		t.Fatal(err)
	}
	fx.port = freePort(t)
	write(t, filepath.Join(dir, "known_hosts"), fmt.Sprintf("[127.0.0.1]:%d %s", fx.port, hostPub))
	write(t, filepath.Join(dir, "sshd_config"), fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
AuthorizedKeysFile %s
PidFile none
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowUsers %s
SetEnv CORRAL_HOME=%s CORRAL_MANAGED_CONFIG=%s
LogLevel ERROR
`, fx.port, filepath.Join(dir, "hostkey"), filepath.Join(dir, "authorized_keys"), fx.user, fx.remote,
		// No organisation's policy of this machine (/etc/corral may be
		// unreadable to the test's user): the test is hermetic.
		filepath.Join(dir, "no-managed.toml")))
	fx.sshConfig = filepath.Join(dir, "ssh_config")
	write(t, fx.sshConfig, fmt.Sprintf(`Host *
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
`, filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")))

	var sshdLog bytes.Buffer
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = &sshdLog, &sshdLog
	// Should the test binary die (its timeout skips cleanups), the kernel
	// ends this sshd with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our sshd, by its PID
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", sshdLog.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", fx.port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on 127.0.0.1:%d: %v\n%s", fx.port, err, sshdLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	fx.corralA = filepath.Join(dir, "corral-a")
	fx.corralB = filepath.Join(dir, "corral-b")
	for bin, v := range map[string]string{fx.corralA: "0.0.0-remote-a -X " + versionPkg + ".Commit=aaaa", fx.corralB: "0.0.0-remote-b -X " + versionPkg + ".Commit=bbbb"} {
		mustRun(t, "go", "build", "-o", bin, "-ldflags", "-X "+versionPkg+".Version="+v, ".")
	}
	return fx
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cmdTimeout bounds one corral run: a hang fails the subtest (and the
// process is killed) instead of the whole test binary, whose timeout would
// skip the cleanup that stops sshd. Generous: two ssh connections each,
// on a loaded 2-core machine.
const cmdTimeout = 3 * time.Minute

type result struct {
	out, err string
	code     int
}

// corral runs bin with home as CORRAL_HOME and stdin.
func (fx *sshFixture) corral(t *testing.T, bin, home, stdin string, args ...string) result {
	t.Helper()
	return fx.corralIn(t, "", bin, home, stdin, args...)
}

// corralIn is corral in the working directory dir ("" = the test's).
func (fx *sshFixture) corralIn(t *testing.T, dir, bin, home, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CORRAL_HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errOut.String(), code}
}

// TestRemoteHostOverRealSSHD drives a remote corral through a real sshd
// on 127.0.0.1: the version check, ls, exit codes, stdin and stdout byte
// for byte, and the refusal of a host that runs another version.
func TestRemoteHostOverRealSSHD(t *testing.T) {
	if testing.Short() {
		t.Skip("builds corral and starts sshd")
	}
	fx := startSSHD(t)
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d", fx.user, fx.port)
	// A stand-in for corral on the remote side that answers the version
	// check as corral-a, then says whether it has a terminal, shows its
	// argv, copies stdin (when it is no terminal: one never ends) and
	// exits 3.
	fake := filepath.Join(fx.dir, "fake-corral")
	write(t, fake, `#!/bin/sh
if [ "$3" = version ]; then
	printf '%s\n' '{"version":"0.0.0-remote-a","commit":"aaaa"}'
	exit 0
fi
if [ -t 0 ]; then echo 'stdin: a terminal'; else echo 'stdin: no terminal'; fi
printf 'args:'
for a; do printf ' [%s]' "$a"; done
printf '\n'
[ -t 0 ] || cat
exit 3
`)
	if err := os.Chmod(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string]string{"t": fx.corralA, "tb": fx.corralB, "tcat": fake} {
		if r := fx.corral(t, fx.corralA, fx.local, "", "host", "add", name, url, "--corral", bin, "--ssh-config", fx.sshConfig); r.code != 0 {
			t.Fatalf("host add %s: %+v", name, r)
		}
	}
	// What corral-a prints when run on the "remote host" directly.
	there := func(args ...string) result { return fx.corral(t, fx.corralA, fx.remote, "", args...) }

	t.Run("version", func(t *testing.T) {
		got := fx.corral(t, fx.corralA, fx.local, "", "--host", "t", "version")
		if want := there("version"); got != want || got.code != 0 || !strings.HasPrefix(got.out, "corral 0.0.0-remote-a (commit aaaa,") {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("ls", func(t *testing.T) {
		// As root the remote corral refuses (Lima does not run as root),
		// elsewhere it lists no boxes: either way exactly as it does there.
		for _, args := range [][]string{{"ls"}, {"ls", "--json"}} {
			got := fx.corral(t, fx.corralA, fx.local, "", append([]string{"--host", "t"}, args...)...)
			if want := there(args...); got != want {
				t.Errorf("%q: got %+v\nwant %+v", args, got, want)
			}
		}
	})
	t.Run("exit code", func(t *testing.T) {
		// A repository that tries to choose the host is a violation:
		// config check exits 2, on the remote host as here.
		proj := filepath.Join(fx.dir, "proj")
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(proj, ".corral.toml"), "host = \"t\"\n")
		got := fx.corral(t, fx.corralA, fx.local, "", "--host", "t", "config", "check", "-C", proj)
		if want := there("config", "check", "-C", proj); got != want || got.code != 2 || !strings.Contains(got.out+got.err, "host") {
			t.Errorf("got %+v\nwant %+v (exit 2)", got, want)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		in := "hello\x00world\n\x1b[31mred\n"
		got := fx.corral(t, fx.corralA, fx.local, in, "--host", "tcat", "-C", "/srv/web", "run", "--", "sh", "-c", "echo 'it''s' $HOME; `id`")
		want := "stdin: no terminal\nargs: [--host] [local] [-C] [/srv/web] [run] [--] [sh] [-c] [echo 'it''s' $HOME; `id`]\n" + in
		if got.out != want || got.code != 3 || got.err != "" {
			t.Errorf("got %+v\nwant stdout %q, exit 3", got, want)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		// Under a terminal here (script(1) gives corral one), the remote
		// command gets one too (ssh -t); the stdio subtest is the other side.
		script, err := exec.LookPath("script")
		if err != nil {
			t.Skip("script (util-linux) not installed")
		}
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "-qec", fx.corralA+" --host tcat -C /srv/web run -- x", "/dev/null")
		cmd.Env = append(os.Environ(), "CORRAL_HOME="+fx.local)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "stdin: a terminal") {
			t.Errorf("exit %v, output %q", err, out)
		}
	})
	t.Run("version mismatch", func(t *testing.T) {
		got := fx.corral(t, fx.corralA, fx.local, "", "--host", "tb", "ls")
		want := "corral: host tb runs corral 0.0.0-remote-b (commit bbbb), this is corral 0.0.0-remote-a (commit aaaa): refusing to run a command there\n"
		if got.code != 1 || got.out != "" || !strings.HasPrefix(got.err, want) || !strings.Contains(got.err, "hint: install corral 0.0.0-remote-a on tb") {
			t.Errorf("got %+v\nwant stderr %q", got, want)
		}
	})
	t.Run("credential relay", func(t *testing.T) {
		// This machine holds a key (its environment); the "remote" corral
		// is a stand-in that reports a run directory and then, as the
		// remote broker would, sends a request through the socket ssh
		// forwarded, with the relay's token. The key reaches the upstream
		// and never the remote side's argv or output.
		const key = "ghp_laptop_only_relay_key_0123"
		var gotAuth atomic.Value
		up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotAuth.Store(r.Header.Get("Authorization") + " " + r.URL.Path)
			io.WriteString(w, "upstream-ok")
		}))
		defer up.Close()
		ca := filepath.Join(fx.dir, "relay-ca.pem")
		write(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw})))
		home := filepath.Join(fx.dir, "relay-home")
		remoteRun := filepath.Join(fx.dir, "relay-remote-run")
		for _, d := range []string{home, remoteRun} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(home, "config.toml"), "[credentials.gh]\nupstream = \""+up.URL+"/base\"\nheader = \"basic\"\nenv_from_host = \"GH_TOK\"\nca = \""+ca+"\"\nread_only = true\n")
		fakeRelay := filepath.Join(fx.dir, "fake-corral-relay")
		write(t, fakeRelay, `#!/bin/sh
if [ "$3" = version ]; then
	printf '{"version":"0.0.0-remote-a","commit":"aaaa","run_dir":"%s"}\n' '`+remoteRun+`'
	exit 0
fi
[ "$3" = --credential-relay ] && [ -S "$4" ] || { echo "no relay socket: $*"; exit 9; }
printf 'mode:%s\n' "$(stat -c %a "$4")"
curl -sS --unix-socket "$4" "http://corral-relay/corral/credential/$6/gh/o/r.git/info/refs?service=git-upload-pack"
echo
curl -sS -o /dev/null -w '%{http_code}\n' --unix-socket "$4" "http://corral-relay/corral/credential/$6/gh/o/r.git/info/refs?service=git-receive-pack" -H 'X-Http-Method-Override: DELETE'
curl -sS -o /dev/null -w '%{http_code}\n' --unix-socket "$4" "http://corral-relay/corral/credential/0000000000000000000000000000000000000000000000000000000000000000/gh/x"
exit 4
`)
		if err := os.Chmod(fakeRelay, 0o700); err != nil {
			t.Fatal(err)
		}
		if r := fx.corral(t, fx.corralA, home, "", "host", "add", "tr", url, "--corral", fakeRelay, "--ssh-config", fx.sshConfig); r.code != 0 {
			t.Fatalf("host add: %+v", r)
		}
		// A host uses none of this machine's credentials until granted
		// (issue 35; the "credential relay grants" subtest tests that).
		if r := fx.corral(t, fx.corralA, home, "", "host", "grant", "tr", "gh"); r.code != 0 {
			t.Fatalf("host grant: %+v", r)
		}
		t.Setenv("GH_TOK", key)
		got := fx.corral(t, fx.corralA, home, "", "--host", "tr", "-C", "/srv/web", "run", "--", "x")
		want := "mode:600\nupstream-ok\n403\n403\n"
		if got.out != want || got.code != 4 || strings.Contains(got.out+got.err, key) {
			t.Errorf("got %+v\nwant stdout %q, exit 4", got, want)
		}
		if a, _ := gotAuth.Load().(string); a != "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+key))+" /base/o/r.git/info/refs" {
			t.Errorf("upstream got %q", a)
		}
		if ents, _ := os.ReadDir(filepath.Join(home, "run")); len(ents) != 0 {
			t.Errorf("the relay outlived the command: %v", ents)
		}
	})
	t.Run("credential relay grants", func(t *testing.T) {
		// The relay names its hosts (issue 35): this machine holds two
		// credentials (gh, other); host tn was granted none and host tg
		// only gh. The stand-in remote corral asks the relay for both, as
		// the remote broker would. tn gets neither (403 with the grant
		// command, printed here too); tg gets gh and not other; the
		// upstream sees only tg's gh request; the audit names the host.
		var hits atomic.Int32
		up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			io.WriteString(w, "upstream-ok "+r.URL.Path)
		}))
		defer up.Close()
		ca := filepath.Join(fx.dir, "grant-ca.pem")
		write(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw})))
		home := filepath.Join(fx.dir, "grant-home")
		remoteRun := filepath.Join(fx.dir, "grant-remote-run")
		for _, d := range []string{home, remoteRun} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(home, "config.toml"),
			"[credentials.gh]\nupstream = \""+up.URL+"/gh\"\nheader = \"basic\"\nenv_from_host = \"GH_TOK\"\nca = \""+ca+"\"\n"+
				"[credentials.other]\nupstream = \""+up.URL+"/other\"\nheader = \"authorization\"\nenv_from_host = \"OTHER_TOK\"\nca = \""+ca+"\"\n")
		fake := filepath.Join(fx.dir, "fake-corral-grant")
		write(t, fake, `#!/bin/sh
if [ "$3" = version ]; then
	printf '{"version":"0.0.0-remote-a","commit":"aaaa","run_dir":"%s"}\n' '`+remoteRun+`'
	exit 0
fi
[ "$3" = --credential-relay ] && [ -S "$4" ] || { echo "no relay socket: $*"; exit 9; }
for c in gh other; do
	printf '%s: ' "$c"
	curl -sS -w ' %{http_code}\n' --unix-socket "$4" "http://corral-relay/corral/credential/$6/$c/x"
done
exit 4
`)
		if err := os.Chmod(fake, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"tn", "tg"} {
			if r := fx.corral(t, fx.corralA, home, "", "host", "add", h, url, "--corral", fake, "--ssh-config", fx.sshConfig); r.code != 0 {
				t.Fatalf("host add %s: %+v", h, r)
			}
		}
		if r := fx.corral(t, fx.corralA, home, "", "host", "grant", "tg", "gh"); r.code != 0 || r.out != "host tg may use: gh\n" {
			t.Fatalf("host grant: %+v", r)
		}
		if r := fx.corral(t, fx.corralA, home, "", "host", "ls"); r.code != 0 || !strings.Contains(r.out, "tg\t"+url+"\t"+fake+"\t"+fx.sshConfig+"\tgh\n") ||
			!strings.Contains(r.out, "tn\t"+url+"\t"+fake+"\t"+fx.sshConfig+"\tnone\n") {
			t.Errorf("host ls: %+v", r)
		}
		const ghKey, otherKey = "ghp_grant_0123456789", "sk-other-0123456789"
		t.Setenv("GH_TOK", ghKey)
		t.Setenv("OTHER_TOK", otherKey)

		got := fx.corral(t, fx.corralA, home, "", "--host", "tn", "-C", "/srv/web", "run", "--", "x")
		for _, c := range []string{"gh", "other"} {
			if !strings.Contains(got.out, c+": corral: credential \""+c+"\" is held by the laptop, which does not let this host use it: to grant it, run on the laptop: corral host grant tn "+c+"\n 403\n") ||
				!strings.Contains(got.err, "corral: host tn asked for credential "+c+", which this machine holds but has not granted to it; to grant it: corral host grant tn "+c+"\n") {
				t.Errorf("host tn, credential %s: got %+v", c, got)
			}
		}
		if got.code != 4 || hits.Load() != 0 || strings.Contains(got.out+got.err, ghKey) || strings.Contains(got.out+got.err, otherKey) {
			t.Errorf("host tn: exit %d, upstream hits %d, output %+v", got.code, hits.Load(), got)
		}

		got = fx.corral(t, fx.corralA, home, "", "--host", "tg", "-C", "/srv/web", "run", "--", "x")
		if !strings.HasPrefix(got.out, "gh: upstream-ok /gh/x 200\nother: corral: credential \"other\" is held by the laptop, which does not let this host use it: to grant it, run on the laptop: corral host grant tg other\n 403\n") ||
			got.code != 4 || hits.Load() != 1 || strings.Contains(got.err, "asked for credential gh") || !strings.Contains(got.err, "corral host grant tg other") {
			t.Errorf("host tg: got %+v, upstream hits %d", got, hits.Load())
		}
		b, err := os.ReadFile(filepath.Join(home, "logs", "audit.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var use, refusedTN, refusedTG bool
		for line := range strings.SplitSeq(string(b), "\n") {
			switch {
			case strings.Contains(line, `"kind":"credential-use"`) && strings.Contains(line, `"credential":"gh"`) && strings.Contains(line, `"host":"tg"`):
				use = true
			case strings.Contains(line, `"kind":"credential-refused"`) && strings.Contains(line, `"reason":"not-granted"`) && strings.Contains(line, `"host":"tn"`):
				refusedTN = true
			case strings.Contains(line, `"kind":"credential-refused"`) && strings.Contains(line, `"reason":"not-granted"`) && strings.Contains(line, `"credential":"other"`) && strings.Contains(line, `"host":"tg"`):
				refusedTG = true
			}
		}
		if !use || !refusedTN || !refusedTG || strings.Contains(string(b), ghKey) {
			t.Errorf("audit: use by tg %v, refusals for tn %v and tg %v:\n%s", use, refusedTN, refusedTG, b)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		closed := fmt.Sprintf("ssh://%s@127.0.0.1:%d", fx.user, freePort(t))
		if r := fx.corral(t, fx.corralA, fx.local, "", "host", "add", "gone", closed, "--ssh-config", fx.sshConfig); r.code != 0 {
			t.Fatalf("host add: %+v", r)
		}
		got := fx.corral(t, fx.corralA, fx.local, "", "--host", "gone", "ls")
		if got.code != 1 || !strings.Contains(got.err, "cannot reach the host over ssh") {
			t.Errorf("got %+v", got)
		}
	})
}
