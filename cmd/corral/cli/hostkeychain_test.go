package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/secret"
)

// promptingKeychain is a keychain whose item needs the "allow access"
// dialog at every read (as after "Allow"); each read records how many ssh
// runs had happened by then.
type promptingKeychain struct {
	secret.Memory
	fr         *fakeRemote
	readsAtSSH []int
}

func (k *promptingKeychain) Get(ctx context.Context, service, account string) (string, error) {
	k.readsAtSSH = append(k.readsAtSSH, len(k.fr.calls))
	return k.Memory.Get(ctx, service, account)
}

func (*promptingKeychain) Probe(context.Context, string, string) (secret.Access, error) {
	return secret.AccessPrompts, nil
}

// TestHostSettlesKeychainBeforeSSH: a session forwarded from a terminal
// whose relay reads a keychain item settles it at the terminal after the
// version check and before the session's ssh starts, with the line naming
// "Always Allow" first; the relay itself never reads it with a dialog.
func TestHostSettlesKeychainBeforeSSH(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://me@gpu")
	cfg := "[credentials.gh]\nupstream = \"https://git.example.test\"\nheader = \"basic\"\nkeychain = { service = \"gh\", account = \"me\" }\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, fr, out := hostFactory(t, home, true)
	k := &promptingKeychain{fr: fr}
	if err := k.Set(context.Background(), "gh", "me", "ghp_x"); err != nil {
		t.Fatal(err)
	}
	f.SecretStore = func() secret.Store { return k }
	if code := Run(f, []string{"--host", "gpu", "-C", "/srv/web", "claude"}); code != 0 {
		t.Fatal(out())
	}
	if len(k.readsAtSSH) != 1 || k.readsAtSSH[0] != 1 {
		t.Errorf("keychain reads at ssh runs %v, want one read after the version check, before the session", k.readsAtSSH)
	}
	if _, errOut := out(); !strings.Contains(errOut, `choose "Always Allow"`) || !strings.Contains(errOut, `"Allow" was chosen`) {
		t.Errorf("stderr %q", errOut)
	}
}
