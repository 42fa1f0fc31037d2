#!/bin/bash
# make-dmg.sh: pack dist/Corral.app (from build-app.sh) into a compressed disk image with an
# /Applications link, the file the Homebrew cask downloads. macOS only (hdiutil); `make dmg` runs it.
#
# Environment (all optional):
#   DIST                  directory holding Corral.app, and where the image goes (default: dist)
#   DMG                   output path (default: $DIST/Corral-<CFBundleShortVersionString>.dmg)
#   CORRAL_SIGN_IDENTITY  when set, the image is signed with it too (notarize.sh wants a signed image)
#
# Prints the image's path and its sha256 (the cask's sha256 field).
set -euo pipefail

die() {
	printf 'make-dmg: %s\n' "$*" >&2
	exit 1
}

if [ "$(uname -s)" != Darwin ]; then
	die "disk images can only be made on macOS (hdiutil)"
fi
cd "$(dirname "$0")/../.."
DIST=${DIST:-dist}
app=$DIST/Corral.app
[ -d "$app" ] || die "$app not found; run 'make app' first"
for tool in hdiutil ditto plutil shasum; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

version=$(plutil -extract CFBundleShortVersionString raw "$app/Contents/Info.plist")
DMG=${DMG:-$DIST/Corral-$version.dmg}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# ditto keeps the bundle's signature, extended attributes and symlinks intact.
ditto "$app" "$stage/Corral.app"
ln -s /Applications "$stage/Applications"

rm -f "$DMG"
hdiutil create -quiet -volname Corral -srcfolder "$stage" -format UDZO -ov "$DMG"
if [ -n "${CORRAL_SIGN_IDENTITY:-}" ]; then
	codesign --force --timestamp --sign "$CORRAL_SIGN_IDENTITY" "$DMG"
fi
hdiutil verify -quiet "$DMG" || die "hdiutil could not verify $DMG"

printf '%s\n' "$DMG"
shasum -a 256 "$DMG" | cut -d' ' -f1
