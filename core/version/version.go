// Package version reports corral's build: version, commit, and the Lima
// version it was tested with. Version and Commit are set with -ldflags -X.
package version

// Set by the build (Makefile: -X github.com/corral-dev/corral/core/version.Version=...).
var (
	Version = "dev"
	Commit  = "unknown"
)

// LimaTestedVersions are the Lima releases corral's end-to-end tests run
// against in CI: the whole suite on 2.2.0 (what Homebrew installs), a smoke
// run on 1.2.2 (the oldest supported release, which Linux setup installs).
var LimaTestedVersions = []string{"2.2.0", "1.2.2"}

// LimaTested says LimaTestedVersions in words.
const LimaTested = "2.2.0 and 1.2.2"

// LimaMinimum is the oldest Lima corral supports.
const LimaMinimum = "1.2.0"
