package opener

import "os"

// platformArgv uses "open -t" for regular files (config.toml and logs have
// no default application otherwise) and plain "open" for directories.
func platformArgv(path string) []string {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return []string{"/usr/bin/open", "-t", path}
	}
	return []string{"/usr/bin/open", path}
}
