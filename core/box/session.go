package box

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/secret"
	"github.com/corral-dev/corral/guest"
)

// SendEnvPattern is the only environment ssh sends into a box; guest sshd
// accepts exactly this pattern (guest/provision/00-base.sh).
const SendEnvPattern = "CORRAL_FWD_*"

// SessionMode says how a session relates to the terminal that starts it.
type SessionMode string

const (
	// ModeForeground: the ssh session is the session; it ends with the
	// client.
	ModeForeground SessionMode = ""
	// ModeOpen: a detachable session (tmux in the box) named Name,
	// attached to, and created first when the box has none by that name.
	// Closing the terminal detaches it.
	ModeOpen SessionMode = "open"
	// ModeNew: a detachable session created detached; its name is
	// printed on Stdout.
	ModeNew SessionMode = "new"
)

// SessionOptions describe one session.
type SessionOptions struct {
	// Agent is the agent the session is for (Resolved.Agent): its
	// environment (forwarded variables, state) and, with AgentCommand, its
	// command. "shell" is the plain login shell.
	Agent agent.Agent
	// Argv is run in the box; empty = login shell. With AgentCommand it
	// follows the agent's command (corral claude -- --continue).
	Argv         []string
	AgentCommand bool
	Workdir      string // in the box; "" = the project directory
	TTY          bool
	Mode         SessionMode
	Name         string // the detachable session's name (ModeOpen, ModeNew)
	// Host is what the session's environment takes from the host it is
	// opened on (see [SessionHost]).
	Host   SessionHost
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// SessionHost is what a session's environment (core/launchenv) is
// assembled from besides the config and the agent: the opening process's
// environment, its keychain and its terminal. Session assembles it once
// the box is up: in broker mode it first asks the box's broker which
// credential routes it serves to this session (core/credential Ask; the
// broker owns the plan) and adds its answer. The variables reach the ssh
// process's environment as CORRAL_FWD_<NAME>, never its argv; the audit
// records their names.
type SessionHost struct {
	// Getenv reads the host environment: a variable exported but empty
	// is set (core/launchenv's env_from_host rule). nil: os.LookupEnv.
	Getenv func(string) (string, bool)
	// Secrets is the keychain (nil: none).
	Secrets secret.Store
	// Terminal is the size of the terminal the session draws on (nil:
	// none).
	Terminal *launchenv.Terminal
	// Relay is the laptop's credential relay when a laptop started this
	// session over ssh (the hidden --credential-relay flags; nil: none):
	// the box's broker serves the credentials it cannot read through it.
	Relay *egress.Relay
}

// launchInput is what a session's environment is assembled from, for
// agent a on host h. The git identity is read once per change of the git
// config files (launchenv.CachedGitConfig), not by two git processes per
// session.
func (s *Service) launchInput(r boxmeta.Resolved, a agent.Agent, h SessionHost) launchenv.Input {
	getenv := h.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return launchenv.Input{
		Settings: r.Loaded.Settings(), Agent: a, Getenv: getenv,
		Box: r.Project.Box, Project: r.Project.Dir, Logger: s.Logger,
		GitConfig: launchenv.CachedGitConfig(r.Project.Dir, s.Layout.CacheDir()),
		Secrets:   h.Secrets, Terminal: h.Terminal,
	}
}

// sessionNotices are the one-line notices a session opens with (on
// Progress): another agent than the box's own, a repository's requests
// not granted yet and those refused, a box that learns.
func (s *Service) sessionNotices(r boxmeta.Resolved, a agent.Agent) {
	c := r.Loaded.Settings()
	name := r.Project.Box
	if c.Agent != a.Name && a.Name != "shell" {
		s.progress("corral: box %s's agent is %s: %s runs only if the box has it installed, and its hosts need corral allow (or set agent = %q in the box's trusted layer and corral rebuild)",
			name, c.Agent, a.Name, a.Name)
	}
	if c.NetworkMode() != config.NetworkBroker {
		return
	}
	if p := r.Loaded.Pending(); len(p) > 0 {
		// One line: the broker denies these until the user approves them.
		s.progress("corral: the repository requests %d host(s), port(s), toolchain(s) or package(s) not granted yet; review them with: corral approve %s", len(p), name)
	}
	if q := r.Loaded.RefusedRequests(); len(q) > 0 {
		// A verdict, not something to approve later: counted apart.
		s.progress("corral: the repository requests %d entr(ies) the grant check refuses; they are never allowed (corral config check says why)", len(q))
	}
	now := s.now()
	if lr, err := approval.ReadLearning(s.Layout, name); err == nil && lr.ActiveAt(now) {
		s.progress("corral: box %s is learning until %s: its broker allows public hosts off the allow-list and logs them; corral egress learn %s proposes an allow-list",
			name, display.Clock(lr.Until, now), name)
	}
}

// ExitError carries a session's exit code.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("session exited with status %d", e.Code) }

// SessionRecord is one line of logs/sessions.jsonl.
type SessionRecord struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"` // start | end
	Box     string    `json:"box"`
	Session string    `json:"session"`
	Agent   string    `json:"agent"`
	Exit    *int      `json:"exit,omitempty"`
}

// Session brings the box up and runs a session in it over ssh, passing
// stdio through. The returned error is an *ExitError for a non-zero exit.
//
// It is the one entry point of `corral claude` (and every agent), `run`
// and `shell`: the notices are written to Progress, the environment is
// assembled in core.
func (s *Service) Session(ctx context.Context, r boxmeta.Resolved, opt SessionOptions) error {
	a := opt.Agent
	if opt.AgentCommand {
		opt.Argv = append(slices.Clip(a.Command), opt.Argv...)
	}
	s.sessionNotices(r, a)
	m, err := s.Up(ctx, r, UpOptions{})
	if err != nil {
		return err
	}
	if m.Network == config.NetworkBroker && !BrokerAnswering(m.BrokerPort) {
		return hint.New(fmt.Errorf("%w: box %s, 127.0.0.1:%d; refusing the session (fail closed)", ErrBrokerDown, m.Name, m.BrokerPort), fmt.Sprintf("corral stop %s && corral up restarts it", m.Name))
	}
	if err := funnel.Verify(s.Layout.LimaHome(), m.Name, funnel.Want{VMType: m.VMType, Network: m.Network, BrokerPort: m.BrokerPort, HostPorts: m.HostPorts}); err != nil {
		return err
	}
	// The project directory: the mount, or with source = "clone" the
	// box's own clone at the same path (guest/provision/45-clone.sh).
	wd := opt.Workdir
	if wd == "" {
		wd = r.Project.Dir
	}
	var remote []string
	switch opt.Mode {
	case ModeForeground:
	case ModeOpen, ModeNew:
		if err := CheckSessionName(opt.Name); err != nil {
			return err
		}
		remote = []string{"--tmux", string(opt.Mode), opt.Name, a.Name}
	default:
		return fmt.Errorf("unknown session mode %q", opt.Mode)
	}
	remote = append(remote, wd)
	remote = append(remote, opt.Argv...)
	tty := ttyNone
	if opt.TTY {
		tty = ttyAsk
	}
	argv, err := s.sshCommand(ctx, m.Name, tty, remote)
	if err != nil {
		return err
	}
	id := newSessionID()
	env, err := s.sessionEnv(ctx, r, m, id, s.launchInput(r, a, opt.Host), opt.TTY, opt.Host.Relay)
	if err != nil {
		return err
	}
	s.armGitGuard(m)
	s.warnGitlinkDrift(m, opt.Stderr)
	s.beginSession(&m, id, opt, env.Names())
	defer func() { s.endSession(m, id) }()
	if relay := opt.Host.Relay; relay != nil {
		// sshd leaves a -R forward's socket behind; the laptop's relay
		// ends with this session, so its socket here goes too.
		defer func() {
			if err := credential.RemoveRelaySocket(s.Layout.RunDir(), relay.Socket); err != nil {
				s.progress("warning: %v", err)
			}
		}()
	}

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env.Environ(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opt.Stdin, opt.Stdout, opt.Stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return fmt.Errorf("running ssh for box %s: %w", m.Name, err)
	}
	s.recordExit(m.Name, id, a.Name, code)
	switch code {
	case 126:
		return hint.New(fmt.Errorf("box %s has no tmux for detachable sessions", m.Name), "corral golden rm the box's golden image, then corral rebuild")
	case 125:
		return hint.New(fmt.Errorf("box %s refused the session (a guest unit is not active)", m.Name), fmt.Sprintf("corral doctor %s", m.Name))
	case 0:
		return nil
	}
	return &ExitError{Code: code}
}

// sessionEnv assembles the session's environment (core/launchenv). In
// broker mode it first asks the box's broker, over its control socket,
// which credential routes it serves to session id, supplying the wanted
// keys the session's environment has; a broker that does not answer
// refuses the session (fail closed: the session would otherwise carry the
// keys the broker should hold, or base URLs nobody serves). relay is the
// laptop's credential relay the session brought (nil: none).
func (s *Service) sessionEnv(ctx context.Context, r boxmeta.Resolved, m boxmeta.Meta, id string, in launchenv.Input, tty bool, relay *egress.Relay) (launchenv.Env, error) {
	in.Session = id
	if m.Network == config.NetworkBroker {
		served, err := credential.AskRelayed(ctx, s.Layout.BrokerControl(m.Name), id, in.Getenv, relay)
		if err != nil {
			return launchenv.Env{}, hint.New(fmt.Errorf("box %s: asking its broker for the credential routes: %w; refusing the session", m.Name, err),
				fmt.Sprintf("corral stop %s && corral up restarts the broker", m.Name))
		}
		in.Brokered = &served
		in.BrokerURL = "http://" + net.JoinHostPort(funnel.BrokerGuestHostFor(r.Platform, r.Loaded.Settings()), strconv.Itoa(m.BrokerPort))
	}
	// A keychain read may raise an "allow access" dialog: with a person at
	// the terminal, wait for the answer instead of secret.DefaultTimeout.
	actx, cancel := secret.Interactive(ctx, tty)
	defer cancel()
	// The items the broker reads are settled here, with a person at the
	// terminal (secret.Decide): the Keychain asks now, once, after a line
	// saying to choose "Always Allow" (which covers the broker, the same
	// program); the broker itself never asks and refuses an item that
	// still needs the dialog at once.
	// The upstream proxy's item is one of them (the broker reads it for
	// its proxied connections; core/broker upstreamProxy).
	var brokerItems []secret.Ref
	if in.Brokered != nil {
		brokerItems = slices.Clone(in.Brokered.Keychain)
		if k := r.Loaded.Settings().UpstreamProxy.Keychain; k != nil {
			brokerItems = append(brokerItems, secret.Ref{Service: k.Service, Account: k.Account})
		}
	}
	if tty && len(brokerItems) > 0 && in.Secrets != nil {
		for _, d := range secret.Decide(actx, in.Secrets, brokerItems, s.Progress) {
			if d.Err != nil {
				s.Logger.Warn("reading a keychain item the broker uses", "box", m.Name, "service", d.Ref.Service, "account", d.Ref.Account, "err", d.Err)
			}
		}
	}
	return launchenv.Assemble(actx, in)
}

// DoctorEnv is the environment doctor's guest checks run with: a
// session's, with the routes the box's broker serves. When a broker-mode
// box's broker does not answer (a stopped box), the environment is still
// assembled, to report what cannot be supplied, but none of it is
// returned: without the broker's answer nobody knows what to withhold.
func (s *Service) DoctorEnv(ctx context.Context, r boxmeta.Resolved, agentName string, h SessionHost) (launchenv.Env, error) {
	a, err := r.Agent(agentName)
	if err != nil {
		return launchenv.Env{}, err
	}
	in := s.launchInput(r, a, h)
	m, err := boxmeta.Read(s.Layout, r.Project.Box)
	if err != nil {
		return launchenv.Env{}, err
	}
	if m.Network == config.NetworkBroker && !BrokerAnswering(m.BrokerPort) {
		_, err := launchenv.Assemble(ctx, in)
		return launchenv.Env{}, err
	}
	return s.sessionEnv(ctx, r, m, "doctor-"+newSessionID(), in, false, nil)
}

// ttyMode is ssh's terminal request for a session.
type ttyMode int

const (
	ttyNone  ttyMode = iota // -T
	ttyAsk                  // -t: a terminal in the box when this side has one
	ttyForce                // -tt: a terminal in the box even without one here (tmux attach needs it)
)

// sshCommand is the ssh argv running corral-launch with args in box,
// multiplexed over corral's master when one can be had.
func (s *Service) sshCommand(ctx context.Context, box string, tty ttyMode, args []string) ([]string, error) {
	sshOpt := lima.SSHOptions{SendEnv: []string{SendEnvPattern}, NoMultiplex: true}
	if sock, err := s.EnsureMaster(ctx, box); err == nil {
		sshOpt.ControlPath = sock
	} else {
		// Not fatal: a fresh connection carries the same variables.
		s.Logger.Warn("no ssh master; the session opens its own connection", "box", box, "err", err)
	}
	argv, err := s.Lima.SSHArgs(box, sshOpt)
	if err != nil {
		return nil, err
	}
	argv = append(argv, "-o", "LogLevel=ERROR")
	switch tty {
	case ttyNone:
		argv = append(argv, "-T")
	case ttyAsk:
		argv = append(argv, "-t")
	case ttyForce:
		argv = append(argv, "-t", "-t")
	}
	// ssh joins the remote words into one command line for the remote
	// shell: quote each, so the argv arrives as given.
	remote := []string{guest.LaunchPath}
	for _, a := range args {
		remote = append(remote, shellQuote(a))
	}
	return append(argv, "--", strings.Join(remote, " ")), nil
}

func newSessionID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SessionRecordSchema names every line of the sessions log (docs/JSON.md).
const SessionRecordSchema = "corral.session-record/v1"

func (s *Service) sessionsLog(rec SessionRecord) {
	w, err := jsonl.Open(s.Layout.SessionsLog(), jsonl.Options{MaxBytes: 16 << 20, Schema: SessionRecordSchema})
	if err != nil {
		s.Logger.Warn("sessions log unavailable", "err", err)
		return
	}
	defer w.Close()
	_ = w.Append(rec)
}

func (s *Service) beginSession(m *boxmeta.Meta, id string, opt SessionOptions, envNames []string) {
	if err := s.addSession(m.Name, Session{ID: id, PID: os.Getpid(), Agent: opt.Agent.Name, Started: s.now()}); err != nil {
		s.Logger.Warn("recording the session", "box", m.Name, "err", err)
	}
	s.audit(audit.Event{Kind: audit.KindSessionStart, Box: m.Name, EnvNames: envNames, Fields: map[string]any{"session": id, "agent": opt.Agent.Name}})
	s.sessionsLog(SessionRecord{Time: s.now(), Event: "start", Box: m.Name, Session: id, Agent: opt.Agent.Name})
	s.egressMarker(*m, id, (*egress.DecisionLog).StartSession)
}

// egressMarker appends a session marker to the egress log of a broker box,
// so that `corral egress --session ID` can slice one run's traffic out of
// it. The log is shared with the broker process (core/jsonl appends are
// safe across processes). A failure only warns: the session runs anyway.
func (s *Service) egressMarker(m boxmeta.Meta, id string, mark func(*egress.DecisionLog, string) error) {
	if m.Network != config.NetworkBroker {
		return
	}
	dl, err := egress.OpenLog(s.Layout.EgressLog(m.Name), m.Name, s.Logger)
	if err == nil {
		err = errors.Join(mark(dl, id), dl.Close())
	}
	if err != nil {
		s.Logger.Warn("writing a session marker to the egress log", "box", m.Name, "session", id, "err", err)
	}
}

func (s *Service) recordExit(box, id, agent string, code int) {
	s.sessionsLog(SessionRecord{Time: s.now(), Event: "end", Box: box, Session: id, Agent: agent, Exit: &code})
	s.audit(audit.Event{Kind: audit.KindSessionEnd, Box: box, Fields: map[string]any{"session": id, "exit": code}})
}

// endSession forgets the session and, with stop_on_exit, stops the box
// when it was the last one.
func (s *Service) endSession(m boxmeta.Meta, id string) {
	s.removeSession(m.Name, id)
	s.egressMarker(m, id, (*egress.DecisionLog).EndSession)
	if !m.StopOnExit {
		return
	}
	// Under the box lock, so that a session starting now either is
	// counted or finds the box stopped and starts it again.
	lock, err := s.LockBox(context.Background(), m.Name)
	if err != nil {
		return
	}
	live := len(s.LiveSessions(m.Name))
	lock.Unlock()
	// A client that detached leaves its session running in the box: the
	// box stops when the last session ends, not when a client goes.
	if live == 0 && !s.guestSessionsAlive(context.Background(), m.Name) {
		s.progress("stopping box %s (stop_on_exit)", m.Name)
		_ = s.Stop(context.Background(), m.Name, audit.KindStop)
	}
}

func shellQuote(s string) string {
	if s == "~" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
