#!/bin/sh
# npm-fetch.sh NAME[@VERSION] OUTDIR — fetch the pinned npm package NAME into OUTDIR
# (as OUTDIR/<file>.tgz, file named like core/pins Package.File) and print
# the tarball's path. The version and integrity hash come from
# core/pins/npm.txt; the tarball comes from the npm client's configured
# registry (`npm pack`, nothing installed, no registry named here) and is
# kept only when its SHA-512 equals the pinned one. A verified tarball
# already in OUTDIR is reused without asking npm. A NAME pinned at more
# than one version (Codex's platform builds) needs @VERSION. Needs npm, sha512sum,
# base64 and od.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
PINS=${PINS:-$here/../../core/pins/npm.txt}
name=${1:?usage: npm-fetch.sh NAME[@VERSION] OUTDIR}
out=${2:?usage: npm-fetch.sh NAME[@VERSION] OUTDIR}
want_version=
case $name in
?*@*)
	want_version=${name##*@}
	name=${name%@*}
	;;
esac

log() { printf 'npm-fetch: %s\n' "$*" >&2; }

# shellcheck disable=SC2016 # awk program
line=$(awk -v n="$name" -v v="$want_version" '$1 == n && NF == 3 && (v == "" || $2 == v) { print $2, $3 }' "$PINS")
case $line in
*"
"*)
	log "$name is pinned at more than one version in $PINS; name one ($name@VERSION)"
	exit 1
	;;
esac
if [ -z "$line" ]; then
	log "$name is not pinned in $PINS"
	exit 1
fi
version=${line%% *}
integrity=${line#* }
case $integrity in
sha512-*) ;;
*)
	log "$name: only sha512- integrity hashes are accepted"
	exit 1
	;;
esac
# The pinned hash in hex, as sha512sum prints it.
want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
file=$(printf '%s' "$name" | sed 's|^@||; s|/|-|g')-$version.tgz

verify() { [ -f "$1" ] && [ "$(sha512sum "$1" | cut -d' ' -f1)" = "$want" ]; }

mkdir -p "$out"
if verify "$out/$file"; then
	printf '%s\n' "$out/$file"
	exit 0
fi
tmp=$(mktemp -d "$out/.pack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "npm pack $name@$version"
(cd "$tmp" && npm pack --silent --pack-destination "$tmp" "$name@$version" >/dev/null)
got=$(find "$tmp" -maxdepth 1 -name '*.tgz' | head -n1)
if [ -z "$got" ] || ! verify "$got"; then
	log "$name@$version: the tarball does not match the pinned integrity hash; refusing it"
	exit 1
fi
mv -f "$got" "$out/$file"
printf '%s\n' "$out/$file"
