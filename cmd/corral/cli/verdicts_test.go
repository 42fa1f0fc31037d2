package cli

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// untrustedRepo is a repository file with one of each answer the check
// gives: keys the user may grant by copying lines (network, sudo, a secret
// variable), requests to approve (an exact host; a flagged any-port one),
// and requests the grant check refuses (*.com; a host port below 1024).
const untrustedRepo = `network = "full"
sudo = true
egress = ["api.example.test", "localhost:*", "*.com"]
ports = ["80"]

[env]
API_TOKEN = "from-the-repository"
`

// followFixes writes every problem's lines into the trusted layer as its
// fix says: a key = value line above the first table, a table at the end.
func followFixes(t *testing.T, trustedPath string, problems []checkProblem) {
	t.Helper()
	var head, tables []string
	for _, p := range problems {
		switch {
		case p.Never:
		case p.Lines == "":
			t.Fatalf("a problem with neither lines to copy nor a never verdict: %+v", p)
		case !strings.Contains(p.Fix, "add to "+trustedPath):
			t.Fatalf("the fix does not say to add to the trusted layer: %q", p.Fix)
		case strings.HasPrefix(p.Lines, "["):
			tables = append(tables, p.Lines)
		default:
			head = append(head, p.Lines)
		}
	}
	if err := os.MkdirAll(filepath.Dir(trustedPath), 0o700); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(append(head, tables...), "\n") + "\n"
	if err := os.WriteFile(trustedPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFollowingTheCheckPasses is issue 37's first hour, in process: the
// check names every problem with the lines to copy (item 1), refused
// requests are a verdict and not pending (item 2), and both text and JSON
// are golden files. Copying the printed lines makes the problems go away;
// the refused requests stay refused (exit 2), and approve --yes leaves the
// flagged request to --yes-flagged.
func TestFollowingTheCheckPasses(t *testing.T) {
	e := setup(t, untrustedRepo)
	words := envWords(e)
	trusted := filepath.Join(e.home, "projects", e.box+".toml")

	code, out, errOut := run(t, e, false, "config", "check")
	if code != ExitViolation || errOut != "" {
		t.Fatalf("config check: exit %d, stderr %q", code, errOut)
	}
	goldenFile(t, "check-untrusted.txt", out, words...)
	code, out, _ = run(t, e, false, "config", "check", "--json")
	if code != ExitViolation {
		t.Fatalf("config check --json: exit %d", code)
	}
	goldenFile(t, "check-untrusted.json", out, words...)
	var doc struct {
		Schema   string         `json:"schema"`
		OK       bool           `json:"ok"`
		Problems []checkProblem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != SchemaConfigCheck || doc.OK || len(doc.Problems) != 3 {
		t.Fatalf("%v %+v", err, doc)
	}

	followFixes(t, trusted, doc.Problems)
	code, out, _ = run(t, e, false, "config", "check")
	if code != ExitViolation || strings.Contains(out, "problem(s)") {
		t.Fatalf("after following the fixes: exit %d (only the refused requests may fail it)\n%s", code, out)
	}
	goldenFile(t, "check-followed.txt", out, words...)

	code, out, errOut = run(t, e, false, "approve", "--yes")
	if code != ExitViolation {
		t.Fatalf("approve --yes: exit %d", code)
	}
	goldenFile(t, "approve-yes.txt", out+"--- stderr\n"+errOut, words...)
	if data, _ := os.ReadFile(trusted); strings.Contains(string(data), "localhost") || !strings.Contains(string(data), `"api.example.test"`) {
		t.Fatalf("approve --yes wrote a flagged entry, or not the plain one:\n%s", data)
	}
	code, out, errOut = run(t, e, false, "approve", "--yes-flagged")
	if code != ExitViolation || !strings.Contains(out, "approving egress localhost:*\n  flagged: ") || !strings.Contains(out, "approved 1 of 1") {
		t.Fatalf("approve --yes-flagged: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, e, false, "config", "check", "--json")
	if code != ExitViolation {
		t.Fatalf("config check at the end: exit %d", code)
	}
	goldenFile(t, "check-end.json", out, words...)
}

// TestApproveAsksAboutFlaggedOnATerminal: with --yes on a terminal, a
// flagged request is still asked about; "n" leaves it pending.
func TestApproveAsksAboutFlaggedOnATerminal(t *testing.T) {
	e := setup(t, "egress = [\"api.example.test\", \"localhost:*\"]\n")
	io, in, out, errOut := Test(true)
	in.WriteString("n\n")
	f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return paths.Layout{Home: e.home}, nil },
		Platform: config.Platform{OS: "linux", Arch: "amd64"}, LookupEnv: func(string) (string, bool) { return "", false }}
	code := Run(f, []string{"-C", e.proj, "approve", "--yes"})
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	goldenFile(t, "approve-yes-tty.txt", out.String(), envWords(e)...)
}

// TestConfigShowJSONShowsProblems: config show --json prints the effective
// config with every problem and request beside it, and exits 2, when the
// repository's file has a problem (without --json it refuses).
func TestConfigShowJSONShowsProblems(t *testing.T) {
	e := setup(t, "network = \"full\"\negress = [\"*.com\"]\n")
	code, out, errOut := run(t, e, false, "config", "show", "--json")
	if code != ExitViolation || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	goldenFile(t, "show-problems.json", out, envWords(e)...)
	if code, out, errOut := run(t, e, false, "config", "show"); code != ExitViolation || out != "" || !strings.HasPrefix(errOut, "corral: refusing: the config has problems:\n") {
		t.Errorf("config show without --json: exit %d\n%s%s", code, out, errOut)
	}
}

// TestErrorsUnderJSON: an error under --json is one JSON object on stderr
// with a stable code, and nothing on stdout; without --json it is text.
func TestErrorsUnderJSON(t *testing.T) {
	bad := setup(t, "sudo = true\n")
	good := setup(t, "")
	writeBoxMeta(t, good, "broker")
	for _, tc := range []struct {
		name string
		e    env
		args []string
		code ErrorCode
		exit int
	}{
		{"error-usage.json", good, []string{"config", "check", "--json", "--bogus"}, CodeUsage, ExitError},
		{"error-config.json", bad, []string{"agents", "--json"}, CodeConfigInvalid, ExitViolation},
		{"error-refused.json", good, []string{"allow", "--json", good.box, "*.com"}, CodeGrantRefused, ExitError},
		{"error-no-box.json", good, []string{"allow", "--json", "--list", "nosuch-000000"}, CodeBoxNotFound, ExitError},
		{"error-unknown-command.json", good, []string{"bogus", "--json"}, CodeUsage, ExitError},
		{"error-unknown-subcommand.json", good, []string{"config", "bogus", "--json"}, CodeUsage, ExitError},
	} {
		code, out, errOut := run(t, tc.e, false, tc.args...)
		var got jsonError
		if err := json.Unmarshal([]byte(errOut), &got); err != nil || code != tc.exit || out != "" || got.Code != tc.code || got.Schema != SchemaError || got.Exit != code ||
			strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (%v)", tc.args, code, out, errOut, err)
			continue
		}
		goldenFile(t, tc.name, errOut, envWords(tc.e)...)
		// The same command without --json prints text.
		var args []string
		for _, a := range tc.args {
			if a != "--json" {
				args = append(args, a)
			}
		}
		if _, _, errOut := run(t, tc.e, false, args...); !strings.HasPrefix(errOut, "corral: ") {
			t.Errorf("%q without --json: %q", args, errOut)
		}
	}
}

// TestJSONHasOnePrinter: the CLI's JSON goes through printers.go (every
// document with its schema) and errors.go (errors under --json); no
// command encodes JSON of its own.
func TestJSONHasOnePrinter(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "printers.go" || f == "errors.go" {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "encoding/json" {
				data, _ := os.ReadFile(f)
				if strings.Contains(string(data), "json.NewEncoder") || strings.Contains(string(data), "json.MarshalIndent") {
					t.Errorf("%s encodes JSON itself: use printJSON, printJSONList or jsonLine (with a schema)", f)
				}
			}
		}
	}
}

// TestEgressShowsRefusedRequests: corral egress lists a repository's
// refused requests apart from the pending ones, with the reason.
func TestEgressShowsRefusedRequests(t *testing.T) {
	e := setup(t, "egress = [\"*.com\", \"api.example.test\"]\n")
	writeBoxMeta(t, e, "broker")
	code, out, errOut := runEgressAt(e, true, fixedNow)
	if code != 0 || !strings.Contains(out, "\nrequested by the repository, not allowed (review with corral approve "+e.box+"):\n  api.example.test\n") ||
		!strings.Contains(out, "\nrequested by the repository, refused by the grant check (never allowed):\n  *.com: a wildcard over the public suffix \"com\"") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--json")
	var doc struct {
		Schema  string `json:"schema"`
		Pending []struct {
			Entry, Status string
		} `json:"pending_requests"`
		Refused []struct {
			Entry, Status, Why string
		} `json:"refused_requests"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != SchemaEgress || len(doc.Pending) != 1 || doc.Pending[0].Status != "pending" ||
		len(doc.Refused) != 1 || doc.Refused[0].Entry != "*.com" || doc.Refused[0].Status != "refused" || doc.Refused[0].Why == "" {
		t.Errorf("%v %+v\n%s", err, doc, out)
	}
}
