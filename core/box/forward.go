package box

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
)

// PortOutcome is what ForwardPort did to a box's forwards.
type PortOutcome int

// The outcomes of ForwardPort.
const (
	PortWhenCreated PortOutcome = iota // no box yet: it forwards the port once created
	PortAtNextStart                    // the box is not running: from its next start
	PortLive                           // the box runs: Service.AddPort forwards it now
)

// PortResult is what ForwardPort did.
type PortResult struct {
	Box string
	// Written is the trusted layer the port was added to; "" when the
	// box's config has the port already.
	Written string
	Outcome PortOutcome
}

// ForwardPort is `corral port` up to the live forward: it adds p to the
// ports of the box (boxmeta.Locate: named, else the project at dir's) in its
// trusted layer, after the one grant check (low host ports) and the check
// of the box's ports as a whole (clashes, the cap), through WriteTrusted
// (audit first), and says whether the box runs (PortLive: the caller's
// Service.AddPort forwards it without a restart). The result says what was
// done, also with an error that came after the write.
func ForwardPort(l paths.Layout, plat config.Platform, name, dir string, p config.Port, now time.Time) (PortResult, error) {
	loc, err := boxmeta.Locate(l, name, dir)
	if err != nil {
		return PortResult{}, err
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: loc.Project, Platform: plat})
	if err != nil {
		return PortResult{}, err
	}
	res := PortResult{Box: r.Project.Box}
	c := r.Loaded.Settings()
	if !slices.ContainsFunc(c.PortEntries, func(e string) bool { return config.SamePort(e, p.String()) }) {
		// AddToTrusted checks the whole config again under the file's lock.
		if err := config.CheckGrant("ports", p.String(), c.GrantContext()).Err(); err != nil {
			return res, hint.New(fmt.Errorf("box %s: %w", res.Box, err), "see corral info "+res.Box+" for the box's ports")
		}
		if why := config.CheckPorts(append(c.Ports(), p), c.LowHostPorts); len(why) > 0 {
			return res, hint.New(fmt.Errorf("box %s: port %s: %s", res.Box, p, why[len(why)-1]), "see corral info "+res.Box+" for the box's ports")
		}
		if err := WriteTrusted(l, r, Grant{Entries: map[string][]string{"ports": {p.String()}},
			Why: "forwarded to the host's 127.0.0.1", Who: "corral port", Audit: map[string]any{"key": "ports"},
			Op: "port", Done: "added"}, now); err != nil {
			return res, err
		}
		res.Written = l.ProjectConfig(res.Box)
	}
	if _, err := boxmeta.Read(l, res.Box); errors.Is(err, boxmeta.ErrNotFound) {
		return res, nil // PortWhenCreated
	} else if err != nil {
		return res, err
	}
	res.Outcome = PortAtNextStart
	if st, err := lima.ReadInstanceDir(l.LimaHome(), res.Box); err == nil && boxstate.FromLima(st.Status) == boxstate.Running {
		res.Outcome = PortLive
	}
	return res, nil
}
