#!/bin/bash
# build-deb.sh: build $DIST/corral_<version>_<arch>.deb from `make install DESTDIR=<staging> PREFIX=/usr`
# and packaging/deb/control.in. `make deb` runs it from the repository root.
#
# Environment (all optional):
#   VERSION  build version (default: git describe). The Debian version is derived from it:
#            a leading "v" is dropped, "-" becomes "+", and a version that does not start with
#            N.N becomes 0.0.0~git<version> (so v1.2.3-4-gabc -> 1.2.3+4+gabc, 4ae58b8 -> 0.0.0~git4ae58b8).
#   COMMIT   commit (default: git rev-parse --short HEAD)
#   DIST     output directory (default: dist)
#   MAKE     make command (default: make); command-line variables such as BIN reach it through MAKEFLAGS
#
# Prints the path of the .deb. Needs dpkg-deb (package dpkg) and gzip; no root needed
# (--root-owner-group makes every file root:root).
set -euo pipefail

die() {
	printf 'build-deb: %s\n' "$*" >&2
	exit 1
}

cd "$(dirname "$0")/../.."
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (apt-get install dpkg)"
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DIST=${DIST:-dist}
MAKE=${MAKE:-make}

arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
# control.in depends on qemu-system-x86 and setup-lima.sh builds the x86_64 guest agent only.
[ "$arch" = amd64 ] || die "only amd64 packages are built for now (this machine is $arch)"

debver=${VERSION#v}
debver=${debver//-/+}
# A tag looks like 1.2 or 1.2.3; anything else (a bare commit hash may start with a digit) sorts
# below every release.
[[ $debver =~ ^[0-9]+\.[0-9] ]] || debver=0.0.0~git$debver
# Debian versions may only hold these characters (deb-version(7)).
[[ $debver =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "cannot make a Debian version from '$VERSION' (got '$debver')"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
"$MAKE" --no-print-directory install DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc \
	VERSION="$VERSION" COMMIT="$COMMIT" >&2

# Debian policy: man pages compressed with gzip -9n (no name or timestamp: reproducible).
gzip -9n "$stage"/usr/share/man/man1/*.1

install -d -m 0755 "$stage/DEBIAN"
size=$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$debver/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" \
	packaging/deb/control.in >"$stage/DEBIAN/control"
# Everything under /etc must be a conffile, so an admin's edit (e.g. Hidden=true to turn autostart
# off for everyone) survives upgrades.
(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >"$stage/DEBIAN/conffiles"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles"

mkdir -p "$DIST"
deb=$DIST/corral_${debver}_${arch}.deb
dpkg-deb --root-owner-group --build "$stage" "$deb" >&2
printf '%s\n' "$deb"
