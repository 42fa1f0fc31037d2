// Package desktoptest starts private desktop services for tests on Linux: a
// D-Bus session bus and a gnome-keyring Secret Service on it. Tests use them
// to exercise corral's keyring and tray code for real without touching the
// user's session.
//
// When a needed binary is missing the test is skipped, unless the
// environment variable CORRAL_REQUIRE_DESKTOP is set (CI sets it), in which
// case it fails. Needed Debian packages: dbus (dbus-daemon) for StartBus;
// gnome-keyring for StartKeyring; libsecret-tools for tests that use
// secret-tool. Do not install dbus-x11: godbus would auto-launch a bus
// through it when no address is set.
package desktoptest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// RequireEnv names the environment variable that turns a missing desktop
// binary from a skip into a failure.
const RequireEnv = "CORRAL_REQUIRE_DESKTOP"

// KeyringPassword unlocks the login keyring StartKeyring creates.
const KeyringPassword = "corral-test-password"

// LookPath finds a binary for a test, skipping (or failing under
// CORRAL_REQUIRE_DESKTOP) when it is missing. pkg names the Debian package.
func LookPath(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s not found and %s is set: apt-get install %s", name, RequireEnv, pkg)
	}
	t.Skipf("%s not installed (apt-get install %s)", name, pkg)
	return ""
}

// busConfig is a session bus with no service directories, so nothing is
// D-Bus-activated behind the test's back (a client arriving early would
// otherwise start a second, locked gnome-keyring).
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// StartBus starts a private dbus-daemon for the test and returns its address.
// It does not change the test's environment; set DBUS_SESSION_BUS_ADDRESS
// with t.Setenv when the code under test uses the default session bus. The
// daemon is stopped when the test ends.
func StartBus(t testing.TB) string {
	t.Helper()
	bin := LookPath(t, "dbus-daemon", "dbus")
	// Not t.TempDir: a Unix socket path must stay under 108 bytes and test
	// names can be long.
	dir, err := os.MkdirTemp("", "corral-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, sock), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &filterWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			lines <- strings.TrimSpace(s.Text())
		}
		close(lines)
		// Drain so the daemon never blocks on a full pipe.
		for s.Scan() {
		}
	}()
	select {
	case addr := <-lines:
		if addr == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return addr
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon did not start within 10s")
	}
	return ""
}

// filterWriter logs the daemon's stderr through t, dropping the harmless
// fd-limit warning dbus-daemon prints when run as root without
// CAP_SYS_RESOURCE.
type filterWriter struct{ t testing.TB }

func (w *filterWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), "]:") || strings.Contains(line, "Failed to set fd limit") {
			continue
		}
		if line != "" {
			w.t.Log("dbus-daemon:", line)
		}
	}
	return len(p), nil
}

// Conn opens a connection to the bus at addr, closed when the test ends.
func Conn(t testing.TB, addr string) *dbus.Conn {
	t.Helper()
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connecting to test bus: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// StartKeyring runs gnome-keyring-daemon (secrets component only) on the bus
// at busAddr with a fresh HOME, whose "login" keyring is created and
// unlocked with KeyringPassword without any prompt. It returns once the
// daemon owns org.freedesktop.secrets and stops it when the test ends.
//
// It returns the environment (HOME, XDG dirs, DBUS_SESSION_BUS_ADDRESS) that
// tools such as secret-tool need to reach this keyring.
func StartKeyring(t testing.TB, busAddr string) []string {
	t.Helper()
	bin := LookPath(t, "gnome-keyring-daemon", "gnome-keyring")
	home := t.TempDir()
	run, err := os.MkdirTemp("", "corral-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	env := []string{
		"HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_RUNTIME_DIR=" + run,
		"DBUS_SESSION_BUS_ADDRESS=" + busAddr,
		"PATH=" + os.Getenv("PATH"),
	}
	// --foreground so that the test owns the process; --unlock reads the
	// password from stdin and creates/unlocks the login keyring.
	cmd := exec.Command(bin, "--foreground", "--unlock", "--components=secrets")
	cmd.Env = env
	cmd.Stdin = strings.NewReader(KeyringPassword)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	conn := Conn(t, busAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var has bool
		_ = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&has)
		if has {
			return env
		}
		select {
		case <-ctx.Done():
			t.Fatal("gnome-keyring-daemon did not claim org.freedesktop.secrets within 10s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
