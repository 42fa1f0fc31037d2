package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
)

func infoFixture() Info {
	return Info{
		Status: box.Status{
			Meta: boxmeta.Meta{Name: "web-1a2b3c", Project: "/src/web", TemplateHash: "abc123", BrokerPort: 42001,
				Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2, VMType: "qemu", MountType: "9p", IdleStop: "30m",
				Ports: []config.Port{{Host: 3000, Guest: 3000}, {Host: 8080, Guest: 80}}, HostPorts: []int{9229, 63342}},
			State: boxstate.Running, MemBytes: 1 << 30, Idle: 12 * time.Minute, Broker: true,
		},
		Pending: []config.RepoRequest{{}},
		Refused: []config.RepoRequest{{Key: "egress", Entry: "*.com", Status: config.RequestRefused, Risk: config.RiskRefused, Why: "a wildcard over a public suffix"}},
		Funnel:  "in force",
		Drift:   "up to date",
		Mounts: []limayaml.Mount{{Location: "/src/web", MountPoint: "/src/web", Writable: true},
			{Location: "/home/u/.corral/seed/web-1a2b3c", MountPoint: "/corral/seed"}},
	}
}

func runInfo(t *testing.T, tty bool, args ...string) (string, string, error) {
	t.Helper()
	io, _, out, errOut := Test(tty)
	f := &Factory{IO: io}
	cmd := NewCmdInfo(f, func(o *InfoOptions) error {
		o.Project = func() (string, error) { return "web-1a2b3c", nil }
		o.Status = func(name string) (Info, error) {
			in := infoFixture()
			in.Name = name
			return in, nil
		}
		return infoRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestInfoTTY(t *testing.T) {
	out, errOut, err := runInfo(t, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `box               web-1a2b3c
state             Running
project           /src/web
template hash     abc123
config drift      up to date
golden            -
network           broker
broker            port 42001, running
funnel            in force
vm type           qemu
mount type        9p
mount             /src/web -> /src/web (writable)
mount             /home/u/.corral/seed/web-1a2b3c -> /corral/seed (read-only)
ports             3000,8080:80 (on the host's 127.0.0.1)
host ports        9229, 63342 (the host's 127.0.0.1, at the broker address in the box; a qemu guestfwd each, host-enforced)
memory            1GiB / 4GiB
cpus              2
sessions          0
idle              12m0s
idle stop         30m
pending requests  1
refused requests  1
its repository requests 1 host(s) or port(s); review with corral approve web-1a2b3c
its repository requests 1 entr(ies) the grant check refuses: never allowed; corral config check -C /src/web says why
`
	if out != want || errOut != "" {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr %q", out, want, errOut)
	}
}

func TestInfoNotTTYNamesTheBox(t *testing.T) {
	out, _, err := runInfo(t, false, "other")
	if err != nil {
		t.Fatal(err)
	}
	if want := "box\tother\nstate\tRunning\n"; len(out) < len(want) || out[:len(want)] != want {
		t.Errorf("stdout %q", out)
	}
}

func TestInfoJSON(t *testing.T) {
	out, _, err := runInfo(t, false, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for k, v := range map[string]any{"name": "web-1a2b3c", "state": "Running", "network": "broker", "broker_port": 42001.0, "broker_running": true, "template_hash": "abc123"} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if hp, ok := got["host_ports"].([]any); !ok || len(hp) != 2 || hp[1] != 63342.0 {
		t.Errorf("host_ports = %v", got["host_ports"])
	}
	if p, ok := got["pending_requests"].([]any); !ok || len(p) != 1 {
		t.Errorf("pending_requests %v", got["pending_requests"])
	}
	if m, ok := got["mounts"].([]any); !ok || len(m) != 2 || got["drift"] != "up to date" {
		t.Errorf("mounts %v, drift %v", got["mounts"], got["drift"])
	}
}

// TestInfoReadsTheBox runs the real status path over written metadata: a
// box with no Lima instance is Missing (no mounts; its empty template hash
// is drift), and an unknown box is an error.
func TestInfoReadsTheBox(t *testing.T) {
	e := setup(t, "")
	writeBoxMeta(t, e, config.NetworkBroker)
	f, out, _ := testFactory(e, false)
	svc, _ := boxtest.Service(paths.Layout{Home: e.home}, time.Now(), audit.ActorCLI)
	f.NewService = func() (*box.Service, error) { return svc, nil }
	cmd := NewCmdInfo(f, nil)
	cmd.SetArgs([]string{e.box, "--json"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Name != e.box || got.State != boxstate.Missing || got.BrokerPort != 42001 || got.Pending == nil || got.Funnel != "not applicable" ||
		got.Mounts == nil || !strings.HasPrefix(got.Drift, "changed: ") {
		t.Errorf("info %+v", got)
	}
	cmd = NewCmdInfo(f, nil)
	cmd.SetArgs([]string{"no-such-box"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil {
		t.Error("unknown box: no error")
	}
}

// TestInfoLimaYAMLLoop: a lima.yaml that is a symbolic link loop makes the
// box Broken with the reason, never "Missing".
func TestInfoLimaYAMLLoop(t *testing.T) {
	e := setup(t, "")
	writeBoxMeta(t, e, config.NetworkBroker)
	l := paths.Layout{Home: e.home}
	dir := filepath.Join(l.LimaHome(), e.box)
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.Symlink("lima.yaml", filepath.Join(dir, "lima.yaml")))
	f, out, _ := testFactory(e, true)
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
	f.NewService = func() (*box.Service, error) { return svc, nil }
	cmd := NewCmdInfo(f, nil)
	cmd.SetArgs([]string{e.box})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Broken") || !strings.Contains(out.String(), "lima.yaml: too many levels of symbolic links") || strings.Contains(out.String(), "Missing") {
		t.Errorf("info:\n%s", out)
	}
}

// TestFunnelProof: a running qemu box in broker mode whose qemu cannot be
// read is "not proved"; a stopped or vz box needs no proof.
func TestFunnelProof(t *testing.T) {
	run := box.Status{Meta: boxmeta.Meta{Name: "b", VMType: "qemu", Network: config.NetworkBroker, BrokerPort: 42001}, State: boxstate.Running}
	if got := funnelProof(t.TempDir(), run); got[:len("not proved: ")] != "not proved: " {
		t.Errorf("no qemu.pid: %q", got)
	}
	stopped := run
	stopped.State = boxstate.Stopped
	vz := run
	vz.VMType = "vz"
	for _, st := range []box.Status{stopped, vz} {
		if got := funnelProof(t.TempDir(), st); got != "not applicable" {
			t.Errorf("%s %s: %q", st.State, st.VMType, got)
		}
	}
}
