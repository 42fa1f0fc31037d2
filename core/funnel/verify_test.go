package funnel

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/qemu"

	"github.com/corral-dev/corral/core/procinfo"
)

const testBox = "web-3f2a1c"

// limaArgv is a qemu argv from a real Lima 1.2.2 VM (core/qemu testdata),
// moved to limaHome/testBox, without argv[0].
func limaArgv(t *testing.T, limaHome string) []string {
	t.Helper()
	b, err := os.ReadFile("../qemu/testdata/lima-1.2.2-x86_64-kvm.argv")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/tmp/ce2e/lima/c1/", filepath.Join(limaHome, testBox)+"/")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")[1:]
}

// funneled is what corral's wrapper makes of the argv.
func funneled(t *testing.T, args []string, w Want) []string {
	t.Helper()
	opt := qemu.Options{Accel: qemu.AccelTCG}
	if w.Network == config.NetworkOffline {
		opt.Offline = true
	} else {
		opt.Funnel = &qemu.Funnel{GuestFwdPort: w.BrokerPort, GuestConnCmd: GuestCommand("/opt/a,b/corral", testBox)}
	}
	out, err := qemu.Rewrite(args, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setNetdev(args []string, f func(string) string) []string {
	out := slices.Clone(args)
	for i := range out {
		if i > 0 && out[i-1] == "-netdev" {
			out[i] = f(out[i])
		}
	}
	return out
}

func TestCheckArgs(t *testing.T) {
	lh := "/h/lima"
	pid := PIDFile(lh, testBox)
	broker := Want{VMType: "qemu", Network: config.NetworkBroker, BrokerPort: 42123}
	offline := Want{VMType: "qemu", Network: config.NetworkOffline}
	plain := limaArgv(t, lh)
	good := funneled(t, plain, broker)
	goodOffline := funneled(t, plain, offline)

	tests := []struct {
		name string
		args []string
		w    Want
		ok   bool
	}{
		{"broker funnel", good, broker, true},
		{"offline funnel", goodOffline, offline, true},
		{"plain limactl start", plain, broker, false},
		{"plain limactl start, offline", plain, offline, false},
		{"offline proof for a broker box", goodOffline, broker, false},
		{"broker funnel for an offline box", good, offline, false},
		{"other broker port", good, Want{VMType: "qemu", Network: config.NetworkBroker, BrokerPort: 42124}, false},
		{"another box's qemu", funneled(t, limaArgv(t, "/other/lima"), broker), broker, false},
		{"restrict=off", setNetdev(good, func(s string) string { return strings.Replace(s, "restrict=on", "restrict=off", 1) }), broker, false},
		{"restrict twice", setNetdev(good, func(s string) string { return s + ",restrict=off" }), broker, false},
		{"ipv6 left on", setNetdev(good, func(s string) string { return strings.Replace(s, ",ipv6=off", "", 1) }), broker, false},
		{"a second guestfwd", setNetdev(good, func(s string) string { return s + ",guestfwd=tcp:192.168.5.5:80-cmd:nc x 80" }), broker, false},
		{"guestfwd to another command", setNetdev(good, func(s string) string {
			return strings.Replace(s, "guest-conn "+testBox, "guest-conn other", 1)
		}), broker, false},
		{"tftp", setNetdev(good, func(s string) string { return s + ",tftp=/srv" }), broker, false},
		{"extra socket netdev", append(slices.Clone(good), "-netdev", "socket,id=net1,fd=3"), broker, false},
		{"extra -nic", append(slices.Clone(good), "-nic", "user"), broker, false},
		{"no netdev", slices.DeleteFunc(slices.Clone(good), func(s string) bool { return s == "-netdev" || strings.HasPrefix(s, "user,") }), broker, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckArgs(tt.args, pid, testBox, tt.w)
			if tt.ok && err != nil {
				t.Fatalf("CheckArgs: %v", err)
			}
			if !tt.ok {
				if !errors.Is(err, ErrNotEnforced) {
					t.Fatalf("CheckArgs = %v, want ErrNotEnforced", err)
				}
				if !strings.Contains(hint.Of(err), "corral stop "+testBox+" && corral up") {
					t.Errorf("error has no restart hint: %v", err)
				}
			}
		})
	}
}

func TestSplitOpts(t *testing.T) {
	got := qemu.SplitOpts("user,id=net0,guestfwd=tcp:1.2.3.4:5-cmd:/a,,b/c x,ipv6=off")
	want := []string{"user", "id=net0", "guestfwd=tcp:1.2.3.4:5-cmd:/a,b/c x", "ipv6=off"}
	if !slices.Equal(got, want) {
		t.Errorf("SplitOpts = %q, want %q", got, want)
	}
}

// startFakeQemu runs a process whose command line is argv (after sh's own
// words) and writes its pid where Lima's qemu.pid would be.
func startFakeQemu(t *testing.T, limaHome string, argv []string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "sleep 60", "qemu-system-x86_64"}, argv...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := os.MkdirAll(filepath.Join(limaHome, testBox), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(PIDFile(limaHome, testBox), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The child's cmdline is sh's until exec completes.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if args, err := procinfo.Argv(cmd.Process.Pid); err == nil && len(args) > 3 && args[1] == "-c" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("fake qemu did not start")
}

func TestVerifyRunningProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	broker := Want{VMType: "qemu", Network: config.NetworkBroker, BrokerPort: 42123}

	lh := filepath.Join(t.TempDir(), "lima")
	// sh -c SCRIPT NAME ARGS: CheckArgs sees "-c", "sleep 60", then the qemu argv.
	startFakeQemu(t, lh, funneled(t, limaArgv(t, lh), broker))
	if err := Verify(lh, testBox, broker); err != nil {
		t.Errorf("funneled qemu: %v", err)
	}

	lh2 := filepath.Join(t.TempDir(), "lima")
	startFakeQemu(t, lh2, limaArgv(t, lh2))
	if err := Verify(lh2, testBox, broker); !errors.Is(err, ErrNotEnforced) {
		t.Errorf("plain qemu: %v, want ErrNotEnforced", err)
	}
	// A full-network box, or a vz one, needs no proof.
	if err := Verify(lh2, testBox, Want{VMType: "qemu", Network: "full"}); err != nil {
		t.Errorf("full: %v", err)
	}
	if err := Verify(lh2, testBox, Want{VMType: "vz", Network: config.NetworkBroker}); err != nil {
		t.Errorf("vz: %v", err)
	}
	// No qemu.pid (not running), and a stale pid that is not qemu.
	if err := Verify(t.TempDir(), testBox, broker); err == nil {
		t.Error("no qemu.pid: no error")
	}
	lh3 := filepath.Join(t.TempDir(), "lima")
	os.MkdirAll(filepath.Join(lh3, testBox), 0o700)
	os.WriteFile(PIDFile(lh3, testBox), []byte(strconv.Itoa(os.Getpid())), 0o600)
	if err := Verify(lh3, testBox, broker); !errors.Is(err, ErrNotEnforced) {
		t.Errorf("pid of another process: %v, want ErrNotEnforced", err)
	}
}
