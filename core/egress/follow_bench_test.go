package egress

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkDenialToFollower measures how long a denial takes from the
// broker's log write to the menu-bar app's follower callback (the app
// raises its notification from that callback). Target: well under 1 s.
func BenchmarkDenialToFollower(b *testing.B) {
	path := filepath.Join(b.TempDir(), "egress-web-123456.jsonl")
	log, err := OpenLog(path, "web-123456", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	got := make(chan time.Time, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Follow(ctx, path, func(Entry) { got <- time.Now() }) }()
	time.Sleep(200 * time.Millisecond) // the follower opens the file at its end
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		log.LogDecision(Decision{Time: start, Kind: KindConnect, Host: "denied.example.test", Port: 443,
			IP: netip.MustParseAddr("127.0.0.1"), Reason: ReasonHostNotAllowed})
		select {
		case at := <-got:
			total += at.Sub(start)
		case <-time.After(5 * time.Second):
			b.Fatal("the follower never saw the denial")
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/denial-seen")
}
