package launchenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/corral-dev/corral/core/hostbin"
	"github.com/corral-dev/corral/core/secret"
)

// RunFunc runs a host command and returns its standard output. A command
// that is not installed returns an error matching exec.ErrNotFound.
type RunFunc func(ctx context.Context, dir, name string, args ...string) ([]byte, error)

// runHost runs a host command, found by hostbin.Find (PATH, then the
// Homebrew and MacPorts prefixes: the app started by Finder has neither on
// PATH), with no stdin, bounded by lookupTimeout. Its stderr is dropped: gh and glab print status there, and stdout may hold a
// token, so neither is ever logged.
func runHost(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	path, err := hostbin.Find(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running %s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.Bytes(), nil
}

// HostGitConfig reads git config on the host with `git config --get KEY`,
// run in dir (the project, so that includeIf and the repository's own
// identity apply as they would on the host). When that fails for another
// reason than an unset key (say git refuses the directory), it retries
// outside dir. An unset key or a missing git gives "" and no error.
func HostGitConfig(dir string) GitConfigFunc {
	return gitConfig(runHost, dir)
}

func gitConfig(run RunFunc, dir string) GitConfigFunc {
	return func(ctx context.Context, key string) (string, error) {
		out, err := run(ctx, dir, "git", "config", "--get", key)
		if err != nil && dir != "" && !unsetKey(err) && !errors.Is(err, exec.ErrNotFound) {
			out, err = run(ctx, "", "git", "config", "--get", key)
		}
		switch {
		case err == nil:
			return strings.TrimRight(string(out), "\r\n"), nil
		case unsetKey(err), errors.Is(err, exec.ErrNotFound):
			return "", nil
		}
		return "", err
	}
}

// unsetKey reports git config's exit status 1: the key is not set.
func unsetKey(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

// HostGitTokens finds the token of a git host on the host machine: first
// the keychain item service "corral-git" account HOST, then
// `gh auth token --hostname HOST`, then `glab config get token --host
// HOST`, each CLI only when it is installed.
type HostGitTokens struct {
	Store secret.Store
	// Run runs gh and glab; nil runs them from PATH.
	Run RunFunc
}

// Token implements GitTokenFunc.
func (h HostGitTokens) Token(ctx context.Context, host string) (value, from string, err error) {
	var storeErr error
	if h.Store != nil {
		v, err := h.Store.Get(ctx, GitTokenService, host)
		switch {
		case err == nil && v != "":
			return v, fmt.Sprintf("keychain service %q account %q", GitTokenService, host), nil
		case err != nil && !errors.Is(err, secret.ErrNotFound):
			// An unusable keychain is not the end: gh may still have one.
			storeErr = err
		}
	}
	run := h.Run
	if run == nil {
		run = runHost
	}
	for _, c := range [][]string{
		{"gh", "auth", "token", "--hostname", host},
		{"glab", "config", "get", "token", "--host", host},
	} {
		out, err := run(ctx, "", c[0], c[1:]...)
		if err != nil {
			continue // not installed, or not logged in to host
		}
		if v := strings.TrimSpace(string(out)); v != "" {
			return v, c[0], nil
		}
	}
	if storeErr != nil {
		return "", "", fmt.Errorf("no token for host %q (keychain: %w)", host, storeErr)
	}
	return "", "", fmt.Errorf("no token for host %q in the keychain (service %q account %q), gh or glab", host, GitTokenService, host)
}
