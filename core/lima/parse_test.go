package lima

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The list*.ndjson files are `limactl list --json` output of real limactl 1.2.2 (e2e-template.yaml, TCG).
func TestParseListRunning(t *testing.T) {
	insts, err := parseList([]byte(readTestdata(t, "list-1.2.2-running.ndjson")))
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 1 {
		t.Fatalf("got %d instances", len(insts))
	}
	in := insts[0]
	want := Instance{
		Name: "c1", Hostname: "lima-c1", Status: StatusRunning, Dir: "/tmp/ce2e/lima/c1", VMType: "qemu", Arch: "x86_64",
		CPUs: 2, Memory: 1 << 30, Disk: 4 << 30, SSHAddress: "127.0.0.1", SSHLocalPort: 42117,
		SSHConfigFile: "/tmp/ce2e/lima/c1/ssh.config", HostAgentPID: 5066, DriverPID: 5143, LimaVersion: "1.2.2",
	}
	cfg := in.Config
	in.Config = InstanceConfig{}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("instance =\n %+v\nwant\n %+v", in, want)
	}
	if cfg.VMType != "qemu" || cfg.MountType != "9p" || cfg.SSH.LoadDotSSHPubKeys || cfg.SSH.ForwardAgent || !cfg.HostResolver.Enabled {
		t.Errorf("config = %+v", cfg)
	}
	if len(cfg.Mounts) != 1 || cfg.Mounts[0] != (Mount{Location: "/tmp/ce2e/share", MountPoint: "/mnt/share", Writable: true}) {
		t.Errorf("mounts = %+v", cfg.Mounts)
	}
}

func TestParseListStopped(t *testing.T) {
	insts, err := parseList([]byte(readTestdata(t, "list-1.2.2-two-stopped.ndjson")))
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 2 || insts[0].Name != "c1" || insts[1].Name != "c2" {
		t.Fatalf("got %+v", insts)
	}
	for _, in := range insts {
		if in.Status != StatusStopped || in.HostAgentPID != 0 || in.DriverPID != 0 || in.SSHLocalPort != 0 {
			t.Errorf("%s: %+v", in.Name, in)
		}
	}
}

func TestParseListEmptyAndBroken(t *testing.T) {
	if insts, err := parseList(nil); err != nil || len(insts) != 0 {
		t.Errorf("empty: %v, %v", insts, err)
	}
	if _, err := parseList([]byte(`{"name":"a"}` + "\n" + `{"name":`)); err == nil {
		t.Error("truncated: no error")
	}
}

func TestListThroughClient(t *testing.T) {
	f := &fakeExec{stdout: readTestdata(t, "list-1.2.2-two-stopped.ndjson")}
	insts, err := f.client().List(context.Background())
	if err != nil || len(insts) != 2 {
		t.Fatalf("List = %v, %v", insts, err)
	}
	f = &fakeExec{stdout: readTestdata(t, "list-1.2.2-running.ndjson")}
	in, err := f.client().Get(context.Background(), "c1")
	if err != nil || in.Status != StatusRunning {
		t.Errorf("Get = %+v, %v", in, err)
	}
}

// SSHArgs must name the host the way Lima's own ssh.config does.
func TestSSHArgsMatchesLimaSSHConfig(t *testing.T) {
	cfg := readTestdata(t, "ssh-1.2.2.config")
	args, err := (&Client{LimaHome: "/tmp/ce2e/lima"}).SSHArgs("c1", SSHOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host := args[len(args)-1]
	if !strings.Contains(cfg, "\nHost "+host+"\n") {
		t.Errorf("ssh.config has no Host %s", host)
	}
	if !strings.Contains(cfg, `ControlPath "`+"/tmp/ce2e/lima/c1/ssh.sock"+`"`) {
		t.Error("ssh.config control path is not under LIMA_HOME/NAME")
	}
}
