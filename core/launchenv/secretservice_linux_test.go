package launchenv

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/secret"
)

// TestKeychainEnvSecretService stores an item with secret-tool in a private
// gnome-keyring and checks that a session reads it through secret.Default().
// Needs dbus, gnome-keyring and libsecret-tools.
func TestKeychainEnvSecretService(t *testing.T) {
	addr := desktoptest.StartBus(t)
	kenv := desktoptest.StartKeyring(t, addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	tool := desktoptest.LookPath(t, "secret-tool", "libsecret-tools")
	cmd := exec.Command(tool, "store", "--label=corral launchenv test", "service", "corral-test", "account", "alice")
	cmd.Env = kenv
	cmd.Stdin = strings.NewReader("tok-from-keyring")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store: %v %s", err, out)
	}

	in := base()
	in.Secrets = secret.Default()
	in.Settings.KeychainEnv = map[string]config.SecretRef{"API_KEY": {Service: "corral-test", Account: "alice"}}
	env, err := Assemble(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env.SSHEnviron(), "CORRAL_FWD_API_KEY=tok-from-keyring") {
		t.Errorf("SSHEnviron() = %q", env.SSHEnviron())
	}

	in.Settings.KeychainEnv = map[string]config.SecretRef{"API_KEY": {Service: "corral-test", Account: "bob"}}
	_, err = Assemble(context.Background(), in)
	if !errors.Is(err, secret.ErrNotFound) || !errors.Is(err, ErrRefused) {
		t.Fatalf("missing item: %v", err)
	}
	if got, want := err.Error(), `keychain_env.API_KEY: secret not found: service "corral-test" account "bob"`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}
