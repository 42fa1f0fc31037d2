package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/paths"
)

var auditNow = time.Date(2026, 4, 2, 12, 0, 0, 0, time.UTC)

func writeAudit(t *testing.T, home string) {
	t.Helper()
	l, err := audit.Open(filepath.Join(home, "logs", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, ev := range []audit.Event{
		{Time: auditNow.Add(-48 * time.Hour), Kind: audit.KindCreate, Box: "web-1", Actor: audit.ActorCLI, Fields: map[string]any{"golden": "golden-aaaaaaaaaaaa", "project": "/src/my web"}},
		{Time: auditNow.Add(-2 * time.Hour), Kind: audit.KindSessionStart, Box: "web-1", Actor: audit.ActorCLI, EnvNames: []string{"API_KEY", "CORRAL_BOX"}, Fields: map[string]any{"session": "ab12"}},
		{Time: auditNow.Add(-1 * time.Hour), Kind: audit.KindIdleStop, Box: "api-2", Actor: audit.ActorSweep},
		{Time: auditNow.Add(-30 * time.Minute), Kind: audit.KindGC, Actor: audit.ActorCLI, Fields: map[string]any{"removed": []string{"metadata gone: its Lima instance is gone"}}},
	} {
		if err := l.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func runAudit(t *testing.T, home string, tty bool, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := Test(tty)
	f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return paths.Layout{Home: home}, nil }}
	cmd := NewCmdAudit(f, func(o *AuditOptions) error {
		o.Now, o.Location = func() time.Time { return auditNow }, time.UTC
		return auditRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		printError(errOut, err)
	}
	return exitCode(err), out.String(), errOut.String()
}

func TestAuditHuman(t *testing.T) {
	home := t.TempDir()
	writeAudit(t, home)
	_, out, _ := runAudit(t, home, true)
	want := `2026-03-31 12:00:00  create         web-1  cli    golden=golden-aaaaaaaaaaaa project="/src/my web"
2026-04-02 10:00:00  session-start  web-1  cli    env=API_KEY,CORRAL_BOX session=ab12
2026-04-02 11:00:00  idle-stop      api-2  sweep
2026-04-02 11:30:00  gc             -      cli    removed=["metadata gone: its Lima instance is gone"]
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestAuditFilters(t *testing.T) {
	home := t.TempDir()
	writeAudit(t, home)
	_, out, _ := runAudit(t, home, false, "--since", "24h", "--box", "web-1", "--json")
	want := `{"schema":"corral.audit-event/v1","time":"2026-04-02T10:00:00Z","kind":"session-start","box":"web-1","actor":"cli","env_names":["API_KEY","CORRAL_BOX"],"fields":{"session":"ab12"}}` + "\n"
	if out != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
	_, out, _ = runAudit(t, home, false, "--since", "1d")
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("--since 1d: %d lines\n%s", n, out)
	}
	_, out, _ = runAudit(t, home, false, "--since", "2026-04-02T10:30:00Z")
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("--since time: %d lines\n%s", n, out)
	}
	code, _, errOut := runAudit(t, home, false, "--since", "yesterday")
	if code != 1 || errOut != "corral: --since \"yesterday\": want an age such as 90m, 24h or 7d, or an RFC 3339 time\n" {
		t.Errorf("code %d err %q", code, errOut)
	}
}

func TestAuditEmpty(t *testing.T) {
	code, out, errOut := runAudit(t, t.TempDir(), true)
	if code != 0 || out != "" || errOut != "no audit events\n" {
		t.Errorf("code %d out %q err %q", code, out, errOut)
	}
	if _, out, _ := runAudit(t, t.TempDir(), false, "--json"); out != "" {
		t.Errorf("json %q", out)
	}
}

// Text a box wrote (the host of a denial) reaches the terminal escaped.
func TestAuditEscapesBoxText(t *testing.T) {
	if got := auditValue("evil\x1b[2J\u202e.test"); got != `evil\x1b[2J\u202e.test` {
		t.Errorf("auditValue = %q", got)
	}
	if got := auditValue("a b\x1b"); got != `"a b\x1b"` {
		t.Errorf("auditValue quoted = %q", got)
	}
}
