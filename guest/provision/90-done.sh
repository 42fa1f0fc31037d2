#!/bin/sh
# Last: the provisioning marker. corral waits for it and doctor checks it.
# Lima runs this even after an earlier script failed (it runs every script
# and only logs a failure), so the marker says provisioning ran, not that it
# succeeded: each step's own record (guest.ProvisionRecordDir) says that.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/90-done.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT
printf '%s\n' "${PARAM_TEMPLATE_HASH:-unknown}" >/etc/corral/provisioned
