package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/gitwatch"
	"github.com/corral-dev/corral/core/paths"
)

// watchesGitNames decides whether a box's broker watches its work tree
// for .git entries (core/gitwatch): wherever the host cannot refuse them
// (core/namerule runs only for qemu on Linux, and not with git_shadow =
// false), for a project that is shared (a clone lives on the box's disk).
func watchesGitNames(m boxmeta.Meta, goos string) bool {
	if m.Project == "" || m.Source == config.SourceClone {
		return false
	}
	hostRefuses := goos == "linux" && m.VMType == config.VMTypeQEMU && !m.GitShadowOff
	return !hostRefuses
}

// watchGitNames reports each .git or HEAD entry that appears in the
// project while the broker runs: a warning in the broker's log and a
// nested-git audit line, and the box's record (gitwatch.Add) that corral
// ls and the app's notification read.
func watchGitNames(ctx context.Context, l paths.Layout, m boxmeta.Meta, record func(audit.Event) error, logger *slog.Logger) {
	_ = gitwatch.Watch(ctx, gitwatch.Options{Root: m.Project, Logger: logger, Found: func(f gitwatch.Found) {
		// The box's record is what ls and the app show; the audit line
		// is the evidence.
		if err := gitwatch.Add(l, m.Name, gitwatch.Seen{Path: f.Path, Kind: f.Kind, Time: time.Now().UTC()}); err != nil {
			logger.Warn("recording a repository entry", "box", m.Name, "err", err)
		}
		logger.Warn("a repository entry appeared in the work tree: host git run there would use its config", "box", m.Name, "path", f.Path, "kind", f.Kind)
		_ = record(audit.Event{Kind: audit.KindNestedGit, Box: m.Name, Fields: map[string]any{
			"paths": []string{f.Path}, "kind": f.Kind, "source": "watch",
		}})
	}})
}
