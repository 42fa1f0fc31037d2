package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParsePort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Port
		ok   bool
	}{
		{"3000", Port{3000, 3000}, true},
		{"8080:80", Port{8080, 80}, true},
		{"1", Port{1, 1}, true},
		{"65535:65535", Port{65535, 65535}, true},
		{"0", Port{}, false},
		{"65536", Port{}, false},
		{"-1", Port{}, false},
		{"+80", Port{}, false},
		{"080", Port{}, false},
		{" 80", Port{}, false},
		{"80 ", Port{}, false},
		{"", Port{}, false},
		{"80:", Port{}, false},
		{":80", Port{}, false},
		{"0x50", Port{}, false},
		{"1e3", Port{}, false},
		{"99999999999999999999", Port{}, false},
		{"0.0.0.0:80:80", Port{}, false},
		{"127.0.0.1:80:80", Port{}, false},
		{"[::]:80", Port{}, false},
		{"80/udp", Port{}, false},
		{"3000-3010", Port{}, false},
		{"٣٠٠٠", Port{}, false}, // Arabic-Indic digits
	} {
		got, err := ParsePort(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParsePort(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok && got.String() != strings.TrimSuffix(tc.in, ":65535") && tc.in != "65535:65535" {
			t.Errorf("String() = %q, want %q", got.String(), tc.in)
		}
	}
}

func TestCheckPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports []Port
		low   bool
		want  []string // substrings, one per problem
	}{
		{"fine", []Port{{3000, 3000}, {8080, 80}}, false, nil},
		{"low host port", []Port{{80, 80}}, false, []string{"80: host port 80 is below 1024 (set low_host_ports = true to allow it, or use 8080:80)"}},
		{"low host port allowed", []Port{{80, 80}}, true, nil},
		{"low guest port is fine", []Port{{8080, 22}}, false, nil},
		{"host twice", []Port{{3000, 3000}, {3000, 3001}}, false, []string{"3000:3001: host port 3000 is forwarded twice"}},
		{"guest twice", []Port{{3000, 3000}, {3001, 3000}}, false, []string{"3001:3000: guest port 3000 is forwarded twice"}},
		{"too many", func() []Port {
			var ps []Port
			for i := range MaxPorts + 1 {
				ps = append(ps, Port{2000 + i, 2000 + i})
			}
			return ps
		}(), false, []string{"at most 64 ports"}},
	} {
		got := CheckPorts(tc.ports, tc.low)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: %q, want %q", tc.name, got[i], tc.want[i])
			}
		}
	}
}

func TestPortsLoad(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "config.toml")
	for _, tc := range []struct {
		name, global, trusted string
		want                  []string // substrings of the error; nil = loads
	}{
		{"global and trusted merge", `ports = ["3000"]`, `ports = ["8080:80", "3000:3000"]`, nil},
		{"low in global needs the switch", `ports = ["80"]`, "", []string{"ports: 80: host port 80 is below 1024"}},
		{"low with the switch", "ports = [\"80\"]\nlow_host_ports = true", "", nil},
		{"the same guest port from two layers", `ports = ["3000"]`, `ports = ["3001:3000"]`, []string{"guest port 3000 is forwarded twice"}},
		{"the same host port from two layers", `ports = ["3000"]`, `ports = ["3000:4000"]`, []string{"host port 3000 is forwarded twice"}},
		{"bad entry names file and line", "cpus = 2\nports = [\"3000\", \"0.0.0.0:80:80\"]", "", []string{"config.toml:2: ports = \"0.0.0.0:80:80\": want GUEST or HOST:GUEST"}},
		{"wrong type", `ports = [3000]`, "", []string{"ports"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, os.WriteFile(global, []byte(tc.global+"\n"), 0o600))
			req := request(newProject(t, nil), global)
			req.TrustedPath = filepath.Join(dir, "box.toml")
			must(t, os.WriteFile(req.TrustedPath, []byte(tc.trusted+"\n"), 0o600))
			res, err := Load(req)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Settings().Ports()) == 0 {
					t.Error("no ports")
				}
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q", err, w)
				}
			}
		})
	}
}

// TestPortsRequests: ports in a repository's file are requests (pending
// until a host layer holds the same forward), never forwarded by
// themselves; low_host_ports there is a violation.
func TestPortsRequests(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "config.toml")
	must(t, os.WriteFile(global, []byte("ports = [\"3000:3000\"]\n"), 0o600))
	proj := newProject(t, []byte("ports = [\"3000\", \"8080:80\"]\n"))
	res, err := Load(request(proj, global))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Config.PortEntries; !slices.Equal(got, []string{"3000:3000"}) {
		t.Errorf("effective ports = %v: a request was applied", got)
	}
	var pending, granted []string
	for _, q := range res.Requests {
		if q.Key != "ports" {
			t.Errorf("request %+v", q)
		}
		if q.Pending {
			pending = append(pending, q.Entry)
		} else {
			granted = append(granted, q.Entry)
		}
	}
	if !slices.Equal(pending, []string{"8080:80"}) || !slices.Equal(granted, []string{"3000"}) {
		t.Errorf("pending %v granted %v", pending, granted)
	}
	proj = newProject(t, []byte("low_host_ports = true\n"))
	if _, err := Load(request(proj, global)); err == nil || !strings.Contains(err.Error(), "low_host_ports = true: a repository may not set this") {
		t.Errorf("low_host_ports from a repository: %v", err)
	}
}

func TestAddToListPorts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "box.toml")
	must(t, os.WriteFile(p, []byte("# mine\nports = [\"3000\"]\n[env]\nA = \"1\"\n"), 0o600))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := AddToList(p, "ports", []string{"3000:3000", "8080:80"}, "forwarded to the host's 127.0.0.1", "corral port", now); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "# mine\n# corral port 2026-12-01: forwarded to the host's 127.0.0.1\nports = [\"3000\", \"8080:80\"]\n[env]\nA = \"1\"\n"; string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
	for _, bad := range []string{"0", "127.0.0.1:1:1", "x"} {
		if err := AddToList(p, "ports", []string{bad}, "c", "corral port", now); err == nil {
			t.Errorf("AddToList accepted %q", bad)
		}
	}
	if err := AddToList(p, "mounts", []string{"/"}, "c", "corral port", now); err == nil {
		t.Error("AddToList edits mounts")
	}
}

// FuzzParsePort: whatever parses is a port pair in range, written only
// with ASCII digits and at most one colon, and its String form parses
// back to the same pair.
func FuzzParsePort(f *testing.F) {
	for _, s := range []string{"3000", "8080:80", "0", "65536", "+1", "01", "1:2:3", "127.0.0.1:80:80", "٣٠٠٠", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePort(s)
		if err != nil {
			return
		}
		if p.Host < 1 || p.Host > 65535 || p.Guest < 1 || p.Guest > 65535 {
			t.Fatalf("%q parsed to %v", s, p)
		}
		if strings.Count(s, ":") > 1 || strings.Trim(s, "0123456789:") != "" {
			t.Fatalf("%q parsed, but holds more than digits and one colon", s)
		}
		back, err := ParsePort(p.String())
		if err != nil || back != p {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, p, p.String(), back, err)
		}
	})
}
