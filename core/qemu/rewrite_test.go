package qemu

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// limaArgv loads a qemu argv captured from a real Lima 1.2.2 VM (one argument per line, argv[0] dropped).
func limaArgv(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[1:]
}

func valueOf(args []string, flag string) []string {
	var vs []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			vs = append(vs, args[i+1])
		}
	}
	return vs
}

func TestRewriteRealLimaArgvTCG(t *testing.T) {
	in := limaArgv(t, "lima-1.2.2-x86_64-kvm.argv")
	out, err := Rewrite(in, Options{Accel: AccelTCG})
	if err != nil {
		t.Fatal(err)
	}
	if got := valueOf(out, "-machine"); !slices.Equal(got, []string{"q35"}) {
		t.Errorf("-machine = %q, want [q35]", got)
	}
	if got := valueOf(out, "-accel"); !slices.Equal(got, []string{"tcg,thread=multi,tb-size=128"}) {
		t.Errorf("-accel = %q", got)
	}
	if got := valueOf(out, "-cpu"); !slices.Equal(got, []string{"max"}) {
		t.Errorf("-cpu = %q, want [max]", got)
	}
	// The whole argv equals the one that booted the VM to READY under TCG.
	if want := limaArgv(t, "lima-1.2.2-x86_64-tcg.argv"); !slices.Equal(out, want) {
		t.Errorf("TCG argv differs from the golden one:\n got %q\nwant %q", out, want)
	}
	if !slices.Equal(valueOf(out, "-netdev"), valueOf(in, "-netdev")) {
		t.Errorf("netdev changed without a funnel: %q", valueOf(out, "-netdev"))
	}
	if in[slices.Index(in, "-machine")+1] != "q35,accel=kvm" {
		t.Errorf("input was modified")
	}
}

func TestRewriteRealLimaArgvFunnel(t *testing.T) {
	in := limaArgv(t, "lima-1.2.2-x86_64-kvm.argv")
	out, err := Rewrite(in, Options{Accel: AccelKVM, Funnel: &Funnel{GuestFwdPort: 3128, GuestConnCmd: "/opt/corral/bin/corral guest-conn /run/c/vm.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	nd := valueOf(out, "-netdev")
	if len(nd) != 1 {
		t.Fatalf("netdevs = %q", nd)
	}
	orig := valueOf(in, "-netdev")[0]
	want := orig + ",restrict=on,ipv6=off,guestfwd=tcp:192.168.5.4:3128-cmd:/opt/corral/bin/corral guest-conn /run/c/vm.sock"
	if nd[0] != want {
		t.Errorf("netdev =\n %s\nwant\n %s", nd[0], want)
	}
	if got := valueOf(out, "-machine"); !slices.Equal(got, []string{"q35,accel=kvm"}) {
		t.Errorf("KVM kept: -machine = %q", got)
	}
}

func TestRewrite(t *testing.T) {
	fun := &Funnel{GuestFwdPort: 18480, GuestConnCmd: "/c/corral guest-conn a,b"}
	tests := []struct {
		name    string
		in      []string
		opt     Options
		want    []string
		wantErr error
	}{
		{
			name: "keep is identity",
			in:   []string{"-machine", "q35,accel=kvm", "-cpu", "host"},
			opt:  Options{},
			want: []string{"-machine", "q35,accel=kvm", "-cpu", "host"},
		},
		{
			name: "tcg custom tb size and host cpu features",
			in:   []string{"-cpu", "host,-pdpe1gb", "-machine", "q35,vmport=off,accel=kvm"},
			opt:  Options{Accel: AccelTCG, TBSizeMB: 256},
			want: []string{"-cpu", "max,-pdpe1gb", "-machine", "q35,vmport=off", "-accel", "tcg,thread=multi,tb-size=256"},
		},
		{
			name: "tcg replaces an existing -accel and keeps named cpus",
			in:   []string{"-cpu", "qemu64", "-machine", "q35", "-accel", "tcg,thread=multi,tb-size=512"},
			opt:  Options{Accel: AccelTCG},
			want: []string{"-cpu", "qemu64", "-machine", "q35", "-accel", "tcg,thread=multi,tb-size=128"},
		},
		{
			name: "tcg double-dash spelling and -enable-kvm",
			in:   []string{"--machine", "q35,accel=kvm", "-enable-kvm"},
			opt:  Options{Accel: AccelTCG},
			want: []string{"--machine", "q35", "-accel", "tcg,thread=multi,tb-size=128"},
		},
		{
			name: "probe: version",
			in:   []string{"--version"},
			opt:  Options{Accel: AccelTCG, Funnel: fun},
			want: []string{"--version"},
		},
		{
			name: "probe: accel help",
			in:   []string{"-M", "none", "-accel", "help"},
			opt:  Options{Accel: AccelTCG, Funnel: fun},
			want: []string{"-M", "none", "-accel", "help"},
		},
		{
			name: "probe: netdev help",
			in:   []string{"-M", "none", "-netdev", "help"},
			opt:  Options{Accel: AccelTCG, Funnel: fun},
			want: []string{"-M", "none", "-netdev", "help"},
		},
		{
			name: "probe: machine help",
			in:   []string{"-machine", "help"},
			opt:  Options{Accel: AccelTCG, Funnel: fun},
			want: []string{"-machine", "help"},
		},
		{
			name: "probe: cpu help under tcg still drops kvm",
			in:   []string{"-cpu", "help", "-machine", "q35,accel=kvm"},
			opt:  Options{Accel: AccelTCG, Funnel: fun},
			want: []string{"-cpu", "help", "-machine", "q35", "-accel", "tcg,thread=multi,tb-size=128"},
		},
		{
			name: "funnel doubles commas in the command",
			in:   []string{"-netdev", "user,id=net0,net=192.168.5.0/24,hostfwd=tcp:127.0.0.1:2222-:22", "-device", "virtio-net-pci,netdev=net0"},
			opt:  Options{Funnel: fun},
			want: []string{"-netdev", "user,id=net0,net=192.168.5.0/24,hostfwd=tcp:127.0.0.1:2222-:22,restrict=on,ipv6=off,guestfwd=tcp:192.168.5.4:18480-cmd:/c/corral guest-conn a,,b", "-device", "virtio-net-pci,netdev=net0"},
		},
		{
			name:    "funnel refuses no netdev",
			in:      []string{"-machine", "q35", "-m", "1024"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses two user netdevs",
			in:      []string{"-netdev", "user,id=net0", "-netdev", "user,id=net1"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses a socket netdev (Lima networks: user-v2)",
			in:      []string{"-netdev", "socket,id=net0,fd=3"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses slirp plus a socket netdev",
			in:      []string{"-netdev", "user,id=net0", "-netdev", "socket,id=net1,fd=4"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses -nic",
			in:      []string{"-netdev", "user,id=net0", "-nic", "user"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses -net",
			in:      []string{"-netdev", "user,id=net0", "--net", "nic"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses -readconfig",
			in:      []string{"-netdev", "user,id=net0", "-readconfig", "/tmp/x.cfg"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses a netdev that already has a guestfwd",
			in:      []string{"-netdev", "user,id=net0,guestfwd=tcp:10.0.2.100:80-cmd:nc"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel is not fooled by a help value on another flag",
			in:      []string{"-name", "help", "-m", "1024"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
		{
			name:    "funnel refuses restrict=off",
			in:      []string{"-netdev", "user,id=net0,restrict=off"},
			opt:     Options{Funnel: fun},
			wantErr: ErrUnexpectedNetwork,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rewrite(tt.in, tt.opt)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRewriteFunnelBadOptions(t *testing.T) {
	in := []string{"-netdev", "user,id=net0"}
	for _, f := range []*Funnel{
		{GuestFwdPort: 0, GuestConnCmd: "/c"},
		{GuestFwdPort: 70000, GuestConnCmd: "/c"},
		{GuestFwdPort: 80, GuestConnCmd: "  "},
		{GuestFwdPort: 80, GuestConnCmd: "/c\nx"},
	} {
		if _, err := Rewrite(in, Options{Funnel: f}); err == nil {
			t.Errorf("Rewrite with %+v: no error", *f)
		}
	}
	if _, err := Rewrite(in, Options{Accel: AccelTCG, TBSizeMB: -1}); err == nil {
		t.Error("negative tb-size: no error")
	}
}

func TestIsProbe(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"-M", "none", "-accel", "help"}, true},
		{[]string{"-cpu", "help", "-machine", "q35"}, true},
		{[]string{"-device", "virtio-net-pci,help"}, true},
		{[]string{"-m", "1024", "-netdev", "user,id=net0"}, false},
		{[]string{"-name", "help"}, false}, // a VM named "help" still runs: not a probe
		{[]string{"-netdev", "user,id=net0", "-append", "help"}, false},
	} {
		if got := IsProbe(tt.args); got != tt.want {
			t.Errorf("IsProbe(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestRewriteOffline(t *testing.T) {
	in := limaArgv(t, "lima-1.2.2-x86_64-kvm.argv")
	out, err := Rewrite(in, Options{Accel: AccelTCG, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	nd := valueOf(out, "-netdev")
	if want := valueOf(in, "-netdev")[0] + ",restrict=on,ipv6=off"; len(nd) != 1 || nd[0] != want {
		t.Errorf("netdev = %q, want [%s]", nd, want)
	}
	if _, err := Rewrite([]string{"-netdev", "user,id=net0", "-netdev", "socket,id=net1,fd=3"}, Options{Offline: true}); !errors.Is(err, ErrUnexpectedNetwork) {
		t.Errorf("offline with a socket netdev: err = %v, want ErrUnexpectedNetwork", err)
	}
	if _, err := Rewrite([]string{"-m", "512"}, Options{Offline: true}); !errors.Is(err, ErrUnexpectedNetwork) {
		t.Errorf("offline with no netdev (qemu's default NIC): err = %v, want ErrUnexpectedNetwork", err)
	}
	if got, err := Rewrite([]string{"-M", "none", "-netdev", "help"}, Options{Offline: true}); err != nil || !slices.Equal(got, []string{"-M", "none", "-netdev", "help"}) {
		t.Errorf("offline probe = %q, %v", got, err)
	}
	if _, err := Rewrite(in, Options{Offline: true, Funnel: &Funnel{GuestFwdPort: 80, GuestConnCmd: "/c"}}); err == nil {
		t.Error("offline and funnel together: no error")
	}
}

// A saved box resumes: the launch gets -loadvm TAG once, a probe does not,
// and a tag that is not one, or a command line that already loads or
// receives a state, is refused.
func TestRewriteLoadVM(t *testing.T) {
	in := limaArgv(t, "lima-1.2.2-x86_64-kvm.argv")
	out, err := Rewrite(in, Options{Accel: AccelTCG, LoadVM: "corral-suspend"})
	if err != nil {
		t.Fatal(err)
	}
	if got := valueOf(out, "-loadvm"); !slices.Equal(got, []string{"corral-suspend"}) {
		t.Errorf("-loadvm = %q", got)
	}
	if out, err := Rewrite(in, Options{}); err != nil || len(valueOf(out, "-loadvm")) != 0 {
		t.Errorf("no LoadVM: %v %v", valueOf(out, "-loadvm"), err)
	}
	probe := []string{"-machine", "help"}
	if out, err := Rewrite(probe, Options{LoadVM: "corral-suspend"}); err != nil || !slices.Equal(out, probe) {
		t.Errorf("probe = %q, %v", out, err)
	}
	for _, tag := range []string{"-x", "a b", "a,b", strings.Repeat("a", 64)} {
		if _, err := Rewrite(in, Options{LoadVM: tag}); err == nil {
			t.Errorf("tag %q accepted", tag)
		}
	}
	for _, extra := range [][]string{{"-loadvm", "x"}, {"--incoming", "defer"}} {
		if _, err := Rewrite(append(slices.Clone(in), extra...), Options{LoadVM: "corral-suspend"}); err == nil {
			t.Errorf("%v accepted beside LoadVM", extra)
		}
	}
}

// The balloon: a launch gets corral's device once, after Lima's devices
// (their PCI slots stay), with free-page reporting; a probe, a launch
// without Options.Balloon and one that has a balloon already get none.
func TestRewriteBalloon(t *testing.T) {
	in := limaArgv(t, "lima-1.2.2-x86_64-kvm.argv")
	if HasBalloon(in) {
		t.Fatal("Lima 1.2.2's argv has a balloon: the test's premise is wrong")
	}
	out, err := Rewrite(in, Options{Accel: AccelTCG, Balloon: true, LoadVM: "corral-suspend"})
	if err != nil {
		t.Fatal(err)
	}
	devs := valueOf(out, "-device")
	if got := devs[len(devs)-1]; got != "virtio-balloon-pci,id=corral-balloon,free-page-reporting=on" {
		t.Errorf("last -device = %q, want corral's balloon", got)
	}
	if !slices.Equal(devs[:len(devs)-1], valueOf(in, "-device")) {
		t.Errorf("Lima's devices changed or moved:\n got %q\nwant %q", devs[:len(devs)-1], valueOf(in, "-device"))
	}
	if !HasBalloon(out) {
		t.Error("HasBalloon(rewritten) = false")
	}
	if out, _ := Rewrite(in, Options{Accel: AccelTCG}); HasBalloon(out) {
		t.Error("a balloon without Options.Balloon")
	}
	probe := []string{"-device", "virtio-balloon-pci,help"}
	if out, err := Rewrite(probe, Options{Balloon: true}); err != nil || !slices.Equal(out, probe) {
		t.Errorf("probe = %q, %v", out, err)
	}
	for _, dev := range []string{"virtio-balloon-pci", "driver=virtio-balloon-ccw,id=b", "virtio-balloon-device,deflate-on-oom=on"} {
		with := append(slices.Clone(in), "--device", dev)
		out, err := Rewrite(with, Options{Balloon: true})
		if err != nil || len(valueOf(out, "-device")) != len(valueOf(in, "-device")) {
			t.Errorf("%s: a second balloon added: %q, %v", dev, valueOf(out, "-device"), err)
		}
		if !HasBalloon(with) {
			t.Errorf("HasBalloon misses %s", dev)
		}
	}
	for _, dev := range []string{"virtio-net-pci,netdev=balloon", "virtio-rng-pci"} {
		if HasBalloon([]string{"-device", dev}) {
			t.Errorf("HasBalloon(%s) = true", dev)
		}
	}
}
