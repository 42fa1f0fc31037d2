package egress

// LogTail follows one egress log by polling, driven by its owner: for a
// reader of many logs on one ticker (the menu-bar app follows every box's
// log; a Follow per box would be a ticker per box, and on macOS, where
// Follow has no directory watch, every log polled twice a second). It
// reads as Follow does: only new bytes, a partial last line kept until
// complete, rotation and truncation followed. Not safe for concurrent use.
type LogTail struct{ t tail }

// NewLogTail opens the log at path (it need not exist yet) for fn:
// fromStart reads what it holds now at the first Poll (FollowAll), else
// only what is appended later (Follow).
func NewLogTail(path string, fromStart bool, fn func(Entry)) *LogTail {
	l := &LogTail{t: tail{path: path, fn: fn}}
	l.t.reopen(!fromStart)
	return l
}

// Poll calls fn for every complete entry appended since the last Poll.
func (l *LogTail) Poll() { l.t.poll() }

// Close closes the log.
func (l *LogTail) Close() { l.t.close() }
