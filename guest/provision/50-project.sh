#!/bin/sh
# Project paths: hide (PARAM_HIDE) covers paths with an empty read-only
# tmpfs; box_dirs (PARAM_BOX_DIRS) bind-mounts box-local directories over
# project paths. /usr/local/lib/corral/apply-project (guest/apply-project.sh)
# does both from a systemd unit, so corral-launch can check them.
# Runs after the project mount exists (Lima mounts before provisioning).
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/50-project.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

umask 022
etc=${CORRAL_ETC:-/etc/corral}
# quote VALUE: VALUE as one single-quoted shell word. The env file is
# sourced as root; its values are config (a repository may add hide and
# box_dirs entries) and the project path, which may hold spaces or quotes.
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
{
	printf 'PROJECT=%s\n' "$(quote "${PARAM_PROJECT:-}")"
	printf 'HIDE=%s\n' "$(quote "${PARAM_HIDE:-}")"
	printf 'BOX_DIRS=%s\n' "$(quote "${PARAM_BOX_DIRS:-}")"
} >"$etc/project.env"

/usr/local/lib/corral/unit corral-project "corral project paths (hide, box_dirs)" "local-fs.target remote-fs.target" /usr/local/lib/corral/apply-project
