package egress

import (
	"sync"
	"time"
)

// pipePool holds the splice(2) pipes of a server's tunnels, instead of
// the runtime's own pool: that one is a sync.Pool whose pipes are closed
// only when the garbage collector drops them, so after a load hundreds of
// pipe descriptors stayed open with no tunnel, and no budget counted them.
//
// Here every pipe is counted from the moment it is created to the moment
// it is closed (open, two descriptors each), open never exceeds max (a
// tunnel direction that finds no pipe copies through user space), and a
// pipe idle for idleFor is closed. A direction holds a pipe only while
// bytes move: it gives the pipe back whenever its source has nothing to
// read, so an idle tunnel holds its two sockets and nothing else.
type pipePool struct {
	mu      sync.Mutex
	idle    []idlePipe // oldest first; get takes the newest
	open    int        // pipes open: in use and idle
	max     int
	maxIdle int
	idleFor time.Duration
	timer   *time.Timer
	closed  bool
}

type spipe struct{ r, w int }

type idlePipe struct {
	p  spipe
	at time.Time
}

// Pipe pool defaults: the idle time after which a pooled pipe is closed,
// and the bounds of the cap derived from the open-file limit.
const (
	pipeIdle    = 10 * time.Second
	minPipes    = 4
	maxPipes    = 256
	defaultPipe = 64
)

// PipeCap is the number of splice pipes a broker at soft open files may
// hold (two descriptors each): an eighth of what is left after
// [fdReserve], between 4 and 256; 64 when the limit is unknown (0).
func PipeCap(soft uint64) int {
	if soft == 0 {
		return defaultPipe
	}
	soft = min(soft, 1<<20)
	return min(max((int(soft)-fdReserve)/8, minPipes), maxPipes)
}

func newPipePool(max int) *pipePool {
	return &pipePool{max: max, maxIdle: min(max, 64), idleFor: pipeIdle}
}

// get returns a pipe, or false when max are open or none can be made.
func (pp *pipePool) get() (spipe, bool) {
	pp.mu.Lock()
	if n := len(pp.idle); n > 0 {
		p := pp.idle[n-1].p
		pp.idle = pp.idle[:n-1]
		pp.mu.Unlock()
		return p, true
	}
	if pp.closed || pp.open >= pp.max {
		pp.mu.Unlock()
		return spipe{}, false
	}
	pp.open++ // counted before it exists: the count never falls short
	pp.mu.Unlock()
	p, err := newPipe()
	if err != nil {
		pp.mu.Lock()
		pp.open--
		pp.mu.Unlock()
		return spipe{}, false
	}
	return p, true
}

// put gives p back. A pipe that may hold bytes (clean false) is closed:
// they belong to a connection that is gone.
func (pp *pipePool) put(p spipe, clean bool) {
	pp.mu.Lock()
	if !clean || pp.closed || len(pp.idle) >= pp.maxIdle {
		pp.open--
		pp.mu.Unlock()
		closePipe(p)
		return
	}
	pp.idle = append(pp.idle, idlePipe{p: p, at: time.Now()})
	if pp.timer == nil {
		pp.timer = time.AfterFunc(pp.idleFor, pp.reap)
	}
	pp.mu.Unlock()
}

// reap closes the pipes idle for idleFor and arms the timer for the next.
func (pp *pipePool) reap() {
	pp.mu.Lock()
	cutoff := time.Now().Add(-pp.idleFor)
	i := 0
	for i < len(pp.idle) && !pp.idle[i].at.After(cutoff) {
		i++
	}
	old := append([]idlePipe(nil), pp.idle[:i]...)
	pp.idle = append(pp.idle[:0], pp.idle[i:]...)
	pp.open -= len(old)
	pp.timer = nil
	if len(pp.idle) > 0 && !pp.closed {
		pp.timer = time.AfterFunc(time.Until(pp.idle[0].at.Add(pp.idleFor)), pp.reap)
	}
	pp.mu.Unlock()
	for _, ip := range old {
		closePipe(ip.p)
	}
}

// close closes the idle pipes; pipes in use are closed when put back.
func (pp *pipePool) close() {
	pp.mu.Lock()
	pp.closed = true
	old := pp.idle
	pp.idle = nil
	pp.open -= len(old)
	if pp.timer != nil {
		pp.timer.Stop()
		pp.timer = nil
	}
	pp.mu.Unlock()
	for _, ip := range old {
		closePipe(ip.p)
	}
}

// fds is the number of descriptors the pool's pipes hold now.
func (pp *pipePool) fds() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return 2 * pp.open
}
