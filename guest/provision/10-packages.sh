#!/bin/sh
# Debian packages from the packages key (space-separated in PARAM_PACKAGES).
# Runs before the network funnel is applied so a golden build can reach the
# package mirror through the broker (see 40-network.sh).
set -eu

# tmux runs corral's detachable sessions (corral-launch --tmux). The offline
# test image carries it; a golden build from a downloaded image installs it
# (golden builds of such images have network, see core/box goldenTemplate).
# Best effort, and only with network: a box cloned from an older golden
# image without tmux still boots, and corral-launch says what is missing.
if ! command -v tmux >/dev/null 2>&1 && [ "${PARAM_NETWORK:-}" = full ]; then
	if ! DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 ||
		! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends tmux >/dev/null 2>&1; then
		echo "corral: could not install tmux; detachable sessions are unavailable in this box" >&2
	fi
fi

pkgs=${PARAM_PACKAGES:-}
[ -n "$pkgs" ] || exit 0

missing=
for p in $pkgs; do
	name=${p%%=*}
	dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting is the list
apt-get update -q && apt-get install -y --no-install-recommends -- $missing
