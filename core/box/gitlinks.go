package box

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/untrusted"
)

// GitlinkDrift lists the project's submodule paths that the running qemu
// of a box does not protect (see planGitlinks): a gitlink the user added,
// or a submodule the user initialized, after the box started. Only Linux
// qemu with the git shadow protects them on the host; elsewhere it returns
// nil. Each line says what is unprotected.
func (s *Service) GitlinkDrift(m boxmeta.Meta) []string {
	if runtime.GOOS != "linux" || m.VMType != config.VMTypeQEMU || m.GitShadowOff || m.Project == "" {
		return nil
	}
	pidFile := funnel.PIDFile(s.Layout.LimaHome(), m.Name)
	b, err := untrusted.ReadFile(pidFile, 64)
	if err != nil {
		return nil // not running: the next start plans afresh
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil
	}
	mi, err := untrusted.ReadFile("/proc/"+strconv.Itoa(pid)+"/mountinfo", 16<<20)
	if err != nil {
		return nil
	}
	d, err := gitshadow.Find(m.Project)
	if err != nil {
		return []string{fmt.Sprintf("cannot read the project's repository: %v", err)}
	}
	links, err := d.Gitlinks()
	if err != nil {
		return []string{fmt.Sprintf("cannot read the project's submodules: %v", err)}
	}
	return gitlinkDrift(links, qemu.MountPoints(string(mi)))
}

// gitlinkDrift compares gitlinks with the mount points of qemu's
// namespace (point -> read-only).
func gitlinkDrift(links []gitshadow.Gitlink, mounts map[string]bool) []string {
	var out []string
	for _, g := range links {
		switch g.Kind {
		case gitshadow.GitlinkPopulated:
			if ro, ok := mounts[g.DotGit]; !ok || !ro {
				out = append(out, g.DotGit+" is writable by the box (the submodule was initialized after the box started)")
			}
		case gitshadow.GitlinkEmpty:
			if _, ok := mounts[g.Path]; !ok {
				out = append(out, g.Path+" is shared with the box (the submodule path was added after the box started)")
			}
		default:
			out = append(out, g.Path+": "+g.Why)
		}
	}
	return out
}

// warnGitlinkDrift prints GitlinkDrift's lines, with what to do, to w.
func (s *Service) warnGitlinkDrift(m boxmeta.Meta, w io.Writer) {
	lines := s.GitlinkDrift(m)
	if len(lines) == 0 || w == nil {
		return
	}
	fmt.Fprintf(w, "corral: box %s: the project's submodules changed since the box started; the host's git would enter a repository the box can write:\n", m.Name)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", display.Text(l, 512))
	}
	fmt.Fprintf(w, "hint: restart the box so it protects them (corral stop %s && corral up); until then do not run git in the project on the host\n", m.Name)
}
