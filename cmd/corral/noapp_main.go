//go:build corral_noapp

package main

import "github.com/corral-dev/corral/cmd/corral/cli"

// appMain is nil in a CLI-only build: `corral app` says this build has no
// menu-bar app (app_main.go says why such a build exists).
var appMain cli.AppFunc
