#!/bin/sh
# The git shadow (PARAM_GIT_SHADOW, PARAM_GIT_SHADOW_DIRS): an overlay over
# the project's git directories, so the box's git writes land on the box's
# disk, never in the host's .git. The mount itself is
# /usr/local/lib/corral/git-shadow (guest/corral-git-shadow.sh, written by
# the first provision script, guest.Installer) run by a systemd unit, so corral-launch can
# check it is active. Runs after the project mount exists (Lima mounts
# before provisioning); the unit orders itself after remote-fs.target for
# later boots. With source = "clone" (45-clone.sh) the project is the box's
# own clone and there is nothing to shadow.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/44-git-shadow.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

umask 022
# quote VALUE: VALUE as one single-quoted shell word (the env file is
# sourced; a project path may hold spaces or quotes).
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
{
	printf 'GIT_SHADOW=%s\n' "$(quote "${PARAM_GIT_SHADOW:-on}")"
	printf 'PROJECT=%s\n' "$(quote "${PARAM_PROJECT:-}")"
	printf 'SOURCE=%s\n' "$(quote "${PARAM_SOURCE:-mount}")"
	printf 'GIT_SHADOW_DIRS=%s\n' "$(quote "${PARAM_GIT_SHADOW_DIRS:-}")"
} >/etc/corral/git-shadow.env

/usr/local/lib/corral/unit corral-git-shadow "corral git shadow (the box's git writes stay on its disk)" \
	"local-fs.target remote-fs.target" /usr/local/lib/corral/git-shadow
