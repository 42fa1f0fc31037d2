// Package review answers the question a user asks when they come back to
// an agent that ran for an hour: what did it do? One report per session
// (the latest by default): when it started and ended, the agent, every
// egress decision in its time, what the box asked for and what was
// granted, the credentials the broker used for it, what happened to git
// (the guard's reverts, the name rule's refusals, repositories that
// appeared), and the files whose modification time falls in it. It reads
// corral's own logs (the audit log, the box's egress log) and the work
// tree; everything the box wrote into them is shown as untrusted text.
package review

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/dotgit"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// Schema names the JSON form of a Report (`corral review --json` puts it
// first, as every --json output has its schema).
const Schema = "corral.review/v1"

// Caps on what a report lists: a session that touched a million files or
// made a million requests is summarised, not printed whole.
const (
	MaxFiles      = 500
	MaxEvents     = 500
	MaxWalk       = 200000
	maxShownBytes = 200
)

// ErrNoSession means the logs hold no session of the box (or none with
// that ID).
var ErrNoSession = errors.New("no such session in the audit log")

// Options say which session to review.
type Options struct {
	// Box names the box; "" is the box of the project at Dir.
	Box, Dir string
	// Session is a session ID (or a prefix of one); "" or "last" is the
	// latest session.
	Session string
	Now     time.Time
	// FileTime is when a file last changed; nil is its change time
	// (changeTime). Tests give files times of their own through it.
	FileTime func(fs.FileInfo) time.Time
}

// Report is one session's review.
type Report struct {
	Box     string     `json:"box"`
	Session string     `json:"session"`
	Agent   string     `json:"agent,omitempty"`
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	Exit    *int       `json:"exit,omitempty"`
	// Egress is every destination decided in the session's time, by host,
	// port and outcome (other sessions of the box running at the same
	// time are in it too).
	Egress []egress.HostSummary `json:"egress"`
	// Requests are what the box asked the user for (corral-request): the
	// request, the reason and the process are the box's words.
	Requests []egress.Entry `json:"requests"`
	// Events are the audit log's events of the box in the session's time
	// (session markers and egress denials aside): grants, credential
	// uses and refusals, git guard reverts, name rule refusals,
	// repositories that appeared, pulls.
	Events []audit.Event `json:"events"`
	// Files are the work tree's regular files whose change time (set by
	// the host's kernel, not the box) falls in the session: what the box
	// changed then, and what anything else on the host changed meanwhile.
	Files     []File `json:"files_changed"`
	Truncated bool   `json:"truncated,omitempty"`
}

// File is one file of the work tree changed in the session's time.
type File struct {
	Path string `json:"path"` // relative to the project
	// Changed is the inode's change time (the host's kernel sets it);
	// ModTime is what the box says.
	Changed time.Time `json:"changed"`
	ModTime time.Time `json:"mod_time"`
	Size    int64     `json:"size"`
}

// Build reads the logs and the work tree into a session's report.
func Build(l paths.Layout, o Options) (Report, error) {
	loc, err := boxmeta.Locate(l, o.Box, o.Dir)
	if err != nil {
		return Report{}, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	events, err := audit.Read(l.AuditLog(), audit.Filter{Box: loc.Box})
	if err != nil {
		return Report{}, err
	}
	r := Report{Box: loc.Box}
	start := -1
	for i, ev := range events {
		if ev.Kind != audit.KindSessionStart {
			continue
		}
		id, _ := ev.Fields["session"].(string)
		if o.Session == "" || o.Session == egress.LastSession || (id != "" && strings.HasPrefix(id, o.Session)) {
			start = i
			r.Session, r.Started = id, ev.Time
			r.Agent, _ = ev.Fields["agent"].(string)
			if o.Session != "" && o.Session != egress.LastSession {
				break
			}
		}
	}
	if start < 0 {
		what := "box " + loc.Box
		if o.Session != "" && o.Session != egress.LastSession {
			what += ", session " + o.Session
		}
		return Report{}, fmt.Errorf("%w (%s)", ErrNoSession, display.Text(what, 120))
	}
	end := o.Now
	for _, ev := range events[start+1:] {
		if id, _ := ev.Fields["session"].(string); ev.Kind == audit.KindSessionEnd && id == r.Session {
			t := ev.Time
			r.Ended, end = &t, t
			if code, ok := ev.Fields["exit"].(float64); ok {
				c := int(code)
				r.Exit = &c
			}
			break
		}
	}
	for _, ev := range events[start+1:] {
		if ev.Time.After(end) {
			break
		}
		switch ev.Kind {
		case audit.KindSessionStart, audit.KindSessionEnd, audit.KindEgressDenied:
			continue
		}
		if len(r.Events) >= MaxEvents {
			r.Truncated = true
			break
		}
		r.Events = append(r.Events, ev)
	}
	if entries, err := egress.ReadLog(l.EgressLog(loc.Box), r.Started.Add(-time.Second)); err == nil {
		if slice, ok := egress.SessionSlice(entries, r.Session); ok {
			var decisions []egress.Entry
			for _, e := range slice {
				switch {
				case e.IsDecision():
					decisions = append(decisions, e)
				case e.Kind == egress.KindRequest && len(r.Requests) < MaxEvents:
					r.Requests = append(r.Requests, e)
				}
			}
			r.Egress = egress.Summarize(decisions)
		}
	}
	project := loc.Project
	if project == "" && loc.Meta != nil {
		project = loc.Meta.Project
	}
	if project != "" {
		ft := o.FileTime
		if ft == nil {
			ft = changeTime
		}
		r.Files, r.Truncated = changedFiles(project, r.Started, end, r.Truncated, ft)
	}
	if r.Egress == nil {
		r.Egress = []egress.HostSummary{}
	}
	if r.Requests == nil {
		r.Requests = []egress.Entry{}
	}
	if r.Events == nil {
		r.Events = []audit.Event{}
	}
	if r.Files == nil {
		r.Files = []File{}
	}
	return r, nil
}

// changedFiles walks the project (no link followed, no .git entered, at
// most MaxWalk entries) for regular files modified in [from, to].
func changedFiles(project string, from, to time.Time, truncated bool, changeTime func(fs.FileInfo) time.Time) ([]File, bool) {
	var out []File
	seen := 0
	filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		seen++
		if seen > MaxWalk {
			truncated = true
			return filepath.SkipAll
		}
		if d.IsDir() && p != project && dotgit.Is(d.Name()) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		// By change time, which the host's kernel sets (a box whose clock
		// drifted writes modification times of its own), or by the
		// modification time the box gave it; a file changed in the
		// session and again after it shows with its last change.
		in := func(t time.Time) bool { return !t.Before(from.Add(-time.Second)) && !t.After(to.Add(time.Second)) }
		if !in(changeTime(fi)) && !in(fi.ModTime()) {
			return nil
		}
		if len(out) >= MaxFiles {
			truncated = true
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(project, p)
		out = append(out, File{Path: rel, ModTime: fi.ModTime().UTC(), Changed: changeTime(fi).UTC(), Size: fi.Size()})
		return nil
	})
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, truncated
}

// cell is box-made text made safe for one Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(display.Text(s, maxShownBytes), "|", `\|`)
}

// Markdown renders the report for a terminal (and for --open's page).
func (r Report) Markdown(loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	var b strings.Builder
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04:05") }
	fmt.Fprintf(&b, "# Session %s of box %s\n\n", cell(r.Session), cell(r.Box))
	fmt.Fprintf(&b, "- agent: %s\n- started: %s\n", cell(orNone(r.Agent)), at(r.Started))
	switch {
	case r.Ended != nil && r.Exit != nil:
		fmt.Fprintf(&b, "- ended: %s (exit %d, after %s)\n", at(*r.Ended), *r.Exit, r.Ended.Sub(r.Started).Round(time.Second))
	case r.Ended != nil:
		fmt.Fprintf(&b, "- ended: %s\n", at(*r.Ended))
	default:
		b.WriteString("- still running\n")
	}
	allowed, denied := 0, 0
	for _, e := range r.Egress {
		if e.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	fmt.Fprintf(&b, "\n## Network: %d destinations reached, %d refused\n\n", allowed, denied)
	if len(r.Egress) > 0 {
		b.WriteString("| host | port | verdict | connections | reason |\n| --- | ---: | --- | ---: | --- |\n")
		for _, e := range r.Egress {
			v := "allowed"
			if !e.Allowed {
				v = "**denied**"
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %s |\n", cell(e.Host), e.Port, v, e.Count, cell(string(e.Reason)))
		}
		b.WriteString("\nOther sessions of the box running at the same time are counted too.\n")
	}
	fmt.Fprintf(&b, "\n## Requests from the box: %d\n\n", len(r.Requests))
	for _, q := range r.Requests {
		who := ""
		if q.Who != nil {
			who = fmt.Sprintf(" (says %s, pid %d)", cell(q.Who.Exe), q.Who.PID)
		}
		fmt.Fprintf(&b, "- %s %s: \"%s\"%s\n", at(q.Time), cell(q.Request), cell(q.Why), who)
	}
	groups := map[string][]audit.Event{}
	for _, ev := range r.Events {
		groups[eventGroup(ev.Kind)] = append(groups[eventGroup(ev.Kind)], ev)
	}
	for _, g := range []string{"Grants and approvals", "Credentials", "Git", "Other events"} {
		evs := groups[g]
		fmt.Fprintf(&b, "\n## %s: %d\n\n", g, len(evs))
		for _, ev := range evs {
			fmt.Fprintf(&b, "- %s %s%s\n", at(ev.Time), cell(string(ev.Kind)), fields(ev.Fields))
		}
	}
	fmt.Fprintf(&b, "\n## Files changed in the work tree: %d\n\n", len(r.Files))
	if len(r.Files) > 0 {
		b.WriteString("By change time, which the host's kernel sets (anything else on the host that changed a file then is here too). `git status` and `git diff` on the host show the content.\n\n")
		for _, f := range r.Files {
			fmt.Fprintf(&b, "- `%s` (%d bytes, %s)\n", strings.ReplaceAll(display.Text(f.Path, maxShownBytes), "`", "'"), f.Size, at(f.Changed))
		}
	}
	if r.Truncated {
		b.WriteString("\n(The lists are cut at their caps.)\n")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none recorded)"
	}
	return s
}

func eventGroup(k audit.Kind) string {
	switch k {
	case audit.KindAllow, audit.KindLearn:
		return "Grants and approvals"
	case audit.KindCredentialUse, audit.KindCredentialRefused:
		return "Credentials"
	case audit.KindGitGuard, audit.KindNestedGit, audit.KindGitNameRefused, audit.KindPull:
		return "Git"
	}
	return "Other events"
}

// fields renders an event's fields as " key=value ...", sorted, each
// value escaped and capped.
func fields(f map[string]any) string {
	if len(f) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", cell(k), cell(fmt.Sprint(f[k])))
	}
	return b.String()
}
