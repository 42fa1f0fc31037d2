package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Port is one entry of the ports key: the guest's TCP port Guest,
// forwarded to the host's 127.0.0.1:Host (never another host address).
type Port struct {
	Host  int `json:"host"`
	Guest int `json:"guest"`
}

// String is the entry as written: "3000", or "8080:80" when the ports differ.
func (p Port) String() string {
	if p.Host == p.Guest {
		return strconv.Itoa(p.Guest)
	}
	return strconv.Itoa(p.Host) + ":" + strconv.Itoa(p.Guest)
}

// MinHostPort is the lowest host port a forward binds unless
// low_host_ports is set: ports below it are the system's.
const MinHostPort = 1024

// MaxPorts caps the ports of one box.
const MaxPorts = 64

// portRe is a decimal port with no sign and no leading zero.
var portRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9][0-9]{0,4}$`) })

// ParsePort reads "GUEST" or "HOST:GUEST": decimal integers 1-65535 (no
// sign, no leading zero, no blanks, no host address: the host side is
// always 127.0.0.1).
func ParsePort(s string) (Port, error) {
	num := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if !portRe().MatchString(v) || err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("%q is not a port (an integer from 1 to 65535)", v)
		}
		return n, nil
	}
	host, guest, two := strings.Cut(s, ":")
	if !two {
		g, err := num(s)
		return Port{Host: g, Guest: g}, err
	}
	if strings.Contains(guest, ":") {
		return Port{}, errors.New("want GUEST or HOST:GUEST; the host address is always 127.0.0.1")
	}
	h, err := num(host)
	if err != nil {
		return Port{}, err
	}
	g, err := num(guest)
	if err != nil {
		return Port{}, err
	}
	return Port{Host: h, Guest: g}, nil
}

// parsePorts returns the ports of entries that parse (Load refuses the
// others).
func parsePorts(entries []string) []Port {
	var out []Port
	for _, e := range entries {
		if p, err := ParsePort(e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// CheckPorts checks a list of ports as one box would forward them: no host
// port or guest port twice, host ports from MinHostPort unless low allows
// lower ones, at most MaxPorts. Each problem names the entry.
func CheckPorts(ports []Port, low bool) []string {
	var out []string
	if len(ports) > MaxPorts {
		out = append(out, fmt.Sprintf("at most %d ports", MaxPorts))
	}
	for i, p := range ports {
		if p.Host < MinHostPort && !low {
			out = append(out, fmt.Sprintf("%s: host port %d is below %d (set low_host_ports = true to allow it, or use %d:%d)", p, p.Host, MinHostPort, p.Host+8000, p.Guest))
		}
		if slices.ContainsFunc(ports[:i], func(q Port) bool { return q.Host == p.Host }) {
			out = append(out, fmt.Sprintf("%s: host port %d is forwarded twice", p, p.Host))
		}
		if slices.ContainsFunc(ports[:i], func(q Port) bool { return q.Guest == p.Guest && q.Host != p.Host }) {
			out = append(out, fmt.Sprintf("%s: guest port %d is forwarded twice", p, p.Guest))
		}
	}
	return out
}

// checkPortsMerged applies CheckPorts to the effective config: the entries
// may come from several layers (ports merge by union).
func checkPortsMerged(eff *Effective) []error {
	c := &eff.Config
	var ports []Port
	for _, e := range c.PortEntries {
		p, err := ParsePort(e)
		if err != nil {
			continue // reported by validate, with its file and line
		}
		if !slices.Contains(ports, p) { // "3000" and "3000:3000" are one forward
			ports = append(ports, p)
		}
	}
	var errs []error
	for _, why := range CheckPorts(ports, c.LowHostPorts != nil && *c.LowHostPorts) {
		errs = append(errs, &Violation{File: strings.Join(eff.Origin["ports"], ", "), Key: "ports", Reason: why})
	}
	return errs
}
