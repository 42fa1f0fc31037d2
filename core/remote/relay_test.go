package remote

import (
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var relayTok = strings.Repeat("9f", 32)

// The relay's forward in ssh's argv: its options before the destination,
// -R REMOTE:LOCAL, and the remote corral's hidden flags after --host
// local, read back by a real shell as exactly those words.
func TestSSHArgvRelay(t *testing.T) {
	h := mustHost(t, "t", "ssh://me@h", "", "")
	f := &RelayForward{Local: "/Users/me/.corral/run/relay-ab/s", Remote: "/home/me/.corral/run/relay-cd.sock", Token: relayTok}
	got := SSHArgv(h, Invocation{Args: []string{"claude"}, TTY: true, Relay: f})
	want := []string{"-t", "-o", "StreamLocalBindUnlink=yes", "-o", "ExitOnForwardFailure=yes",
		"-R", "/home/me/.corral/run/relay-cd.sock:/Users/me/.corral/run/relay-ab/s", "-e", "none", "--", "me@h",
		`'corral' --host local --credential-relay '/home/me/.corral/run/relay-cd.sock' --credential-relay-token '` + relayTok + `' 'claude'`}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	words := shWords(t, got[len(got)-1])
	if !slices.Equal(words, []string{"corral", "--host", "local", RelayFlag, f.Remote, RelayTokenFlag, relayTok, "claude"}) {
		t.Errorf("sh read %q", words)
	}
}

func TestRelayForwardCheck(t *testing.T) {
	ok := RelayForward{Local: "/l/s", Remote: "/r/relay-1.sock", Token: relayTok}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []RelayForward{
		{Local: "l/s", Remote: ok.Remote, Token: relayTok},
		{Local: ok.Local, Remote: "/r/a:b", Token: relayTok},
		{Local: ok.Local, Remote: "/r/../x", Token: relayTok},
		{Local: ok.Local, Remote: "/r/a b", Token: relayTok},
		{Local: ok.Local, Remote: "/r/$(id)", Token: relayTok},
		{Local: ok.Local, Remote: "/r/a'b", Token: relayTok},
		{Local: ok.Local, Remote: "/r/\x1b", Token: relayTok},
		{Local: ok.Local, Remote: "/" + strings.Repeat("r", 103), Token: relayTok},
		{Local: "-oProxyCommand=x", Remote: ok.Remote, Token: relayTok},
		{Local: ok.Local, Remote: ok.Remote, Token: strings.ToUpper(relayTok)},
		{Local: ok.Local, Remote: ok.Remote, Token: "x"},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

// Run places the relay's socket in the run directory the remote corral
// reported, with a random name, and refuses a run directory that could
// not be a safe argv part.
func TestRunPlacesRelay(t *testing.T) {
	withVersion(t, "1.4.0", "abc123")
	h := mustHost(t, "gpu", "ssh://me@h", "", "")
	f := &fakeSSH{out: `{"version":"1.4.0","commit":"abc123","run_dir":"/home/me/.corral/run"}` + "\n"}
	relay := &RelayForward{Local: "/l/relay-x/s", Token: relayTok}
	if _, err := (Runner{Exec: f.exec}).Run(context.Background(), h, Invocation{Args: []string{"claude"}, Relay: relay}, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if relay.Remote != "" {
		t.Error("Run changed the caller's RelayForward")
	}
	argv := strings.Join(f.calls[1], " ")
	if !regexp.MustCompile(`-R /home/me/\.corral/run/relay-[0-9a-f]{16}\.sock:/l/relay-x/s `).MatchString(argv) {
		t.Errorf("argv %q", argv)
	}
	if strings.Contains(f.calls[0][len(f.calls[0])-1], "relay") {
		t.Errorf("the version check carries the relay: %q", f.calls[0])
	}
	for _, dir := range []string{"", "relative/run", "/home/me/my corral/run", "/home/me/x:y", "/" + strings.Repeat("d", 90)} {
		f := &fakeSSH{out: `{"version":"1.4.0","commit":"abc123","run_dir":"` + dir + `"}`}
		_, err := (Runner{Exec: f.exec}).Run(context.Background(), h, Invocation{Args: []string{"claude"}, Relay: relay}, nil, io.Discard, io.Discard)
		if err == nil || len(f.calls) != 1 {
			t.Errorf("run_dir %q: %v, calls %q", dir, err, f.calls)
		}
	}
}
