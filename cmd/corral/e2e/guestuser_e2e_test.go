//go:build e2e

package e2e

import (
	"os/user"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/limayaml"
)

// guestUserIsLimas checks, in a running box, that the guest user is the
// one the template names (limayaml.GuestUser of the host user, which is
// what Lima makes): the session runs as it, and the sudoers rules
// 41-sudo.sh wrote name it (sudo -n -l lists rules without a password only
// for a user that has NOPASSWD rules). The host user of the e2e suite is a
// valid Linux name (corral-e2e); a name Linux refuses needs another host
// account, so that case is covered at the render level
// (core/limayaml TestProvisionNamesLimasGuestUser).
func guestUserIsLimas(t *testing.T, x *h) {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	want := limayaml.GuestUser(u.Username)
	if got := strings.TrimSpace(x.ok("run", "--", "id", "-un")); got != want {
		t.Errorf("the session runs as %q, want %q (host user %q)", got, want, u.Username)
	}
	if _, errOut, code := x.corral("run", "--", "sudo", "-n", "-l"); code != 0 {
		t.Errorf("sudo -n -l in the box exited %d: the sudoers rules do not name the guest user: %s", code, errOut)
	}
}
