package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/procinfo"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/qmp"
	"github.com/corral-dev/corral/core/untrusted"
	"github.com/corral-dev/corral/guest"
)

// Saving a box: its VM state goes into its own disk, the VM process ends
// and its memory is freed; the next start resumes the guest where it was
// instead of booting it (a TCG boot takes a minute or more).
//
// qemu only. The state is an internal snapshot of the instance's qcow2
// disk (HMP savevm through Lima's QMP socket, <instance>/qmp.sock): RAM,
// devices and disk in one consistent piece. The qemu wrapper starts a
// saved box with -loadvm (qemuwrap.NewPlan reads Meta.Saved). Order of a save:
//
//  1. refuse a box with a live session (host or detachable);
//  2. corral-suspend prepare in the box (guest/corral-suspend.sh): qemu's
//     9p device blocks savevm while a share is mounted, so every 9p mount
//     comes off; a process using one refuses the save (ErrBoxBusy) before
//     anything is unmounted;
//  3. QMP stop, savevm SuspendTag: the CPUs stay stopped, so the disk is
//     not written after the snapshot;
//  4. Meta.Saved is written, then qemu quits and `limactl stop --force`
//     ends Lima's host agent.
//
// A resume (Up of a saved box, startBox) runs `limactl start` and, while
// Lima waits for the box, corral-suspend resume: the box steps its clock
// to the host's, marks Lima's readiness files with the new instance ID
// (the boot that wrote them is not repeated), and mounts its shares again
// with the corral units on top (hide, box_dirs, git shadow). Then the
// snapshot is deleted (delvm), so the disk does not keep a stale memory
// image. A resume that fails in any way ends the VM, deletes the snapshot
// and boots the box instead, with a warning: the disk then holds what the
// box had at the save, as after a crash.

// SuspendTag is the internal snapshot a save writes into the box's disk.
const SuspendTag = "corral-suspend"

// Timeouts of a save and a resume (TCG writes and reads the VM's memory
// at tens of MB/s).
const (
	saveTimeout         = 10 * time.Minute
	resumeTimeout       = 5 * time.Minute
	guestSuspendTimeout = 2 * time.Minute
)

// ErrSaveUnsupported means the box's VM driver cannot save a box (vz).
var ErrSaveUnsupported = errors.New("saving a box needs the qemu driver")

// ErrBoxBusy means a save was refused because something in the box uses
// it (a session, or a process using one of its shares).
var ErrBoxBusy = errors.New("box is in use")

// saveSupported refuses a box whose driver corral cannot save.
func saveSupported(m boxmeta.Meta) error {
	if m.VMType == config.VMTypeQEMU {
		return nil
	}
	return hint.New(fmt.Errorf("saving box %s: %w (it runs on %s)", m.Name, ErrSaveUnsupported, m.VMType),
		fmt.Sprintf(`Lima's vz driver has no way to save a VM's state (no suspend, and its snapshots are unimplemented in Lima 2.2): corral stop %s stops it; vm_type = "qemu" (corral rebuild) makes a box that can be saved`, m.Name))
}

// busy is the error of a save refused because the box is in use.
func busy(box, what string) error {
	return hint.New(fmt.Errorf("saving box %s: %w: %s", box, ErrBoxBusy, what),
		fmt.Sprintf("end it and save again, or corral stop %s", box))
}

// Save saves a running box's VM state to its disk and ends the VM (see the
// note at the top of this file). kind is audit.KindSave or
// audit.KindIdleSave.
func (s *Service) Save(ctx context.Context, box string, kind audit.Kind) error {
	return s.save(ctx, box, audit.Event{Kind: kind}, "")
}

// save is Save with the audit event to record (its Box is set here) and
// the reason kept in Meta.Saved.
func (s *Service) save(ctx context.Context, box string, ev audit.Event, reason string) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	if err := saveSupported(m); err != nil {
		return err
	}
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err != nil || st.Status != lima.StatusRunning {
		state := "not running"
		if err == nil {
			state = strings.ToLower(string(st.Status))
		}
		return hint.New(fmt.Errorf("saving box %s: it is %s", box, state), "only a running box can be saved")
	}
	if live := s.LiveSessions(box); len(live) > 0 {
		return busy(box, fmt.Sprintf("%d session(s) running (%s)", len(live), live[0].Agent))
	}
	if ss, err := s.GuestSessions(ctx, box); err == nil && len(ss) > 0 {
		return busy(box, fmt.Sprintf("detachable session %s is running", ss[0].Name))
	}
	// The resume must rebuild the machine this state is saved from: with
	// the balloon exactly when this VM has it (see qemu.Options.Balloon).
	balloon, err := s.vmHasBalloon(box)
	if err != nil {
		return hint.New(fmt.Errorf("saving box %s: %w", box, err), fmt.Sprintf("corral stop %s stops it instead", box))
	}
	s.CloseMaster(ctx, box)
	s.progress("saving box %s", box)
	if err := s.guestSuspend(ctx, box, "prepare", ""); err != nil {
		return fmt.Errorf("saving box %s: %w", box, err)
	}
	if err := s.saveVM(ctx, box, SuspendTag); err != nil {
		// The guest goes on running: its shares come back.
		if rerr := s.guestSuspend(context.WithoutCancel(ctx), box, "resume", s.epoch()); rerr != nil {
			s.progress("warning: box %s: mounting its shares again: %v (corral stop %s && corral up fixes it)", box, rerr, box)
		}
		return hint.New(fmt.Errorf("saving box %s: %w", box, err), fmt.Sprintf("corral stop %s stops it instead", box))
	}
	// Saved before the VM ends: whatever happens next, the next start
	// finds the state it must resume.
	m.Saved = &boxmeta.Saved{Tag: SuspendTag, At: s.now(), Balloon: balloon, Reason: reason}
	if err := boxmeta.Write(s.Layout, m); err != nil {
		return err
	}
	s.endVM(ctx, box)
	s.StopBroker(&m)
	s.guardGit(m, true)
	s.reportNested(m, "save")
	if err := approval.ClearSession(s.Layout, box); err != nil {
		s.Logger.Warn("clearing session approvals", "box", box, "err", err)
	}
	ev.Box = box
	s.audit(ev)
	return boxmeta.Write(s.Layout, m)
}

// saveVM pauses the VM and saves it as tag. On failure the VM runs again.
func (s *Service) saveVM(ctx context.Context, box, tag string) error {
	ctx, cancel := context.WithTimeout(ctx, saveTimeout)
	defer cancel()
	c, err := qmp.Dial(ctx, s.qmpSocket(box))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Stop(ctx); err != nil {
		return err
	}
	if err := c.SaveVM(ctx, tag); err != nil {
		if cerr := c.Cont(context.WithoutCancel(ctx)); cerr != nil {
			s.Logger.Warn("continuing the VM after a failed save", "box", box, "err", cerr)
		}
		return err
	}
	return nil
}

// endVM ends a saved box's VM: qemu quits (closing its disk cleanly), then
// Lima's forced stop ends the host agent and removes the pid files.
func (s *Service) endVM(ctx context.Context, box string) {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if c, err := qmp.Dial(qctx, s.qmpSocket(box)); err == nil {
		if err := c.Quit(qctx); err != nil {
			s.Logger.Warn("qmp quit", "box", box, "err", err)
		}
		_ = c.Close()
	}
	cancel()
	if err := s.Lima.Stop(ctx, box, true); err != nil {
		if st, serr := lima.ReadInstanceDir(s.Layout.LimaHome(), box); serr != nil || st.Status != lima.StatusStopped {
			s.progress("warning: ending the VM of box %s: %v", box, err)
		}
	}
}

// vmHasBalloon reads the command line of the box's running qemu (its pid
// file, as funnel.Verify does) and reports whether it has a balloon.
func (s *Service) vmHasBalloon(box string) (bool, error) {
	pid, err := untrusted.ReadPID(funnel.PIDFile(s.Layout.LimaHome(), box))
	if err != nil {
		return false, fmt.Errorf("reading its qemu's pid: %w", err)
	}
	args, err := procinfo.Argv(pid)
	if err != nil || len(args) == 0 {
		return false, fmt.Errorf("reading the command line of its qemu (pid %d): %v", pid, err)
	}
	return qemu.HasBalloon(args[1:]), nil
}

func (s *Service) qmpSocket(box string) string {
	return filepath.Join(s.Layout.LimaHome(), box, "qmp.sock")
}

func (s *Service) epoch() string { return strconv.FormatInt(s.now().Unix(), 10) + "\n" }

// startBox starts a stopped box: it resumes a saved one (falling back to
// a boot when that fails) and boots any other. The caller holds the box
// lock; m is written when its saved state is dropped.
func (s *Service) startBox(ctx context.Context, m *boxmeta.Meta) error {
	if m.Saved == nil {
		return s.Lima.Start(ctx, m.Name, StartTimeout)
	}
	start := s.now()
	err := s.resume(ctx, m)
	if err == nil {
		s.progress("resumed box %s in %s", m.Name, s.now().Sub(start).Round(100*time.Millisecond))
		s.audit(audit.Event{Kind: audit.KindResume, Box: m.Name})
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	s.progress("warning: resuming box %s failed: %v; booting it instead (its disk is as it was when it was saved)", m.Name, err)
	if err := s.dropSaved(ctx, m); err != nil {
		return err
	}
	return s.Lima.Start(ctx, m.Name, StartTimeout)
}

// errNoSavedState means the box's disk does not hold the saved state its
// metadata names.
var errNoSavedState = errors.New("its disk holds no saved state")

// resume starts a saved box from its saved state and brings the guest
// back (see the note at the top of this file).
func (s *Service) resume(ctx context.Context, m *boxmeta.Meta) error {
	box := m.Name
	tags, err := s.Lima.SnapshotList(ctx, box)
	if err != nil {
		return err
	}
	if !slices.Contains(tags, m.Saved.Tag) {
		return errNoSavedState
	}
	s.progress("resuming box %s", box)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- s.Lima.Start(sctx, box, StartTimeout) }()
	// Lima waits for readiness files only the guest's resume writes: the
	// guest is asked until it answers, while Lima starts.
	deadline := time.Now().Add(resumeTimeout)
	startDone := false
	var startErr, guestErr error
	for {
		guestErr = s.guestSuspend(ctx, box, "resume", s.epoch())
		if guestErr == nil || errors.Is(guestErr, errGuestRefused) || time.Now().After(deadline) {
			break
		}
		if startDone && startErr != nil {
			break
		}
		select {
		case startErr = <-started:
			startDone = true
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if guestErr != nil {
		cancel()
		if !startDone {
			<-started
		}
		if startErr != nil {
			return fmt.Errorf("starting box %s: %w", box, startErr)
		}
		return fmt.Errorf("resuming the guest of box %s: %w", box, guestErr)
	}
	if !startDone {
		startErr = <-started
	}
	if startErr != nil {
		return fmt.Errorf("starting box %s: %w", box, startErr)
	}
	// The state is loaded: the snapshot would only keep a stale memory
	// image in the disk.
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if c, err := qmp.Dial(dctx, s.qmpSocket(box)); err != nil {
		s.progress("warning: box %s: deleting its saved state: %v", box, err)
	} else {
		if err := c.DelVM(dctx, m.Saved.Tag); err != nil {
			s.progress("warning: box %s: deleting its saved state: %v", box, err)
		}
		_ = c.Close()
	}
	m.Saved = nil
	return boxmeta.Write(s.Layout, *m)
}

// dropSaved ends whatever a failed resume left running and deletes the
// saved state, so that the next start boots.
func (s *Service) dropSaved(ctx context.Context, m *boxmeta.Meta) error {
	box := m.Name
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err == nil && st.Status != lima.StatusStopped {
		if err := s.Lima.Stop(ctx, box, true); err != nil {
			return fmt.Errorf("stopping box %s after a failed resume: %w", box, err)
		}
	}
	if tags, err := s.Lima.SnapshotList(ctx, box); err == nil && slices.Contains(tags, m.Saved.Tag) {
		if err := s.Lima.SnapshotDelete(ctx, box, m.Saved.Tag); err != nil {
			return hint.New(fmt.Errorf("box %s: deleting its saved state: %w", box, err),
				fmt.Sprintf("qemu-img snapshot -d %s on the box's disk (under %s) removes it", m.Saved.Tag, filepath.Join(s.Layout.LimaHome(), box)))
		}
	}
	m.Saved = nil
	return boxmeta.Write(s.Layout, *m)
}

// errGuestRefused means corral-suspend cannot run in the box (no such
// helper, or no sudo rule for it): asking again does not help.
var errGuestRefused = errors.New("the box cannot run corral-suspend")

// guestSuspend runs corral-suspend VERB in a running box as root (its
// sudo rule, provision/41-sudo.sh) with stdin, over a connection of its
// own (Lima's master may not exist yet during a resume).
func (s *Service) guestSuspend(ctx context.Context, box, verb, stdin string) error {
	argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{NoMultiplex: true})
	if err != nil {
		return err
	}
	argv = append(argv, "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10", "-T", "--",
		"sudo -n "+guest.SuspendPath+" "+verb)
	ctx, cancel := context.WithTimeout(ctx, guestSuspendTimeout)
	defer cancel()
	cmd := s.guestCmd(ctx, argv, masterEnviron())
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &capWriter{w: &stderr, left: guestStderrCap}
	err = cmd.Run()
	if err == nil {
		return nil
	}
	msg := display.Text(lastLine(stderr.String()), 300)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return busy(box, "a process in the box uses its shares: "+msg)
	case errors.As(err, &ee) && (ee.ExitCode() == 127 || strings.HasPrefix(msg, "sudo:")):
		return hint.New(fmt.Errorf("%w: %s", errGuestRefused, msg),
			fmt.Sprintf("boxes created before corral could save them lack its helper: corral rebuild %s adds it", box))
	case msg != "":
		return fmt.Errorf("corral-suspend %s: %w: %s", verb, err, msg)
	}
	return fmt.Errorf("corral-suspend %s: %w", verb, err)
}
