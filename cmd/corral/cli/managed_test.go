package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/config"
)

// managedPolicy installs an organisation's managed file for the test
// (config.ManagedEnv) and returns its path.
func managedPolicy(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "managed.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.ManagedEnv, p)
	return p
}

const cliManaged = `max_network = "broker"
deny_egress = ["*.corp.example", "10.0.0.0/8"]
deny_credentials = ["openai"]
git_shadow = true
max_approval = "8h"
repo_requests = false
`

// TestManagedRefusals: every command that could lower the organisation's
// floor refuses and says its policy did, naming the file.
func TestManagedRefusals(t *testing.T) {
	e := setup(t, "egress = [\"api.example.test\"]\n")
	p := managedPolicy(t, cliManaged)
	policy := "the organisation's policy (" + p + ")"
	writeBoxMeta(t, e, "broker")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"allow", e.box, "build.corp.example"}, "corral: allow entry \"build.corp.example\": " + policy + " never allows *.corp.example\nhint: ask your organisation's administrator\n"},
		{[]string{"allow", e.box, "*.other.test", "--for", "1h"}, ""},
		{[]string{"allow", e.box, "a.example.test"}, "corral: " + policy + " refuses it: approvals last at most 8h0m0s: use --for 8h0m0s or --session\n"},
		{[]string{"allow", e.box, "a.example.test", "--for", "9h"}, "corral: " + policy + " refuses it: approvals last at most 8h0m0s; --for 9h0m0s is longer\n"},
	} {
		code, out, errOut := run(t, e, false, c.args...)
		if c.want == "" {
			if code != 0 {
				t.Errorf("%q: exit %d %s%s, want it allowed", c.args, code, out, errOut)
			}
			continue
		}
		if code != 1 || out != "" || errOut != c.want {
			t.Errorf("%q: code %d out %q\nerr  %q\nwant %q", c.args, code, out, errOut, c.want)
		}
	}
	s, _ := approval.Open(writeBoxMeta(t, e, "broker"), e.box)
	if list, _ := s.List(time.Now()); len(list) != 1 || list[0].Entry != "*.other.test" {
		t.Errorf("approvals after the refusals: %+v", list)
	}

	// approve: a repository may request nothing.
	code, _, errOut := run(t, e, false, "approve", "--yes")
	if code != ExitViolation || !strings.Contains(errOut, "refused: egress api.example.test: "+policy+" lets no repository request anything") {
		t.Errorf("approve: exit %d\n%s", code, errOut)
	}
	// config check: the request is refused, with the policy's reason.
	code, out, _ := run(t, e, false, "config", "check")
	if code != ExitViolation || !strings.Contains(out, policy+" lets no repository request anything") {
		t.Errorf("config check of a request: exit %d\n%s", code, out)
	}
}

// TestManagedConfigCheck: a user's layer above the floor is a problem
// `config check` names with the policy's file; `config show --origin`
// names the policy as the origin of what it forces.
func TestManagedConfigCheck(t *testing.T) {
	e := setup(t, "")
	p := managedPolicy(t, cliManaged)
	policy := "the organisation's policy (" + p + ")"
	global := filepath.Join(e.home, "config.toml")
	os.MkdirAll(e.home, 0o700)
	os.WriteFile(global, []byte("network = \"full\"\negress = [\"db.corp.example\"]\ngit_shadow = false\n"+
		"[credentials.openai]\nupstream = \"https://api.example.test\"\nheader = \"authorization\"\nenv_from_host = \"K\"\n"), 0o600)
	code, out, _ := run(t, e, false, "config", "check")
	for _, want := range []string{
		global + `: network = "full": ` + policy + ` allows at most network = "broker"`,
		global + `: egress = "db.corp.example": ` + policy + ` never allows *.corp.example`,
		global + `: git_shadow = false: ` + policy + ` sets git_shadow = true`,
		global + `: credentials.openai: ` + policy + ` never brokers the credential "openai"`,
	} {
		if code != ExitViolation || !strings.Contains(out, want) {
			t.Errorf("config check: exit %d, want %q in\n%s", code, want, out)
		}
	}
	os.WriteFile(global, nil, 0o600)
	code, out, errOut := run(t, e, false, "config", "show", "--origin")
	if code != 0 || !strings.Contains(out, "managed: "+p) {
		t.Errorf("config show --origin: exit %d\n%s%s", code, out, errOut)
	}
	// A managed file with an unknown key: every box command refuses,
	// naming file:line:key.
	os.WriteFile(p, []byte("max_network = \"broker\"\nmax_netwrok = \"full\"\n"), 0o644)
	code, out, _ = run(t, e, false, "config", "check")
	if code != ExitViolation || !strings.Contains(out, p+":2: max_netwrok") {
		t.Errorf("unknown key: exit %d\n%s", code, out)
	}
}
