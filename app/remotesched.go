package app

import "time"

// readSchedule decides when the menu reads each remote host again. Every
// read of a host shares one ssh connection (core/remote's control
// master), but a host that fails, or one whose read is slow (an ssh key
// that needs a touch, a FIDO key or a Touch ID agent, or a slow link),
// is read less often: each such read doubles the wait before the next,
// up to Max; one quick successful read brings it back to Base.
//
//   - the timer (every Base) reads a host whose next read is due;
//   - opening the menu reads a healthy host whose last read started at
//     least OpenAge ago, and a backing-off host only when it is due (a
//     touch per opening would be one too many);
//   - an action on a host (start, stop, allow) reads it again whatever
//     the schedule says (loop.readHostAgain).
type readSchedule struct {
	Base    time.Duration // the timer's period (Options.RemoteInterval)
	OpenAge time.Duration // remoteOpenAge
	Max     time.Duration // the longest wait after failures
	Slow    time.Duration // a read at least this long counts as a failure
}

// hostReads is one host's read history as the schedule needs it.
type hostReads struct {
	started  time.Time // the last read's start (zero: never read)
	failures int       // failed or slow reads in a row
	next     time.Time // when the next read is due
}

// remoteMaxBackoff and remoteSlowRead are the schedule's defaults: a host
// that keeps failing is tried every 15 minutes; a read that takes 5
// seconds or more (ssh waits for a touch, or the host is slow) counts as
// one that failed.
const (
	remoteMaxBackoff = 15 * time.Minute
	remoteSlowRead   = 5 * time.Second
)

func defaultSchedule(base time.Duration) readSchedule {
	return readSchedule{Base: base, OpenAge: remoteOpenAge, Max: remoteMaxBackoff, Slow: remoteSlowRead}
}

// start records that a read begins at now: none is due until it is done.
func (s readSchedule) start(h hostReads, now time.Time) hostReads {
	h.started, h.next = now, time.Time{}
	return h
}

// done records the end of the read that started at h.started: failed, or
// slow, adds a failure; otherwise failures go back to zero. The next read
// is due Base after the start, doubled for each failure in a row, at most
// Max.
func (s readSchedule) done(h hostReads, end time.Time, failed bool) hostReads {
	if failed || (s.Slow > 0 && end.Sub(h.started) >= s.Slow) {
		h.failures++
	} else {
		h.failures = 0
	}
	h.next = h.started.Add(s.wait(h.failures))
	return h
}

// wait is the time from one read's start to the next after failures
// failed or slow reads in a row.
func (s readSchedule) wait(failures int) time.Duration {
	w := s.Base
	for i := 0; i < failures; i++ {
		w *= 2
		if s.Max > 0 && w >= s.Max {
			return s.Max
		}
	}
	return w
}

// due reports whether a host should be read at now: by the timer, or
// because the menu opened. Half a period of slack lets the timer's tick
// that comes just before the due time count (ticks and reads are not
// aligned to the nanosecond).
func (s readSchedule) due(h hostReads, now time.Time, opened bool) bool {
	if h.started.IsZero() {
		return true
	}
	if h.next.IsZero() {
		return false // a read is under way (it ends with done)
	}
	dueNow := !now.Add(s.Base / 2).Before(h.next)
	if opened {
		return now.Sub(h.started) >= s.OpenAge && (h.failures == 0 || dueNow)
	}
	return dueNow
}
