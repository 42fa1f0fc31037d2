package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/paths"
)

func TestAuditOCSF(t *testing.T) {
	home := t.TempDir()
	writeAudit(t, home)
	code, out, errOut := runAudit(t, home, false, "--format", "ocsf", "--box", "web-1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for i, want := range []float64{audit.ClassAPIActivity, audit.ClassProcessActivity} {
		var o map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &o); err != nil || o["class_uid"] != want {
			t.Errorf("line %d: %v class %v, want %v", i, err, o["class_uid"], want)
		}
	}
	for _, c := range [][]string{{"--format", "xml"}, {"--format", "ocsf", "--json"}, {"--forward"}} {
		if code, _, _ := runAudit(t, home, false, c...); code != 1 {
			t.Errorf("%q: exit %d", c, code)
		}
	}
}

// TestAuditFollowForward: `corral audit --follow --forward` sends every
// event to the collector the organisation's policy names, an HTTP
// endpoint and a syslog daemon on 127.0.0.1.
func TestAuditFollowForward(t *testing.T) {
	posts := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- string(b)
	}))
	defer srv.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	for _, c := range []struct{ forward, wantFirst string }{
		{srv.URL + "/ingest", `"class_uid":6003`},
		{"syslog+udp://" + udp.LocalAddr().String(), "<110>1 "},
	} {
		home := t.TempDir()
		writeAudit(t, home)
		managedPolicy(t, "[audit]\nforward = \""+c.forward+"\"\n")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan string)
		go func() {
			io, _, out, errOut := Test(false)
			f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return paths.Layout{Home: home}, nil }}
			cmd := NewCmdAudit(f, func(o *AuditOptions) error {
				o.Context, o.Poll, o.Hostname = ctx, 10*time.Millisecond, "laptop"
				return auditRun(o)
			})
			cmd.SetArgs([]string{"--follow", "--forward"})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			if err := cmd.Execute(); err != nil {
				printError(errOut, err)
			}
			done <- out.String() + errOut.String()
		}()
		recv := func() string {
			if strings.HasPrefix(c.forward, "http") {
				select {
				case p := <-posts:
					return p
				case <-time.After(5 * time.Second):
					t.Fatal("nothing forwarded")
				}
			}
			udp.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 65536)
			n, _, err := udp.ReadFrom(b)
			if err != nil {
				t.Fatal(err)
			}
			return string(b[:n])
		}
		if got := recv(); !strings.Contains(got, c.wantFirst) || !strings.Contains(got, `"web-1"`) {
			t.Errorf("%s: first event %s", c.forward, got)
		}
		for range 3 {
			recv()
		}
		if err := audit.Append(filepath.Join(home, "logs", "audit.jsonl"), audit.Event{Kind: audit.KindEgressDenied, Box: "web-1",
			Fields: map[string]any{"host": "evil.example", "port": 443}}); err != nil {
			t.Fatal(err)
		}
		if got := recv(); !strings.Contains(got, `"class_uid":4001`) {
			t.Errorf("%s: appended event %s", c.forward, got)
		}
		cancel()
		if out := <-done; out != "" {
			t.Errorf("%s: output %q", c.forward, out)
		}
		if len(posts) != 0 {
			t.Errorf("%s: %d events forwarded twice: %.300s", c.forward, len(posts), <-posts)
		}
	}
}

// TestEgressLogOCSF: `corral egress --log --format ocsf` prints each
// broker decision as OCSF Network Activity (Open when allowed, Refuse when
// denied) and no session marks.
func TestEgressLogOCSF(t *testing.T) {
	e := setup(t, "")
	seedEgress(t, e)
	code, out, errOut := runEgressAt(e, false, fixedNow, "--log", "--since", "3h", "--format", "ocsf")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 7 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	activity := map[float64]int{}
	for _, l := range lines {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil || o["class_uid"] != float64(audit.ClassNetworkActivity) {
			t.Fatalf("%v: %s", err, l)
		}
		activity[o["activity_id"].(float64)]++
	}
	if activity[1] == 0 || activity[5] == 0 {
		t.Errorf("activities %v, want Open (1) and Refuse (5)", activity)
	}
	if code, _, _ := runEgressAt(e, false, fixedNow, "--format", "ocsf"); code != 1 {
		t.Errorf("--format without --log: exit %d", code)
	}
}
