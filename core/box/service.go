// Package box is the lifecycle service shared by the CLI and the menu-bar
// app: it resolves a project to its box, loads the box's layered config,
// renders its Lima template, and creates, starts, stops and removes boxes.
package box

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/hostbin"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/progress"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/qemuwrap"
)

// StartTimeout bounds one limactl start (a TCG boot takes about a minute).
const StartTimeout = 15 * time.Minute

// Service is the box lifecycle shared by the CLI and the app.
type Service struct {
	Layout   paths.Layout
	Lima     *lima.Client
	Exe      string // the corral binary: brokers and the qemu shim run it
	Logger   *slog.Logger
	Actor    audit.Actor
	Progress io.Writer // short human progress lines; nil discards
	// ProgressTTY says Progress is a terminal: a long step (a boot) is one
	// updating line there (core/progress).
	ProgressTTY bool
	Now         func() time.Time
	// GuestCommand builds the ssh process of a non-interactive guest
	// command (corral pull); nil = exec.CommandContext. Tests run the
	// guest script locally instead.
	GuestCommand func(ctx context.Context, argv []string) *exec.Cmd
	// AvailableMemory reads the host's available memory for the
	// low-memory rule; nil = hostinfo.Available. Tests simulate pressure.
	AvailableMemory func() (uint64, error)
}

// NewService prepares the state directory and the Lima client. It refuses
// root: Lima does, and a root-owned state dir would lock the user out.
func NewService(l paths.Layout, exe string, logger *slog.Logger, actor audit.Actor) (*Service, error) {
	if err := lima.RefuseRoot(); err != nil {
		return nil, err
	}
	if err := l.Ensure(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Service{Layout: l, Exe: exe, Logger: logger, Actor: actor, Now: time.Now}
	env := []string{"CORRAL_HOME=" + l.Home}
	// Linux always runs qemu; macOS only with vm_type = "qemu" (vz ignores it).
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		shim, err := s.qemuShim()
		if err != nil {
			return nil, err
		}
		env = append(env, "QEMU_SYSTEM_"+strings.ToUpper(qemuArch())+"="+shim)
	}
	if runtime.GOOS == "darwin" {
		// Lima finds UEFI firmware next to the qemu it runs, which is the
		// shim: point run/share/qemu at the real qemu's. Without a qemu
		// (vz users) there is nothing to link.
		if real, err := qemu.FindQemu(""); err == nil {
			if err := linkQemuShare(l.RunDir(), qemu.FirmwareDir(real)); err != nil {
				logger.Warn("qemu firmware link", "err", err)
			}
		}
	}
	// Lima starts qemu-img, ssh and qemu from its PATH: give it the same
	// search list corral uses (Finder gives an app no Homebrew on PATH).
	env = append(env, "PATH="+hostbin.SearchPath(os.Getenv("PATH"), hostbin.Dirs))
	s.Lima = &lima.Client{Limactl: findLimactl(os.Getenv("CORRAL_LIMACTL")), LimaHome: l.LimaHome(), Env: env, Logger: logger}
	return s, nil
}

// findLimactl resolves the limactl to run: CORRAL_LIMACTL when set, else
// "limactl" through hostbin.Find. When nothing is found the bare name is
// kept, so that the client reports ErrNotInstalled with its install hint.
func findLimactl(override string) string {
	name := override
	if name == "" {
		name = "limactl"
	}
	if p, err := hostbin.Find(name); err == nil {
		return p
	}
	return name
}

// linkQemuShare makes runDir/share/qemu a link to target, the real qemu's
// share/qemu (see qemu.FirmwareDir); an empty target leaves things alone.
func linkQemuShare(runDir, target string) error {
	if target == "" {
		return nil
	}
	link := filepath.Join(runDir, "share", "qemu")
	if err := replaceLink(link, target); err != nil {
		return fmt.Errorf("linking qemu firmware %s: %w", link, err)
	}
	return nil
}

func qemuArch() string {
	if runtime.GOARCH == "arm64" {
		return "aarch64"
	}
	return "x86_64"
}

// qemuShim links run/bin/qemu-system-<arch> to the corral binary, so that
// Lima runs corral as its qemu (the wrapper picks TCG or KVM and, in
// future, adds the host-enforced funnel).
func (s *Service) qemuShim() (string, error) {
	if s.Exe == "" {
		return "", errors.New("qemu shim: unknown corral executable")
	}
	link := filepath.Join(s.Layout.RunDir(), "bin", qemuwrap.ShimName+qemuArch())
	if err := replaceLink(link, shimTarget(s.Exe)); err != nil {
		return "", fmt.Errorf("linking the qemu shim: %w", err)
	}
	return link, nil
}

// shimTarget is the file the qemu shim links to: exe with its links
// resolved. On macOS the CLI runs as the cask's link on PATH and the app as
// Corral.app/Contents/MacOS/corral, the same file; linking the resolved
// path keeps every process writing the same link instead of flipping it.
func shimTarget(exe string) string {
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		return r
	}
	return exe
}

// replaceLink makes link a symbolic link to target, atomically (a new link
// with a name of its own, renamed over the old one), creating link's
// directory 0700. A link that already points at target is left alone. Two
// processes may replace the same link at once: each uses its own
// temporary name, so neither removes the other's.
func replaceLink(link, target string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	dir := filepath.Dir(link)
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		return err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(dir, "."+filepath.Base(link)+".tmp-"+hex.EncodeToString(b[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Goldens are the golden images, built with this service's Lima client,
// progress and guest commands.
func (s *Service) Goldens() golden.Images {
	return golden.Images{Layout: s.Layout, Lima: s.Lima, Progress: s.Progress, ProgressTTY: s.ProgressTTY, Logger: s.Logger,
		Now: s.now, GuestScript: s.guestScript, StartTimeout: StartTimeout}
}

func (s *Service) progress(format string, args ...any) {
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, format+"\n", args...)
	}
}

// booting runs start (a Lima start of box) as a progress step: on a slow
// boot the user sees what the VM is doing (Lima's host agent log) and for
// how long.
func (s *Service) booting(ctx context.Context, name, box string, start func() error) error {
	w := &progress.Writer{W: s.Progress, TTY: s.ProgressTTY}
	step := w.Start(name)
	fctx, cancel := context.WithCancel(ctx)
	go progress.Follow(fctx, lima.HostAgentLog(s.Layout.LimaHome(), box), step)
	err := start()
	cancel()
	step.End(err)
	return err
}

func (s *Service) audit(ev audit.Event) {
	ev.Actor = s.Actor
	log, err := audit.Open(s.Layout.AuditLog())
	if err != nil {
		s.Logger.Warn("audit log unavailable", "err", err)
		return
	}
	defer log.Close()
	if err := log.Record(ev); err != nil {
		s.Logger.Warn("audit log write failed", "err", err)
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
