#!/bin/sh
# Debian packages from the packages key (space-separated in PARAM_PACKAGES).
# Runs before the network funnel is applied so a golden build can reach the
# package mirror through the broker (see 40-network.sh).
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/10-packages.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

pkgs=${PARAM_PACKAGES:-}
[ -n "$pkgs" ] || exit 0

missing=
for p in $pkgs; do
	name=${p%%=*}
	dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

export DEBIAN_FRONTEND=noninteractive
# apt waits for a first-boot apt run's dpkg lock (05-require.sh's
# DPkg::Lock::Timeout); update is tried 3 times, 10 s apart (its lists
# lock, a mirror's hiccup). CORRAL_APT_RETRY_SLEEP: tests.
tries=1
until apt-get update -q; do
	if [ "$tries" -ge 3 ]; then
		echo "corral: apt-get update failed 3 times; cannot install$missing" >&2
		exit 1
	fi
	tries=$((tries + 1))
	pause=${CORRAL_APT_RETRY_SLEEP:-10}
	[ "$pause" = 0 ] || sleep "$pause"
done
# shellcheck disable=SC2086 # word splitting is the list
apt-get install -y --no-install-recommends -- $missing
