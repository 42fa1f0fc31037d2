package box

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
)

// intake says where a received bundle came from and where it goes.
type intake struct {
	box  string     // the box whose branches these are
	kind audit.Kind // the audit record's kind
	// what names the operation in an error: "pulling from box web-1".
	what string
	// submoduleHint says what to do when commits bring submodules.
	submoduleHint string
	// fields are added to the audit record (the host, the branch).
	fields map[string]any
	opt    hostgit.FetchOptions
}

// takeBundle is the one way a bundle received from elsewhere enters a
// repository, whoever sent it: a box (corral pull), a remote host
// (corral --host pull) or another machine sending its project (corral
// project receive). hostgit.Fetch checks and fetches it (caps, the branch
// list, git bundle verify, the pack scan, the quarantine, submodules);
// the audit log records what came, or why it was refused. The caller
// received b (hostgit.ReceiveBundle) and removes it.
func takeBundle(ctx context.Context, record func(audit.Event), repo hostgit.Repo, b hostgit.Bundle, heads hostgit.Heads, in intake) (hostgit.Result, error) {
	res, err := repo.Fetch(ctx, b, heads, in.box, in.opt)
	if errors.Is(err, hostgit.ErrSubmodules) || errors.Is(err, hostgit.ErrBundle) {
		fields := map[string]any{"bundle_bytes": b.Size, "refused": display.Text(err.Error(), 300)}
		maps.Copy(fields, in.fields)
		record(audit.Event{Kind: in.kind, Box: in.box, Fields: fields})
	}
	if errors.Is(err, hostgit.ErrSubmodules) {
		return res, hint.New(fmt.Errorf("%s: %w", in.what, err), in.submoduleHint)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", in.what, err)
	}
	fields := map[string]any{
		"bundle_bytes": b.Size, "branches": len(b.Heads), "updated": len(res.Updates), "new_commits": res.NewCommits,
		"submodule_changes": len(res.Submodules),
	}
	maps.Copy(fields, in.fields)
	record(audit.Event{Kind: in.kind, Box: in.box, Fields: fields})
	return res, nil
}
