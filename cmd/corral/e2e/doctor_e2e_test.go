//go:build e2e

package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// doctorChecks runs `corral doctor` against the suite's running box. The
// lifecycle test calls it while the box runs (a boot costs a minute), so
// it leaves the box as it found it: the unit it stops is started again and
// the trusted config it edits is put back.
func doctorChecks(t *testing.T, x *h) {
	t.Helper()
	t.Run("doctor passes on a healthy box", func(t *testing.T) {
		x.t = t
		out := x.ok("doctor")
		if !strings.Contains(out, "ok    box "+x.box+": running\n") || !strings.Contains(out, "ok    unit corral-project.service: active\n") {
			t.Errorf("doctor output:\n%s", out)
		}
		var checks []struct {
			Check  string `json:"check"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
			Fix    string `json:"fix"`
		}
		jsonList(t, x.ok("doctor", x.box, "--json"), "corral.doctor/v1", "checks", &checks)
		names := map[string]bool{}
		for _, c := range checks {
			names[c.Check] = true
			if !c.OK {
				t.Errorf("failed: %+v", c)
			}
		}
		for _, want := range []string{"lima", "provisioned", "provision steps", "unit corral-network.service", "network full", "session variables", "guest user", "name rule"} {
			if !names[want] {
				t.Errorf("no %q check in %v", want, names)
			}
		}
		// Every guest/provision step of this boot recorded success in the
		// guest (its EXIT trap): the record the golden build decides on.
		if !strings.Contains(out, "ok    provision steps: all ") {
			t.Errorf("doctor has no record of every step:\n%s", out)
		}
	})
	// About 5 s: two doctor runs and two sessions on the running box.
	t.Run("doctor names a provision step whose record says it failed", func(t *testing.T) {
		x.t = t
		rec := "/run/corral/provision/30-agent.sh"
		x.ok("run", "--", "sudo", "sh", "-c", "echo 1 >"+rec)
		defer x.ok("run", "--", "sudo", "sh", "-c", "echo 0 >"+rec)
		out, errOut, code := x.corral("doctor")
		if code != 1 || !strings.Contains(out, "FAIL  provision steps: provision step guest/provision/30-agent.sh failed (exit status 1) at this boot") {
			t.Errorf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("doctor names a stopped guest unit", func(t *testing.T) {
		x.t = t
		x.ok("run", "--", "sudo", "systemctl", "stop", "corral-project.service")
		defer func() {
			cfg := filepath.Join(x.home, "lima", x.box, "ssh.config")
			if out, err := exec.Command("ssh", "-F", cfg, "lima-"+x.box, "sudo systemctl start corral-project.service").CombinedOutput(); err != nil {
				t.Fatalf("repair: %v %s", err, out)
			}
		}()
		out, errOut, code := x.corral("doctor")
		if code != 1 || !strings.Contains(out, "FAIL  unit corral-project.service: corral-project.service is inactive") ||
			!strings.Contains(out, "fix: corral stop "+x.box+" && corral start "+x.box) {
			t.Errorf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("doctor names a missing keychain item", func(t *testing.T) {
		x.t = t
		trusted := filepath.Join(x.home, "projects", x.box+".toml")
		old, err := os.ReadFile(trusted)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		defer func() {
			if old == nil {
				_ = os.Remove(trusted)
			} else {
				_ = os.WriteFile(trusted, old, 0o600)
			}
		}()
		must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
		cfg := string(old) + "\n[keychain_env]\nE2E_DOCTOR_KEY = { service = \"corral-e2e-missing\", account = \"nobody\" }\n"
		must(t, os.WriteFile(trusted, []byte(cfg), 0o600))
		out, errOut, code := x.corral("doctor")
		if code != 1 || !strings.Contains(out, "FAIL  keychain_env.E2E_DOCTOR_KEY: ") ||
			!strings.Contains(out, `service "corral-e2e-missing" account "nobody"`) {
			t.Errorf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	x.t = t
	x.ok("doctor")
}
