// Package lima is corral's typed client for limactl, the Lima command line.
//
// Every call runs limactl once and returns typed data or a *Error that carries argv, exit code and the
// message limactl printed, unwrapping to ErrNotFound / ErrNotInstalled where that is what happened.
// ReadInstanceDir is the one call that does not spawn limactl: the menu-bar app polls it every few seconds.
//
// Pinned to Lima 1.2.2 (PinnedVersion); CheckVersion refuses anything older than MinVersion.
package lima

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/hint"
)

// CommandFunc builds the command to run; exec.CommandContext is the default. Tests replace it to record argv.
type CommandFunc func(ctx context.Context, name string, arg ...string) *exec.Cmd

// Client runs limactl. The zero value runs "limactl" from PATH with the inherited LIMA_HOME.
type Client struct {
	// Limactl is the limactl binary: a path, or a name looked up in PATH. "" means "limactl".
	Limactl string
	// LimaHome is set as LIMA_HOME for every run; "" inherits the environment's (default ~/.lima).
	LimaHome string
	// Env is appended to the process environment (after LIMA_HOME), e.g. QEMU_SYSTEM_X86_64=/path/to/wrapper.
	Env []string
	// Command is the exec seam; nil means exec.CommandContext.
	Command CommandFunc
	// Logger receives one debug line per limactl run; nil discards.
	Logger *slog.Logger
}

// result is the captured output of one limactl run.
type result struct {
	stdout []byte
	stderr []byte
}

func (c *Client) limactl() string {
	if c.Limactl == "" {
		return "limactl"
	}
	return c.Limactl
}

func (c *Client) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Home returns the LIMA_HOME that limactl runs with: LimaHome, else LIMA_HOME from Env, else $LIMA_HOME,
// else ~/.lima.
func (c *Client) Home() (string, error) {
	if c.LimaHome != "" {
		return c.LimaHome, nil
	}
	for i := len(c.Env) - 1; i >= 0; i-- {
		if h, ok := strings.CutPrefix(c.Env[i], "LIMA_HOME="); ok && h != "" {
			return h, nil
		}
	}
	if h := os.Getenv("LIMA_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding LIMA_HOME: %w", err)
	}
	return filepath.Join(home, ".lima"), nil
}

// run executes limactl with args. A non-zero exit, a missing binary or a failure to start is a *Error.
func (c *Client) run(ctx context.Context, stdin io.Reader, args ...string) (result, error) {
	bin := c.limactl()
	argv := append([]string{bin}, args...)
	if !strings.ContainsRune(bin, os.PathSeparator) {
		if _, err := exec.LookPath(bin); err != nil {
			return result{}, &Error{Argv: argv, ExitCode: -1, err: fmt.Errorf("%w: %s not found in PATH", ErrNotInstalled, bin)}
		}
	}
	newCmd := c.Command
	if newCmd == nil {
		newCmd = exec.CommandContext
	}
	cmd := newCmd(ctx, bin, args...)
	cmd.Env = os.Environ()
	if c.LimaHome != "" {
		cmd.Env = append(cmd.Env, "LIMA_HOME="+c.LimaHome)
	}
	cmd.Env = append(cmd.Env, c.Env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr

	start := time.Now()
	err := cmd.Run()
	c.logger().DebugContext(ctx, "limactl", "argv", argv, "duration", time.Since(start), "err", err)
	res := result{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if err == nil {
		return res, nil
	}
	msg := stderrMessage(stderr.String())
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		e := &Error{Argv: argv, ExitCode: exitErr.ExitCode(), Stderr: msg}
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.err = ctxErr
		} else if isNotFound(msg) {
			e.err = ErrNotFound
		} else if strings.Contains(msg, "must not run as the root user") {
			e.err = ErrRoot
		}
		return res, e
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return res, &Error{Argv: argv, ExitCode: -1, err: fmt.Errorf("%w: %w", ErrNotInstalled, err)}
	}
	return res, &Error{Argv: argv, ExitCode: -1, Stderr: msg, err: err}
}

// Version runs `limactl --version`.
func (c *Client) Version(ctx context.Context) (Version, error) {
	res, err := c.run(ctx, nil, "--version")
	if err != nil {
		return Version{}, fmt.Errorf("getting limactl version: %w", err)
	}
	v, err := ParseVersion(string(res.stdout))
	if err != nil {
		return Version{}, fmt.Errorf("getting limactl version: %w", err)
	}
	return v, nil
}

// CheckVersion is the doctor check: limactl runs and is at least MinVersion. The error has a Hint.
func (c *Client) CheckVersion(ctx context.Context) (Version, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return Version{}, err
	}
	if v.Less(MinVersion) {
		err := fmt.Errorf("checking limactl version: %w: %s is older than %s", ErrTooOld, v, MinVersion)
		return v, hint.New(err, hintFor(ErrTooOld))
	}
	return v, nil
}

// listFormat asks `limactl list` for each instance as one JSON object through Lima's own template (json.Marshal),
// not through --json: Lima 2.x pipes --json through yq with a line scanner that fails on an instance over 64 KiB
// ("bufio.Scanner: token too long"), and a box's resolved config (its provision scripts) is near that. The objects
// are the same (--json only drops empty maps); Lima 1.2.2 has the same template function.
const listFormat = "{{json .}}"

// List runs `limactl list --format '{{json .}}'`: one JSON object per line, nothing at all when there are no
// instances.
func (c *Client) List(ctx context.Context) ([]Instance, error) {
	res, err := c.run(ctx, nil, "list", "--format", listFormat)
	if err != nil {
		return nil, fmt.Errorf("listing lima instances: %w", err)
	}
	insts, err := parseList(res.stdout)
	if err != nil {
		return nil, fmt.Errorf("listing lima instances: %w", err)
	}
	return insts, nil
}

// Get returns one instance; the error wraps ErrNotFound when it does not exist.
func (c *Client) Get(ctx context.Context, name string) (Instance, error) {
	if err := validName(name); err != nil {
		return Instance{}, fmt.Errorf("getting lima instance: %w", err)
	}
	res, err := c.run(ctx, nil, "list", "--format", listFormat, name)
	if err != nil {
		return Instance{}, fmt.Errorf("getting lima instance %q: %w", name, err)
	}
	insts, err := parseList(res.stdout)
	if err != nil {
		return Instance{}, fmt.Errorf("getting lima instance %q: %w", name, err)
	}
	for _, in := range insts {
		if in.Name == name {
			return in, nil
		}
	}
	return Instance{}, fmt.Errorf("getting lima instance %q: %w", name, ErrNotFound)
}

// Create runs `limactl create --tty=false --name NAME TEMPLATE` (the instance is created, not started).
func (c *Client) Create(ctx context.Context, name, templatePath string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("creating lima instance: %w", err)
	}
	if _, err := c.run(ctx, nil, "create", "--tty=false", "--name", name, templatePath); err != nil {
		return fmt.Errorf("creating lima instance %q from %s: %w", name, templatePath, err)
	}
	return nil
}

// Start runs `limactl start --tty=false [--timeout T] NAME` and returns once the instance is READY.
// timeout 0 keeps Lima's default (10m in 1.2.2). The instance must exist (Create): `limactl start NAME` of an
// unknown name would create one from Lima's default template, so Start checks LIMA_HOME first and returns
// ErrNotFound instead.
func (c *Client) Start(ctx context.Context, name string, timeout time.Duration) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("starting lima instance: %w", err)
	}
	home, err := c.Home()
	if err != nil {
		return fmt.Errorf("starting lima instance %q: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(home, name, fileLimaYAML)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("starting lima instance %q: %w in %s", name, ErrNotFound, home)
	}
	args := []string{"start", "--tty=false"}
	if timeout > 0 {
		args = append(args, "--timeout", timeout.String())
	}
	args = append(args, name)
	if _, err := c.run(ctx, nil, args...); err != nil {
		return fmt.Errorf("starting lima instance %q: %w", name, err)
	}
	return nil
}

// Stop runs `limactl stop [--force] NAME`.
func (c *Client) Stop(ctx context.Context, name string, force bool) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("stopping lima instance: %w", err)
	}
	args := []string{"stop"}
	if force {
		args = append(args, "--force")
	}
	args = append(args, name)
	if _, err := c.run(ctx, nil, args...); err != nil {
		return fmt.Errorf("stopping lima instance %q: %w", name, err)
	}
	return nil
}

// Delete runs `limactl delete [--force] NAME`. Without force a running instance is refused.
// Deleting an instance that does not exist succeeds (limactl only warns).
func (c *Client) Delete(ctx context.Context, name string, force bool) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("deleting lima instance: %w", err)
	}
	args := []string{"delete"}
	if force {
		args = append(args, "--force")
	}
	args = append(args, name)
	if _, err := c.run(ctx, nil, args...); err != nil {
		return fmt.Errorf("deleting lima instance %q: %w", name, err)
	}
	return nil
}

// Clone runs `limactl clone --tty=false SRC DST`. SRC must be stopped ("cannot clone a running instance");
// the clone is left stopped.
func (c *Client) Clone(ctx context.Context, src, dst string) error {
	for _, n := range []string{src, dst} {
		if err := validName(n); err != nil {
			return fmt.Errorf("cloning lima instance: %w", err)
		}
	}
	if _, err := c.run(ctx, nil, "clone", "--tty=false", src, dst); err != nil {
		return fmt.Errorf("cloning lima instance %q to %q: %w", src, dst, err)
	}
	return nil
}

// SnapshotCreate runs `limactl snapshot create --tag TAG NAME` (qemu driver only). With a 9p mount, qemu
// cannot snapshot a running instance (savevm is a migration); stop it first. That failure, which limactl 1.2.2
// reports with exit 0, is returned as an *Error with ExitCode 0.
func (c *Client) SnapshotCreate(ctx context.Context, name, tag string) error {
	return c.snapshot(ctx, "create", "creating", name, tag)
}

// SnapshotApply runs `limactl snapshot apply --tag TAG NAME` (qemu driver only).
func (c *Client) SnapshotApply(ctx context.Context, name, tag string) error {
	return c.snapshot(ctx, "apply", "applying", name, tag)
}

// SnapshotDelete runs `limactl snapshot delete --tag TAG NAME` (qemu driver only).
func (c *Client) SnapshotDelete(ctx context.Context, name, tag string) error {
	return c.snapshot(ctx, "delete", "deleting", name, tag)
}

func (c *Client) snapshot(ctx context.Context, sub, verb, name, tag string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("%s snapshot: %w", verb, err)
	}
	if tag == "" {
		return fmt.Errorf("%s snapshot of lima instance %q: empty tag", verb, name)
	}
	argv := []string{"snapshot", sub, "--tag", tag, name}
	res, err := c.run(ctx, nil, argv...)
	if err == nil {
		// 1.2.2 passes qemu's monitor errors on as a warning ("output: Error: ...") and exits 0, e.g. savevm of a
		// running instance with a 9p mount ("Migration is disabled when VirtFS export path ... is mounted").
		if msg, ok := monitorError(string(res.stderr)); ok {
			err = &Error{Argv: append([]string{c.limactl()}, argv...), ExitCode: 0, Stderr: msg}
		}
	}
	if err != nil {
		return fmt.Errorf("%s snapshot %q of lima instance %q: %w", verb, tag, name, err)
	}
	return nil
}

// monitorError finds a qemu monitor error that limactl logged as a warning.
func monitorError(stderr string) (string, bool) {
	for _, l := range strings.Split(stderr, "\n") {
		if _, msg, ok := parseLogrus(l); ok {
			if rest, found := strings.CutPrefix(msg, "output: Error: "); found {
				return rest, true
			}
		}
	}
	return "", false
}

// SnapshotList runs `limactl snapshot list --quiet NAME` and returns the tags.
func (c *Client) SnapshotList(ctx context.Context, name string) ([]string, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("listing snapshots: %w", err)
	}
	res, err := c.run(ctx, nil, "snapshot", "list", "--quiet", name)
	if err != nil {
		return nil, fmt.Errorf("listing snapshots of lima instance %q: %w", name, err)
	}
	var tags []string
	for _, l := range strings.Split(string(res.stdout), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			tags = append(tags, l)
		}
	}
	return tags, nil
}

// Validate runs `limactl validate PATH`.
func (c *Client) Validate(ctx context.Context, path string) error {
	if _, err := c.run(ctx, nil, "validate", path); err != nil {
		return fmt.Errorf("validating lima template %s: %w", path, err)
	}
	return nil
}

// ShellArgs returns the argv for `limactl shell --workdir / NAME COMMAND...` (argv[0] is the limactl path).
// --workdir / stops Lima from trying to cd into the host's cwd inside the guest.
func (c *Client) ShellArgs(name string, command ...string) []string {
	return append([]string{c.limactl(), "shell", "--workdir", "/", name}, command...)
}

// SSHOptions adjusts SSHArgs.
type SSHOptions struct {
	// SendEnv patterns (ssh -o SendEnv=...), e.g. "CORRAL_FWD_*"; sshd must have a matching AcceptEnv.
	SendEnv []string
	// NoMultiplex opens a fresh connection instead of Lima's ControlMaster. Required with SendEnv unless
	// ControlPath is set: Lima's master has no SendEnv of its own, and an OpenSSH master forwards only the
	// variables its own SendEnv allows, so they would be silently dropped.
	NoMultiplex bool
	// ControlPath multiplexes over a master the caller runs on that socket (started with the same SendEnv
	// patterns), as a client only (ControlMaster=no). When nothing listens there ssh connects afresh.
	ControlPath string
}

// SSHArgs returns `ssh -F LIMA_HOME/NAME/ssh.config [options] lima-NAME`; append the remote command.
// Lima's ssh.config names the host "lima-NAME" (1.2.2) and carries user, key, port and ControlMaster.
func (c *Client) SSHArgs(name string, opt SSHOptions) ([]string, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("building ssh command: %w", err)
	}
	home, err := c.Home()
	if err != nil {
		return nil, fmt.Errorf("building ssh command for %q: %w", name, err)
	}
	argv := []string{"ssh", "-F", filepath.Join(home, name, "ssh.config")}
	switch {
	case opt.ControlPath != "":
		argv = append(argv, "-o", "ControlMaster=no", "-o", "ControlPath="+opt.ControlPath)
	case opt.NoMultiplex || len(opt.SendEnv) > 0:
		argv = append(argv, "-o", "ControlMaster=no", "-o", "ControlPath=none")
	}
	for _, e := range opt.SendEnv {
		argv = append(argv, "-o", "SendEnv="+e)
	}
	return append(argv, "lima-"+name), nil
}

// validName rejects names that would escape LIMA_HOME or that Lima reserves ("_config", "_disks", ...).
func validName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") {
		return fmt.Errorf("invalid lima instance name %q", name)
	}
	return nil
}

// parseList decodes limactl's NDJSON list output.
func parseList(b []byte) ([]Instance, error) {
	var out []Instance
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var in Instance
		err := dec.Decode(&in)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding limactl list output (instance %d): %w", len(out)+1, err)
		}
		out = append(out, in)
	}
}
