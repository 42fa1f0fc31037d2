package box

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// TestSessionMarksTheEgressLog: a session of a broker box writes its start
// and end markers into the box's egress log, around what the broker logs
// meanwhile, so `corral egress --session` finds it; other boxes get none.
func TestSessionMarksTheEgressLog(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := &Service{Layout: l, Logger: discard(), Now: func() time.Time { return now }}
	for _, m := range []boxmeta.Meta{{Name: "web-a1b2c3", Network: "broker"}, {Name: "full-a1b2c3", Network: "full"}} {
		if err := boxmeta.Write(l, m); err != nil {
			t.Fatal(err)
		}
		s.beginSession(&m, "s-"+m.Name, SessionOptions{Agent: agent.Agent{Name: "claude"}}, nil)
		dl, err := egress.OpenLog(l.EgressLog("web-a1b2c3"), "web-a1b2c3", discard())
		if err != nil {
			t.Fatal(err)
		}
		dl.LogDecision(egress.Decision{Kind: egress.KindConnect, Host: "api.example.test", Port: 443, Reason: egress.ReasonHostNotAllowed})
		dl.Close()
		s.endSession(m, "s-"+m.Name)
	}
	entries, err := egress.ReadLog(l.EgressLog("web-a1b2c3"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, string(e.Kind)+":"+e.Session)
	}
	if want := "session-start:s-web-a1b2c3 connect: session-end:s-web-a1b2c3 connect:"; strings.Join(got, " ") != want {
		t.Errorf("egress log %q, want %q", strings.Join(got, " "), want)
	}
	slice, ok := egress.SessionSlice(entries, "s-web-a1b2c3")
	if !ok || len(slice) != 3 {
		t.Errorf("SessionSlice: %v %d entries", ok, len(slice))
	}
	if _, err := os.Stat(l.EgressLog("full-a1b2c3")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a full-network box got an egress log: %v", err)
	}
}
