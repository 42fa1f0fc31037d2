package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
)

// Detachable sessions live in the box, under tmux (guest/corral-launch.sh
// --tmux): they outlive the client that started them, so the host knows
// them only by asking the box (GuestSessions, one multiplexed ssh channel).
// What the box answers is hostile: it is parsed strictly, capped, and
// every name is checked against the session name rule before use.

// ErrNoSession means the box has no detachable session by that name.
var ErrNoSession = errors.New("no such session")

var sessionNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`) })

// CheckSessionName validates a detachable session's name (the guest
// launcher applies the same rule).
func CheckSessionName(name string) error {
	if !sessionNameRe().MatchString(name) {
		return fmt.Errorf("invalid session name %q: use up to 32 lowercase letters, digits and dashes", name)
	}
	return nil
}

// GuestSession is a detachable session running in a box.
type GuestSession struct {
	Box      string    `json:"box"`
	Name     string    `json:"session"`
	Agent    string    `json:"agent,omitempty"`
	Created  time.Time `json:"created"`
	Attached int       `json:"attached"` // clients attached now
	Activity time.Time `json:"activity"` // last input or output
}

// maxGuestList caps what GuestSessions reads from the box.
const (
	maxGuestList     = 64 << 10
	maxGuestSessions = 256
)

var agentNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]{0,32}$`) })

// ParseGuestSessions parses corral-launch --list output: lines of
// "NAME AGENT CREATED ATTACHED ACTIVITY". Lines that do not fit the
// format exactly are dropped (a box user can make tmux sessions of their
// own on the socket).
func ParseGuestSessions(box string, b []byte) []GuestSession {
	var out []GuestSession
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, " ")
		if len(f) != 5 || CheckSessionName(f[0]) != nil || !agentNameRe().MatchString(f[1]) {
			continue
		}
		created, err1 := strconv.ParseInt(f[2], 10, 64)
		attached, err2 := strconv.Atoi(f[3])
		activity, err3 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || created < 0 || attached < 0 || activity < 0 {
			continue
		}
		out = append(out, GuestSession{Box: box, Name: f[0], Agent: f[1],
			Created: time.Unix(created, 0), Attached: attached, Activity: time.Unix(activity, 0)})
		if len(out) == maxGuestSessions {
			break
		}
	}
	return out
}

// GuestSessions lists the detachable sessions of a running box.
func (s *Service) GuestSessions(ctx context.Context, box string) ([]GuestSession, error) {
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err != nil || st.Status != lima.StatusRunning {
		return nil, nil
	}
	argv, err := s.sshCommand(ctx, box, ttyNone, []string{"--list"})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = masterEnviron()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("listing the sessions of box %s: %w", box, err)
	}
	b, _ := io.ReadAll(io.LimitReader(out, maxGuestList))
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("listing the sessions of box %s: %w: %s", box, err, firstLine(stderr.String()))
	}
	return ParseGuestSessions(box, b), nil
}

// AttachOptions describe an attach.
type AttachOptions struct {
	// Term is the terminal type the client runs in ("" = xterm-256color).
	Term   string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Attach attaches the terminal to a detachable session of a running box.
// Closing the terminal (or tmux's detach key) detaches again; the session
// goes on.
func (s *Service) Attach(ctx context.Context, box, name string, opt AttachOptions) error {
	if err := CheckSessionName(name); err != nil {
		return err
	}
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err != nil || st.Status != lima.StatusRunning {
		return hint.New(fmt.Errorf("box %s is not running, so it has no sessions", box), "corral sessions lists the running ones")
	}
	// An attached client is a live host session too (corral ls, the
	// menu), and its end is where stop_on_exit looks again.
	id := newSessionID()
	if err := s.addSession(box, Session{ID: id, PID: os.Getpid(), Agent: "attach:" + name, Started: s.now()}); err != nil {
		s.Logger.Warn("recording the session", "box", box, "err", err)
	}
	defer s.endSession(m, id)
	argv, err := s.sshCommand(ctx, box, ttyForce, []string{"--attach", name})
	if err != nil {
		return err
	}
	term := opt.Term
	if term == "" {
		term = "xterm-256color"
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// The terminal type is all an attach sends: the session's processes
	// got their environment when it was created.
	cmd.Env = append(masterEnviron(), "CORRAL_FWD_TERM="+term)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opt.Stdin, opt.Stdout, opt.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return hint.New(fmt.Errorf("%w: %s in box %s", ErrNoSession, name, box), "corral sessions lists them")
	case errors.As(err, &ee):
		return &ExitError{Code: ee.ExitCode()}
	case err != nil:
		return fmt.Errorf("attaching to session %s of box %s: %w", name, box, err)
	}
	return nil
}

// guestSessionsAlive reports whether a running box has a detachable
// session. Unknown (the box does not answer) counts as none.
func (s *Service) guestSessionsAlive(ctx context.Context, box string) bool {
	ss, err := s.GuestSessions(ctx, box)
	if err != nil {
		s.Logger.Warn("listing detachable sessions", "box", box, "err", err)
	}
	return len(ss) > 0
}

// touchActivity records activity of a box without writing its metadata:
// the session directory's mtime is part of lastActivity.
func (s *Service) touchActivity(box string) {
	dir := s.Layout.SessionsDir(box)
	if err := os.MkdirAll(dir, 0o700); err == nil {
		now := s.now()
		_ = os.Chtimes(dir, now, now)
	}
}
