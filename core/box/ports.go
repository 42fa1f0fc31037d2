package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
)

// Ports of a box: the ports key forwards guest TCP ports to the host's
// 127.0.0.1. Lima reads its port forwards only when it starts a box, so
// corral writes them into the instance's lima.yaml before every start
// (applyPorts; they are not part of the template hash, so a change is no
// drift), and `corral port` adds one to a running box at once as a
// forward of corral's ssh master (AddPort), which lasts until the box
// stops; the next start has it from the config. Either way the host opens
// the connections: the guest gets no egress.

// applyPorts writes the config's forwards into the instance's lima.yaml
// (when they differ) and records them in m. The box must be stopped and
// locked.
func (s *Service) applyPorts(r boxmeta.Resolved, m *boxmeta.Meta) error {
	ports := r.Loaded.Settings().Ports()
	path := filepath.Join(s.Layout.LimaHome(), m.Name, "lima.yaml")
	b, err := limayaml.ReadInstance(path)
	if err != nil {
		return fmt.Errorf("applying the ports of box %s: %w", m.Name, err)
	}
	out, err := limayaml.SetPortForwards(b, limayaml.PortForwards(ports))
	if err != nil {
		return fmt.Errorf("applying the ports of box %s: %w", m.Name, err)
	}
	// host_ports reach the guest's nftables as a parameter (see
	// limayaml.HostPortsKey), and qemu's guestfwds come from m.HostPorts,
	// which the wrapper reads at this start. Only here, on a stopped box:
	// a running qemu keeps the guestfwds it started with, and the session
	// check compares them with m.HostPorts.
	hostPorts := r.Loaded.Settings().BridgedPorts()
	if out, err = limayaml.SetHostPorts(out, hostPorts); err != nil {
		return fmt.Errorf("applying the host ports of box %s: %w", m.Name, err)
	}
	m.HostPorts = hostPorts
	if !bytes.Equal(out, b) {
		if err := atomicfile.WriteFile(path, out, 0o644); err != nil {
			return fmt.Errorf("applying the ports of box %s: %w", m.Name, err)
		}
	}
	m.Ports = ports
	return nil
}

// ErrPortForwarded means the port is forwarded already.
var ErrPortForwarded = errors.New("port is forwarded already")

// AddPort forwards p to a running box now, through corral's ssh master
// of the box (ssh -O forward -L 127.0.0.1:HOST:127.0.0.1:GUEST), and
// records it in the box's metadata. A guest listener on 127.0.0.1 or on
// every address answers; the forward ends with the master (corral stop).
func (s *Service) AddPort(ctx context.Context, box string, p config.Port) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	for _, q := range m.Ports {
		if q == p {
			return fmt.Errorf("box %s: %s: %w", box, p, ErrPortForwarded)
		}
		if q.Host == p.Host || q.Guest == p.Guest {
			return hint.New(fmt.Errorf("box %s: %s clashes with the forward %s", box, p, q), "choose another host port (HOST:GUEST)")
		}
	}
	sock, err := s.EnsureMaster(ctx, box)
	if err != nil {
		return err
	}
	argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{})
	if err != nil {
		return err
	}
	host := argv[len(argv)-1]
	spec := limayaml.HostIP + ":" + strconv.Itoa(p.Host) + ":127.0.0.1:" + strconv.Itoa(p.Guest)
	argv = append(argv[:len(argv)-1:len(argv)-1], "-o", "ControlPath="+sock, "-O", "forward", "-L", spec, host)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := s.guestCmd(cctx, argv, masterEnviron())
	if out, err := cmd.CombinedOutput(); err != nil {
		return hint.New(fmt.Errorf("forwarding %s to box %s: %w: %s", p, box, err, firstLine(strings.TrimSpace(string(out)))),
			fmt.Sprintf("is 127.0.0.1:%d free on this host? the port is in the box's config: it is forwarded at the next start (corral stop %s && corral up)", p.Host, box))
	}
	m.Ports = append(slices.Clone(m.Ports), p)
	return boxmeta.Write(s.Layout, m)
}
