#!/bin/sh
# The programs corral's guest scripts run, installed from the image's own
# apt sources when the image lacks them, or the boot is refused naming the
# package. Runs at every boot (a no-op once everything is there), right
# after 00-base.sh and before every script that uses one of them:
#   nft      (nftables)   apply-network.sh, the corral-network unit, 41-sudo.sh's rule
#   tmux     (tmux)       corral-launch's detachable sessions
#   git      (git)        35-git.sh, 45-clone.sh, the git shadow
#   curl     (curl)       the claude agent's official installer
#   sudo, visudo (sudo)   41-sudo.sh
#   findmnt, mountpoint, runuser (util-linux)   mounts, the agent step
#   ca-certificates       TLS of every client in the box
# The offline test image (packaging/linux/build-image.sh) has them all; a
# cloud image may not. A golden build of a downloaded image has the
# network (core/box goldenTemplate); in broker mode apt goes through the
# broker (the apt proxy of 40-network.sh is not written yet at first boot);
# offline, nothing can be installed.
set -eu

missing=
need() { # need PACKAGE TEST...: PACKAGE is missing unless every TEST passes
	pkg=$1
	shift
	for t in "$@"; do
		case $t in
		/*) [ -e "$t" ] && continue ;;
		*) command -v "$t" >/dev/null 2>&1 && continue ;;
		esac
		case " $missing " in
		*" $pkg "*) ;;
		*) missing="${missing:+$missing }$pkg" ;;
		esac
		return 0
	done
}
need nftables nft
need tmux tmux
need git git
need curl curl
need sudo sudo visudo
need util-linux findmnt mountpoint runuser
need ca-certificates /etc/ssl/certs/ca-certificates.crt

# apt waits up to 5 minutes for the dpkg lock that a first-boot apt run
# may hold (cloud-init's package step, unattended-upgrades) instead of
# failing at once (DPkg::Lock::Timeout, apt 1.9.11 and later). The setting
# stays for 10-packages.sh and the box's own apt. CORRAL_APT_ETC: tests.
aptconf=${CORRAL_APT_ETC:-/etc/apt}/apt.conf.d
if [ -d "$aptconf" ]; then
	printf '// corral (guest/provision/05-require.sh): wait for a first-boot apt run\nDPkg::Lock::Timeout "300";\n' >"$aptconf/90corral-lock-wait"
fi
[ -n "$missing" ] || exit 0

refuse() {
	echo "corral: this image lacks $missing, which corral needs in every box, and $1." >&2
	echo "corral: use an image that has them (the default Ubuntu image, or one built with packaging/linux/build-image.sh), or give the golden build network to install them." >&2
	exit 1
}
command -v apt-get >/dev/null 2>&1 || refuse "it has no apt-get to install them"
# local_sources: every apt source of the image is a file: URI (a package
# source inside the image, as the offline test image has), so installing
# needs no network. The directory is the image's /etc/apt.
local_sources() {
	apt=${CORRAL_APT_ETC:-/etc/apt}
	uris=$(grep -hsE '^[[:space:]]*(deb[[:space:]]|URIs:)' "$apt/sources.list" "$apt"/sources.list.d/*.list "$apt"/sources.list.d/*.sources || true)
	[ -n "$uris" ] && ! printf '%s\n' "$uris" | grep -qv 'file:'
}
net=${PARAM_NETWORK:-broker}
if [ "$net" = offline ] && ! local_sources; then
	refuse "an offline box cannot install them"
fi
set --
if [ "$net" = broker ] && ! local_sources; then
	proxy="http://${PARAM_PROXY_HOST:-192.168.5.2}:${PARAM_PROXY_PORT:-0}"
	set -- -o "Acquire::http::Proxy=$proxy" -o "Acquire::https::Proxy=$proxy"
fi
echo "corral: installing $missing from the image's apt sources" >&2
export DEBIAN_FRONTEND=noninteractive
# update is tried 3 times, 10 s apart: the lock timeout does not cover
# its lists lock (held by a first-boot apt update), and a mirror may fail
# once. CORRAL_APT_RETRY_SLEEP: tests.
tries=1
until apt-get "$@" -q update >&2; do
	[ "$tries" -lt 3 ] || refuse "apt-get update failed 3 times (see above)"
	tries=$((tries + 1))
	pause=${CORRAL_APT_RETRY_SLEEP:-10}
	[ "$pause" = 0 ] || sleep "$pause"
done
# shellcheck disable=SC2086 # word splitting is the list
apt-get "$@" -q install -y --no-install-recommends -- $missing >&2 || refuse "apt-get install failed (see above)"
