package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// Host is one remote host of ~/.corral/hosts.toml.
type Host struct {
	Name   string `json:"name"`
	URL    string `json:"url"` // canonical: Target.String()
	Target Target `json:"-"`
	// Corral is the corral binary on the remote host, an absolute path;
	// "" runs "corral" from the remote shell's PATH.
	Corral string `json:"corral,omitempty"`
	// SSHConfig is an ssh client config file on this machine (ssh -F),
	// absolute; "" uses ssh's defaults (~/.ssh/config).
	SSHConfig string `json:"ssh_config,omitempty"`
	// Credentials are the credentials this machine holds that sessions on
	// the host may use through its relay (core/credential Grant), sorted;
	// none by default (corral host grant names them).
	Credentials []string `json:"credentials"`
}

// Limits of the hosts file.
const (
	MaxFileSize = 64 << 10
	MaxHosts    = 64
	maxPathLen  = 1024
	// MaxHostCredentials caps the credentials granted to one host.
	MaxHostCredentials = 64
)

// shape bounds the hosts file before the TOML parser runs (size, nesting,
// items): [hosts.NAME] tables of three string keys nest 3 deep and hold
// 4 items a host, so 8 and 16 items a host leave room for comments'
// sake and none for a file built to exhaust the parser (10,000 nested
// inline tables in 60 KB took it 4.2 GB).
var shape = untrusted.Limits{Size: MaxFileSize, Depth: 8, Items: 16 * MaxHosts}

// ErrUnknownHost is a name that hosts.toml does not list.
var ErrUnknownHost = errors.New("unknown host")

// NewHost checks a host's parts and returns it with its canonical URL.
func NewHost(name, url, corral, sshConfig string) (Host, error) {
	var errs []error
	if err := CheckName(name); err != nil {
		errs = append(errs, err)
	}
	t, err := ParseURL(url)
	errs = append(errs, err)
	if corral != "" {
		errs = append(errs, checkPath("corral", corral))
	}
	if sshConfig != "" {
		errs = append(errs, checkPath("ssh_config", sshConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return Host{}, err
	}
	return Host{Name: name, URL: t.String(), Target: t, Corral: corral, SSHConfig: sshConfig}, nil
}

// CheckCredentials checks the credential names granted to a host: each a
// credential name (core/egress ValidCredentialName), none twice, at most
// MaxHostCredentials. It returns them sorted.
func CheckCredentials(names []string) ([]string, error) {
	if len(names) > MaxHostCredentials {
		return nil, fmt.Errorf("credentials: more than %d", MaxHostCredentials)
	}
	var errs []error
	for i, n := range names {
		switch {
		case !egress.ValidCredentialName(n):
			errs = append(errs, fmt.Errorf("credential %s: not a credential name (lowercase letters, digits, - and _)", strconv.QuoteToASCII(cut(n, 64))))
		case slices.Contains(names[:i], n):
			errs = append(errs, fmt.Errorf("credential %s: named twice", n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := slices.Clone(names)
	slices.Sort(out)
	return out, nil
}

// Grants reports whether the host may use credential name through this
// machine's relay.
func (h Host) Grants(name string) bool { return slices.Contains(h.Credentials, name) }

// GrantCommand is the command that lets host use credential name through
// this machine's relay: what a refusal prints.
func GrantCommand(host, name string) string { return "corral host grant " + host + " " + name }

// checkPath: absolute, clean, no control characters, bounded. The remote
// binary's path is quoted for the remote shell and the ssh config's is one
// argv element, so these are about clear errors and honest display.
func checkPath(key, p string) error {
	switch {
	case len(p) > maxPathLen:
		return fmt.Errorf("%s: longer than %d bytes", key, maxPathLen)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s %s: must be an absolute path", key, strconv.QuoteToASCII(cut(p, 80)))
	case filepath.Clean(p) != p:
		return fmt.Errorf("%s %s: must be a clean path (no //, ./ or ../)", key, strconv.QuoteToASCII(cut(p, 80)))
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\uFFFD' {
			return fmt.Errorf("%s %s: control character", key, strconv.QuoteToASCII(cut(p, 80)))
		}
	}
	return nil
}

// Load reads the hosts file at path, sorted by name. A missing file is no
// hosts. The file is the user's, but it is read as hostile input all the
// same (it costs nothing): a regular file of at most MaxFileSize bytes,
// exactly the keys of the format, every value checked as NewHost checks
// it; any problem fails the whole file, naming it.
func Load(path string) ([]Host, error) {
	data, err := untrusted.ReadTOML(path, shape)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var fe *untrusted.FileError
	var se *untrusted.ShapeError
	switch {
	case errors.As(err, &fe):
		err = fmt.Errorf("reading hosts %s: %s", path, fe.What)
	case errors.As(err, &se):
		err = fmt.Errorf("reading hosts %s: line %d: %s", path, se.Line, se.What)
	case err != nil:
		err = fmt.Errorf("reading hosts %s: %w", path, err)
	}
	if err != nil {
		return nil, hint.New(err, brokenHint)
	}
	hosts, err := Parse(data)
	if err != nil {
		return nil, hint.New(fmt.Errorf("%s: %w", path, err), brokenHint)
	}
	return hosts, nil
}

// brokenHint is the hint of a hosts file that cannot be read.
const brokenHint = "corral host add and rm write this file: fix it by hand, or move it away"

// hostKeys are the keys of a [hosts.NAME] table.
var hostKeys = []string{"url", "corral", "ssh_config", "credentials"}

// Parse decodes a hosts file. Tables are decoded into maps, never structs,
// so a key is known only when it is exactly one of the format's names.
func Parse(data []byte) ([]Host, error) {
	if err := untrusted.CheckTOML(data, shape); err != nil {
		return nil, err
	}
	var top map[string]any
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&top); err != nil {
		return nil, fmt.Errorf("not a hosts file: %w", err)
	}
	var errs []error
	for k := range top {
		if k != "hosts" {
			errs = append(errs, fmt.Errorf("unknown key %s (only [hosts.NAME] tables)", strconv.QuoteToASCII(cut(k, 64))))
		}
	}
	table, ok := top["hosts"].(map[string]any)
	if !ok && top["hosts"] != nil {
		errs = append(errs, errors.New("hosts: want a table of [hosts.NAME] tables"))
	}
	if len(table) > MaxHosts {
		return nil, fmt.Errorf("more than %d hosts", MaxHosts)
	}
	var hosts []Host
	for name, v := range table {
		quoted := strconv.QuoteToASCII(cut(name, 64))
		m, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("hosts.%s: want a table", quoted))
			continue
		}
		vals := map[string]string{}
		var creds []string
		credsOK := true
		for k, v := range m {
			if !slices.Contains(hostKeys, k) {
				errs = append(errs, fmt.Errorf("hosts.%s: unknown key %s (keys: %s)", quoted, strconv.QuoteToASCII(cut(k, 64)), strings.Join(hostKeys, ", ")))
				continue
			}
			if k == "credentials" {
				list, ok := v.([]any)
				if !ok {
					errs = append(errs, fmt.Errorf("hosts.%s.credentials: want a list of strings", quoted))
					credsOK = false
					continue
				}
				for _, e := range list {
					s, ok := e.(string)
					if !ok {
						errs = append(errs, fmt.Errorf("hosts.%s.credentials: want a list of strings", quoted))
						credsOK = false
						break
					}
					creds = append(creds, s)
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("hosts.%s.%s: want a string", quoted, k))
				continue
			}
			vals[k] = s
		}
		if _, ok := vals["url"]; !ok {
			errs = append(errs, fmt.Errorf("hosts.%s: no url", quoted))
			continue
		}
		h, err := NewHost(name, vals["url"], vals["corral"], vals["ssh_config"])
		if err != nil {
			errs = append(errs, fmt.Errorf("hosts.%s: %w", quoted, err))
			continue
		}
		if !credsOK {
			continue
		}
		if h.Credentials, err = CheckCredentials(creds); err != nil {
			errs = append(errs, fmt.Errorf("hosts.%s.credentials: %w", quoted, err))
			continue
		}
		hosts = append(hosts, h)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(hosts, func(a, b Host) int { return strings.Compare(a.Name, b.Name) })
	return hosts, nil
}

// Encode renders hosts as the hosts file.
func Encode(hosts []Host) []byte {
	var b bytes.Buffer
	b.WriteString("# corral's remote hosts, written by `corral host add` and `corral host rm`.\n")
	b.WriteString("# A project runs on one with host = \"NAME\" in ~/.corral/projects/<box>.toml.\n")
	b.WriteString("# credentials: what this machine's keys a host's sessions may use (corral host grant|revoke).\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n[hosts.%s]\nurl = %s\n", h.Name, tomlString(h.URL))
		if h.Corral != "" {
			fmt.Fprintf(&b, "corral = %s\n", tomlString(h.Corral))
		}
		if h.SSHConfig != "" {
			fmt.Fprintf(&b, "ssh_config = %s\n", tomlString(h.SSHConfig))
		}
		if len(h.Credentials) > 0 {
			q := make([]string, len(h.Credentials))
			for i, c := range h.Credentials {
				q[i] = tomlString(c)
			}
			fmt.Fprintf(&b, "credentials = [%s]\n", strings.Join(q, ", "))
		}
	}
	return b.Bytes()
}

// tomlString quotes s as a TOML basic string (the values are checked free
// of control characters; quotes and backslashes are escaped).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	if err := enc.Encode(map[string]string{"x": s}); err != nil {
		return `""`
	}
	return strings.TrimSpace(strings.TrimPrefix(b.String(), "x = "))
}

// Find returns the host called name from the hosts file of l.
func Find(l paths.Layout, name string) (Host, error) {
	if err := CheckName(name); err != nil {
		return Host{}, err
	}
	hosts, err := Load(l.HostsFile())
	if err != nil {
		return Host{}, err
	}
	for _, h := range hosts {
		if h.Name == name {
			return h, nil
		}
	}
	return Host{}, hint.New(fmt.Errorf("host %s: %w", name, ErrUnknownHost),
		fmt.Sprintf("add it: corral host add %s ssh://USER@HOST (corral host ls lists the hosts)", name))
}

// Add adds h to the hosts file of l, or replaces the host of that name
// when replace is set. The audit record is written first (when it cannot
// be, nothing is written); the read, change and write happen under the
// file's lock.
//
// A replaced host keeps no grant: its credentials are h's (none unless
// given), so a host that now points elsewhere uses no key until the user
// grants it again.
func Add(l paths.Layout, h Host, replace bool, actor audit.Actor) error {
	creds := h.Credentials
	h, err := NewHost(h.Name, h.URL, h.Corral, h.SSHConfig)
	if err != nil {
		return fmt.Errorf("adding host: %w", err)
	}
	if h.Credentials, err = CheckCredentials(creds); err != nil {
		return fmt.Errorf("adding host: %w", err)
	}
	return update(l, "add", h.Name, map[string]any{"url": h.URL}, actor, func(hosts []Host) ([]Host, error) {
		i := slices.IndexFunc(hosts, func(x Host) bool { return x.Name == h.Name })
		switch {
		case i >= 0 && !replace:
			return nil, hint.New(fmt.Errorf("adding host %s: it exists (%s)", h.Name, hosts[i].URL), "replace it: corral host add --force "+h.Name+" URL")
		case i >= 0:
			hosts[i] = h
		case len(hosts) >= MaxHosts:
			return nil, fmt.Errorf("adding host %s: already %d hosts", h.Name, MaxHosts)
		default:
			hosts = append(hosts, h)
		}
		slices.SortFunc(hosts, func(a, b Host) int { return strings.Compare(a.Name, b.Name) })
		return hosts, nil
	})
}

// Remove removes the host called name from the hosts file of l, as Add
// writes it. Projects whose host key names it then fail with ErrUnknownHost
// until the key is changed: none silently runs here instead.
func Remove(l paths.Layout, name string, actor audit.Actor) error {
	if err := CheckName(name); err != nil {
		return fmt.Errorf("removing host: %w", err)
	}
	return update(l, "rm", name, nil, actor, func(hosts []Host) ([]Host, error) {
		i := slices.IndexFunc(hosts, func(x Host) bool { return x.Name == name })
		if i < 0 {
			return nil, hint.New(fmt.Errorf("removing host %s: %w", name, ErrUnknownHost), "corral host ls lists the hosts")
		}
		return slices.Delete(hosts, i, i+1), nil
	})
}

// Grant lets sessions on host name use credentials (names of this
// machine's credentials) through its relay, besides those it may use
// already; Revoke (revoke set) takes them away. Written as Add writes.
func Grant(l paths.Layout, name string, creds []string, revoke bool, actor audit.Actor) error {
	op := "grant"
	if revoke {
		op = "revoke"
	}
	if err := CheckName(name); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	creds, err := CheckCredentials(creds)
	if err != nil {
		return fmt.Errorf("%s for host %s: %w", op, name, err)
	}
	if len(creds) == 0 {
		return fmt.Errorf("%s for host %s: name at least one credential", op, name)
	}
	return update(l, op, name, map[string]any{"credentials": creds}, actor, func(hosts []Host) ([]Host, error) {
		i := slices.IndexFunc(hosts, func(x Host) bool { return x.Name == name })
		if i < 0 {
			return nil, hint.New(fmt.Errorf("%s for host %s: %w", op, name, ErrUnknownHost), "corral host ls lists the hosts")
		}
		next := slices.Clone(hosts[i].Credentials)
		for _, c := range creds {
			switch j := slices.Index(next, c); {
			case revoke && j >= 0:
				next = slices.Delete(next, j, j+1)
			case !revoke && j < 0:
				next = append(next, c)
			}
		}
		var err error
		if hosts[i].Credentials, err = CheckCredentials(next); err != nil {
			return nil, fmt.Errorf("%s for host %s: %w", op, name, err)
		}
		return hosts, nil
	})
}

// update changes the hosts file under its lock: load, change, check the
// whole new file, audit, write once. The audit record names the SHA-256 of
// the file it is about to write; a change refused by a check (a cap, a
// broken file) or whose write fails after its record is recorded as a
// refusal (audit.KindRefused), so the log says which changes happened.
func update(l paths.Layout, op, name string, extra map[string]any, actor audit.Actor, change func([]Host) ([]Host, error)) error {
	fields := map[string]any{"op": op, "host": name}
	maps.Copy(fields, extra)
	recorded := ""
	err := updateLocked(l, op, name, func(out []byte) error {
		f := map[string]any{audit.FieldSHA256: audit.Written(out)}
		maps.Copy(f, fields)
		if err := audit.Append(l.AuditLog(), audit.Event{Kind: audit.KindHost, Actor: actor, Fields: f}); err != nil {
			return fmt.Errorf("%s host %s: recording it in the audit log (nothing was written): %w", op, name, err)
		}
		recorded = audit.Written(out)
		return nil
	}, change)
	if err != nil {
		f := maps.Clone(fields)
		if recorded != "" {
			f[audit.FieldSHA256] = recorded
		}
		_ = audit.Append(l.AuditLog(), audit.Refusal(audit.KindHost, "", actor, f, err)) // best effort: err is the answer
	}
	return err
}

func updateLocked(l paths.Layout, op, name string, record func([]byte) error, change func([]Host) ([]Host, error)) error {
	path := l.HostsFile()
	unlock, err := atomicfile.Lock(path + atomicfile.LockSuffix)
	if err != nil {
		return err
	}
	defer unlock()
	hosts, err := Load(path)
	if err != nil {
		return fmt.Errorf("%s host %s (nothing was written): %w", op, name, err) // Load's hint: brokenHint
	}
	hosts, err = change(hosts)
	if err != nil {
		return err
	}
	out := Encode(hosts)
	if _, err := Parse(out); err != nil { // what is written must load again
		return fmt.Errorf("%s host %s (nothing was written): %w", op, name, err)
	}
	if err := record(out); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, out, atomicfile.FileMode)
}
