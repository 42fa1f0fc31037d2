package box

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/secret"
)

const gib = 1 << 30

func healthyHost() HostFacts {
	return HostFacts{
		GOOS: "linux", Arch: "amd64",
		LimaVersion: lima.Version{Major: 1, Minor: 2, Patch: 2},
		QemuPath:    "/usr/bin/qemu-system-x86_64",
		KVM:         true,
		UID:         1000,
		Dirs:        []DirFact{{Path: "/h", Mode: 0o700, UID: 1000}, {Path: "/h/lima", Err: os.ErrNotExist}},
		LimaHome:    "/h/lima", MaxNameLen: 40, BoxNames: []string{"web-3f2a1c"},
		HostMemory: 16 * gib,
		Running:    []Status{{Meta: boxmeta.Meta{Name: "web-3f2a1c", MemoryCap: 4 * gib}, State: boxstate.Running}},
		Keychain:   secret.NotFound(doctorProbeService, "probe"),
	}
}

// byName indexes checks; a name that appears twice fails the test.
func byName(t *testing.T, cs []Check) map[string]Check {
	t.Helper()
	m := map[string]Check{}
	for _, c := range cs {
		if _, dup := m[c.Check]; dup {
			t.Errorf("check %q twice", c.Check)
		}
		m[c.Check] = c
	}
	return m
}

func TestHostChecksHealthy(t *testing.T) {
	cs := HostChecks(healthyHost())
	if Failed(cs) {
		t.Errorf("failed: %+v", cs)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Check)
	}
	want := []string{"lima", "qemu", "qemu-img", "git shadow", "acceleration", "git host CLIs", "state directory", "socket paths", "memory budget", "keychain"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("checks %v, want %v", names, want)
	}
	m := byName(t, cs)
	if m["lima"].Detail != "limactl 1.2.2 (the version corral is tested with)" || m["memory budget"].Detail != "running boxes' memory caps 4GiB of 16GiB host RAM" {
		t.Errorf("%+v", cs)
	}
}

func TestHostChecksProblems(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*HostFacts)
		check  string
		ok     bool
		detail string // substring
		fix    string // substring
	}{
		{"no limactl", func(f *HostFacts) { f.LimaErr = fmt.Errorf("getting limactl version: %w", lima.ErrNotInstalled) }, "lima", false, "not installed", "setup-lima.sh"},
		{"no limactl, Debian package", func(f *HostFacts) {
			f.LimaErr, f.LimaInstall = fmt.Errorf("getting limactl version: %w", lima.ErrNotInstalled), lima.InstallDebian
		}, "lima", false, "not installed", "lima-2.2.0-Linux-x86_64.tar.gz | sudo tar -C /usr/local -xz"},
		{"no limactl, macOS", func(f *HostFacts) {
			f.LimaErr, f.GOOS = fmt.Errorf("getting limactl version: %w", lima.ErrNotInstalled), "darwin"
		}, "lima", false, "not installed", "brew install lima (corral is tested with Lima 2.2.0"},
		{"old lima", func(f *HostFacts) { f.LimaVersion = lima.Version{Major: 1, Minor: 0} }, "lima", false, "1.0.0 is older than 1.2.0", "install Lima from corral's source tree"},
		{"old lima, Homebrew", func(f *HostFacts) {
			f.LimaVersion, f.LimaInstall = lima.Version{Major: 1, Minor: 0}, lima.InstallHomebrew
		}, "lima", false, "1.0.0 is older than 1.2.0", "brew upgrade lima"},
		{"lima 2.2.0", func(f *HostFacts) { f.LimaVersion = lima.Version{Major: 2, Minor: 2} }, "lima", true, "limactl 2.2.0 (the version corral is tested with)", ""},
		{"newer lima", func(f *HostFacts) { f.LimaVersion = lima.Version{Major: 1, Minor: 3} }, "lima", true, "corral is tested with 2.2.0 and 1.2.2", ""},
		{"no qemu", func(f *HostFacts) { f.QemuErr = errors.New("qemu-system binary not found") }, "qemu", false, "not found", "apt-get install qemu-system-x86"},
		{"tcg", func(f *HostFacts) { f.KVM, f.KVMReason = false, "no /dev/kvm" }, "acceleration", true, "TCG", ""},
		{"open state dir", func(f *HostFacts) { f.Dirs[0].Mode = 0o755 }, "state directory", false, "/h has mode 0755", "chmod 700 /h"},
		{"foreign state dir", func(f *HostFacts) { f.Dirs[0].UID = 0 }, "state directory", false, "owned by uid 0", "sudo chown 1000 /h"},
		{"long name", func(f *HostFacts) { f.MaxNameLen = 8 }, "socket paths", false, "too long: web-3f2a1c", "CORRAL_HOME"},
		{"over budget", func(f *HostFacts) { f.Running[0].MemoryCap = 20 * gib }, "memory budget", false, "exceed", "corral stop --idle"},
		{"stopped box over budget", func(f *HostFacts) { f.Running[0].MemoryCap, f.Running[0].State = 20*gib, "Stopped" }, "memory budget", true, "0B of 16GiB", ""},
		{"keychain down, unused", func(f *HostFacts) { f.Keychain = secret.Unavailable("s", "a", nil, "start gnome-keyring") }, "keychain", true, "no box uses keychain_env", ""},
		{"keychain down, used", func(f *HostFacts) {
			f.Keychain, f.KeychainUsers = secret.Unavailable("s", "a", nil, "start gnome-keyring"), []string{"web-3f2a1c"}
		}, "keychain", false, "web-3f2a1c use keychain_env", "start gnome-keyring"},
		{"limactl path", func(f *HostFacts) { f.LimactlPath = "/opt/homebrew/bin/limactl" }, "lima", true, "/opt/homebrew/bin/limactl 1.2.2", ""},
		{"git CLIs", func(f *HostFacts) { f.GitCLIs = map[string]string{"glab": "/opt/local/bin/glab"} }, "git host CLIs", true, "gh not installed, glab /opt/local/bin/glab", ""},
		{"no vz", func(f *HostFacts) { f.GOOS, f.VZDetail = "darwin", "macOS 12.7 is older than 13, which vz needs" }, "vz", false, "older than 13", "macOS 13"},
		{"mac, no qemu, none needed", func(f *HostFacts) { f.GOOS, f.VZ, f.QemuErr = "darwin", true, errors.New("not found") }, "qemu", true, "only vm_type", ""},
		{"mac, no qemu, needed", func(f *HostFacts) {
			f.GOOS, f.VZ, f.QemuErr, f.QemuUsers = "darwin", true, errors.New("not found"), []string{"web-3f2a1c"}
		}, "qemu", false, "web-3f2a1c set vm_type", "brew install qemu"},
		{"mac, qemu without firmware", func(f *HostFacts) {
			f.GOOS, f.VZ, f.QemuUsers = "darwin", true, []string{"web-3f2a1c"}
		}, "qemu firmware", false, "UEFI firmware", "brew reinstall qemu"},
		{"mac, qemu with firmware", func(f *HostFacts) {
			f.GOOS, f.VZ, f.QemuUsers, f.QemuFirmware = "darwin", true, []string{"web-3f2a1c"}, "/opt/homebrew/share/qemu"
		}, "qemu firmware", true, "/opt/homebrew/share/qemu", ""},
		{"mac, no qemu-img, needed", func(f *HostFacts) {
			f.GOOS, f.VZ, f.QemuUsers, f.QemuImgErr = "darwin", true, []string{"web-3f2a1c"}, errors.New("qemu-img not found")
		}, "qemu-img", false, "not found", "brew install qemu"},
		{"keychain item prompts", func(f *HostFacts) {
			f.KeychainItems = []KeychainItem{{Boxes: []string{"web-3f2a1c"}, Service: "api", Account: "me", Access: secret.AccessPrompts}}
		}, "keychain item api/me", false, "raises the keyring's unlock prompt", "unlock the keyring"},
		{"mac keychain item prompts", func(f *HostFacts) {
			f.GOOS, f.VZ = "darwin", true
			f.KeychainItems = []KeychainItem{{Boxes: []string{"web-3f2a1c"}, Service: "api", Account: "me", Access: secret.AccessPrompts}}
		}, "keychain item api/me", false, "raises a Keychain dialog", "corral secret set --service api --account me"},
		{"keychain item readable", func(f *HostFacts) {
			f.KeychainItems = []KeychainItem{{Boxes: []string{"web-3f2a1c"}, Service: "api", Account: "me", Access: secret.AccessReadable}}
		}, "keychain item api/me", true, "without asking", ""},
		{"keychain item unknown", func(f *HostFacts) {
			f.KeychainItems = []KeychainItem{{Boxes: []string{"web-3f2a1c"}, Service: "api", Account: "me", Err: secret.Unavailable("api", "me", nil, "start gnome-keyring")}}
		}, "keychain item api/me", true, "could not tell", ""},
		{"keychain item missing", func(f *HostFacts) {
			f.KeychainItems = []KeychainItem{{Boxes: []string{"web-3f2a1c"}, Service: "api", Account: "me", Access: secret.AccessMissing}}
		}, "keychain item api/me", false, "no such item", "corral secret set"},
		{"image pinned", func(f *HostFacts) { f.Images = []ImageProbe{{Image: pinnedImage, Status: 200}} }, "guest image", true, "(pinned by digest)", ""},
		{"image serial gone", func(f *HostFacts) {
			f.Images = []ImageProbe{{Image: pinnedImage, Status: 404}, {Image: limayaml.Image{Location: "https://127.0.0.1/release/x.img"}, Status: 200}}
		}, "guest image", true, "not pinned by digest); unavailable first: https://127.0.0.1/release-1/x.img (HTTP 404)", ""},
		{"no image", func(f *HostFacts) {
			f.Images = []ImageProbe{{Image: pinnedImage, Err: errors.New("no route")}, {Image: limayaml.Image{Location: "https://127.0.0.1/release/x.img"}, Status: 503}}
		}, "guest image", false, "no route", "set image"},
		{"local image", func(f *HostFacts) { f.Images = []ImageProbe{} }, "guest image", true, "local image", ""},
	}
	for _, tt := range tests {
		f := healthyHost()
		tt.mutate(&f)
		c, ok := byName(t, HostChecks(f))[tt.check]
		if !ok {
			t.Errorf("%s: no check %q", tt.name, tt.check)
			continue
		}
		if c.OK != tt.ok || !strings.Contains(c.Detail, tt.detail) || !strings.Contains(c.Fix, tt.fix) || (!c.OK && c.Fix == "") {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
}

var pinnedImage = limayaml.Image{Location: "https://127.0.0.1/release-1/x.img", Digest: "sha256:00"}

// ProbeImages asks each image in Lima's order and stops at the first that
// answers; it follows redirects (the release directory redirects to the
// serial upstream) and reports a dead server as an error.
func TestProbeImages(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/gone.img", http.NotFound)
	mux.HandleFunc("/moved.img", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok.img", http.StatusFound) })
	var methods []string
	mux.HandleFunc("/ok.img", func(w http.ResponseWriter, r *http.Request) { methods = append(methods, r.Method) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	ims := []limayaml.Image{{Location: dead.URL + "/x.img"}, {Location: srv.URL + "/gone.img"}, {Location: srv.URL + "/moved.img"}, {Location: srv.URL + "/never.img"}}
	got := ProbeImages(context.Background(), srv.Client(), ims)
	if len(got) != 3 {
		t.Fatalf("%d probes, want 3 (stop at the first that answers): %+v", len(got), got)
	}
	if got[0].Err == nil || got[0].OK() || got[1].Status != 404 || !got[2].OK() {
		t.Errorf("probes %+v", got)
	}
	if !reflect.DeepEqual(methods, []string{http.MethodHead}) {
		t.Errorf("methods %v, want one HEAD", methods)
	}
}

func healthyGuest() (guestWant, map[string]string) {
	w := guestWant{Box: "web", Network: "broker", Units: []string{"corral-network.service", "corral-project.service"},
		EnvNames: []string{"API_KEY", "CORRAL_BOX"}, GitHosts: []string{"github.com"}}
	kv := parseGuestReport([]byte(`network_want=broker
marker=1
marker_hash=sha256:abc
network=broker
sudo=no
nft=present
unit.corral-network.service=active
unit.corral-project.service=active
env.API_KEY=1
env.CORRAL_BOX=1
git.github.com=ok
end=1
`))
	return w, kv
}

func TestGuestChecksHealthy(t *testing.T) {
	w, kv := healthyGuest()
	cs := guestChecks(w, kv)
	if Failed(cs) {
		t.Errorf("failed: %+v", cs)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Check)
	}
	want := []string{"provisioned", "provision steps", "unit corral-network.service", "unit corral-project.service", "network broker", "session variables", "git credentials github.com"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("checks %v, want %v", names, want)
	}
}

// TestStepsCheck: doctor reads the guest's record of this boot's
// provision steps; a failed or unrecorded step fails the check by name,
// and a box with no record at all (made before the record) passes.
func TestStepsCheck(t *testing.T) {
	all := func() map[string]string {
		kv := map[string]string{"steps": "1"}
		for _, st := range golden.ProvisionSteps() {
			kv["step."+st] = "0"
		}
		return kv
	}
	if c := stepsCheck(all()); !c.OK || !strings.HasPrefix(c.Detail, "all ") {
		t.Errorf("all recorded: %+v", c)
	}
	if c := stepsCheck(map[string]string{}); !c.OK || !strings.Contains(c.Detail, "no record") {
		t.Errorf("no record: %+v", c)
	}
	kv := all()
	kv["step.30-agent.sh"] = "1"
	if c := stepsCheck(kv); c.OK || c.Detail != "provision step guest/provision/30-agent.sh failed (exit status 1) at this boot" || !strings.Contains(c.Fix, "corral rebuild") {
		t.Errorf("failed step: %+v", c)
	}
	kv = all()
	delete(kv, "step.40-network.sh")
	if c := stepsCheck(kv); c.OK || !strings.Contains(c.Detail, "guest/provision/40-network.sh left no record") {
		t.Errorf("missing step: %+v", c)
	}
	w, kv := healthyGuest()
	kv["steps"], kv["step.00-base.sh"] = "1", "2"
	if c := byName(t, guestChecks(w, kv))["provision steps"]; c.OK {
		t.Errorf("guestChecks: %+v", c)
	}
}

func TestGuestChecksProblems(t *testing.T) {
	tests := []struct {
		name   string
		kv     map[string]string
		check  string
		detail string
		fix    string
	}{
		{"no marker", map[string]string{"marker": "0"}, "provisioned", "/etc/corral/provisioned is missing", "corral rebuild"},
		{"unit stopped", map[string]string{"unit.corral-project.service": "inactive"}, "unit corral-project.service", "corral-project.service is inactive", "journalctl -u corral-project.service"},
		{"unit unknown", map[string]string{"unit.corral-network.service": ""}, "unit corral-network.service", "is unknown", "corral stop web && corral start web"},
		{"sudo left", map[string]string{"sudo": "yes"}, "network broker", "has sudo", "corral rebuild"},
		{"no table", map[string]string{"nft": "absent"}, "network broker", "inet corral is missing", "corral rebuild"},
		{"other mode", map[string]string{"network": "full"}, "network broker", `applies network "full"`, "corral rebuild"},
		{"env lost", map[string]string{"env.API_KEY": "0"}, "session variables", "not arriving in the box: API_KEY", "CORRAL_FWD_*"},
		{"no token", map[string]string{"git.github.com": "none"}, "git credentials github.com", "no token for https://github.com", "corral secret set --service corral-git --account github.com"},
	}
	for _, tt := range tests {
		w, kv := healthyGuest()
		for k, v := range tt.kv {
			kv[k] = v
		}
		cs := guestChecks(w, kv)
		c := byName(t, cs)[tt.check]
		if c.OK || !strings.Contains(c.Detail, tt.detail) || !strings.Contains(c.Fix, tt.fix) {
			t.Errorf("%s: %+v", tt.name, c)
		}
		var failed int
		for _, c := range cs {
			if !c.OK {
				failed++
			}
		}
		if failed != 1 {
			t.Errorf("%s: %d checks failed, want 1: %+v", tt.name, failed, cs)
		}
	}
	// Without root the table cannot be read; the unit check covers it.
	w, kv := healthyGuest()
	kv["nft"] = "unknown"
	if c := byName(t, guestChecks(w, kv))["network broker"]; !c.OK {
		t.Errorf("unreadable table: %+v", c)
	}
	// Full mode wants neither the table nor sudo removed.
	w.Network, kv["network"], kv["sudo"], kv["nft"] = "full", "full", "yes", "absent"
	if c := byName(t, guestChecks(w, kv))["network full"]; !c.OK {
		t.Errorf("full mode: %+v", c)
	}
}

func TestRemoteCommandQuotes(t *testing.T) {
	w := guestWant{Network: "broker", Units: []string{"a.service"}, EnvNames: []string{"K"}, GitHosts: []string{"git.example.test"}}
	want := `sh -s -- 'broker' 'unit:a.service' 'env:K' 'git:git.example.test:CORRAL_GIT_TOKEN_GIT_EXAMPLE_TEST'`
	if got := w.remoteCommand(); got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

func TestEnvChecks(t *testing.T) {
	in := launchenv.Input{
		Settings: config.Settings{KeychainEnv: map[string]config.SecretRef{"API_KEY": {Service: "anthropic", Account: "default"}}},
		Secrets:  &secret.Memory{},
	}
	_, err := launchenv.Assemble(context.Background(), in)
	if err == nil {
		t.Fatal("assemble succeeded without the secret")
	}
	cs := envChecks(err)
	if len(cs) != 1 || cs[0].OK || cs[0].Check != "keychain_env.API_KEY" ||
		!strings.Contains(cs[0].Detail, `service "anthropic" account "default"`) ||
		!strings.Contains(cs[0].Fix, "corral secret set --service anthropic --account default") {
		t.Errorf("%+v", cs)
	}
	if cs := envChecks(nil); len(cs) != 1 || !cs[0].OK {
		t.Errorf("%+v", cs)
	}
}

// TestDoctorBoxRunsTheGuestScript drives DoctorBox on a "running" box
// (live pid files) with the ssh replaced: the script really runs, in sh
// on this host, with the environment ssh would send.
func TestDoctorBoxRunsTheGuestScript(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	box := r.Project.Box
	dir := filepath.Join(s.Layout.LimaHome(), box)
	_ = os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	var gotArgv, gotEnv []string
	run := func(ctx context.Context, argv, environ []string, script string) ([]byte, error) {
		gotArgv, gotEnv = argv, environ
		remote := argv[len(argv)-1]
		// The session's variables as assembled, less one that is lost on
		// the way.
		environ = slices.DeleteFunc(slices.Clone(environ), func(e string) bool { return strings.HasPrefix(e, "CORRAL_FWD_MISSING=") })
		return runSSH(ctx, []string{"sh", "-c", remote}, environ, script)
	}
	r.Loaded.Config.ForwardEnv = []string{"MISSING"}
	host := SessionHost{Getenv: func(n string) (string, bool) { return "v", n == "MISSING" }}
	cs := s.DoctorBox(ctx, box, DoctorBoxOptions{Resolved: r, Host: host, RunGuest: run})
	m := byName(t, cs)
	if !m["box "+box].OK || !m["config"].OK || !m["session environment"].OK {
		t.Errorf("%+v", cs)
	}
	if c := m["session variables"]; c.OK || c.Detail != "not arriving in the box: MISSING" {
		t.Errorf("session variables: %+v", c)
	}
	if _, ok := m["network full"]; !ok {
		t.Errorf("no network check: %+v", cs)
	}
	if !slicesContain(gotEnv, "CORRAL_FWD_CORRAL_BOX="+box) || !slicesContain(gotEnv, "CORRAL_FWD_MISSING=v") {
		t.Errorf("the guest script's environment is not the session's: %q", gotEnv)
	}
	if !slicesContain(gotArgv, "SendEnv=CORRAL_FWD_*") || !slicesContain(gotArgv, "ControlMaster=no") {
		t.Errorf("ssh argv %v", gotArgv)
	}
	// A box whose ssh does not answer.
	cs = s.DoctorBox(ctx, box, DoctorBoxOptions{Resolved: r, RunGuest: func(context.Context, []string, []string, string) ([]byte, error) {
		return nil, errors.New("ssh: connect refused")
	}})
	if c := byName(t, cs)["ssh"]; c.OK || c.Detail != "ssh: connect refused" {
		t.Errorf("%+v", cs)
	}
}

func TestDoctorBoxStopped(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := s.DoctorBox(context.Background(), r.Project.Box, DoctorBoxOptions{Resolved: r, RunGuest: func(context.Context, []string, []string, string) ([]byte, error) {
		t.Error("ssh into a stopped box")
		return nil, nil
	}})
	if Failed(cs) || !strings.Contains(cs[0].Detail, "stopped") {
		t.Errorf("%+v", cs)
	}
	if cs := s.DoctorBox(context.Background(), "nope", DoctorBoxOptions{}); !Failed(cs) {
		t.Errorf("unknown box: %+v", cs)
	}
}
