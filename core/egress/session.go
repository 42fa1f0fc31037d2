package egress

// LastSession names the most recent session in SessionSlice.
const LastSession = "last"

// SessionSlice returns the part of a log (entries oldest first) that one
// session spans: from its session-start marker to its session-end marker,
// both included, or to the end of the log while the session runs. id
// LastSession picks the session that started last. A decision carries at
// most the session its client claims (Who, from the proxy URL: any process
// in the box can claim any session), so the slice is by time, and traffic
// of other sessions of the same box running at the same time is in it too. It returns false when the entries have no
// start marker of that session (it began before them, or never).
func SessionSlice(entries []Entry, id string) ([]Entry, bool) {
	start := -1
	for i, e := range entries {
		if e.Kind == KindSessionStart && (e.Session == id || id == LastSession) {
			start = i
			if id != LastSession {
				break
			}
		}
	}
	if start < 0 {
		return nil, false
	}
	id = entries[start].Session
	for i := start + 1; i < len(entries); i++ {
		if entries[i].Kind == KindSessionEnd && entries[i].Session == id {
			return entries[start : i+1], true
		}
	}
	return entries[start:], true
}
