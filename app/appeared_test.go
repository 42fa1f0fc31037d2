package app

import (
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/gitwatch"
	"github.com/corral-dev/corral/core/paths"
)

// TestAppearedText: a repository entry the watch saw is a warning naming
// the path (escaped), not a revert.
func TestAppearedText(t *testing.T) {
	title, body := gitRevertText(GitRevert{Box: "web-1", Project: "/p", Appeared: []string{"/p/a/.git", "/p/\x1b[31m/.GIT", "/p/c/.git", "/p/d/.git"}})
	if title != "A repository appeared in box web-1's project" ||
		body != `/p/a/.git; /p/\x1b[31m/.GIT; /p/c/.git; and 1 more (corral ls). Git run there (your editor's too) would use its config: remove it if you did not make it.` {
		t.Errorf("title %q body %q", title, body)
	}
}

// TestAppearedOnce: the backend reports each recorded entry once.
func TestAppearedOnce(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "web-1", Project: "/p", VMType: config.VMTypeVZ, Network: config.NetworkBroker}); err != nil {
		t.Fatal(err)
	}
	b := &coreBackend{svc: &box.Service{Layout: l}}
	if got := b.appeared(); len(got) != 0 {
		t.Fatalf("nothing recorded: %v", got)
	}
	if err := gitwatch.Add(l, "web-1", gitwatch.Seen{Path: "/p/x/.git"}); err != nil {
		t.Fatal(err)
	}
	if got := b.appeared(); len(got) != 1 || got[0].Box != "web-1" || len(got[0].Appeared) != 1 {
		t.Fatalf("first read: %+v", got)
	}
	if got := b.appeared(); len(got) != 0 {
		t.Errorf("reported twice: %+v", got)
	}
}
