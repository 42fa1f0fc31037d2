package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// boxRequestJSON is a request the box filed (corral-request), in --json
// output. From is always "box": the request, its reason and its process
// are the box's words.
type boxRequestJSON struct {
	Time    time.Time           `json:"time"`
	From    string              `json:"from"`
	What    egress.RequestWhat  `json:"what"`
	Request string              `json:"request"`
	Why     string              `json:"why"`
	Who     *egress.Attribution `json:"who,omitempty"`
	// Process is Who as one line ("node (pid 42, npm < bash, session
	// tests)"), for display only.
	Process string `json:"process,omitempty"`
	// ThisMachine marks a host request that names the host computer
	// itself (core/egress ThisMachine: localhost, a loopback address).
	ThisMachine bool `json:"this_machine,omitempty"`
}

// boxRequests are the box's requests waiting for an answer, newest first
// (core/approval Pending over the box's egress log). An unreadable log or
// approvals file shows none, with a warning.
func boxRequests(l paths.Layout, box string, now time.Time, errOut io.Writer) []egress.Entry {
	entries, err := egress.ReadLog(l.EgressLog(box), now.Add(-approval.RequestTTL))
	if err != nil {
		fmt.Fprintf(errOut, "warning: the box's requests are not shown: %v\n", err)
		return nil
	}
	s, err := approval.Open(l, box)
	if err != nil {
		return nil
	}
	p, err := s.Pending(entries, now)
	if err != nil {
		fmt.Fprintf(errOut, "warning: the box's requests are not shown: %v\n", err)
	}
	return p
}

func boxRequestsJSON(rs []egress.Entry) []boxRequestJSON {
	out := make([]boxRequestJSON, 0, len(rs))
	for _, r := range rs {
		j := boxRequestJSON{Time: r.Time.UTC(), From: "box", What: r.What, Request: r.Request, Why: r.Why, Who: r.Who}
		if r.Who != nil {
			j.Process = r.Who.String()
		}
		j.ThisMachine = r.What != egress.RequestPort && egress.ThisMachine(egress.EntryHost(r.Request))
		out = append(out, j)
	}
	return out
}

// requestTarget is what a request asked for, for a terminal: a host
// marked "(this machine)" when it names this computer (core/egress
// ShowTarget).
func requestTarget(r egress.Entry) string {
	if r.What == egress.RequestPort {
		return display.Text(r.Request, 0)
	}
	return egress.ShowTarget(r.Request, 0)
}

// requestWho is the process that filed r, for a terminal ("" when unknown).
func requestWho(r egress.Entry) string {
	if r.Who == nil {
		return ""
	}
	return display.Text(r.Who.String(), 80)
}

// printBoxRequests writes the TTY section of the box's requests.
func printBoxRequests(w io.Writer, box string, rs []egress.Entry, now time.Time) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nrequested from inside the box (its own words; nothing is allowed until you answer):\n")
	for _, r := range rs {
		fmt.Fprintf(w, "  %s  %q  %s ago\n", requestTarget(r), display.Text(r.Why, 0), shortDuration(now.Sub(r.Time)))
		if who := requestWho(r); who != "" {
			fmt.Fprintf(w, "    asked by %s\n", who)
		}
		if r.What != egress.RequestPort && egress.ThisMachine(egress.EntryHost(r.Request)) {
			fmt.Fprintf(w, "    %s: %s\n", egress.ThisMachineMark, egress.ThisMachineWhy)
		}
	}
	fmt.Fprintf(w, "answer: corral allow %s HOST [--once|--session|--for 1h] (a held connection proceeds), corral deny %s HOST, corral port %s PORT\n", box, box, box)
}

// decisionWho names who a decision line says made the request (" · from
// session ab12cd"), or "": the client's own word, shown, never decided on.
func decisionWho(e egress.Entry) string {
	if e.Who == nil || e.Who.IsZero() {
		return ""
	}
	if e.Who.Exe == "" && e.Who.PID == 0 && e.Who.Chain == "" {
		return " · from session " + display.Text(e.Who.Session, 0)
	}
	return " · from " + display.Text(e.Who.String(), 80)
}
