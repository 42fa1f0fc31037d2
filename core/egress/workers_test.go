package egress

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every function given to run runs exactly once, whether an idle worker
// takes it or a new goroutine does; at most maxIdle wait afterwards, and
// they all leave when stop closes or their idle time ends.
func TestWorkers(t *testing.T) {
	stop := make(chan struct{})
	w := newWorkers(stop)
	w.maxIdle = 4
	var ran atomic.Int64
	var wg sync.WaitGroup
	for round := range 3 {
		gate := make(chan struct{})
		for range 20 { // more at once than maxIdle: some must be new goroutines
			wg.Add(1)
			w.run(func() {
				defer wg.Done()
				<-gate
				ran.Add(1)
			})
		}
		close(gate)
		wg.Wait()
		if got := ran.Load(); got != int64(20*(round+1)) {
			t.Fatalf("round %d: %d functions ran, want %d", round, got, 20*(round+1))
		}
		waitFor(t, func() bool { return w.idle.Load() == w.maxIdle }, "maxIdle workers waiting")
	}
	close(stop)
	waitFor(t, func() bool { return w.idle.Load() == 0 }, "idle workers gone after stop")

	// Without stop, the idle time ends them.
	w = newWorkers(make(chan struct{}))
	w.idleFor = 10 * time.Millisecond
	wg.Add(1)
	w.run(wg.Done)
	wg.Wait()
	waitFor(t, func() bool { return w.idle.Load() == 0 }, "idle worker gone after idleFor")
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
