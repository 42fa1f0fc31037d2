package remote

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"t", "gpu", "gpu-1", "a0", strings.Repeat("a", MaxNameLen)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "local", "-t", "1a", "GPU", "a b", "a.b", "a_b", "a/b", "a\x1b", "a\n", "ä", strings.Repeat("a", MaxNameLen+1), "--host"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]Target{
		"ssh://h":                    {Host: "h"},
		"ssh://me@h":                 {User: "me", Host: "h"},
		"ssh://me@gpu.internal:2222": {User: "me", Host: "gpu.internal", Port: 2222},
		"ssh://me@127.0.0.1:22":      {User: "me", Host: "127.0.0.1", Port: 22},
		"ssh://me@[::1]:2200":        {User: "me", Host: "::1", Port: 2200},
		"ssh://[fe80::1]":            {Host: "fe80::1"},
		"ssh://First.Last_1@Host-A":  {User: "First.Last_1", Host: "Host-A"},
		"ssh://u@_srv.example":       {User: "u", Host: "_srv.example"},
		"ssh://u@xn--bcher-kva.test": {User: "u", Host: "xn--bcher-kva.test"},
	} {
		got, err := ParseURL(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if again, err := ParseURL(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q does not parse back: %+v, %v", in, got.String(), again, err)
		}
	}
	for _, bad := range []string{
		"", "h", "me@h", "http://h", "SSH://h", "ssh://", "ssh://me@", "ssh://@h",
		"ssh://-oProxyCommand=x", "ssh://-h", "ssh://me@-h", "ssh://-me@h", "ssh://.me@h",
		"ssh://h -oProxyCommand=x", "ssh://me@h x", "ssh://me @h", "ssh://h\t", "ssh://h\n", "ssh://h\x00", "ssh://h\x1b[31m",
		"ssh://me:pw@h", "ssh://h/path", "ssh://h?x=1", "ssh://h#f", "ssh://h%20x", "ssh://m%65@h",
		"ssh://h:", "ssh://h:0", "ssh://h:65536", "ssh://h:022", "ssh://h:+22", "ssh://h:-1", "ssh://h:2a", "ssh://h:22:33",
		"ssh://::1", "ssh://[::1", "ssh://[h]", "ssh://[127.0.0.1]", "ssh://[fe80::1%eth0]", "ssh://[::1]x", "ssh://[::1]:",
		"ssh://a..b", "ssh://a.-b", "ssh://a-.b", "ssh://bücher.test", "ssh://a;b", "ssh://a$b", "ssh://a`b`", "ssh://a'b", "ssh://a\"b",
		"ssh://me@h@i", "ssh://" + strings.Repeat("a", 64) + ".test", "ssh://" + strings.Repeat("a.", 200) + "a",
	} {
		if got, err := ParseURL(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, got)
		}
	}
}

// safeArgChars are the bytes an accepted URL's parts may hold: none is
// special to ssh's option parser at the start ('-' is refused there), to
// a shell, or to a terminal.
func safeArg(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@:", r)) {
			return false
		}
	}
	return s != "" && s[0] != '-'
}

// FuzzParseURL: whatever is accepted is canonical, round-trips, and gives
// ssh a destination that cannot be an option and holds nothing a shell
// or a terminal reads specially.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"ssh://me@h:22", "ssh://[::1]:2", "ssh://-o@h", "ssh://h x", "ssh://a%2d@b", "ssh://me@h\n", "ssh://h:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseURL(s)
		if err != nil {
			return
		}
		if again, err := ParseURL(tg.String()); err != nil || again != tg {
			t.Fatalf("%q: %+v does not round-trip: %+v, %v", s, tg, again, err)
		}
		if !safeArg(tg.Destination()) {
			t.Fatalf("%q: unsafe destination %q", s, tg.Destination())
		}
		if tg.Port < 0 || tg.Port > 65535 {
			t.Fatalf("%q: port %d", s, tg.Port)
		}
		h := Host{Name: "t", Target: tg}
		argv := SSHArgv(h, Invocation{Args: []string{"ls"}})
		if argv[len(argv)-3] != "--" || argv[len(argv)-2] != tg.Destination() {
			t.Fatalf("%q: argv %q", s, argv)
		}
	})
}
