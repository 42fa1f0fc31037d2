package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/toolreg"
)

func runEgressGroups(e env, tty bool, args ...string) (int, string, string) {
	f, out, errOut := testFactory(e, tty)
	return execCmd(NewCmdEgress(f, nil), out, errOut, append([]string{"groups"}, args...)...)
}

func TestEgressGroups(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	must(t, l.Ensure())

	// Not created yet: the named groups, and why there is no toolchains group.
	code, out, errOut := runEgressGroups(e, true)
	if code != 0 || !strings.Contains(out, "code-hosts: git hosting over https") ||
		!strings.Contains(out, "  (not used by "+e.box+": add egress_groups = [\"code-hosts\"] to "+l.ProjectConfig(e.box)+")\n  github.com\n") ||
		!strings.Contains(out, "toolchains: the registries the toolchains of "+e.box+"'s golden image use\n  (none recorded: the box is not created yet") {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}

	must(t, boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, Network: "broker", Golden: "golden-0123456789ab"}))
	code, out, _ = runEgressGroups(e, true)
	if code != 0 || !strings.Contains(out, "golden image golden-0123456789ab was built before corral recorded toolchain registries; corral golden rm -f golden-0123456789ab && corral rebuild -C "+e.proj) {
		t.Fatalf("no record: %d\n%s", code, out)
	}

	must(t, toolreg.Write(l, toolreg.Record{Golden: "golden-0123456789ab", Built: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Registries: []toolreg.Registry{
			{Entry: "npm.mirror.example.test", Tool: toolreg.ToolNPM, Source: "registry"},
			{Entry: "apt.mirror.example.test:8080", Tool: toolreg.ToolApt, Source: "/etc/apt/sources.list"},
		},
		Notes: []string{`go GOPROXY: "direct" fetches from each module's own origin`}}))
	must(t, os.WriteFile(l.ProjectConfig(e.box), []byte("egress_groups = [\"ai-apis\"]\n"), 0o600))
	code, out, _ = runEgressGroups(e, true)
	for _, want := range []string{
		"ai-apis: the APIs of hosted models, for agents and tools that call them\n  (used by " + e.box + ")\n  api.anthropic.com\n",
		"  (recorded by golden-0123456789ab on 2026-12-01, used by " + e.box + ")\n" +
			"  npm.mirror.example.test       npm registry\n" +
			"  apt.mirror.example.test:8080  apt /etc/apt/sources.list\n" +
			"  note: go GOPROXY: \"direct\" fetches from each module's own origin\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("output lacks:\n%s\ngot:\n%s", want, out)
		}
	}

	_, out, _ = runEgressGroups(e, false)
	for _, want := range []string{"code-hosts\tgithub.com\tunused\n", "ai-apis\tapi.openai.com\tin-use\n", "toolchains\tnpm.mirror.example.test\tin-use\tnpm\tregistry\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("non-TTY output lacks %q:\n%s", want, out)
		}
	}

	_, out, _ = runEgressGroups(e, false, "--json", e.box)
	var got struct {
		Box    string
		Groups []struct {
			Name  string
			InUse bool `json:"in_use"`
		}
		Toolchains struct {
			Golden     string
			Registries []toolreg.Registry
		}
	}
	must(t, json.Unmarshal([]byte(out), &got))
	if got.Box != e.box || len(got.Groups) != 2 || !got.Groups[1].InUse || got.Toolchains.Golden != "golden-0123456789ab" || len(got.Toolchains.Registries) != 2 {
		t.Errorf("json %+v\n%s", got, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A repository's egress_groups is a request: config check lists it with
// the command to approve, and following it makes the check clean and the
// group part of the box's allow-list.
func TestRepositoryGroupRequestFollowsTheHint(t *testing.T) {
	e := setup(t, "egress_groups = [\"code-hosts\"]\negress = [\"api.example.test\"]\n")
	code, out, _ := run(t, e, false, "config", "check")
	if code != 0 || !strings.Contains(out, "  egress_groups code-hosts  (") || !strings.Contains(out, "to review and allow them: corral approve "+e.box+"\n") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	if code, out, errOut := run(t, e, false, "approve", "--yes"); code != 0 || !strings.Contains(out, "approving the egress group code-hosts") {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	trusted, _ := os.ReadFile(paths.Layout{Home: e.home}.ProjectConfig(e.box))
	if !strings.Contains(string(trusted), "egress_groups = [\"code-hosts\"]\n") || !strings.Contains(string(trusted), "egress = [\"api.example.test\"]\n") {
		t.Errorf("trusted layer:\n%s", trusted)
	}
	if code, out, _ := run(t, e, false, "config", "check"); code != 0 || out != "ok: box "+e.box+" config has no problems\n" {
		t.Errorf("after following the hint: exit %d\n%s", code, out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow)
	if !strings.Contains(out, "allow\tgithub.com\tgroup\tcode-hosts\t\n") {
		t.Errorf("egress allow-list lacks the group:\n%s", out)
	}
}

// TestEgressGroupsUnreadableConfig: when the box's config cannot be read
// (its project directory unreadable, a layer that is not a file), which
// groups it uses is unknown: an error naming why, never every group
// listed as unused with exit 0.
func TestEgressGroupsUnreadableConfig(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	must(t, l.Ensure())
	must(t, os.Mkdir(e.proj+"/.corral.toml", 0o700))
	code, out, errOut := runEgressGroups(e, true)
	if code == 0 || strings.Contains(out, "unused") || !strings.Contains(errOut, ".corral.toml") || !strings.Contains(errOut, "which groups it uses") {
		t.Errorf("code %d\nout: %s\nerr: %s", code, out, errOut)
	}
	if os.Getuid() != 0 { // root reads any directory
		must(t, os.Remove(e.proj+"/.corral.toml"))
		must(t, os.Chmod(e.proj, 0))
		defer os.Chmod(e.proj, 0o700) //nolint:errcheck
		if code, out, errOut := runEgressGroups(e, true); code == 0 || strings.Contains(out, "unused") {
			t.Errorf("unreadable directory: code %d\nout: %s\nerr: %s", code, out, errOut)
		}
	}
}
