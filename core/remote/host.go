// Package remote runs corral commands on another Linux host over ssh: that
// host's own corral (Lima, qemu, the broker, the funnel) does the work and
// enforces the boundary; this side only carries argv, stdio, the exit code
// and the terminal.
//
// It owns four rules, each in one place:
//
//  1. what a host is: a NAME (CheckName) and an ssh://[user@]host[:port]
//     URL (ParseURL), both strict, because both end up in ssh's argv;
//  2. where hosts are kept: ~/.corral/hosts.toml, the user's trusted
//     state, written only by `corral host add|rm` with the audit record
//     first (Add, Remove) and decoded strictly (Load);
//  3. how a command is run there: SSHArgv builds ssh's argv (a pure
//     function), Quote quotes each argument for the remote POSIX shell;
//  4. which commands run there (Forwarded) and that both sides are the same
//     corral (CheckVersion) before anything else is sent.
//
// docs/REMOTE.md says why the project is cloned, not shared, and how
// secrets stay on the laptop.
package remote

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Local is the reserved host name meaning this machine: `--host local`
// runs a command here whatever the project's host key says. The remote
// side is always started with it, so a forwarded command never forwards
// again.
const Local = "local"

// MaxNameLen caps a host name.
const MaxNameLen = 32

// CheckName reports whether name may name a host: a lowercase letter, then
// lowercase letters, digits and '-', at most MaxNameLen bytes, not "local".
// Names appear in file names, TOML keys, argv and the menu: nothing in
// them needs quoting or escaping anywhere.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty host name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("host name longer than %d bytes", MaxNameLen)
	case name == Local:
		return fmt.Errorf("host name %q is reserved (it means this machine)", Local)
	case name[0] < 'a' || name[0] > 'z':
		return fmt.Errorf("host name %s must start with a lowercase letter", strconv.QuoteToASCII(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("host name %s: only a-z, 0-9 and '-'", strconv.QuoteToASCII(name))
		}
	}
	return nil
}

// Target is where ssh connects: the parts of an ssh:// URL.
type Target struct {
	User string // "" = ssh's default (the ssh config's User, or the local user)
	Host string // a DNS name, an IPv4 address, or an IPv6 address without brackets
	Port int    // 0 = ssh's default
}

// MaxURLLen caps a host URL.
const MaxURLLen = 300

// ParseURL parses ssh://[user@]host[:port] strictly: no password, path,
// query, fragment or percent-escape; user and host are made of characters
// that ssh and a shell take literally and that cannot start an option
// ('-' may not lead either); an IPv6 address is bracketed. Anything else is
// refused rather than cleaned up, since the parts become ssh's argv.
func ParseURL(s string) (Target, error) {
	bad := func(why string) (Target, error) {
		return Target{}, fmt.Errorf("host URL %s: %s", strconv.QuoteToASCII(cut(s, 80)), why)
	}
	if len(s) > MaxURLLen {
		return bad(fmt.Sprintf("longer than %d bytes", MaxURLLen))
	}
	rest, ok := strings.CutPrefix(s, "ssh://")
	if !ok {
		return bad("must start with ssh://")
	}
	if i := strings.IndexAny(rest, "/?#%"); i >= 0 {
		return bad(fmt.Sprintf("no path, query, fragment or escape allowed (found %q)", rest[i]))
	}
	var t Target
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		t.User, rest = rest[:at], rest[at+1:]
		if err := checkUser(t.User); err != nil {
			return bad(err.Error())
		}
	}
	hostPart, portPart := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bad("unclosed '['")
		}
		hostPart, portPart = rest[1:end], rest[end+1:]
		a, err := netip.ParseAddr(hostPart)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return bad("brackets hold an IPv6 address (no zone)")
		}
		hostPart = a.String()
		if portPart != "" && !strings.HasPrefix(portPart, ":") {
			return bad("only :port may follow ']'")
		}
		portPart = strings.TrimPrefix(portPart, ":")
		if portPart == "" && strings.HasSuffix(rest, ":") {
			return bad("empty port")
		}
	} else {
		if i := strings.IndexByte(rest, ':'); i >= 0 {
			hostPart, portPart = rest[:i], rest[i+1:]
			if portPart == "" {
				return bad("empty port")
			}
		}
		if err := checkHostName(hostPart); err != nil {
			return bad(err.Error())
		}
	}
	t.Host = hostPart
	if portPart != "" {
		p, err := parsePort(portPart)
		if err != nil {
			return bad(err.Error())
		}
		t.Port = p
	}
	return t, nil
}

// String is the canonical URL of t; ParseURL(t.String()) == t.
func (t Target) String() string {
	var b strings.Builder
	b.WriteString("ssh://")
	if t.User != "" {
		b.WriteString(t.User + "@")
	}
	if strings.Contains(t.Host, ":") {
		b.WriteString("[" + t.Host + "]")
	} else {
		b.WriteString(t.Host)
	}
	if t.Port != 0 {
		b.WriteString(":" + strconv.Itoa(t.Port))
	}
	return b.String()
}

// Destination is ssh's destination argument: [user@]host.
func (t Target) Destination() string {
	if t.User == "" {
		return t.Host
	}
	return t.User + "@" + t.Host
}

// checkUser: a POSIX-portable user name (letters, digits, '.', '_', '-'),
// not starting with '-', at most 32 bytes.
func checkUser(u string) error {
	if u == "" {
		return errors.New("empty user before '@'")
	}
	if len(u) > 32 {
		return errors.New("user longer than 32 bytes")
	}
	if u[0] == '-' || u[0] == '.' {
		return errors.New("user may not start with '-' or '.'")
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("user: only letters, digits, '.', '_' and '-' (found %s)", strconv.QuoteRuneToASCII(r))
		}
	}
	return nil
}

// checkHostName: an IPv4 address or a DNS name of ASCII labels (letters,
// digits, '-', not leading or trailing a label; '_' allowed as in SRV-style
// names), at most 253 bytes. Non-ASCII names must be given as punycode.
func checkHostName(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if len(h) > 253 {
		return errors.New("host longer than 253 bytes")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if !a.Is4() {
			return errors.New("an IPv6 address goes in brackets")
		}
		return nil
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("host: empty or over-long label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("host: a label may not start or end with '-'")
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("host: only letters, digits, '-', '_' and '.' (found %s; give a non-ASCII name as punycode)", strconv.QuoteRuneToASCII(r))
			}
		}
	}
	return nil
}

// parsePort: decimal 1-65535, no sign, no leading zero.
func parsePort(s string) (int, error) {
	if len(s) > 5 || s[0] == '0' {
		return 0, errors.New("port must be 1-65535")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("port must be 1-65535")
		}
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, errors.New("port must be 1-65535")
	}
	return p, nil
}

// cut shortens s to n bytes for an error message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
