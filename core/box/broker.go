package box

import (
	"context"
	"errors"
	"fmt"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/untrusted"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/procinfo"
)

// ErrBrokerDown means a broker-mode box's broker is not answering.
var ErrBrokerDown = errors.New("the egress broker is not answering")

// pickBrokerPort chooses a port for a new box: the deterministic default,
// or the next free one when another box or process has it.
func (s *Service) pickBrokerPort(box string) int {
	used := map[int]bool{}
	metas, _ := boxmeta.List(s.Layout)
	for _, m := range metas {
		if m.Name != box {
			used[m.BrokerPort] = true
		}
	}
	return egress.PickPort(box, func(p int) bool {
		if used[p] {
			return true
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return true
		}
		ln.Close()
		return false
	})
}

// brokerAlive reports whether pid is a running corral broker for box that
// started at start (0: any start, for state written before start times
// were kept). It identifies the process by its argv (`corral broker --box
// BOX`, broker.ParseArgv) and its start time, on Linux and macOS
// through the same reads (core/procinfo): after a reboot the saved PID may
// be any of the user's processes, and stop, rm and gc signal what this
// says is the broker.
func brokerAlive(pid int, box string, start int64) bool {
	if pid <= 0 {
		return false
	}
	id, err := procinfo.Read(pid)
	return err == nil && isBroker(id, box, start)
}

// isBroker is brokerAlive's decision on a process's identity.
func isBroker(id procinfo.Identity, box string, start int64) bool {
	a, ok := broker.ParseArgv(id.Argv)
	return ok && a.Box == box && procinfo.Same(id, start)
}

// BrokerAnswering dials the broker's port.
func BrokerAnswering(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// EnsureBroker starts the box's broker if it is not running and waits for
// it to answer. Boxes not in broker mode have none.
func (s *Service) EnsureBroker(ctx context.Context, m *boxmeta.Meta) error {
	if m.Network != config.NetworkBroker {
		return nil
	}
	if brokerAlive(m.BrokerPID, m.Name, m.BrokerStart) && BrokerAnswering(m.BrokerPort) {
		return nil
	}
	logf, err := untrusted.OpenFile(s.Layout.BrokerLog(m.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("starting the broker of box %s: %w", m.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(s.Exe, broker.Argv(broker.Args{Box: m.Name, Listen: "127.0.0.1:" + strconv.Itoa(m.BrokerPort)})...)
	cmd.Env = append(os.Environ(), "CORRAL_HOME="+s.Layout.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the broker of box %s: %w", m.Name, err)
	}
	m.BrokerPID, m.BrokerStart = cmd.Process.Pid, 0
	if id, err := procinfo.Read(m.BrokerPID); err == nil {
		m.BrokerStart = id.Start
	}
	_ = cmd.Process.Release()
	deadline := time.Now().Add(10 * time.Second)
	for !BrokerAnswering(m.BrokerPort) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return hint.New(fmt.Errorf("%w: box %s, port %d", ErrBrokerDown, m.Name, m.BrokerPort), fmt.Sprintf("see %s", s.Layout.BrokerLog(m.Name)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Logger.Debug("broker started", "box", m.Name, "pid", m.BrokerPID, "port", m.BrokerPort)
	return nil
}

// StopBroker ends the box's broker, if it runs.
func (s *Service) StopBroker(m *boxmeta.Meta) {
	if brokerAlive(m.BrokerPID, m.Name, m.BrokerStart) {
		_ = syscall.Kill(m.BrokerPID, syscall.SIGTERM)
		for i := 0; i < 50 && brokerAlive(m.BrokerPID, m.Name, m.BrokerStart); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	m.BrokerPID, m.BrokerStart = 0, 0
}
