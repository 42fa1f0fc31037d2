package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/version"
)

// Quote quotes s for a POSIX shell: inside single quotes every byte is
// literal but the single quote, which is closed, escaped and reopened.
// The remote user's login shell must be POSIX (sh, dash, bash, zsh,
// ksh): ssh hands the command line to it as one string, and csh or fish
// read quotes differently (docs/REMOTE.md).
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Invocation is one run of the remote corral.
type Invocation struct {
	// Args are corral's arguments on the remote side, without the binary.
	Args []string
	// TTY asks ssh for a terminal on the remote side (-t): set when the
	// local stdin and stdout are terminals, so an agent or a shell draws as
	// it does locally. Otherwise -T: bytes pass through untouched (a remote
	// terminal would turn "\n" into "\r\n" in output piped to a file).
	TTY bool
	// Batch forbids ssh to ask anything (-o BatchMode=yes): for the menu,
	// which has no terminal to answer a password, passphrase or host key
	// prompt on (without it ssh may open an askpass window at every
	// refresh). A host that needs an answer fails as unreachable; ssh HOST
	// once in a terminal settles it. Host keys stay checked: an unknown
	// key is refused, not accepted.
	Batch bool
	// Relay, when set, forwards the laptop's credential relay to the
	// session (relay.go): Runner.Run fills in its socket on the host.
	Relay *RelayForward
	// ControlPath, when set, shares one ssh connection per host between
	// invocations (Runner.ControlDir, ControlPath): the first starts a
	// master that stays ControlPersist after the last use.
	ControlPath string
}

// ControlPersist is how long a shared connection (Invocation.ControlPath)
// stays after its last use: longer than the menu's longest wait between
// reads of a healthy host, so a key that needs a touch is touched once.
const ControlPersist = "10m"

// maxSocketPath is the longest Unix socket path the platforms corral
// runs on accept (macOS: 104 bytes with the NUL; Linux allows 108), less
// the ".XXXXXXXXXXXXXXXX" ssh appends to a control path while it creates
// the master.
const maxSocketPath = 103 - 17

// ControlPath is the control socket of host under dir ("" when dir is ""
// or the path would be too long for a Unix socket: the host is then read
// over a connection per command, as before). '%' is doubled: ssh expands
// %-tokens in ControlPath.
func ControlPath(dir, host string) string {
	if dir == "" || host == "" {
		return ""
	}
	p := dir + "/" + host
	if len(p) > maxSocketPath {
		return ""
	}
	return strings.ReplaceAll(p, "%", "%%")
}

// SSHArgv is ssh's argv (without the ssh binary itself) for inv on h. It
// is pure: the same host and invocation always give the same argv.
//
//   - -F only when the host names an ssh config; -p only with a port;
//   - -t or -T, never both, never -tt (a terminal is asked for only when
//     there is one to pass through);
//   - -o BatchMode=yes only for a Batch invocation (the menu's);
//   - the control master options only with a ControlPath (the menu's
//     runner: one connection per host shared by its reads);
//   - -e none: no escape character, so "~." in an agent's input is data;
//   - "--" before the destination, which ParseURL already keeps from
//     starting with '-';
//   - the remote command as ONE argument: ssh joins its command arguments
//     with spaces and the remote shell parses the result, so each word is
//     quoted here (Quote) and the string is exactly what the shell reads.
//     The remote corral always gets --host local first: it runs there,
//     whatever that side's own config says, and never forwards again.
func SSHArgv(h Host, inv Invocation) []string {
	argv := []string{}
	if h.SSHConfig != "" {
		argv = append(argv, "-F", h.SSHConfig)
	}
	if h.Target.Port != 0 {
		argv = append(argv, "-p", strconv.Itoa(h.Target.Port))
	}
	if inv.TTY {
		argv = append(argv, "-t")
	} else {
		argv = append(argv, "-T")
	}
	if inv.Batch {
		argv = append(argv, "-o", "BatchMode=yes")
	}
	if inv.ControlPath != "" {
		argv = append(argv, "-o", "ControlMaster=auto", "-o", "ControlPath="+inv.ControlPath, "-o", "ControlPersist="+ControlPersist)
	}
	argv = append(argv, relayArgv(inv.Relay)...)
	argv = append(argv, "-e", "none", "--", h.Target.Destination(), remoteCommand(h, inv.Relay, inv.Args))
	return argv
}

// RemoteCommand is the command line the remote shell runs: the remote
// corral, --host local, then args, each word quoted.
func RemoteCommand(h Host, args []string) string { return remoteCommand(h, nil, args) }

// remoteCommand is RemoteCommand with the relay's flags after --host
// local when there is one.
func remoteCommand(h Host, relay *RelayForward, args []string) string {
	bin := h.Corral
	if bin == "" {
		bin = "corral"
	}
	words := make([]string, 0, len(args)+7)
	words = append(words, Quote(bin), "--host", Local)
	words = append(words, relayWords(relay)...)
	for _, a := range args {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " ")
}

// Build is the version a corral reports with `corral version --json`.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// LocalBuild is this binary's build.
func LocalBuild() Build { return Build{Version: version.Version, Commit: version.Commit} }

func (b Build) String() string { return fmt.Sprintf("%s (commit %s)", b.Version, b.Commit) }

// VersionMismatchError: the remote host runs another corral. Both sides
// must be the same build: the remote side parses the argv this side
// checked, and prints what this side's user reads.
type VersionMismatchError struct {
	Host          string
	Local, Remote Build
}

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("host %s runs corral %s, this is corral %s: refusing to run a command there", e.Host, e.Remote, e.Local)
}

// Hint says what to do.
func (e *VersionMismatchError) Hint() string {
	return fmt.Sprintf("install corral %s on %s, or point at it: corral host add --force --corral /PATH/TO/corral %s URL", e.Local.Version, e.Host, e.Host)
}

// ErrUnreachable: ssh itself failed (exit 255): the host, the network or
// the login, not the command.
var ErrUnreachable = errors.New("cannot reach the host over ssh")

// maxVersionOutput caps what the version check reads back.
const maxVersionOutput = 4 << 10

// Exec runs a command; the default is exec.CommandContext's Run. Tests
// replace it to record argv.
type Exec func(ctx context.Context, name string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (exitCode int, err error)

// Runner runs the remote corral over the system ssh client.
type Runner struct {
	SSH  string // the ssh binary; "" = "ssh" from PATH
	Exec Exec   // nil = run it
	// Batch makes every ssh of this runner a Batch invocation (the menu's).
	Batch bool
	// ControlDir, when set, makes the version checks and Output calls of
	// this runner share one ssh connection per host: a control master
	// whose socket is ControlPath(ControlDir, host name). The directory is
	// created 0700 (a control socket lets anyone who can open it run
	// commands on the host as this user). For the menu: its reads of one
	// host are a version check, a listing and a read per box, every
	// period; with a key that needs a touch, each new connection asks for
	// one. Sessions never use it (SendEnv through a master is dropped).
	ControlDir string
}

// control is the control path of h for this runner ("" for none), with
// its directory made.
func (r Runner) control(h Host) string {
	p := ControlPath(r.ControlDir, h.Name)
	if p == "" {
		return ""
	}
	if err := os.MkdirAll(r.ControlDir, 0o700); err != nil {
		return ""
	}
	if err := os.Chmod(r.ControlDir, 0o700); err != nil {
		return ""
	}
	return p
}

func (r Runner) exec(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	bin := r.SSH
	if bin == "" {
		bin = "ssh"
	}
	if r.Exec != nil {
		return r.Exec(ctx, bin, argv, stdin, stdout, stderr)
	}
	if r.Batch && stdin == nil {
		// The menu's version check: nobody to pass signals from, and its
		// deadline must hold (see outputCmd).
		return outputCmd(ctx, bin, argv, stdout, stderr)
	}
	return runCmd(ctx, bin, argv, stdin, stdout, stderr)
}

// runCmd runs ssh and waits for it. An interrupt or a termination corral
// receives meanwhile is passed to ssh, not acted on: ssh ends the remote
// command its own way, and corral returns ssh's exit code.
func runCmd(ctx context.Context, bin string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, bin, argv...)
	// An *os.File (the terminal) is handed to ssh as its own fd, so ssh can
	// put it in raw mode for -t; other readers are copied.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	err := cmd.Start()
	if err == nil {
		done := make(chan struct{})
		go func() {
			for {
				select {
				case s := <-sig:
					_ = cmd.Process.Signal(s)
				case <-done:
					return
				}
			}
		}()
		err = cmd.Wait()
		close(done)
	}
	return exitCode(bin, err)
}

// CheckVersion runs `corral version --json` on h and returns an error
// unless it reports this binary's version and commit.
func (r Runner) CheckVersion(ctx context.Context, h Host) error {
	_, err := r.checkVersion(ctx, h)
	return err
}

// checkVersion is CheckVersion that also returns the run directory the
// remote corral reported ("" when none: the relay's socket goes there).
func (r Runner) checkVersion(ctx context.Context, h Host) (string, error) {
	var out, errOut capped
	out.max, errOut.max = maxVersionOutput, maxVersionOutput
	code, err := r.exec(ctx, SSHArgv(h, Invocation{Args: []string{"version", "--json"}, Batch: r.Batch, ControlPath: r.control(h)}), nil, &out, &errOut)
	if err != nil {
		return "", fmt.Errorf("checking corral's version on host %s: %w", h.Name, err)
	}
	first := firstLine(errOut.String())
	switch {
	case code == 255:
		return "", hint.New(fmt.Errorf("host %s (%s): %w: %s", h.Name, h.URL, ErrUnreachable, first), "try: ssh "+h.Target.Destination())
	case code == 127:
		return "", hint.New(fmt.Errorf("host %s: corral is not installed there (%s)", h.Name, first),
			fmt.Sprintf("install corral %s on %s, or give its path: corral host add --force --corral /PATH/TO/corral %s %s", version.Version, h.Name, h.Name, h.URL))
	case code != 0:
		return "", fmt.Errorf("host %s: corral version --json exited %d: %s", h.Name, code, first)
	}
	var reply struct {
		Build
		RunDir string `json:"run_dir"`
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	err = dec.Decode(&reply)
	got := reply.Build
	if err != nil || got.Version == "" {
		return "", fmt.Errorf("host %s: corral version --json printed no version (is it corral?): %s", h.Name, strconv.QuoteToASCII(cut(out.String(), 80)))
	}
	if local := LocalBuild(); got != local {
		got.Version, got.Commit = cut(got.Version, 64), cut(got.Commit, 64)
		return "", &VersionMismatchError{Host: h.Name, Local: local, Remote: got}
	}
	return reply.RunDir, nil
}

// Run checks the remote version, then runs inv there with stdio passed
// through, and returns the remote corral's exit code. ssh's own failures
// (exit 255) are ErrUnreachable; the remote command's 255 reads the same,
// which is ssh's contract, not corral's.
func (r Runner) Run(ctx context.Context, h Host, inv Invocation, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	runDir, err := r.checkVersion(ctx, h)
	if err != nil {
		return 0, err
	}
	return r.RunChecked(ctx, h, runDir, inv, stdin, stdout, stderr)
}

// VersionRunDir is CheckVersion that also returns the run directory the
// remote corral reported, for RunChecked after other exchanges (a project
// sent first) with no second check.
func (r Runner) VersionRunDir(ctx context.Context, h Host) (string, error) {
	return r.checkVersion(ctx, h)
}

// RunChecked runs inv on h, whose version check reported runDir: the
// relay's socket, when inv has one, is placed there.
func (r Runner) RunChecked(ctx context.Context, h Host, runDir string, inv Invocation, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if inv.Relay != nil {
		f := *inv.Relay
		if err := placeRelay(h, runDir, &f); err != nil {
			return 0, err
		}
		inv.Relay = &f
	}
	return r.Command(ctx, h, inv, stdin, stdout, stderr)
}

// ErrOutputTooLarge: a command printed more than its reader's cap.
var ErrOutputTooLarge = errors.New("printed more than the cap")

// Output runs the remote corral with args on h, with no input and no
// terminal, and returns what it printed on stdout: at most max bytes,
// more is ErrOutputTooLarge, never a silent cut (a cut document may still
// parse). The bytes are the remote host's, hostile to this side: the
// caller decodes them strictly.
//
// Output does not check the version: a caller reading several things from
// one host calls CheckVersion once first. ssh's own failure (exit 255)
// wraps ErrUnreachable; another non-zero exit names the command and the
// line of its stderr that says why (errorLine), quoted. When ctx ends, ssh is killed and its
// pipes are closed within a second, even if something ssh started still
// holds them: a slow host costs its reader its deadline, no more.
func (r Runner) Output(ctx context.Context, h Host, args []string, max int) ([]byte, error) {
	var out capped
	var errOut tail
	out.max, errOut.max = max, maxVersionOutput
	argv := SSHArgv(h, Invocation{Args: args, Batch: r.Batch, ControlPath: r.control(h)})
	bin := r.SSH
	if bin == "" {
		bin = "ssh"
	}
	var code int
	var err error
	if r.Exec != nil {
		code, err = r.Exec(ctx, bin, argv, nil, &out, &errOut)
	} else {
		code, err = outputCmd(ctx, bin, argv, &out, &errOut)
	}
	what := "corral"
	if len(args) > 0 {
		what += " " + args[0]
	}
	first := strconv.QuoteToASCII(errorLine(errOut.String()))
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("host %s: %s: %w", h.Name, what, ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("host %s: %s: %w", h.Name, what, err)
	case code == 255:
		return nil, fmt.Errorf("host %s (%s): %w: %s", h.Name, h.URL, ErrUnreachable, first)
	case code != 0:
		return nil, fmt.Errorf("host %s: %s exited %d: %s", h.Name, what, code, first)
	case out.over:
		return nil, fmt.Errorf("host %s: %s %w (%d bytes)", h.Name, what, ErrOutputTooLarge, max)
	}
	return out.Bytes(), nil
}

// outputCmd runs ssh for Output: no stdin, no signal passing (nobody
// types at it), and WaitDelay so that a killed ssh whose pipes something
// else still holds does not keep Wait waiting.
func outputCmd(ctx context.Context, bin string, argv []string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return exitCode(bin, err)
}

// capped keeps the first max bytes written and drops the rest, noting
// that it did (over). The buffer is a field, not embedded: an embedded
// bytes.Buffer would lend capped its ReadFrom, which io.Copy (exec's
// pipe reader) prefers to Write, and the cap would never apply.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	if len(p) > room {
		c.over = true
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte  { return c.buf.Bytes() }
func (c *capped) String() string { return c.buf.String() }

// tail keeps the last max bytes written: corral prints its error at the
// end of stderr, after any progress.
type tail struct {
	b   []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }

// errorLine is the line of a failed command's stderr that says why: the
// last "corral: ..." line (corral's own error, printed last but for its
// hints), else the first line (ssh's, or a shell's).
func errorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "corral: "); ok {
			return strings.TrimSpace(cut(msg, 200))
		}
	}
	return firstLine(s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(cut(s, 200))
}

// exitCode is the exit code of a finished bin from its Wait error: the
// code it exited with, or -1 and an error when it did not run or was
// killed by a signal.
func exitCode(bin string, err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("running %s: %w", bin, err)
	}
	return 0, nil
}
