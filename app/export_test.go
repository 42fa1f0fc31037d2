package app

import "github.com/corral-dev/corral/core/box"

// NewCoreBackend is the app's Backend over svc, for tests that run the app
// over a real state directory.
func NewCoreBackend(svc *box.Service) Backend { return &coreBackend{svc: svc} }

// GitRevertText is the title and body of a git guard notification.
var GitRevertText = gitRevertText
