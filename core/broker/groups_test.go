package broker

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/toolreg"
)

// A box's broker allows the toolchains group its golden recorded and the
// named groups of egress_groups, each rule naming its group.
func TestAllowListGroups(t *testing.T) {
	l, name := newBox(t, "")
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := AllowList(l, name, m.Project, linux, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Origin == approval.OriginGroup {
			t.Errorf("a box with no golden record and no egress_groups has group rule %+v", r)
		}
	}
	m.Golden = "golden-0123456789ab"
	mustDo(t, boxmeta.Write(l, m))
	mustDo(t, toolreg.Write(l, toolreg.Record{Golden: m.Golden, Registries: []toolreg.Registry{
		{Entry: "npm.mirror.example.test", Tool: toolreg.ToolNPM, Source: "registry"},
		{Entry: "goproxy.mirror.example.test:8443", Tool: toolreg.ToolGo, Source: "GOPROXY"},
	}}))
	mustDo(t, os.WriteFile(l.ProjectConfig(name), []byte("egress_groups = [\"ai-apis\"]\n"), 0o600))
	rules, err = AllowList(l, name, m.Project, linux, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rules {
		if r.Origin == approval.OriginGroup {
			got[r.Entry] = r.Source
		}
	}
	for entry, src := range map[string]string{
		"npm.mirror.example.test":          "toolchains (golden-0123456789ab)",
		"goproxy.mirror.example.test:8443": "toolchains (golden-0123456789ab)",
		"api.openai.com":                   "ai-apis",
	} {
		if got[entry] != src {
			t.Errorf("%s: source %q, want %q (rules %+v)", entry, got[entry], src, rules)
		}
	}
	// The broker enforces them: a recorded registry answers, another host
	// is denied.
	addr := start(t, Options{Layout: l, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	if code, reason := brokertest.ProxyGet(t, addr, "http://npm.mirror.example.test/"); code == 403 {
		t.Errorf("the toolchains group's host was denied: %s", reason)
	}
	if code, _ := brokertest.ProxyGet(t, addr, "http://other.example.test/"); code != 403 {
		t.Errorf("a host in no group: %d, want 403", code)
	}
	// The record is followed live: a golden rebuilt under the same name
	// (or a record edited by hand) applies without restarting the box.
	// Outside the broker port range: a port there is the broker's own
	// ("self"), denied whatever the list says.
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "registry") }))
	up.Listener.Close()
	up.Listener = brokertest.ListenOutsideBrokerPorts(t)
	up.Start()
	defer up.Close()
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	target := "http://live.mirror.example.test:" + port + "/"
	if code, _ := brokertest.ProxyGet(t, addr, target); code != 403 {
		t.Fatalf("before the record names it: %d", code)
	}
	mustDo(t, toolreg.Write(l, toolreg.Record{Golden: m.Golden, Registries: []toolreg.Registry{
		{Entry: "live.mirror.example.test:" + port, Tool: toolreg.ToolNPM, Source: "registry"}}}))
	waitStatus(t, addr, target, 200)
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
