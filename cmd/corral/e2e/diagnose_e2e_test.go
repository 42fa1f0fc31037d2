//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// Failure diagnostics. When a test or subtest that drove a box fails, the
// suite prints the tail of what explains a VM test's failure and keeps the
// files in a directory that outlives the run (e2e.sh deletes its work
// dir, and with it CORRAL_HOME):
//
//   - Lima's instance dir: serial*.log (the guest console: boot,
//     cloud-init, provision scripts), ha.stdout.log and ha.stderr.log (the
//     host agent: port forwards, mounts, "DEGRADED").
//   - corral's logs: broker-BOX.log, egress-BOX.jsonl, audit.jsonl,
//     sessions.jsonl, and the box's metadata.
//   - The guest's corral units, when the VM runs: systemctl status of
//     corral-*, the ready flags corral-launch checks (/run/corral/ready),
//     their journal and cloud-init's output, through a raw ssh (corral run
//     refuses a session exactly when a unit has failed).
//   - corral doctor BOX --offline.
//
// When: at the end of each failed subtest (the box still runs: the tests
// remove it with a deferred `corral rm -f` in the top-level test), and
// before a `corral rm` of a box whose top-level test failed with no
// diagnosis yet (a failure in the test's own body, such as `corral up`).
// A deferred rm runs before the top-level test's Cleanup functions, so the
// hook sits in the helper that runs rm, not in a Cleanup. A passing run
// costs two map lookups per corral command.
//
// Files are kept under $CORRAL_E2E_KEEP (default the temp dir), in a
// fresh corral-e2e-failed-<time>-* directory per run, one subdirectory per
// failed test and box.

const (
	diagTailLines = 60
	diagFileCap   = 8 << 20 // bytes kept of each file (its end)
	diagTailCap   = 256 << 10
	// diagMaxPerBox caps the diagnoses of one box in one top-level test:
	// when a box dies early,
	// every later subtest fails, and each diagnosis costs up to
	// diagSSHTimeout + diagDoctorTimeout against the CI's time limit.
	diagMaxPerBox     = 3
	diagSSHTimeout    = 45 * time.Second
	diagDoctorTimeout = 90 * time.Second
)

// diagGuestScript runs in the box over ssh. Journal and cloud-init's log
// need root: sudo -n fails quietly in a box without sudo.
const diagGuestScript = `echo '$ systemctl status corral-*'
systemctl --no-pager --full status 'corral-*' 2>&1
echo '$ ls -la /run/corral/ready'
ls -la /run/corral/ready 2>&1
echo '$ journalctl -u corral-* (last 80)'
sudo -n journalctl --no-pager -n 80 -u 'corral-*' 2>&1 || journalctl --no-pager -n 80 -u 'corral-*' 2>&1
echo '$ tail -n 60 /var/log/cloud-init-output.log'
sudo -n tail -n 60 /var/log/cloud-init-output.log 2>&1 || tail -n 60 /var/log/cloud-init-output.log 2>&1`

// diagBox is what a diagnosis needs of an h, copied when the h is seen
// (tests swap x.t and may build more than one h per test).
type diagBox struct {
	bin, home, project, box string
	env                     []string
}

func boxOf(x *h) diagBox {
	return diagBox{bin: x.bin, home: x.home, project: x.project, box: x.box, env: x.env}
}

type diagnostics struct {
	mu      sync.Mutex
	dir     string                         // this run's directory, made at the first failure
	roots   map[string]*testing.T          // top-level tests by name
	boxes   map[string]map[string]diagBox  // top-level test -> box -> how to reach it
	watched map[*testing.T]map[string]bool // subtest -> boxes whose Cleanup is registered
	count   map[string]int                 // top-level test + "/" + box -> diagnoses so far
}

var diag = &diagnostics{
	roots:   map[string]*testing.T{},
	boxes:   map[string]map[string]diagBox{},
	watched: map[*testing.T]map[string]bool{},
	count:   map[string]int{},
}

// rootName is the top-level test of a test or subtest name.
func rootName(name string) string {
	root, _, _ := strings.Cut(name, "/")
	return root
}

// root registers t, a top-level test (setup calls it), and diagnoses, at
// its end, the boxes it used that failed without a diagnosis and were
// never removed through corral rm.
func (d *diagnostics) root(t *testing.T) {
	d.mu.Lock()
	d.roots[t.Name()] = t
	d.mu.Unlock()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		d.mu.Lock()
		var todo []diagBox
		for _, b := range d.boxes[t.Name()] {
			if d.count[t.Name()+"/"+b.box] == 0 {
				todo = append(todo, b)
			}
		}
		d.mu.Unlock()
		for _, b := range todo {
			d.diagnose(t, b, t.Name())
		}
	})
}

// command is called by h before every corral command args it runs.
func (d *diagnostics) command(x *h, args []string) {
	if x.box == "" {
		return
	}
	t, b := x.t, boxOf(x)
	name := t.Name()
	d.mu.Lock()
	root := d.roots[rootName(name)]
	if d.boxes[rootName(name)] == nil {
		d.boxes[rootName(name)] = map[string]diagBox{}
	}
	d.boxes[rootName(name)][b.box] = b
	removing := len(args) > 0 && args[0] == "rm"
	register := !removing && strings.Contains(name, "/") && !d.watched[t][b.box]
	if register {
		if d.watched[t] == nil {
			d.watched[t] = map[string]bool{}
		}
		d.watched[t][b.box] = true
	}
	first := d.count[rootName(name)+"/"+b.box] == 0
	d.mu.Unlock()
	if register {
		t.Cleanup(func() {
			if t.Failed() {
				d.diagnose(t, b, t.Name())
			}
		})
	}
	if removing && first && root != nil && root.Failed() {
		d.diagnose(root, b, root.Name()+" (before corral rm)")
	}
}

// diagnose prints and keeps what explains a failure of test about box b,
// logging to t.
func (d *diagnostics) diagnose(t *testing.T, b diagBox, test string) {
	key := rootName(t.Name()) + "/" + b.box
	d.mu.Lock()
	d.count[key]++
	n := d.count[key]
	if d.dir == "" {
		d.dir = keepDir(os.Getenv("CORRAL_E2E_KEEP"))
	}
	run := d.dir
	d.mu.Unlock()
	if n > diagMaxPerBox {
		t.Logf("diagnostics of box %s: skipped (%d already printed; the box failed earlier)", b.box, diagMaxPerBox)
		return
	}
	keep := ""
	if run != "" {
		keep = filepath.Join(run, safeName(test), b.box)
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Logf("diagnostics: %v", err)
			keep = ""
		}
	}
	t.Log(report(b, test, keep))
}

// keepDir makes this run's directory under base (default the temp dir),
// or returns "" when it cannot.
func keepDir(base string) string {
	if base == "" {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return ""
	}
	dir, err := os.MkdirTemp(base, "corral-e2e-failed-"+time.Now().Format("20060102-150405")+"-")
	if err != nil {
		return ""
	}
	return dir
}

// report collects the diagnostics of box b into keep (when not "") and
// returns what to print.
func report(b diagBox, test, keep string) string {
	var out strings.Builder
	fmt.Fprintf(&out, "=== diagnostics of box %s after %s failed (files: %s) ===\n", b.box, test, orNone(keep))

	l := paths.Layout{Home: b.home}
	inst := filepath.Join(l.LimaHome(), b.box)
	serial, _ := filepath.Glob(filepath.Join(inst, "serial*.log"))
	files := append(serial, filepath.Join(inst, "ha.stdout.log"), filepath.Join(inst, "ha.stderr.log"), l.BrokerLog(b.box))
	for _, p := range files {
		keepFile(&out, keep, p, true)
	}
	for _, p := range []string{l.EgressLog(b.box), l.AuditLog(), l.SessionsLog(), l.BoxMeta(b.box), filepath.Join(inst, "lima.yaml")} {
		keepFile(&out, keep, p, false)
	}

	st, err := lima.ReadInstanceDir(l.LimaHome(), b.box)
	switch {
	case err != nil:
		fmt.Fprintf(&out, "--- instance: %v\n", err)
	case st.Status != lima.StatusRunning:
		fmt.Fprintf(&out, "--- instance: %s %s (no guest units to ask)\n", st.Status, st.Reason)
	default:
		ssh := []string{"-F", filepath.Join(inst, "ssh.config"), "-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
			"-o", "ControlMaster=no", "-o", "ControlPath=none", "lima-" + b.box, diagGuestScript}
		res := runFor(diagSSHTimeout, b.env, "ssh", ssh...)
		section(&out, keep, "guest-units.txt", "guest units (ssh)", res)
	}
	res := runFor(diagDoctorTimeout, b.env, b.bin, "-C", b.project, "doctor", b.box, "--offline")
	section(&out, keep, "doctor.txt", "corral doctor "+b.box+" --offline", res)
	return out.String()
}

// keepFile copies the end of p into keep and, when show, appends its last
// lines to out. A missing file is one line.
func keepFile(out *strings.Builder, keep, p string, show bool) {
	b, err := untrusted.ReadTail(p, diagFileCap)
	if err != nil {
		if show {
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(out, "--- %s: absent\n", p)
			} else {
				fmt.Fprintf(out, "--- %s: %v\n", p, err)
			}
		}
		return
	}
	if keep != "" {
		_ = os.WriteFile(filepath.Join(keep, filepath.Base(p)), b, 0o644)
	}
	if show {
		fmt.Fprintf(out, "--- %s (last %d lines) ---\n%s", p, diagTailLines, tail(b, diagTailLines))
	}
}

// section appends a command's output to out and keeps it as name.
func section(out *strings.Builder, keep, name, title string, res []byte) {
	if keep != "" {
		_ = os.WriteFile(filepath.Join(keep, name), res, 0o644)
	}
	fmt.Fprintf(out, "--- %s (last %d lines) ---\n%s", title, diagTailLines, tail(res, diagTailLines))
}

// runFor runs name with args for at most d and returns its combined
// output with a last line saying how it ended.
func runFor(d time.Duration, env []string, name string, args ...string) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second // a child holding the pipes open does not hold the diagnosis
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s: %w", d, err)
	}
	fmt.Fprintf(&buf, "\n[%s: %v]\n", filepath.Base(name), orOK(err))
	return buf.Bytes()
}

// tail returns the last n lines of b (read from at most diagTailCap bytes
// at its end), each escaped for display: the box writes the serial log.
func tail(b []byte, n int) string {
	if len(b) > diagTailCap {
		b = b[len(b)-diagTailCap:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var s strings.Builder
	for _, l := range lines {
		s.WriteString(display.Text(strings.TrimRight(l, "\r"), 400))
		s.WriteByte('\n')
	}
	return s.String()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a test name into one path element.
func safeName(s string) string {
	s = strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "not kept"
	}
	return s
}

func orOK(err error) any {
	if err == nil {
		return "exit 0"
	}
	return err
}

// TestDiagnosticsReport checks the report on a made-up stopped box (no VM,
// no CORRAL_E2E): the tails printed escaped, the files kept, a missing
// log named.
func TestDiagnosticsReport(t *testing.T) {
	home := t.TempDir()
	l := paths.Layout{Home: home}
	inst := filepath.Join(l.LimaHome(), "bx")
	must(t, os.MkdirAll(inst, 0o755))
	must(t, os.MkdirAll(l.LogsDir(), 0o755))
	var serial strings.Builder
	for i := range 100 {
		fmt.Fprintf(&serial, "line %d\n", i)
	}
	serial.WriteString("\x1b]0;title\x07provision failed\r\n")
	for p, body := range map[string]string{
		filepath.Join(inst, "lima.yaml"):     "vmType: qemu\n",
		filepath.Join(inst, "serial.log"):    serial.String(),
		filepath.Join(inst, "ha.stderr.log"): "DEGRADED\n",
		l.BrokerLog("bx"):                    "broker up\n",
	} {
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	keep := t.TempDir()
	got := report(diagBox{bin: "true", home: home, project: home, box: "bx"}, "TestX/sub", keep)
	for _, want := range []string{
		"line 99\n", `\x1b]0;title\x07provision failed` + "\n", "DEGRADED\n", "broker up\n",
		filepath.Join(inst, "ha.stdout.log") + ": absent", "instance: Stopped", "[true: exit 0]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "line 40\n") || !strings.Contains(got, "line 41\n") { // 101 lines
		t.Errorf("report does not hold exactly the last %d lines:\n%s", diagTailLines, got)
	}
	for _, f := range []string{"serial.log", "ha.stderr.log", "broker-bx.log", "lima.yaml", "doctor.txt"} {
		if _, err := os.Stat(filepath.Join(keep, f)); err != nil {
			t.Errorf("not kept: %v", err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(keep, "serial.log")); string(b) != serial.String() {
		t.Errorf("kept serial.log differs from the original")
	}
}
