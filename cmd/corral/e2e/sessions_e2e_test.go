//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// masterSock is corral's control socket of the box's ssh master.
func (x *h) masterSock() string { return filepath.Join(x.home, "run", "ssh", x.box+".sock") }

// masterPID asks the master on corral's control socket for its pid
// (ssh -O check); 0 when none answers.
func (x *h) masterPID() int {
	return sshMasterPID(filepath.Join(x.home, "lima", x.box, "ssh.config"), x.masterSock(), x.box)
}

// sessionsThroughMaster: sessions run over corral's own ssh master, which
// holds no session variable; two concurrent sessions with different values
// each see only their own; a killed master is replaced by the next session.
// About 15 s on the shared running box.
func sessionsThroughMaster(t *testing.T, x *h) {
	x.ok("run", "--", "true")
	st, err := os.Stat(filepath.Dir(x.masterSock()))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("control socket directory: %v %v", st, err)
	}
	if n := len(x.masterSock()); n > 103 {
		t.Errorf("control socket path is %d bytes", n)
	}
	pid := x.masterPID()
	if pid == 0 {
		t.Fatalf("no ssh master answers on %s", x.masterSock())
	}

	// Two sessions at once, each with its own value; each sleeps so that
	// both are open on the master at the same time.
	vals := []string{
		fmt.Sprintf("e2e-mux-a-%d", time.Now().UnixNano()),
		fmt.Sprintf("e2e-mux-b-%d", time.Now().UnixNano()),
	}
	outs := make([]string, len(vals))
	started := make(chan int, len(vals))
	var wg sync.WaitGroup
	for i, v := range vals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(x.bin, "-C", x.project, "run", "--", "sh", "-c", `sleep 3; echo "$E2E_SECRET"`)
			cmd.Env = append(append([]string{}, x.env...), "E2E_SECRET="+v)
			var errOut, out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Start()
			if err == nil {
				started <- cmd.Process.Pid
				err = cmd.Wait()
			} else {
				started <- 0
			}
			b := out.Bytes()
			outs[i] = strings.TrimSpace(string(b))
			if err != nil || errOut.Len() > 0 {
				outs[i] += fmt.Sprintf(" (%v; stderr %q)", err, errOut.String())
			}
		}()
	}
	// While both run (each corral has its ssh client on the master): the
	// master's environment and argv hold neither value.
	for range vals {
		if p := <-started; p != 0 {
			waitFor(t, "a session's ssh client", 30*time.Second, func() bool { return comm(p) == "ssh" || childNamed(p, "ssh") })
		}
	}
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
		if err != nil {
			t.Errorf("reading the master's %s: %v", f, err)
		}
		for _, v := range vals {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("the master's %s holds a session value", f)
			}
		}
		if bytes.Contains(b, []byte("CORRAL_FWD_")) && f == "environ" {
			t.Errorf("the master's environment has a CORRAL_FWD_ variable")
		}
	}
	wg.Wait()
	for i, v := range vals {
		if outs[i] != v {
			t.Errorf("session %d printed %q, want its own value %q", i, outs[i], v)
		}
	}
	if got := x.masterPID(); got != pid {
		t.Errorf("master pid changed from %d to %d between sessions", pid, got)
	}

	// A dead master is replaced by the next session.
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the killed master to be gone", 10*time.Second, func() bool { return gone(pid) })
	if got := x.ok("run", "--", "sh", "-c", `echo "$E2E_SECRET"`); got != "\n" {
		t.Errorf("session after the master died printed %q", got)
	}
	if got := x.masterPID(); got == 0 || got == pid {
		t.Errorf("master not replaced: pid %d (was %d)", got, pid)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// attachClient starts `corral attach BOX NAME` in its own process group
// (so that killing it takes its ssh along), with a stdin that stays open.
func (x *h) attachClient(t *testing.T, name string) (*exec.Cmd, *syncBuffer, func()) {
	cmd := exec.Command(x.bin, "-C", x.project, "attach", x.box, name)
	cmd.Env = x.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	must(t, err)
	must(t, cmd.Start())
	return cmd, out, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = stdin.Close() }
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

type sessionEntry struct {
	Box      string `json:"box"`
	Session  string `json:"session"`
	Agent    string `json:"agent"`
	Attached int    `json:"attached"`
}

func (x *h) sessions(t *testing.T) []sessionEntry {
	var out []sessionEntry
	jsonList(t, x.ok("sessions", "--json"), "corral.sessions/v1", "sessions", &out)
	return out
}

// detachableSessions: `corral run --detach` starts a session in the box
// that survives its client being killed, is listed by `corral sessions
// --json`, and is re-attached with its output; its variable reaches it
// without appearing in any argv, file, tmux environment table or the tmux
// server's environment; the menu-bar app lists it with Attach. About 50 s
// on the shared running box.
func detachableSessions(t *testing.T, x *h) {
	secret := fmt.Sprintf("e2e-detach-%d", time.Now().UnixNano())
	sum := sha256.Sum256([]byte(secret))
	want := "START:sum=" + hex.EncodeToString(sum[:])[:16]
	finish := fmt.Sprintf("/tmp/e2e-finish-%d", time.Now().UnixNano())

	// The host side: no host process's argv holds the value, all along.
	stop := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		found := ""
		for {
			select {
			case <-stop:
				seen <- found
				return
			case <-time.After(100 * time.Millisecond):
			}
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(secret)) {
					found = string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
				}
			}
		}
	}()
	defer func() {
		close(stop)
		if s := <-seen; s != "" {
			t.Errorf("a host process's argv holds the value: %s", s)
		}
	}()

	job := `echo "START:sum=$(printf %s "$E2E_SECRET" | sha256sum | cut -c1-16)"; ` +
		`i=0; while [ $i -lt 120 ] && [ ! -e "$1" ]; do sleep 0.5; i=$((i+1)); done; echo END-OF-JOB; sleep 2`
	out, errOut, code := x.corralEnv([]string{"E2E_SECRET=" + secret}, "run", "--detach", "--name", "job", "--", "sh", "-c", job, "job", finish)
	if code != 0 || out != "job\n" {
		t.Fatalf("run --detach: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	listed := func() bool {
		for _, s := range x.sessions(t) {
			if s.Box == x.box && s.Session == "job" && s.Agent == "shell" {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Fatalf("sessions --json does not list the job: %+v", x.sessions(t))
	}

	// A client attaches, sees the output, and is killed (with its ssh).
	c1, out1, kill1 := x.attachClient(t, "job")
	waitFor(t, "the first client to show the job's output", 30*time.Second, func() bool { return strings.Contains(out1.String(), want) })
	kill1()
	_ = c1.Wait()
	x.waitDetached(t, "job")
	if !listed() {
		t.Fatalf("the session did not survive its client: %+v", x.sessions(t))
	}
	// The menu lists it under the box, and its Attach opens a terminal on
	// corral attach (issue 17 item 1, the menu side).
	appAttachesSession(t, x, "job")

	// In the box: the value is in no argv, not in the tmux
	// server's environment, not in tmux's global or session environment,
	// and in no file under /tmp, /var/tmp, /run/user or the home.
	// grep takes the value from a here-document (fd 3), never its argv.
	scan := `c() { grep -c -F -f /dev/fd/3 3<<EOF || true
$E2E_SECRET
EOF
}
argv=$(for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done | c)
srv=$(tmux -L corral display-message -p '#{pid}')
senv=$(tr '\0' '\n' </proc/"$srv"/environ | c)
genv=$(tmux -L corral show-environment -g | c)
jenv=$(tmux -L corral show-environment -t =job | c)
files=$(grep -rlF --devices=skip -- "$E2E_SECRET" /tmp /var/tmp /run/user "$HOME" 2>/dev/null | wc -l)
echo "argv=$argv server=$senv global=$genv session=$jenv files=$files"`
	if got := strings.TrimSpace(x.okEnv([]string{"E2E_SECRET=" + secret}, "run", "--", "bash", "-c", scan)); got != "argv=0 server=0 global=0 session=0 files=0" {
		t.Errorf("secret scan in the box: %s", got)
	}

	// A second client re-attaches and gets the output; when the job ends,
	// so do the session and the client.
	c2, out2, kill2 := x.attachClient(t, "job")
	defer kill2()
	waitFor(t, "the second client to show the job's earlier output", 30*time.Second, func() bool { return strings.Contains(out2.String(), want) })
	x.ok("run", "--", "touch", finish)
	done := make(chan error, 1)
	go func() { done <- c2.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("second client: %v\n%s", err, out2.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the second client did not end with the job:\n%s", out2.String())
	}
	if !strings.Contains(out2.String(), "END-OF-JOB") {
		t.Errorf("the re-attached client missed the job's last output:\n%q", out2.String())
	}
	if listed() {
		t.Errorf("the session is still listed after its command ended")
	}
}

// childNamed reports whether process ppid has a child whose comm is name.
func childNamed(ppid int, name string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; split after ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) > 1 && s[open+1:end] == name && f[1] == strconv.Itoa(ppid) {
			return true
		}
	}
	return false
}

// comm is pid's command name, or "".
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// gone reports whether pid has exited (no process, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}

// waitDetached waits until the box's session name has no client attached
// (its killed client's tmux client has gone), or fails.
func (x *h) waitDetached(t *testing.T, name string) {
	t.Helper()
	waitFor(t, "session "+name+" to have no client", 30*time.Second, func() bool {
		for _, s := range x.sessions(t) {
			if s.Box == x.box && s.Session == name {
				return s.Attached == 0
			}
		}
		return true // not listed: the caller's check says so
	})
}
