#!/bin/bash
# setup-lima2.sh — build Lima 2.2.0 (limactl + Linux guest agent + templates) from the source tarball in
# packaging/third_party into its own prefix, beside the Lima 1.2.2 that setup-lima.sh installs (root):
#   PREFIX/bin/limactl
#   PREFIX/share/lima/lima-guestagent.Linux-x86_64
#   PREFIX/share/lima/templates/
# with PREFIX=${LIMA2_PREFIX:-/usr/local/lib/lima-2.2.0}. The e2e suite runs against it by putting PREFIX/bin
# first on PATH (packaging/ci/e2e.sh, CORRAL_E2E_LIMA). Idempotent: skipped when PREFIX/bin/limactl already
# reports the version. The module proxy refuses lima/v2 itself but serves its dependencies.
set -euo pipefail

LIMA2_VERSION=2.2.0
PREFIX=${LIMA2_PREFIX:-/usr/local/lib/lima-$LIMA2_VERSION}
SHA256=4945d1541b039ee8f332c78a669f8fe15b236e566e79f1798491b5062ba10f28
here=$(cd "$(dirname "$0")" && pwd)
tarball="$here/../third_party/lima-v$LIMA2_VERSION-src.tar.gz"
export PATH="$PATH:/usr/local/go/bin"

log() { printf 'setup-lima2: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root ($PREFIX)"
	exit 1
fi
# limactl refuses root even for --version: ask through the agent's file and the build's own record.
if [ -x "$PREFIX/bin/limactl" ] && [ -e "$PREFIX/share/lima/lima-guestagent.Linux-x86_64" ] &&
	[ -e "$PREFIX/share/lima/templates/default.yaml" ] &&
	[ "$(cat "$PREFIX/share/lima/corral-built-from" 2>/dev/null)" = "$SHA256" ]; then
	log "limactl $LIMA2_VERSION already installed in $PREFIX; skipping build"
	exit 0
fi
echo "$SHA256  $tarball" | sha256sum -c --quiet -
command -v go >/dev/null || {
	log "go not found (need Go >= 1.24 on PATH)"
	exit 1
}
t0=$(date +%s)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
tar -xzf "$tarball" -C "$build"
cd "$build/lima2"
ld="-s -w -X github.com/lima-vm/lima/v2/pkg/version.Version=v$LIMA2_VERSION"
log "building limactl $LIMA2_VERSION"
CGO_ENABLED=0 go build -trimpath -ldflags="$ld" -o "$build/limactl" ./cmd/limactl
log "building lima-guestagent $LIMA2_VERSION (linux/amd64, static)"
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="$ld" \
	-o "$build/lima-guestagent.Linux-x86_64" ./cmd/lima-guestagent
mkdir -p "$PREFIX/bin" "$PREFIX/share/lima"
install -m 0755 "$build/limactl" "$PREFIX/bin/limactl"
install -m 0755 "$build/lima-guestagent.Linux-x86_64" "$PREFIX/share/lima/lima-guestagent.Linux-x86_64"
rm -rf "$PREFIX/share/lima/templates"
cp -r templates "$PREFIX/share/lima/templates"
echo "$SHA256" >"$PREFIX/share/lima/corral-built-from"
chmod -R u+w,a+rX "$PREFIX"
log "TIMING build=$(($(date +%s) - t0))s"
