// Package e2e holds corral's end-to-end tests on real Lima VMs. They are
// built with the e2e tag and run by packaging/ci/e2e.sh as an unprivileged
// user inside a network namespace that has only loopback.
package e2e
