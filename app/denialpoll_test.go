package app

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

func TestPollDue(t *testing.T) {
	for n := uint64(0); n < 3*stoppedEvery; n++ {
		if !pollDue(n, true) {
			t.Errorf("tick %d: a running box's log not read", n)
		}
		if want := n%stoppedEvery == 0; pollDue(n, false) != want {
			t.Errorf("tick %d: stopped box read %v, want %v", n, !want, want)
		}
	}
}

// One ticker follows every box's log: a denial of a box whose broker runs
// is reported within a tick or two, one of a stopped box's log within
// stoppedEvery ticks, and a box created meanwhile is followed from its
// creation.
func TestWatchDenialsOneTicker(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	svc, _ := boxtest.Service(l, now, audit.ActorApp)
	b := &coreBackend{svc: svc}
	for _, m := range []boxmeta.Meta{{Name: "live-1", Created: now, BrokerPID: 4242}, {Name: "stopped-1", Created: now}} {
		if err := boxmeta.Write(l, m); err != nil {
			t.Fatal(err)
		}
	}
	type got struct {
		box  string
		host string
		at   time.Time
	}
	var mu sync.Mutex
	var seen []got
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.WatchDenials(ctx, func(box string, d DeniedHost) {
			mu.Lock()
			seen = append(seen, got{box, d.Host, time.Now()})
			mu.Unlock()
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("WatchDenials returned %v", err)
		}
	}()
	time.Sleep(100 * time.Millisecond) // the first scan, at the logs' ends
	deny := func(box, host string) time.Time {
		t.Helper()
		at := time.Now()
		line, _ := json.Marshal(egress.Entry{Time: at, Box: box, Kind: egress.KindConnect, Host: host, Port: 443, Reason: egress.ReasonHostNotAllowed})
		f, err := os.OpenFile(l.EgressLog(box), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		return at
	}
	wait := func(box, host string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < within+2*time.Second {
			mu.Lock()
			for _, g := range seen {
				if g.box == box && g.host == host {
					mu.Unlock()
					return g.at.Sub(start)
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no denial of %s from %s", host, box)
		return 0
	}
	deny("live-1", "a.example.test")
	// Slack for a loaded machine, well under a stopped box's period.
	if d := wait("live-1", "a.example.test", 2*denialPoll); d > stoppedEvery*denialPoll/2 {
		t.Errorf("a running box's denial took %s", d)
	}
	deny("stopped-1", "b.example.test")
	if d := wait("stopped-1", "b.example.test", stoppedEvery*denialPoll); d > stoppedEvery*denialPoll+3*time.Second {
		t.Errorf("a stopped box's denial took %s", d)
	}
	// A box created now: its broker may log before the next scan sees
	// it; the line is reported all the same.
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "new-1", Created: time.Now().Add(-time.Second), BrokerPID: 4343}); err != nil {
		t.Fatal(err)
	}
	deny("new-1", "c.example.test")
	wait("new-1", "c.example.test", boxesPoll+2*denialPoll)
}
