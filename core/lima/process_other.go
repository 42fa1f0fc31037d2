//go:build !unix

package lima

// processAlive cannot check without signals here; a pid file is taken at its word.
func processAlive(pid int) bool { return pid > 0 }
