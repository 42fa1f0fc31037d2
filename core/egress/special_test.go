package egress

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
)

// Every IANA special-purpose block is refused without a range; addresses
// that embed IPv4 are judged by it. One row per block.
func TestPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
		why  string
	}{
		{"93.184.216.34", true, "public v4"},
		{"1.1.1.1", true, "public v4"},
		{"2606:4700:4700::1111", true, "public v6"},
		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "this network 0/8"},
		{"10.1.2.3", false, "RFC 1918"},
		{"100.64.0.1", false, "CGNAT"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.255.254", false, "loopback /8"},
		{"169.254.169.254", false, "link-local metadata"},
		{"172.16.0.1", false, "RFC 1918"},
		{"172.31.255.255", false, "RFC 1918"},
		{"192.0.0.1", false, "IETF protocol assignments"},
		{"192.0.0.9", false, "IETF protocol assignments (PCP anycast)"},
		{"192.0.2.1", false, "TEST-NET-1"},
		{"192.88.99.1", false, "6to4 relay anycast"},
		{"192.168.1.1", false, "RFC 1918"},
		{"198.18.0.1", false, "benchmarking"},
		{"198.19.255.255", false, "benchmarking"},
		{"198.51.100.7", false, "TEST-NET-2"},
		{"203.0.113.9", false, "TEST-NET-3"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"240.0.0.1", false, "reserved 240/4"},
		{"255.255.255.255", false, "broadcast"},
		{"::", false, "unspecified v6"},
		{"::1", false, "loopback v6"},
		{"::5db8:d822", false, "IPv4-compatible (of a public address)"},
		{"::ffff:93.184.216.34", false, "IPv4-mapped"},
		{"::ffff:127.0.0.1", false, "IPv4-mapped loopback"},
		{"::ffff:0:5db8:d822", false, "IPv4-translated (SIIT)"},
		{"64:ff9b::5db8:d822", true, "NAT64 of a public address"},
		{"64:ff9b::7f00:1", false, "NAT64 of loopback"},
		{"64:ff9b::a00:1", false, "NAT64 of RFC 1918"},
		{"64:ff9b:1::5db8:d822", false, "NAT64 local-use"},
		{"100::1", false, "discard-only"},
		{"100:0:0:1::1", false, "dummy prefix"},
		{"2001:2::1", false, "benchmarking v6"},
		{"2001:10::1", false, "ORCHID"},
		{"2001:20::1", false, "ORCHIDv2"},
		{"2001:db8::1", false, "documentation v6"},
		{"3fff::1", false, "documentation v6 (RFC 9637)"},
		{"2002:5db8:d822::1", true, "6to4 of a public address"},
		{"2002:7f00:1::1", false, "6to4 of loopback"},
		{"2002:c0a8:101::1", false, "6to4 of RFC 1918"},
		{"2002:c000:201::1", false, "6to4 of TEST-NET-1"},
		// Teredo: server 93.184.216.34, client 1.1.1.1 (obfuscated fefe:fefe).
		{"2001:0:5db8:d822::fefe:fefe", true, "Teredo with public server and client"},
		{"2001:0:5db8:d822::80ff:fffe", false, "Teredo with loopback client"},
		{"2001:0:a00:1::fefe:fefe", false, "Teredo with private server"},
		{"5f00::1", false, "SRv6 SIDs"},
		{"fc00::1", false, "unique local"},
		{"fd12:3456::1", false, "unique local"},
		{"fe80::1", false, "link-local v6"},
		{"fec0::1", false, "site-local"},
		{"ff02::1", false, "multicast v6"},
		{"4000::1", false, "v6 outside 2000::/3"},
	} {
		if got := PublicAddr(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("PublicAddr(%s) = %v, want %v (%s)", tc.ip, got, tc.want, tc.why)
		}
	}
}

// Whatever ranges allow, the broker refuses itself under every alias, every
// corral broker port and the host ports it is told about.
func TestSelfAliasesRefused(t *testing.T) {
	echo := echoServer(t)
	ep := portOf(t, echo)
	extra := 0
	p := startProxy(t, benchEntries, []string{"0.0.0.0/0", "::/0"}, func(c *Config) {
		c.HostPorts = func() []int { return []int{extra} }
	})
	self := portOf(t, p.addr)
	extraLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer extraLn.Close()
	extra, _ = strconv.Atoi(portOf(t, extraLn.Addr().String()))
	targets := []string{
		"127.0.0.1:" + self,
		"127.0.0.2:" + self,
		"127.1.2.3:" + self,
		"0.0.0.0:" + self,
		"0.1.2.3:" + self,
		"[::]:" + self,
		"[::1]:" + self,
		"[::ffff:127.0.0.1]:" + self,
		"[::ffff:0.0.0.0]:" + self,
		"allowed.test:" + self,
		"127.0.0.1:42000",
		"127.0.0.1:42999",
		"[::1]:42123",
		"0.0.0.0:42500",
		"allowed.test:42001",
		"127.0.0.1:" + strconv.Itoa(extra),
	}
	// Every address of the host's interfaces, with the broker's port.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil && pfx.Addr().Zone() == "" {
			targets = append(targets, netip.AddrPortFrom(pfx.Addr(), 0).Addr().String())
		}
	}
	for i, tg := range targets {
		if i >= 16 { // interface addresses collected above, without a port yet
			ip := netip.MustParseAddr(tg)
			tg = netip.AddrPortFrom(ip, 0).String()
			tg = tg[:len(tg)-1] + self
		}
		t.Run(tg, func(t *testing.T) {
			status, c, _, body := rawConnect(t, p.addr, tg)
			if c != nil {
				c.Close()
			}
			if status != 403 || p.log.last().Reason != ReasonSelf {
				t.Fatalf("CONNECT %s = %d %q (reason %q), want 403 self", tg, status, body, p.log.last().Reason)
			}
		})
	}
	// Another port on loopback stays reachable through the range.
	status, c, br, _ := rawConnect(t, p.addr, "127.0.0.1:"+ep)
	if status != 200 {
		t.Fatalf("loopback echo through 0.0.0.0/0: status %d (reason %q)", status, p.log.last().Reason)
	}
	defer c.Close()
	echoRoundTrip(t, c, br, "ok")
}

// For any authority at the broker's own port, an IP that ends on this host
// is never allowed, whatever the ranges.
func FuzzSelfAlias(f *testing.F) {
	pol, err := ParsePolicy([]string{"allowed.test:*"}, []string{"0.0.0.0/0", "::/0"})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(Config{Listen: "127.0.0.1:41999", Policy: pol, Resolver: testResolver{}, MaxTunnels: 8})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"127.0.0.1", "[::]", "0.0.0.0", "[::ffff:127.0.0.1]", "127.9.9.9", "allowed.test", "[::1]", "[::ffff:0:0]"} {
		f.Add(s, 41999)
		f.Add(s, 42042)
	}
	f.Fuzz(func(t *testing.T, host string, port int) {
		if port < 1 || port > 65535 {
			return
		}
		a, err := ParseAuthority(host+":"+strconv.Itoa(port), 0)
		if err != nil {
			return
		}
		tg := srv.check(context.Background(), KindConnect, a)
		if !tg.d.Allowed {
			return
		}
		if port != 41999 && (port < BrokerPortMin || port > BrokerPortMax) {
			return
		}
		for _, ip := range tg.ips {
			u := ip.Unmap()
			if u.IsLoopback() || u.IsUnspecified() || thisNetwork.Contains(u) {
				t.Fatalf("%s allowed to %v: the broker's own host", a, ip)
			}
		}
	})
}
