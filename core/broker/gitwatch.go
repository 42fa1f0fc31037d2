package broker

import (
	"context"
	"log/slog"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/gitwatch"
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
// nested-git audit line (the app notifies from it; doctor names it).
func watchGitNames(ctx context.Context, m boxmeta.Meta, record func(audit.Event) error, logger *slog.Logger) {
	_ = gitwatch.Watch(ctx, gitwatch.Options{Root: m.Project, Logger: logger, Found: func(f gitwatch.Found) {
		logger.Warn("a repository entry appeared in the work tree: host git run there would use its config", "box", m.Name, "path", f.Path, "kind", f.Kind)
		_ = record(audit.Event{Kind: audit.KindNestedGit, Box: m.Name, Fields: map[string]any{
			"paths": []string{f.Path}, "kind": f.Kind, "source": "watch",
		}})
	}})
}
