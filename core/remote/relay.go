package remote

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"

	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
)

// The credential relay's part of the ssh command (docs/REMOTE.md,
// "Secrets"): the laptop serves the credentials it holds on a local Unix
// socket (core/credential StartRelay), and the session's ssh connection
// forwards a socket on the host to it (-R REMOTE:LOCAL). The remote
// corral learns the remote socket and the relay's token from two hidden
// flags on its command line, never from its environment; no key is on
// the command line or anywhere on the host.

// Hidden global flags of the remote corral: where the relay's forwarded
// socket is on the host, and the token that opens it for this session.
const (
	RelayFlag      = "--credential-relay"
	RelayTokenFlag = "--credential-relay-token"
)

// RelayForward is one session's relay as ssh carries it.
type RelayForward struct {
	// Local is the laptop's socket (core/credential Relay.Socket).
	Local string
	// Remote is the socket ssh listens on on the host: in the remote
	// corral's run directory (0700), chosen by Runner.Run from what the
	// version check reported, with a random name (sshd does not remove a
	// stale socket unless its own StreamLocalBindUnlink says so).
	Remote string
	// Token is the relay's token for this session.
	Token string
}

// checkSocketPath checks a socket path that becomes part of ssh's argv
// (-R REMOTE:LOCAL) and the remote command: absolute, clean, short enough
// for sun_path, and made of letters, digits, '.', '_', '-' and '/' only
// (no ':' that would split the forward, no space, no quote, no option).
func checkSocketPath(what, p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || len(p) > egress.MaxRelaySocket {
		return fmt.Errorf("%s %q: must be a clean absolute path of at most %d bytes", what, cut(p, 128), egress.MaxRelaySocket)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return fmt.Errorf("%s %q: byte %q is not allowed (letters, digits, '.', '_', '-' and '/' only)", what, cut(p, 128), c)
		}
	}
	return nil
}

// Check validates every part of f that reaches ssh's argv.
func (f RelayForward) Check() error {
	if err := checkSocketPath("the relay's local socket", f.Local); err != nil {
		return err
	}
	if err := checkSocketPath("the relay's socket on the host", f.Remote); err != nil {
		return err
	}
	if !egress.ValidRelayToken(f.Token) {
		return fmt.Errorf("the relay's token: not 64 lowercase hex digits")
	}
	return nil
}

// relaySSHOptions are ssh's options for the forward: the remote socket
// replaced if a stale one is there (where sshd allows it), and ssh ends
// rather than run the session without its relay.
var relaySSHOptions = []string{"-o", "StreamLocalBindUnlink=yes", "-o", "ExitOnForwardFailure=yes"}

// placeRelay picks the relay's socket on the host: a random name in the
// remote corral's run directory, as its version check reported it.
func placeRelay(h Host, runDir string, f *RelayForward) error {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("placing the credential relay on host %s: %w", h.Name, err)
	}
	if err := checkSocketPath("the run directory of corral on host "+h.Name, runDir); err != nil {
		return hint.New(fmt.Errorf("placing the credential relay: %w", err),
			"give corral on "+h.Name+" a shorter home without special characters (CORRAL_HOME)")
	}
	f.Remote = path.Join(runDir, "relay-"+hex.EncodeToString(rnd[:])+".sock")
	if err := f.Check(); err != nil {
		return hint.New(fmt.Errorf("placing the credential relay on host %s: %w", h.Name, err),
			"give corral on "+h.Name+" a shorter home (CORRAL_HOME)")
	}
	return nil
}

// relayArgv is ssh's options for f (none without one).
func relayArgv(f *RelayForward) []string {
	if f == nil {
		return nil
	}
	return append(append([]string{}, relaySSHOptions...), "-R", f.Remote+":"+f.Local)
}

// relayWords are the remote corral's flags for f (none without one).
func relayWords(f *RelayForward) []string {
	if f == nil {
		return nil
	}
	return []string{RelayFlag, Quote(f.Remote), RelayTokenFlag, Quote(f.Token)}
}
