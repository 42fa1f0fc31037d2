package limayaml

import "regexp"

// The guest user is the one Lima creates, and corral names it in the
// template's USER param (the provision scripts chown to it, run commands
// as it and write its sudoers rules). Lima derives it from the host user
// (Lima 2.2.0 pkg/osutil/user.go LimaUser; the same rule in 1.2.2):
//
//   - a name that does not match ^[a-z_][a-z0-9_-]*$ (useradd's rule,
//     without the trailing '$' it also allows) becomes "lima": a dot as
//     in john.doe (common on managed Macs), a capital, a leading digit,
//     anything non-ASCII, the empty name;
//   - "admin" is reserved (Lima 1.0 and later) and becomes "lima" too.
//
// Lima caps no length: a valid name longer than the guest's useradd
// allows (32 bytes) is passed on as it is, and so is it here.
var guestUserRe = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)

// FallbackGuestUser is the user Lima creates for a host user whose name
// is not a valid Linux user name.
const FallbackGuestUser = "lima"

// GuestUser is the guest user Lima creates for the host user hostUser.
func GuestUser(hostUser string) string {
	if !guestUserRe.MatchString(hostUser) || hostUser == "admin" {
		return FallbackGuestUser
	}
	return hostUser
}
