package egress

import (
	"sync/atomic"
	"time"
)

// workers runs the server's per-connection goroutines (a connection's
// handler, a tunnel's second direction) on goroutines kept for the next
// one. A new goroutine starts with a small stack and grows it, copying,
// through the request parse and the splice path, and a finished one gives
// the grown stack back: that was ~5 % of the broker's CPU per sequential
// tunnel (runtime.copystack; issue 28's profile). A kept goroutine keeps
// its stack. At most maxIdle wait at once, each for at most idleFor, and
// all of them leave when stop is closed; a function that finds no idle
// goroutine gets a new one, so nothing ever waits for a worker.
type workers struct {
	ch      chan func()
	idle    atomic.Int32
	maxIdle int32
	idleFor time.Duration
	stop    <-chan struct{}
}

// Worker defaults: how many goroutines may wait for work, and how long.
const (
	maxIdleWorkers = 64
	workerIdle     = 10 * time.Second
)

func newWorkers(stop <-chan struct{}) *workers {
	return &workers{ch: make(chan func()), maxIdle: maxIdleWorkers, idleFor: workerIdle, stop: stop}
}

// run runs f on an idle worker if one is waiting, else on a new goroutine.
func (w *workers) run(f func()) {
	select {
	case w.ch <- f:
	default:
		go w.loop(f)
	}
}

// loop runs f, then waits for more work while fewer than maxIdle wait.
func (w *workers) loop(f func()) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		f()
		f = nil // the finished function's closure may hold a connection
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		if timer == nil {
			timer = time.NewTimer(w.idleFor)
		} else {
			timer.Reset(w.idleFor)
		}
		select {
		case f = <-w.ch:
			w.idle.Add(-1)
			timer.Stop()
		case <-timer.C:
			w.idle.Add(-1)
			return
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}
