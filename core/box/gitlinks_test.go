package box

import (
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/gitshadow"
)

func TestGitlinkDrift(t *testing.T) {
	links := []gitshadow.Gitlink{
		{Path: "/p/sub", Kind: gitshadow.GitlinkPopulated, DotGit: "/p/sub/.git"},
		{Path: "/p/lib", Kind: gitshadow.GitlinkEmpty},
		{Path: "/p/new", Kind: gitshadow.GitlinkEmpty},
		{Path: "/p/rw", Kind: gitshadow.GitlinkPopulated, DotGit: "/p/rw/.git"},
		{Path: "/p/odd", Kind: gitshadow.GitlinkRefused, Why: "/p/odd is a symbolic link"},
	}
	mounts := map[string]bool{"/p/.git": true, "/p/sub/.git": true, "/p/lib": false, "/p/rw/.git": false}
	got := strings.Join(gitlinkDrift(links, mounts), "\n")
	for _, want := range []string{"/p/new is shared", "/p/rw/.git is writable", "/p/odd is a symbolic link"} {
		if !strings.Contains(got, want) {
			t.Errorf("drift lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"/p/sub", "/p/lib "} {
		if strings.Contains(got, not) {
			t.Errorf("drift names protected %q:\n%s", not, got)
		}
	}
	if d := gitlinkDrift(links[:2], mounts); len(d) != 0 {
		t.Errorf("protected paths drift: %q", d)
	}
}
