package box

import (
	"encoding/json"
	"errors"
	"github.com/corral-dev/corral/core/untrusted"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
)

// Live host sessions are files, not metadata: run/sessions/<box>/<id>, one
// per corral process running a session, created when it starts and
// removed when it ends. A session then writes no box metadata at all (the
// metadata is written, with its fsyncs, only when something in it
// changes), and two sessions never contend for the metadata. The
// directory's mtime changes with every start and end: it is the session
// part of a box's last activity. A file whose process is gone (a crashed
// corral) is not live and is removed by the next reader.

// Session is a live host session of a box (run/sessions/<box>/<id>).
type Session struct {
	ID      string    `json:"id"`
	PID     int       `json:"pid"` // the host corral process running it
	Agent   string    `json:"agent"`
	Started time.Time `json:"started"`
}

// sessionFileRe keeps reading to files a session could have written.
func sessionFile(name string) bool {
	if name == "" || len(name) > 64 || strings.HasPrefix(name, ".") {
		return false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// addSession records a live session.
func (s *Service) addSession(box string, ss Session) error {
	dir := s.Layout.SessionsDir(box)
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		return err
	}
	b, err := json.Marshal(ss)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ss.ID), b, 0o600)
}

// removeSession forgets a session.
func (s *Service) removeSession(box, id string) {
	if sessionFile(id) {
		_ = os.Remove(filepath.Join(s.Layout.SessionsDir(box), id))
	}
}

// maxSessionFile caps a session file (a few hundred bytes of JSON).
const maxSessionFile = 4 << 10

// LiveSessions lists a box's live host sessions, oldest first. Unreadable
// session files (special files included: core/untrusted) are skipped.
func (s *Service) LiveSessions(box string) []Session {
	dir := s.Layout.SessionsDir(box)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Session
	for _, e := range ents {
		if !sessionFile(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := untrusted.ReadJSON(p, untrusted.State(maxSessionFile))
		var ss Session
		if err != nil || json.Unmarshal(b, &ss) != nil || ss.ID != e.Name() {
			continue
		}
		if !processAlive(ss.PID) {
			_ = os.Remove(p)
			continue
		}
		out = append(out, ss)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// sessionsTouched is when a session of the box last started or ended.
func (s *Service) sessionsTouched(box string) time.Time {
	st, err := os.Stat(s.Layout.SessionsDir(box))
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// forgetRuntime removes a box's session records and cache entries (the
// box is gone).
func (s *Service) forgetRuntime(box string) {
	if err := os.RemoveAll(s.Layout.SessionsDir(box)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Logger.Warn("removing session records", "box", box, "err", err)
	}
	_ = os.Remove(filepath.Join(s.Layout.CacheDir(), box+".template"))
}
