#!/bin/bash
# setup-lima.sh — install what corral needs to run real Lima VMs on a Debian 12 host (root).
#
# Installs QEMU and the image-building tools with apt, then builds limactl and the Linux guest
# agent of Lima 1.2.2 from the Go module proxy into ${PREFIX:-/usr/local}:
#   PREFIX/bin/limactl
#   PREFIX/share/lima/lima-guestagent.Linux-x86_64
#   PREFIX/share/lima/templates/      (limactl refuses to run, even `limactl info`, without it)
# Idempotent: the Go build is skipped when PREFIX/bin/limactl already reports the pinned version.
# The Go build uses the normal Go build and module caches, so a rebuild after a cache hit is fast.
#
# Why a scratch module: `go install github.com/lima-vm/lima/cmd/limactl@VERSION` asks the proxy for
# the module's version list (deprecation check), which is refused here; `go get` + `go build` is not.
set -euo pipefail

LIMA_VERSION=${LIMA_VERSION:-1.2.2}
PREFIX=${PREFIX:-/usr/local}
export PATH="$PATH:/usr/local/go/bin"

log() { printf 'setup-lima: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (apt-get, $PREFIX)"
	exit 1
fi

apt_install() {
	# Another apt run may hold the dpkg lock (e.g. a CI step running in parallel): wait for it.
	local tries=0
	until DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "$@"; do
		tries=$((tries + 1))
		[ "$tries" -lt 3 ] || return 1
		log "apt-get install failed, updating lists and retrying ($tries)"
		apt-get -o DPkg::Lock::Timeout=300 update -q
	done
}

t0=$(date +%s)
pkgs=(qemu-system-x86 qemu-utils debootstrap e2fsprogs zstd xz-utils openssh-client iproute2 util-linux ca-certificates)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt-get -o DPkg::Lock::Timeout=300 update -q
	apt_install "${missing[@]}"
fi
t1=$(date +%s)

have=$("$PREFIX/bin/limactl" --version 2>/dev/null || true)
if [ "$have" = "limactl version $LIMA_VERSION" ] &&
	[ -e "$PREFIX/share/lima/lima-guestagent.Linux-x86_64" ] &&
	[ -e "$PREFIX/share/lima/templates/default.yaml" ]; then
	log "limactl $LIMA_VERSION already installed in $PREFIX; skipping build"
else
	command -v go >/dev/null || {
		log "go not found (need Go >= 1.24 on PATH)"
		exit 1
	}
	build=$(mktemp -d)
	trap 'rm -rf "$build"' EXIT
	cd "$build"
	printf 'module corral.example.test/limabuild\n\ngo 1.24\n' >go.mod
	cat >tools.go <<'GO'
//go:build tools

// Package tools pins the Lima commands this scratch module builds.
package tools

import (
	_ "github.com/lima-vm/lima/cmd/lima-guestagent"
	_ "github.com/lima-vm/lima/cmd/limactl"
)
GO
	export GOFLAGS=-mod=mod
	go get "github.com/lima-vm/lima@v$LIMA_VERSION"
	go mod tidy
	ld="-s -w -X github.com/lima-vm/lima/pkg/version.Version=$LIMA_VERSION"
	mkdir -p "$PREFIX/bin" "$PREFIX/share/lima"
	log "building limactl $LIMA_VERSION"
	go build -trimpath -ldflags="$ld" -o "$build/limactl" github.com/lima-vm/lima/cmd/limactl
	log "building lima-guestagent $LIMA_VERSION (linux/amd64, static)"
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="$ld" \
		-o "$build/lima-guestagent.Linux-x86_64" github.com/lima-vm/lima/cmd/lima-guestagent
	moddir=$(go list -m -f '{{.Dir}}' github.com/lima-vm/lima)
	install -m 0755 "$build/limactl" "$PREFIX/bin/limactl"
	install -m 0755 "$build/lima-guestagent.Linux-x86_64" "$PREFIX/share/lima/lima-guestagent.Linux-x86_64"
	rm -rf "$PREFIX/share/lima/templates"
	cp -r "$moddir/templates" "$PREFIX/share/lima/templates"
	chmod -R u+w,a+rX "$PREFIX/share/lima"
fi
t2=$(date +%s)

"$PREFIX/bin/limactl" --version
log "TIMING apt=$((t1 - t0))s limactl=$((t2 - t1))s total=$((t2 - t0))s"
