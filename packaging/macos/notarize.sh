#!/bin/bash
# notarize.sh: send a Developer ID signed Corral.app or Corral disk image to Apple's notary service,
# wait for the verdict, and staple the ticket. macOS only (xcrun notarytool, stapler).
#
# Release order (make release-mac): notarize and staple dist/Corral.app first, then build the image from
# the stapled app, then notarize and staple the image. Stapling only the image leaves the app inside it
# without a ticket: a Corral.app copied out of the DMG then needs Apple's servers to pass Gatekeeper.
#
# Arguments:
#   TARGET                 a .dmg or a .app (default: the newest $DIST/Corral-*.dmg)
# Environment:
#   CORRAL_NOTARY_PROFILE  required: a notarytool keychain profile, created once with
#                          xcrun notarytool store-credentials PROFILE --apple-id ID --team-id TEAM
#                          (the password stays in the login keychain, never in this repository)
#   DIST                   default: dist
set -euo pipefail

die() {
	printf 'notarize: %s\n' "$*" >&2
	exit 1
}
log() { printf 'notarize: %s\n' "$*" >&2; }

if [ "$(uname -s)" != Darwin ]; then
	die "notarization runs on macOS only (xcrun notarytool)"
fi
[ -n "${CORRAL_NOTARY_PROFILE:-}" ] ||
	die "set CORRAL_NOTARY_PROFILE to a notarytool keychain profile (xcrun notarytool store-credentials --help)"
cd "$(dirname "$0")/../.."
DIST=${DIST:-dist}

target=${1:-}
if [ -z "$target" ]; then
	# shellcheck disable=SC2012 # names are ours: Corral-<version>.dmg
	target=$(ls -t "$DIST"/Corral-*.dmg 2>/dev/null | head -n 1)
	[ -n "$target" ] || die "no $DIST/Corral-*.dmg; run 'make dmg' or pass a .dmg or .app"
fi
[ -e "$target" ] || die "$target not found"

# Notarization refuses ad-hoc signatures and code without the hardened runtime: fail here, not after the upload.
sig=$(codesign --display --verbose=2 "$target" 2>&1) || die "$target is not signed; build with CORRAL_SIGN_IDENTITY set"
case $sig in
*Signature=adhoc*) die "$target has an ad-hoc signature; rebuild with CORRAL_SIGN_IDENTITY set to a Developer ID" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $target in
*.app | *.app/)
	upload=$tmp/$(basename "$target").zip
	ditto -c -k --keepParent "$target" "$upload"
	;;
*.dmg) upload=$target ;;
*) die "$target: want a .app or a .dmg" ;;
esac

log "submitting $upload (this usually takes a few minutes)"
out=$(xcrun notarytool submit "$upload" --keychain-profile "$CORRAL_NOTARY_PROFILE" --wait --output-format plist)
printf '%s\n' "$out" >"$tmp/result.plist"
status=$(plutil -extract status raw "$tmp/result.plist" 2>/dev/null || echo unknown)
id=$(plutil -extract id raw "$tmp/result.plist" 2>/dev/null || echo unknown)
if [ "$status" != Accepted ]; then
	log "notarization status: $status (submission $id); Apple's log follows"
	xcrun notarytool log "$id" --keychain-profile "$CORRAL_NOTARY_PROFILE" >&2 || true
	exit 1
fi
log "accepted (submission $id); stapling"
xcrun stapler staple "$target"
xcrun stapler validate "$target"
case $target in
*.dmg) spctl --assess --type open --context context:primary-signature --verbose "$target" ;;
*) spctl --assess --type execute --verbose "$target" ;;
esac
