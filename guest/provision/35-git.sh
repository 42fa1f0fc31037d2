#!/bin/sh
# Git in the box asks /usr/local/bin/corral-git-credential (written by
# the first provision script, guest.Installer) for https credentials; it
# answers from the session's CORRAL_GIT_TOKEN_* variables. Idempotent:
# --replace-all with a value pattern keeps exactly one entry across boots.
# Order: before 40-network.sh, which adds http.proxy to the same
# /etc/gitconfig with git config (it must never overwrite the file).
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/35-git.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

command -v git >/dev/null 2>&1 || exit 0
git config --system --replace-all credential.helper /usr/local/bin/corral-git-credential 'corral-git-credential'
