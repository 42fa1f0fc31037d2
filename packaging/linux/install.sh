#!/bin/bash
# install.sh: install corral and what it needs at run time on a Debian 12 host (run as root from a
# clone of the repository). The README's "install what corral needs" step.
#
#   1. apt packages corral runs: openssh-client (sessions), make (this install); qemu and Lima
#      come from step 2
#   2. packaging/linux/setup-lima.sh: qemu-system-x86, qemu-utils and limactl + guest agent 1.2.2
#   3. make install: corral, completions, man pages, desktop entry, icon and login autostart
#
# Environment (all optional):
#   PREFIX   install prefix for corral and limactl (default: /usr/local)
#   VERSION  passed to make (default: git describe)
# Idempotent: apt installs only what is missing, setup-lima.sh skips a Lima build it already has,
# and make install overwrites the same files.
# Needs Go (>= 1.24) on PATH or in /usr/local/go/bin to build corral and limactl.
set -euo pipefail

log() { printf 'install: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

export PREFIX=${PREFIX:-/usr/local}
[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get, $PREFIX, /etc/xdg/autostart)"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || die "go not found: install Go >= 1.24 (e.g. into /usr/local/go) and re-run"

missing=()
for p in openssh-client make; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt-get -o DPkg::Lock::Timeout=300 update -q
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
fi

"$here/setup-lima.sh"

make_args=(install PREFIX="$PREFIX")
[ -z "${VERSION:-}" ] || make_args+=(VERSION="$VERSION")
make -C "$root" --no-print-directory "${make_args[@]}"

"$PREFIX/bin/corral" version
log "installed corral into $PREFIX; start the panel app with 'corral app' (it also starts at login)"
log "for secrets from the keyring, a desktop session needs gnome-keyring (apt-get install gnome-keyring libsecret-tools)"
