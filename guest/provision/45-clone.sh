#!/bin/sh
# source = "clone" (PARAM_SOURCE): the box's own copy of the repository at
# PARAM_PROJECT, on the box's disk, made once at the first boot from the
# bundle the host left in the box's read-only seed share. The host work
# tree is never mounted; `corral pull` brings commits back.
# Order: before 50-project.sh (hide and box_dirs apply to the clone) and
# before the repository's own provision scripts (they run from it).
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/45-clone.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

[ "${PARAM_SOURCE:-mount}" = clone ] || exit 0
project=${PARAM_PROJECT:?the project path (param PROJECT) is missing}
user=${PARAM_USER:?the Lima user name (param USER) is missing}
bundle=/corral/seed/repo.bundle

if [ ! -d "$project" ]; then
	install -d -m 0755 "$project"
	chown "$user:" "$project"
fi
[ -e "$project/.git" ] && exit 0
if [ -n "$(ls -A "$project")" ]; then
	echo "corral: $project has files but no repository; not cloning over them" >&2
	exit 0
fi
if [ -f "$bundle" ]; then
	runuser -u "$user" -- git clone -q "$bundle" "$project"
	# The bundle is gone after the first boot: no remote points at it.
	runuser -u "$user" -- git -C "$project" remote remove origin
else
	# The host repository had no commit yet.
	runuser -u "$user" -- git init -q "$project"
fi
