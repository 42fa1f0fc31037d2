package box

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
)

// ErrBrokerDown means a broker-mode box's broker is not answering.
var ErrBrokerDown = errors.New("the egress broker is not answering")

// pickBrokerPort chooses a port for a new box: the deterministic default,
// or the next free one when another box or process has it.
func (s *Service) pickBrokerPort(box string) int {
	used := map[int]bool{}
	metas, _ := ListMeta(s.Layout)
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

// brokerAlive reports whether pid is a running corral broker for box.
func brokerAlive(pid int, box string) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		// No /proc (macOS): signal 0 says the process exists.
		return syscall.Kill(pid, 0) == nil
	}
	got, ok := brokerBox(b)
	return ok && got == box
}

// brokerBox reads a /proc cmdline: the box of a `corral broker --box BOX`
// process (egress.ParseBrokerArgv), or false for any other process.
func brokerBox(cmdline []byte) (string, bool) {
	a, ok := egress.ParseBrokerArgv(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
	return a.Box, ok
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
func (s *Service) EnsureBroker(ctx context.Context, m *Meta) error {
	if m.Network != config.NetworkBroker {
		return nil
	}
	if brokerAlive(m.BrokerPID, m.Name) && BrokerAnswering(m.BrokerPort) {
		return nil
	}
	logf, err := os.OpenFile(s.Layout.BrokerLog(m.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("starting the broker of box %s: %w", m.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(s.Exe, egress.BrokerArgv(egress.BrokerArgs{Box: m.Name, Listen: "127.0.0.1:" + strconv.Itoa(m.BrokerPort)})...)
	cmd.Env = append(os.Environ(), "CORRAL_HOME="+s.Layout.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the broker of box %s: %w", m.Name, err)
	}
	m.BrokerPID = cmd.Process.Pid
	_ = cmd.Process.Release()
	deadline := time.Now().Add(10 * time.Second)
	for !BrokerAnswering(m.BrokerPort) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%w: box %s, port %d\nhint: see %s", ErrBrokerDown, m.Name, m.BrokerPort, s.Layout.BrokerLog(m.Name))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Logger.Debug("broker started", "box", m.Name, "pid", m.BrokerPID, "port", m.BrokerPort)
	return nil
}

// StopBroker ends the box's broker, if it runs.
func (s *Service) StopBroker(m *Meta) {
	if brokerAlive(m.BrokerPID, m.Name) {
		_ = syscall.Kill(m.BrokerPID, syscall.SIGTERM)
		for i := 0; i < 50 && brokerAlive(m.BrokerPID, m.Name); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	m.BrokerPID = 0
}
