package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/paths"
)

func TestParseHostsStrict(t *testing.T) {
	ok := "[hosts.gpu]\nurl = \"ssh://me@gpu:22\"\ncorral = \"/opt/corral\"\nssh_config = \"/etc/c\"\n\n[hosts.a]\nurl = \"ssh://a\"\n"
	hosts, err := Parse([]byte(ok))
	if err != nil || len(hosts) != 2 || hosts[0].Name != "a" || hosts[1].Target.Port != 22 || hosts[1].Corral != "/opt/corral" {
		t.Fatalf("%+v, %v", hosts, err)
	}
	for name, bad := range map[string]string{
		"folded key":        "[hosts.gpu]\nURL = \"ssh://h\"\n",
		"folded table":      "[Hosts.gpu]\nurl = \"ssh://h\"\n",
		"unicode fold":      "[hosts.gpu]\nur\u0130 = \"ssh://h\"\n",
		"unknown key":       "[hosts.gpu]\nurl = \"ssh://h\"\nport = 22\n",
		"top key":           "host = \"gpu\"\n",
		"no url":            "[hosts.gpu]\ncorral = \"/c\"\n",
		"bad url":           "[hosts.gpu]\nurl = \"ssh://-oProxyCommand=x\"\n",
		"bad name":          "[hosts.GPU]\nurl = \"ssh://h\"\n",
		"local":             "[hosts.local]\nurl = \"ssh://h\"\n",
		"name with dot":     "[hosts.\"a.b\"]\nurl = \"ssh://h\"\n",
		"wrong type":        "[hosts.gpu]\nurl = 22\n",
		"hosts not a table": "hosts = 1\n",
		"host not a table":  "[hosts]\ngpu = \"ssh://h\"\n",
		"relative corral":   "[hosts.gpu]\nurl = \"ssh://h\"\ncorral = \"bin/corral\"\n",
		"control in corral": "[hosts.gpu]\nurl = \"ssh://h\"\ncorral = \"/a\\u001b[2Jb\"\n",
		"unclean path":      "[hosts.gpu]\nurl = \"ssh://h\"\nssh_config = \"/a/../b\"\n",
		"not toml":          "[hosts.gpu\n",
		"too large":         strings.Repeat("#", MaxFileSize+1),
	} {
		if hosts, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %+v", name, hosts)
		}
	}
	var many strings.Builder
	for i := range MaxHosts + 1 {
		fmt.Fprintf(&many, "[hosts.h%d]\nurl = \"ssh://h\"\n", i)
	}
	if _, err := Parse([]byte(many.String())); err == nil {
		t.Errorf("%d hosts accepted", MaxHosts+1)
	}
}

// FuzzParseHosts: Parse never panics, and what it accepts encodes to a
// file that parses to the same hosts.
func FuzzParseHosts(f *testing.F) {
	f.Add([]byte("[hosts.gpu]\nurl = \"ssh://me@gpu:22\"\ncorral = \"/opt/corral\"\n"))
	f.Add([]byte("[hosts.a]\nurl = \"ssh://[::1]\"\nssh_config = \"/x y/\\\"q\\\"\"\n"))
	f.Add([]byte("[hosts.GPU]\nURL = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hosts, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Parse(Encode(hosts))
		if err != nil || len(again) != len(hosts) {
			t.Fatalf("%q: encoded %q: %v", data, Encode(hosts), err)
		}
		for i := range hosts {
			if !reflect.DeepEqual(again[i], hosts[i]) {
				t.Fatalf("%+v became %+v", hosts[i], again[i])
			}
		}
	})
}

func TestAddRemove(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	gpu := mustHost(t, "gpu", "ssh://me@gpu", "", "")
	if err := Add(l, gpu, false, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if err := Add(l, mustHost(t, "gpu", "ssh://other@gpu", "", ""), false, audit.ActorCLI); err == nil || !strings.Contains(err.Error(), "it exists (ssh://me@gpu)") {
		t.Errorf("replaced without --force: %v", err)
	}
	big := mustHost(t, "big", "ssh://me@big:2222", "/opt/corral", "")
	if err := Add(l, big, false, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if err := Add(l, mustHost(t, "gpu", "ssh://you@gpu", "", ""), true, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	hosts, err := Load(l.HostsFile())
	if err != nil || len(hosts) != 2 || !reflect.DeepEqual(hosts[0], big) || hosts[1].URL != "ssh://you@gpu" {
		t.Fatalf("%+v, %v", hosts, err)
	}
	if h, err := Find(l, "big"); err != nil || !reflect.DeepEqual(h, big) {
		t.Errorf("find: %+v, %v", h, err)
	}
	if err := Remove(l, "gpu", audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(l, "gpu"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("removed host found: %v", err)
	}
	if err := Remove(l, "gpu", audit.ActorCLI); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("second rm: %v", err)
	}
	if st, err := os.Stat(l.HostsFile()); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("hosts file: %v, %v", st, err)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range evs {
		if e.Kind == audit.KindHost {
			ops = append(ops, e.Fields["op"].(string)+" "+e.Fields["host"].(string))
		}
	}
	if got := strings.Join(ops, ", "); got != "add gpu, add big, add gpu, rm gpu" {
		t.Errorf("audit: %s", got)
	}
}

// TestAuditFirst: when the audit record cannot be written, the hosts file
// is not either.
func TestAuditFirst(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := os.MkdirAll(filepath.Dir(l.AuditLog()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.AuditLog(), 0o700); err != nil { // a directory where the log goes
		t.Fatal(err)
	}
	err := Add(l, mustHost(t, "gpu", "ssh://gpu", "", ""), false, audit.ActorCLI)
	if err == nil {
		t.Fatal("added without an audit record")
	}
	if _, err := os.Stat(l.HostsFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hosts file written: %v", err)
	}
}

// TestBrokenFileRefused: a hosts file with a problem is never rewritten
// around it (the user's other entries would be lost).
func TestBrokenFileRefused(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	bad := []byte("[hosts.gpu]\nurl = \"ssh://h\"\nextra = 1\n")
	if err := os.WriteFile(l.HostsFile(), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Add(l, mustHost(t, "a", "ssh://a", "", ""), false, audit.ActorCLI); err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("add to a broken file: %v", err)
	}
	if got, _ := os.ReadFile(l.HostsFile()); string(got) != string(bad) {
		t.Errorf("file changed: %q", got)
	}
}

// TestDeepHostsFileRefused: 10,000 nested inline tables (60 KB, under the
// size cap) took the TOML parser 4.2 GB; the shape check refuses them
// before it runs, naming the file and line, as it refuses too many items.
func TestDeepHostsFileRefused(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	for name, data := range map[string]string{
		"deep":  "[hosts.a]\nurl = " + strings.Repeat("{a=", 10000) + "1" + strings.Repeat("}", 10000) + "\n",
		"array": "x = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n",
		"many":  "x = [" + strings.Repeat("1,", 5000) + "1]\n",
	} {
		if err := os.WriteFile(l.HostsFile(), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(l.HostsFile())
		if err == nil || !strings.Contains(err.Error(), l.HostsFile()) || !strings.Contains(err.Error(), ": line ") {
			t.Errorf("%s: Load = %v", name, err)
		}
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%s: Parse accepted it", name)
		}
		if err := Add(l, mustHost(t, "b", "ssh://b", "", ""), false, audit.ActorCLI); err == nil || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("%s: add = %v", name, err)
		}
	}
}
