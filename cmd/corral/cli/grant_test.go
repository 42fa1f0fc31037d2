package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/config/granttest"
)

// trustedHas reports whether the box's trusted layer holds entry under key.
func trustedHas(t *testing.T, e env, key, entry string) bool {
	t.Helper()
	l, err := config.LoadFile(config.KindTrusted, filepath.Join(e.home, "projects", e.box+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	list := l.Config.Egress
	if key == "ports" {
		list = l.Config.PortEntries
	}
	return slices.Contains(list, entry)
}

// TestGrantPathsAgree runs every corpus entry through every CLI grant
// path (corral allow, corral approve --yes of a repository request, the
// decision of corral egress learn --apply, corral port) and asserts the
// decision of the one grant check: granted exactly when it does not refuse
// (a range is config-only: corral allow refuses it as an approval). The
// app's Allow is asserted over the same corpus in app's tests.
func TestGrantPathsAgree(t *testing.T) {
	for _, c := range granttest.All() {
		v := config.CheckGrant(c.Key, c.Entry, config.GrantContext{})
		if v.Risk != c.Want {
			t.Fatalf("%s %q: the check says %s, the corpus %s", c.Key, c.Entry, v.Risk, c.Want)
		}
		refused := v.Risk == config.RiskRefused
		// corral approve --yes-flagged: the repository requests it.
		e := setup(t, c.Key+" = ["+strconv.Quote(c.Entry)+"]\n")
		code, out, errOut := run(t, e, false, "approve", "--yes-flagged")
		if got := trustedHas(t, e, c.Key, v.Entry); got == refused || (code == 0) == refused {
			t.Errorf("approve %s %q: exit %d, written=%v, want refused=%v\n%s%s", c.Key, c.Entry, code, got, refused, out, errOut)
		}
		if refused && code == 0 && !strings.Contains(out+errOut, v.Why) {
			t.Errorf("approve %s %q: the reason is not shown:\n%s%s", c.Key, c.Entry, out, errOut)
		}
		switch c.Key {
		case "egress":
			// corral allow.
			e := setup(t, "")
			writeBoxMeta(t, e, "broker")
			_, isRange := approval.Canonical(c.Entry)
			code, _, errOut := run(t, e, false, "allow", e.box, c.Entry)
			if want := refused || isRange != nil; (code != 0) != want {
				t.Errorf("allow %q: exit %d %s, want refused=%v", c.Entry, code, errOut, want)
			}
			// corral egress learn --apply's decision.
			proposed, _, notProposed := box.LearnGrants([]string{c.Entry})
			if slices.Contains(proposed, v.Entry) == refused || (len(notProposed) == 1) != refused {
				t.Errorf("learn %q: proposed %q, refused %+v", c.Entry, proposed, notProposed)
			}
		case "ports":
			// corral port.
			e := setup(t, "")
			code, out, errOut := run(t, e, false, "port", c.Entry)
			if got := trustedHas(t, e, c.Key, v.Entry); got == refused || (code == 0) == refused {
				t.Errorf("port %q: exit %d, written=%v, want refused=%v\n%s%s", c.Entry, code, got, refused, out, errOut)
			}
		}
	}
}

// TestApproveRefusesLowPortBeforeWriting: a repository's ports = ["22:22"]
// without low_host_ports is refused with the reason, nothing is written
// (the trusted layer stays valid: config check passes), and the
// non-interactive hint names only the approvable entries.
func TestApproveRefusesLowPortBeforeWriting(t *testing.T) {
	e := setup(t, "ports = [\"22:22\", \"3000\"]\negress = [\"*.com\", \"api.example.test\"]\n")
	code, _, errOut := run(t, e, false, "approve")
	if code == 0 || !strings.Contains(errOut, "refused: ports 22:22 (a guest port forwarded to the host's 127.0.0.1): host port 22 is below 1024") ||
		!strings.Contains(errOut, "refused: egress *.com: a wildcard over the public suffix \"com\"") ||
		!strings.Contains(errOut, "corral approve "+e.box+" --yes egress=api.example.test ports=3000\n") {
		t.Fatalf("approve without a terminal: exit %d\n%s", code, errOut)
	}
	code, out, errOut := run(t, e, false, "approve", "--yes")
	if code != ExitViolation || !strings.Contains(out, "approved 2 of 2") || !strings.Contains(errOut, "2 request(s) of box "+e.box+" refused by the grant check, can never be approved") {
		t.Fatalf("approve --yes: exit %d\n%s%s", code, out, errOut)
	}
	trusted, _ := os.ReadFile(filepath.Join(e.home, "projects", e.box+".toml"))
	if strings.Contains(string(trusted), "22:22") || strings.Contains(string(trusted), "*.com") || !strings.Contains(string(trusted), `ports = ["3000"]`) {
		t.Errorf("trusted layer:\n%s", trusted)
	}
	// What is left is refused: a verdict, not a pending item (exit 2, no
	// problem of the file, nothing pending).
	if code, out, _ := run(t, e, false, "config", "check"); code != ExitViolation || strings.Contains(out, "problem(s)") || strings.Contains(out, "not allowed until you approve") ||
		!strings.Contains(out, "refused: the repository requests 2 entr(ies) the grant check refuses") {
		t.Errorf("config check after approve: exit %d\n%s", code, out)
	}
	// Everything left is refused: the hint says none can be approved.
	if code, _, errOut := run(t, e, false, "approve"); code != ExitViolation || !strings.Contains(errOut, "they can never be approved") {
		t.Errorf("approve of refused only: exit %d\n%s", code, errOut)
	}
	// With low_host_ports in the user's config, 22:22 is approvable.
	if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("low_host_ports = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, e, false, "approve", "--yes", "ports=22:22"); code != 0 || !strings.Contains(out, "approved 1 of 1") {
		t.Errorf("approve ports=22:22 with low_host_ports: exit %d\n%s%s", code, out, errOut)
	}
}

// TestRepositoryToolchainsArePending: toolchains in .corral.toml are
// requests: config check passes and says so, the merged config (from which
// the golden is built) lacks them until approve writes them.
func TestRepositoryToolchainsArePending(t *testing.T) {
	e := setup(t, "toolchains = [\"go\", \"node\"]\n")
	code, out, _ := run(t, e, false, "config", "check")
	if code != 0 || !strings.Contains(out, "  toolchains go  (") || !strings.Contains(out, "until approved, the golden image is built without the requested toolchains and packages") {
		t.Fatalf("config check: exit %d\n%s", code, out)
	}
	// --yes writes no flagged entry: a toolchain's is flagged.
	code, out, errOut := run(t, e, false, "approve", "--yes")
	if code != 0 || !strings.Contains(out, "not approved, flagged: the toolchain go") || !strings.Contains(out, "corral approve "+e.box+" --yes-flagged toolchains=go toolchains=node\n") {
		t.Fatalf("approve --yes: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, e, false, "approve", "--yes-flagged")
	if code != 0 || !strings.Contains(out, "approving the toolchain go (installed in the golden image)\n  flagged: its box may reach the Go module proxy") {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := run(t, e, false, "config", "check"); code != 0 || out != "ok: box "+e.box+" config has no problems\n" {
		t.Errorf("after approve: exit %d\n%s", code, out)
	}
}

// TestEgressReportsRefusedTrustedEntries: an entry the grant check
// refuses, written by hand into the trusted layer, is never listed as
// allowed: corral egress reports it apart and config check warns.
func TestEgressReportsRefusedTrustedEntries(t *testing.T) {
	e := setup(t, "")
	l := writeBoxMeta(t, e, "broker")
	if err := os.WriteFile(l.ProjectConfig(e.box), []byte("egress = [\"*.com\", \"0.0.0.0/0\", \"api.example.test\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := run(t, e, false, "egress", e.box, "--json")
	var got struct {
		AllowList []approval.Rule `json:"allow_list"`
		Refused   []approval.Rule `json:"refused"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	for _, r := range got.AllowList {
		if r.Entry == "*.com" || r.Entry == "0.0.0.0/0" || r.Refused() {
			t.Errorf("listed as allowed: %+v", r)
		}
	}
	if len(got.Refused) != 2 || got.Refused[0].Entry != "*.com" || got.Refused[1].Entry != "0.0.0.0/0" || got.Refused[0].Why == "" {
		t.Errorf("refused: %+v", got.Refused)
	}
	if !slices.ContainsFunc(got.AllowList, func(r approval.Rule) bool { return r.Entry == "api.example.test" }) {
		t.Errorf("allow-list lacks the good entry: %+v", got.AllowList)
	}
	code, out, _ := run(t, e, false, "config", "check")
	if code != 0 || !strings.Contains(out, "warning: 2 allow-list entr(ies) refused by the grant check; the broker ignores them:") {
		t.Errorf("config check: exit %d\n%s", code, out)
	}
}
