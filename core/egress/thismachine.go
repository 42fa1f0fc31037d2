package egress

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/display"
)

// ThisMachineMark is what the CLI, the menu and notifications show beside
// a host that names the host computer itself ([ThisMachine]).
const ThisMachineMark = "this machine"

// ThisMachineWhy says why such a host is marked, for a tooltip, a
// notification or a terminal hint.
const ThisMachineWhy = "it names this computer itself: allowing it lets the box reach what listens on its loopback (your databases, dev servers, other tools' local APIs) wherever a loopback range is allowed too"

// ThisMachineNotice is the sentence a notification adds about such a
// host.
const ThisMachineNotice = "This machine: " + ThisMachineWhy + "."

// localNames are the names that mean this computer whatever the resolver
// says: localhost (and every name under it, RFC 6761 6.3) and the
// loopback names Linux distributions put in /etc/hosts.
var localNames = []string{"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}

// ThisMachine reports whether host (a name or an IP literal, with or
// without brackets; case and a trailing dot aside) names the host computer
// itself: a loopback name, a loopback address (127.0.0.0/8, ::1, and
// their IPv4-mapped forms), or an address the kernel delivers to the host
// itself (0.0.0.0/8, ::). It is decided from the text alone, never by
// resolving: a public name whose DNS answers loopback is not marked (the
// broker refuses such an answer unless a loopback range is allowed:
// resolve once, classify the address), nor is the host's own hostname.
// For display: it marks a request, it decides nothing.
func ThisMachine(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || a.IsUnspecified() || thisNetwork.Contains(a)
	}
	for _, n := range localNames {
		if h == n {
			return true
		}
	}
	return strings.HasSuffix(h, ".localhost")
}

// EntryHost is the host of an allow-list entry or a logged authority
// ("localhost:3000", "[::1]:5432", "*.localhost", "example.test"): the
// text before a numeric port, without a "*." prefix.
func EntryHost(entry string) string {
	h := strings.TrimPrefix(entry, "*.")
	if host, port, err := net.SplitHostPort(h); err == nil {
		if _, perr := strconv.Atoi(port); perr == nil || port == "*" {
			return host
		}
	}
	return h
}

// ShowTarget is what a request or a denial names, for display: entry (an
// allow-list entry or HOST:PORT) through display.Authority at most max
// runes, then " (this machine)" when it names this computer
// ([ThisMachine]). The mark comes after the cut, so no length of name
// hides it.
func ShowTarget(entry string, max int) string {
	return display.Authority(entry, max) + markThisMachine(EntryHost(entry))
}

// ShowHost is ShowTarget for a bare host (no port): through display.Host.
func ShowHost(host string, max int) string {
	return display.Host(host, max) + markThisMachine(host)
}

// markThisMachine is " (this machine)" for a host on this computer, else "".
func markThisMachine(host string) string {
	if ThisMachine(host) {
		return " (" + ThisMachineMark + ")"
	}
	return ""
}
