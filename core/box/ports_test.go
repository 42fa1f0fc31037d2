package box

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"go.yaml.in/yaml/v3"
)

func portsService(t *testing.T) *Service {
	t.Helper()
	// A short home: the control socket's path must fit sun_path.
	home, err := os.MkdirTemp("/tmp", "cp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	l := paths.Layout{Home: home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	return &Service{Layout: l, Logger: discard(), Now: time.Now, Lima: &lima.Client{LimaHome: l.LimaHome()}}
}

// TestApplyPorts: a stopped box's lima.yaml gets the config's forwards
// (allow rules on 127.0.0.1, then the ignore rules) before it starts, and
// the metadata records them.
func TestApplyPorts(t *testing.T) {
	s := portsService(t)
	dir := filepath.Join(s.Layout.LimaHome(), "bx")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orig := "# rendered\nvmType: qemu\nportForwards:\n  - guestIP: 127.0.0.1\n    proto: any\n    ignore: true\nparam:\n  AGENT: claude\n"
	if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	var r boxmeta.Resolved
	r.Loaded.Config.PortEntries = []string{"3000", "8080:80"}
	m := boxmeta.Meta{Name: "bx"}
	if err := s.applyPorts(r, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Ports, []config.Port{{Host: 3000, Guest: 3000}, {Host: 8080, Guest: 80}}) {
		t.Errorf("meta ports %v", m.Ports)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "lima.yaml"))
	var back struct {
		VMType       string                 `yaml:"vmType"`
		PortForwards []limayaml.PortForward `yaml:"portForwards"`
		Param        map[string]string      `yaml:"param"`
	}
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.VMType != "qemu" || back.Param["AGENT"] != "claude" || len(back.PortForwards) != 4 ||
		back.PortForwards[0].HostPort != 3000 || back.PortForwards[1].GuestPort != 80 || !back.PortForwards[3].Ignore {
		t.Errorf("lima.yaml:\n%s", b)
	}
	// No ports: the forwards go again.
	r.Loaded.Config.PortEntries = nil
	if err := s.applyPorts(r, &m); err != nil || m.Ports != nil {
		t.Fatal(err, m.Ports)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lima.yaml")); strings.Contains(string(b), "hostPort") {
		t.Errorf("lima.yaml still forwards:\n%s", b)
	}
}

// TestAddPortRunningBox: corral port on a running box asks corral's ssh
// master for a forward bound on the host's 127.0.0.1, and records it; a
// port forwarded already, or one clashing with a forward, is refused
// without asking ssh.
func TestAddPortRunningBox(t *testing.T) {
	s := portsService(t)
	if err := boxmeta.Write(s.Layout, boxmeta.Meta{Name: "bx", Ports: []config.Port{{Host: 3000, Guest: 3000}}}); err != nil {
		t.Fatal(err)
	}
	// A live master: something listens on the control socket.
	if err := os.MkdirAll(s.Layout.SSHDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", s.Layout.SSHMaster("bx"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var calls [][]string
	fail := false
	s.GuestCommand = func(ctx context.Context, argv []string) *exec.Cmd {
		calls = append(calls, argv)
		if fail {
			return exec.CommandContext(ctx, "sh", "-c", "echo 'mux_client_forward: forwarding request failed: Port forwarding failed' >&2; exit 255")
		}
		return exec.CommandContext(ctx, "true")
	}
	ctx := context.Background()
	if err := s.AddPort(ctx, "bx", config.Port{Host: 8080, Guest: 80}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("calls %v", calls)
	}
	argv := strings.Join(calls[0], " ")
	if !strings.Contains(argv, "-O forward -L 127.0.0.1:8080:127.0.0.1:80 ") || !strings.Contains(argv, "ControlPath="+s.Layout.SSHMaster("bx")) {
		t.Errorf("argv %s", argv)
	}
	m, _ := boxmeta.Read(s.Layout, "bx")
	if !slices.Contains(m.Ports, config.Port{Host: 8080, Guest: 80}) {
		t.Errorf("meta ports %v", m.Ports)
	}
	if err := s.AddPort(ctx, "bx", config.Port{Host: 3000, Guest: 3000}); !errors.Is(err, ErrPortForwarded) {
		t.Errorf("again: %v", err)
	}
	if err := s.AddPort(ctx, "bx", config.Port{Host: 3000, Guest: 4000}); err == nil || !strings.Contains(err.Error(), "clashes") {
		t.Errorf("clash: %v", err)
	}
	fail = true
	err = s.AddPort(ctx, "bx", config.Port{Host: 9000, Guest: 9000})
	if err == nil || !strings.Contains(err.Error(), "Port forwarding failed") {
		t.Errorf("failed forward: %v", err)
	}
	if len(calls) != 2 {
		t.Errorf("ssh asked %d times, want 2", len(calls))
	}
	if m, _ := boxmeta.Read(s.Layout, "bx"); slices.Contains(m.Ports, config.Port{Host: 9000, Guest: 9000}) {
		t.Error("a failed forward was recorded")
	}
}
