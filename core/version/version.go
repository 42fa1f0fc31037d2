// Package version reports corral's build: version, commit, and the Lima
// version it was tested with. Version and Commit are set with -ldflags -X.
package version

// Set by the build (Makefile: -X github.com/corral-dev/corral/core/version.Version=...).
var (
	Version = "dev"
	Commit  = "unknown"
)

// LimaTested is the Lima release corral's end-to-end tests run against.
const LimaTested = "1.2.2"

// LimaMinimum is the oldest Lima corral supports.
const LimaMinimum = "1.2.0"
