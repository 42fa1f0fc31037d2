#!/bin/sh
# Debian packages from the packages key (space-separated in PARAM_PACKAGES).
# Runs before the network funnel is applied so a golden build can reach the
# package mirror through the broker (see 40-network.sh).
set -eu

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
