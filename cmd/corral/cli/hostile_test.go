package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// payload holds what a terminal acts on: CSI (clear screen), OSC 8 (a
// link), OSC 52 (write the clipboard), BEL, the C1 CSI as a rune (U+009B)
// and as a bare byte, a bidi override and a carriage return.
const payload = "\x1b[2J\x1b]8;;http://evil.test\x07link\x1b]8;;\x07\x1b]52;c;aGk=\x07\x07\u009b31m\x9b\u202e\rok"

// pathPayload is payload as a directory name: no slash, valid UTF-8 (box
// metadata is JSON, which would store a bare byte as U+FFFD).
const pathPayload = "\x1b[2J\x1b]8;;evil.test\x07link\x1b]8;;\x07\x1b]52;c;aGk=\x07\x07\u009b31m\u202e\rok"

// checkTerminalSafe fails when s holds a byte or rune a terminal could
// act on: anything unsafe but newline and tab, or invalid UTF-8 (a bare
// 0x9b is CSI to an 8-bit terminal).
func checkTerminalSafe(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: invalid UTF-8 reaches the terminal: %q", what, s)
		return
	}
	for _, r := range s {
		if display.Unsafe(r) && r != '\n' && r != '\t' {
			t.Errorf("%s: %U reaches the terminal: %q", what, r, s)
			return
		}
	}
}

// TOML escapes carry the payload's controls into keys and values: one
// file that loads (a value, and an egress request), one that does not (an
// unknown key and a bad value).
const (
	tomlLoads  = "env = { GREETING = \"\\u001b]52;c;aGk=\\u0007\\u009b\\u202ehi\" }\negress = [\"evil.test\"]\n"
	tomlBroken = "egress = [\"\\u001b]52;c;aGk=\\u0007\\u009b\\u202eevil.test\"]\n\"netwrok\\u001b\\u202e\" = 1\n"
)

// hostileEnv is a project whose path holds payload and whose .corral.toml
// is toml, with a box, an egress log and an audit log full of payload, and
// a second box whose name is payload.
func hostileEnv(t *testing.T, toml string) (env, paths.Layout) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "h")
	proj := filepath.Join(root, "web"+pathPayload)
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, config.ProjectFile), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.Resolve(proj, filepath.Join(home, "lima"))
	if err != nil {
		t.Fatal(err)
	}
	e := env{home: home, proj: proj, box: p.Box}
	l := paths.Layout{Home: home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{e.box, "evil" + payload} {
		if err := boxmeta.Write(l, boxmeta.Meta{Name: name, Project: proj, Network: config.NetworkBroker, BrokerPort: 42001}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(egress.Entry{Time: time.Now().Add(-time.Hour), Box: e.box, Kind: egress.KindSessionStart, Session: payload}); err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	dl.LogDecision(egress.Decision{Time: time.Now().Add(-time.Minute), Kind: egress.KindConnect, Host: payload, Port: 443, Reason: egress.ReasonHostNotAllowed})
	dl.LogDecision(egress.Decision{Time: time.Now().Add(-time.Minute), Kind: egress.KindConnect, Host: payload, Reason: egress.ReasonMalformedAuthority})
	al, err := audit.Open(filepath.Join(home, "logs", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	if err := al.Record(audit.Event{Time: time.Now().Add(-time.Minute), Kind: audit.Kind(payload), Box: payload, Actor: audit.Actor(payload),
		EnvNames: []string{payload}, Fields: map[string]any{payload: payload, "project": proj, "list": []any{payload}}}); err != nil {
		t.Fatal(err)
	}
	return e, l
}

// TestHumanOutputIsTerminalSafe runs every human-output command over a
// project, box names, config values and logs holding terminal controls:
// none reaches stdout or stderr, TTY or not. JSON output stays exact.
func TestHumanOutputIsTerminalSafe(t *testing.T) {
	for _, toml := range []string{tomlLoads, tomlBroken} {
		humanOutputIsTerminalSafe(t, toml)
	}
}

func humanOutputIsTerminalSafe(t *testing.T, toml string) {
	e, l := hostileEnv(t, toml)
	for _, args := range [][]string{
		{"doctor"},
		{"doctor", payload},
		{"doctor", e.box},
		{"config", "show"},
		{"config", "show", "--origin"},
		{"config", "check"},
		{"ls"},
		{"info"},
		{"info", e.box},
		{"info", payload},
		{"egress", e.box},
		{"egress", "log", e.box},
		{"egress", payload},
		{"audit"},
		{"allow", e.box},
		{"approve", e.box},
		{payload},
		{"ls", "--" + payload},
	} {
		for _, tty := range []bool{true, false} {
			io, _, out, errOut := Test(tty)
			f := &Factory{
				IO:        io,
				Layout:    func() (paths.Layout, error) { return l, nil },
				Platform:  config.Platform{OS: "linux", Arch: "amd64"},
				LookupEnv: func(string) (string, bool) { return "", false },
				NewService: func() (*box.Service, error) {
					s, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
					return s, nil
				},
			}
			Run(f, append([]string{"-C", e.proj}, args...))
			what := strings.Join(args, " ") + " (" + toml[:3] + ")"
			if tty {
				what += " (tty)"
			}
			checkTerminalSafe(t, what+" stdout", out.String())
			checkTerminalSafe(t, what+" stderr", errOut.String())
		}
	}
}

// ls and info say when a box's config does not load, naming the file
// and the problem; the exit status stays 0.
func TestLsInfoSayConfigDoesNotLoad(t *testing.T) {
	e, l := hostileEnv(t, tomlBroken)
	for _, args := range [][]string{{"ls"}, {"info", e.box}, {"-C", e.proj, "info"}} {
		io, _, out, errOut := Test(true)
		f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return l, nil },
			Platform: config.Platform{OS: "linux", Arch: "amd64"}, LookupEnv: func(string) (string, bool) { return "", false },
			NewService: func() (*box.Service, error) {
				s, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
				return s, nil
			}}
		code := Run(f, args)
		file := display.Text(filepath.Join(e.proj, config.ProjectFile), maxCell)
		if code != 0 || !strings.Contains(errOut.String(), "does not load") || !strings.Contains(errOut.String(), file) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s\nwant a warning naming %s", args, code, out, errOut, file)
		}
	}
}

// JSON is data: it is not filtered, and decodes to the exact values.
func TestJSONOutputStaysExact(t *testing.T) {
	e, l := hostileEnv(t, tomlLoads)
	io, _, out, _ := Test(false)
	f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return l, nil },
		Platform: config.Platform{OS: "linux", Arch: "amd64"}, LookupEnv: func(string) (string, bool) { return "", false },
		NewService: func() (*box.Service, error) {
			s, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
			return s, nil
		}}
	if code := Run(f, []string{"ls", "--json"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Boxes []box.Status `json:"boxes"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	list := doc.Boxes
	for _, st := range list {
		if st.Project != e.proj {
			t.Errorf("ls --json: project %q, want %q", st.Project, e.proj)
		}
	}
	if !strings.Contains(out.String(), "\u202e") {
		t.Error("ls --json was filtered: the raw U+202E encoding/json writes is gone")
	}
}
