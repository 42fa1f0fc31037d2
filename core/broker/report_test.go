package broker

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// TestEgressReportOfANewBox: the current project's box, before it has a
// log, reports its allow-list and no traffic; a session it never had is
// an error with a hint.
func TestEgressReportOfANewBox(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	p, err := project.Resolve(dir, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	o := ReportOptions{Dir: dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}, Now: time.Now()}
	rep, err := EgressReport(l, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Box != p.Box || len(rep.Entries) != 0 || len(rep.Denials) != 0 || rep.ConfigErr != nil || len(rep.Rules) == 0 {
		t.Errorf("report %+v", rep)
	}
	o.Session = "s-1"
	if _, err := EgressReport(l, o); err == nil || hint.Of(err) == "" {
		t.Errorf("unknown session: %v", err)
	}
	o.Session, o.Box = "", "nosuch-1"
	if _, err := EgressReport(l, o); err == nil {
		t.Error("a box that does not exist was reported")
	}
}
