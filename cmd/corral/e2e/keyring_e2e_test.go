//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
)

// keychainSecret stores a value in a real Secret Service (gnome-keyring on
// a private D-Bus), names it in the box's trusted layer with keychain_env,
// and checks it reaches the session's environment in the box, appears in
// no argv on the guest, and in none of corral's logs.
func keychainSecret(t *testing.T, x *h) {
	addr := desktoptest.StartBus(t)
	kenv := desktoptest.StartKeyring(t, addr)
	value := fmt.Sprintf("keyring-value-%d", time.Now().UnixNano())
	store := exec.Command("secret-tool", "store", "--label", "corral e2e", "service", "corral-e2e", "account", "k")
	store.Env = kenv
	store.Stdin = strings.NewReader(value)
	if out, err := store.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store: %v %s", err, out)
	}
	trusted := filepath.Join(x.home, "projects", x.box+".toml")
	must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
	must(t, os.WriteFile(trusted, []byte("[keychain_env]\nE2E_KEY = { service = \"corral-e2e\", account = \"k\" }\n"), 0o600))
	defer os.Remove(trusted)

	script := argvCount("E2E_KEY") + `
echo "key=$E2E_KEY"`
	out, errOut, code := x.corralEnv([]string{"DBUS_SESSION_BUS_ADDRESS=" + addr}, "run", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[1] != "key="+value {
		t.Fatalf("output %q", out)
	}
	if lines[0] != "0" {
		t.Errorf("the keyring value appears in %s guest argv lines", lines[0])
	}
	logs, _ := filepath.Glob(filepath.Join(x.home, "logs", "*"))
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("%s contains the keyring value", p)
		}
	}

	// A missing item stops the session instead of starting it half-configured.
	must(t, os.WriteFile(trusted, []byte("[keychain_env]\nE2E_KEY = { service = \"corral-e2e\", account = \"missing\" }\n"), 0o600))
	_, errOut, code = x.corralEnv([]string{"DBUS_SESSION_BUS_ADDRESS=" + addr}, "run", "--", "true")
	if code == 0 || !strings.Contains(errOut, `service "corral-e2e" account "missing"`) {
		t.Errorf("missing secret: code %d stderr %q", code, errOut)
	}
}
