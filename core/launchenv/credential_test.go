package launchenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/guest"
)

// TestCredentialHelperRoundTrip checks that the guest's credential helper
// finds the token under the name Assemble gives it, by running the script
// with git credential fill and exactly the environment the box would see.
func TestCredentialHelperRoundTrip(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	in := base()
	in.Settings.GitTokens = []string{"git.example.test"}
	in.GitToken = func(context.Context, string) (string, string, error) { return "tok-123", "test", nil }
	env, err := Assemble(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(t.TempDir(), "corral-git-credential")
	if err := os.WriteFile(helper, []byte(guest.GitCredential()), 0o755); err != nil {
		t.Fatal(err)
	}
	// What corral-launch does in the box: strip CORRAL_FWD_.
	boxEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
	for _, kv := range env.SSHEnviron() {
		boxEnv = append(boxEnv, strings.TrimPrefix(kv, ForwardPrefix))
	}
	cmd := exec.Command(gitBin, "-c", "credential.helper="+helper, "credential", "fill")
	cmd.Env = boxEnv
	cmd.Stdin = strings.NewReader("protocol=https\nhost=git.example.test\n\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git credential fill: %v", err)
	}
	want := "protocol=https\nhost=git.example.test\nusername=x-access-token\npassword=tok-123\n"
	if string(out) != want {
		t.Errorf("git credential fill:\n%s\nwant:\n%s", out, want)
	}
}
