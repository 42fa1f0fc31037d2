package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/spf13/cobra"
)

// execCmd runs a command built with a runF hook the way Run does.
func execCmd(cmd *cobra.Command, out, errOut *bytes.Buffer, args ...string) (int, string, string) {
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	if err != nil {
		printError(errOut, err)
	}
	return exitCode(err), out.String(), errOut.String()
}

var fixedNow = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func runAllowAt(e env, tty bool, now time.Time, args ...string) (int, string, string) {
	f, out, errOut := testFactory(e, tty)
	cmd := NewCmdAllow(f, func(o *AllowOptions) error {
		o.Now = func() time.Time { return now }
		return allowRun(o)
	})
	return execCmd(cmd, out, errOut, args...)
}

func TestAllowScopes(t *testing.T) {
	e := setup(t, "")
	l := writeBoxMeta(t, e, "broker")
	for _, c := range []struct{ flag, entry, want string }{
		{"", "api.example.test", "(always)"},
		{"--always", "API.Example.test.:8443", "(always)"},
		{"--session", "*.cdn.example.test", "(session: until the box stops, at most 12h)"},
		{"--once", "dl.example.test:*", "(once: the next connection, within 10 minutes)"},
	} {
		args := []string{"allow", e.box, c.entry}
		if c.flag != "" {
			args = append(args, c.flag)
		}
		code, out, errOut := run(t, e, true, args...)
		canon, _ := approval.Canonical(c.entry)
		if want := "allowed " + canon + " for box " + e.box + " " + c.want + "\n"; code != 0 || out != want || errOut != "" {
			t.Errorf("%q: code %d out %q err %q, want %q", args, code, out, errOut, want)
		}
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: e.box})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Kind != audit.KindAllow || ev.Actor != audit.ActorCLI {
			t.Errorf("event %+v", ev)
		}
		got = append(got, ev.Fields["entry"].(string)+" "+ev.Fields["scope"].(string))
	}
	want := []string{"api.example.test always", "api.example.test:8443 always", "*.cdn.example.test session", "dl.example.test:* once"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("audited %q, want %q", got, want)
	}
	if evs[0].Fields["expires"] != "never" || evs[3].Fields["expires"] == "never" {
		t.Errorf("expiries %v %v", evs[0].Fields, evs[3].Fields)
	}
}

func TestAllowNoteWhenNotFiltered(t *testing.T) {
	e := setup(t, "")
	writeBoxMeta(t, e, "full")
	code, _, errOut := run(t, e, false, "allow", e.box, "api.example.test")
	if want := "note: box " + e.box + " has network = \"full\", so its broker does not filter; the approval applies when it uses \"broker\"\n"; code != 0 || errOut != want {
		t.Errorf("code %d err %q", code, errOut)
	}
}

func seedApprovals(t *testing.T, e env) {
	t.Helper()
	l := writeBoxMeta(t, e, "broker")
	s, err := approval.Open(l, e.box)
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return fixedNow.Add(-3 * time.Minute) }
	for _, a := range []struct {
		e  string
		sc approval.Scope
		by audit.Actor
	}{
		{"api.example.test", approval.ScopeAlways, audit.ActorCLI},
		{"*.cdn.example.test", approval.ScopeSession, audit.ActorApp},
		{"dl.example.test:*", approval.ScopeOnce, audit.ActorApp},
	} {
		if _, err := s.Add(a.e, a.sc, a.by); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllowList(t *testing.T) {
	e := setup(t, "")
	seedApprovals(t, e)
	code, out, errOut := runAllowAt(e, true, fixedNow, "--list", e.box)
	want := "" +
		"ENTRY               SCOPE    EXPIRES  BY\n" +
		"api.example.test    always   never    cli\n" +
		"*.cdn.example.test  session  in 11h   app\n" +
		"dl.example.test:*   once     in 7m    app\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("TTY: code %d err %q out:\n%s\nwant:\n%s", code, errOut, out, want)
	}
	_, out, _ = runAllowAt(e, false, fixedNow, "--list", e.box)
	want = "" +
		"api.example.test\talways\tnever\tcli\n" +
		"*.cdn.example.test\tsession\t2026-05-06T23:57:00Z\tapp\n" +
		"dl.example.test:*\tonce\t2026-05-06T12:07:00Z\tapp\n"
	if out != want {
		t.Errorf("non-TTY:\n%s\nwant:\n%s", out, want)
	}
	_, out, _ = runAllowAt(e, false, fixedNow, "--list", "--json", e.box)
	if !strings.HasPrefix(out, "{\n  \"schema\": \"corral.approvals/v1\",\n  \"approvals\": [\n    {\n      \"entry\": \"api.example.test\",\n      \"scope\": \"always\",\n      \"added\": \"2026-05-06T11:57:00Z\",\n      \"actor\": \"cli\"\n    },") {
		t.Errorf("JSON:\n%s", out)
	}
	// After the once approval expired, it is gone from the list.
	_, out, _ = runAllowAt(e, false, fixedNow.Add(10*time.Minute), "--list", e.box)
	if strings.Contains(out, "dl.example.test") {
		t.Errorf("expired approval listed:\n%s", out)
	}
}

func TestAllowListEmptyAndRevoke(t *testing.T) {
	e := setup(t, "")
	writeBoxMeta(t, e, "broker")
	code, out, _ := run(t, e, true, "allow", "--list", e.box)
	if code != 0 || out != "no approvals for box "+e.box+"\n" {
		t.Errorf("code %d out %q", code, out)
	}
	if code, out, _ := run(t, e, false, "allow", "--list", e.box); code != 0 || out != "" {
		t.Errorf("non-TTY empty: %d %q", code, out)
	}
	run(t, e, false, "allow", e.box, "api.example.test")
	code, out, errOut := run(t, e, false, "allow", "--revoke", e.box, "API.example.test")
	if code != 0 || out != "revoked api.example.test for box "+e.box+"\n" || errOut != "" {
		t.Errorf("revoke: %d %q %q", code, out, errOut)
	}
	code, _, errOut = run(t, e, false, "allow", "--revoke", e.box, "api.example.test")
	if want := "corral: revoking api.example.test for box " + e.box + ": no such approval\nhint: corral allow --list " + e.box + " shows the approvals\n"; code != 1 || errOut != want {
		t.Errorf("second revoke: %d %q", code, errOut)
	}
}

func TestAllowErrors(t *testing.T) {
	e := setup(t, "")
	writeBoxMeta(t, e, "broker")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"allow", e.box, "https://api.example.test/"}, `corral: allow entry "https://api.example.test/": want host, *.suffix, host:port or host:*`},
		{[]string{"allow", e.box, "10.1.2.3"}, `"10.1.2.3"`},
		{[]string{"allow", e.box, "api.example.test:0"}, `allow entry "api.example.test:0": port "0"`},
		{[]string{"allow", "nope-123456", "api.example.test"}, "corral: no such box: nope-123456\nhint: corral ls lists the boxes\n"},
		{[]string{"allow", "../x", "api.example.test"}, `"../x"`},
		{[]string{"allow", e.box, "*.com"}, "corral: allow entry \"*.com\": a wildcard over the public suffix \"com\" would allow every domain registered under it\nhint: allow one registrable domain"},
		{[]string{"allow", e.box, "*.co.uk:443"}, `public suffix "co.uk"`},
		{[]string{"allow", e.box, "*.github.io"}, `public suffix "github.io"`},
		{[]string{"allow", e.box}, "takes a box and a host, got 1 arguments"},
		{[]string{"allow", "--list"}, "--list takes one box, got 0 arguments"},
		{[]string{"allow", e.box, "a.example.test", "--once", "--session"}, "[once session] were all set"},
		{[]string{"allow", "--list", e.box, "--once"}, "go with adding an approval, not with --list or --revoke"},
		{[]string{"allow", "--list", "--revoke", e.box}, "[list revoke] were all set"},
		{[]string{"allow", e.box, "a.example.test", "--for", "10s"}, "corral: allow --for: approval duration 10s: shorter than 1m0s, it would lapse before a retry\nhint: use --once to allow a single connection\n"},
		{[]string{"allow", e.box, "a.example.test", "--for", "0s"}, "approval duration 0s: must be positive"},
		{[]string{"allow", e.box, "a.example.test", "--for", "-2h"}, "approval duration -2h0m0s: must be positive"},
		{[]string{"allow", e.box, "a.example.test", "--for", "721h"}, "longer than 30 days (720h)\nhint: use --always"},
		{[]string{"allow", e.box, "a.example.test", "--for", "2"}, `invalid argument "2" for "--for" flag`},
		{[]string{"allow", e.box, "a.example.test", "--for", "1h", "--once"}, "[for once] were all set"},
		{[]string{"allow", "--list", e.box, "--for", "1h"}, "go with adding an approval, not with --list or --revoke"},
	} {
		code, out, errOut := run(t, e, false, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d out %q err %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	s, _ := approval.Open(writeBoxMeta(t, e, "broker"), e.box)
	if list, _ := s.List(time.Now()); len(list) != 0 {
		t.Errorf("refused commands stored %+v", list)
	}
}

func TestAllowFor(t *testing.T) {
	e := setup(t, "")
	l := writeBoxMeta(t, e, "broker")
	code, out, errOut := run(t, e, false, "allow", e.box, "api.example.test", "--for", "2h")
	if code != 0 || !strings.HasPrefix(out, "allowed api.example.test for box "+e.box+" (for 2h0m0s: until ") || errOut != "" {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
	s, _ := approval.Open(l, e.box)
	list, err := s.List(time.Now())
	if err != nil || len(list) != 1 || list[0].Scope != approval.ScopeFor || list[0].Expires.Sub(list[0].Added) != 2*time.Hour {
		t.Fatalf("stored %+v %v", list, err)
	}
	// --list shows when it ends, and it is gone after that.
	at := list[0].Added.Add(90 * time.Minute)
	if code, out, _ := runAllowAt(e, true, at, "--list", e.box); code != 0 || !strings.Contains(out, "api.example.test  for") || !strings.Contains(out, "in 30m") {
		t.Fatalf("--list at +90m: %d %q", code, out)
	}
	if code, out, _ := runAllowAt(e, true, list[0].Expires, "--list", e.box); code != 0 || out != "no approvals for box "+e.box+"\n" {
		t.Fatalf("--list at its end: %d %q", code, out)
	}
}
