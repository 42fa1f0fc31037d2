// Package granttest is the corpus every grant path is tested over: each
// entry with the decision config.CheckGrant must give. The tests of
// core/config (the check), core/approval (corral allow's core), the CLI
// (allow, approve, egress learn --apply, port) and the app (the menu's and
// notifications' Allow) run it through their path and assert the same
// decision, so no path can drift from the one check.
package granttest

import "github.com/corral-dev/corral/core/config"

// Case is one corpus entry.
type Case struct {
	Key   string // "egress" or "ports"
	Entry string
	Want  config.Risk
}

// Egress is the egress corpus: public suffixes (ICANN, multi-label, private
// section, unlisted), registrable wildcards, ports, '_' in names, ranges
// (catch-alls, wide, private, loopback, link-local, metadata, IPv4-mapped
// and other IPv6 forms that carry IPv4), and malformed entries.
var Egress = []Case{
	{"egress", "api.example.com", config.RiskOK},
	{"egress", "API.Example.com.", config.RiskOK},
	{"egress", "*.example.com", config.RiskOK},
	{"egress", "*.example.co.uk", config.RiskOK},
	{"egress", "*.user.github.io", config.RiskOK},
	{"egress", "under_score.example.com", config.RiskOK},
	{"egress", "_dmarc.example.com", config.RiskOK},
	{"egress", "api.example.com:8443", config.RiskOK},
	{"egress", "co.uk", config.RiskOK}, // an exact host, not a wildcard
	{"egress", "api.example.com:*", config.RiskFlagged},
	{"egress", "*.example.com:*", config.RiskFlagged},
	{"egress", "*.com", config.RiskRefused},
	{"egress", "*.COM.", config.RiskRefused},
	{"egress", "*.com:443", config.RiskRefused},
	{"egress", "*.co.uk", config.RiskRefused},
	{"egress", "*.uk", config.RiskRefused},
	{"egress", "*.github.io", config.RiskRefused}, // private section
	{"egress", "*.corp", config.RiskRefused},      // unlisted: the default rule
	{"egress", "*.xn--p1ai", config.RiskRefused},
	{"egress", "0.0.0.0/0", config.RiskRefused},
	{"egress", "::/0", config.RiskRefused},
	{"egress", "10.0.0.0/8", config.RiskRefused},
	{"egress", "8.0.0.0/8", config.RiskRefused},
	{"egress", "2001:db8::/32", config.RiskRefused},
	{"egress", "169.254.169.254/32", config.RiskRefused},
	{"egress", "169.254.0.0/16", config.RiskRefused},
	{"egress", "100.100.100.200/32", config.RiskRefused},
	{"egress", "fd00:ec2::254/128", config.RiskRefused},
	{"egress", "::ffff:169.254.169.254/128", config.RiskRefused},
	{"egress", "::ffff:0:0/96", config.RiskRefused},
	{"egress", "::/64", config.RiskRefused},
	{"egress", "64:ff9b::a9fe:a9fe/128", config.RiskRefused}, // NAT64 of 169.254.169.254
	{"egress", "2002:a9fe:a9fe::/48", config.RiskRefused},    // 6to4 of 169.254.169.254
	{"egress", "2001:0:1::/48", config.RiskRefused},          // Teredo
	{"egress", "0.0.0.0/32", config.RiskRefused},
	{"egress", "127.0.0.1/32", config.RiskFlagged},
	{"egress", "127.0.0.0/8", config.RiskFlagged},
	{"egress", "::1/128", config.RiskFlagged},
	{"egress", "::ffff:127.0.0.1/128", config.RiskFlagged},
	{"egress", "10.1.2.0/24", config.RiskFlagged},
	{"egress", "192.168.0.0/16", config.RiskFlagged},
	{"egress", "fd12:3456:789a::/48", config.RiskFlagged},
	{"egress", "169.254.1.0/24", config.RiskFlagged},
	{"egress", "8.8.8.0/24", config.RiskOK},
	{"egress", "2a00:1450::/48", config.RiskOK},
	{"egress", "", config.RiskRefused},
	{"egress", "*", config.RiskRefused},
	{"egress", "a*.example.com", config.RiskRefused},
	{"egress", "https://api.example.com/", config.RiskRefused},
	{"egress", "user@example.com", config.RiskRefused},
	{"egress", "example.com:0", config.RiskRefused},
	{"egress", "10.0.0.1", config.RiskRefused}, // an IP literal is not a host entry
	{"egress", "10.0.0.0/33", config.RiskRefused},
}

// Ports is the ports corpus, judged without low_host_ports.
var Ports = []Case{
	{"ports", "3000", config.RiskOK},
	{"ports", "8080:80", config.RiskOK},
	{"ports", "1024", config.RiskOK},
	{"ports", "22:22", config.RiskRefused},
	{"ports", "80", config.RiskRefused},
	{"ports", "1023:3000", config.RiskRefused},
	{"ports", "0", config.RiskRefused},
	{"ports", "65536", config.RiskRefused},
	{"ports", "03000", config.RiskRefused},
	{"ports", "127.0.0.1:3000:3000", config.RiskRefused},
}

// All is Egress and Ports.
func All() []Case { return append(append([]Case(nil), Egress...), Ports...) }
