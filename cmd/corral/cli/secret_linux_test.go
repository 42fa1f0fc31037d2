package cli

import (
	"os/exec"
	"testing"

	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/secret"
)

// TestSecretSetSecretService stores a secret through the CLI into a private
// gnome-keyring and reads it back with secret-tool, then with the CLI.
func TestSecretSetSecretService(t *testing.T) {
	addr := desktoptest.StartBus(t)
	env := desktoptest.StartKeyring(t, addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	tool := desktoptest.LookPath(t, "secret-tool", "libsecret-tools")

	store := secret.Default()
	code, out, errOut := runSecret(t, store, false, "tok-cli\n", "secret", "set", "--service", "corral-cli-test", "--account", "alice")
	check(t, code, out, errOut, 0, "", "")
	cmd := exec.Command(tool, "lookup", "service", "corral-cli-test", "account", "alice")
	cmd.Env = env
	got, err := cmd.Output()
	if err != nil || string(got) != "tok-cli" {
		t.Fatalf("secret-tool lookup = %q, %v", got, err)
	}
	code, out, errOut = runSecret(t, store, false, "", "secret", "get", "--service", "corral-cli-test", "--account", "alice")
	check(t, code, out, errOut, 0, "tok-cli", "")
	code, out, errOut = runSecret(t, store, false, "", "secret", "rm", "--service", "corral-cli-test", "--account", "alice")
	check(t, code, out, errOut, 0, "", "")
	code, out, errOut = runSecret(t, store, false, "", "secret", "get", "--service", "corral-cli-test", "--account", "alice")
	check(t, code, out, errOut, 1, "",
		"corral: secret not found: service \"corral-cli-test\" account \"alice\"\n"+
			"hint: store it: corral secret set --service corral-cli-test --account alice\n")
}
