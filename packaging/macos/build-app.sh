#!/bin/bash
# build-app.sh: build Corral.app, a universal (arm64 + x86_64) menu-bar app bundle, and sign it.
# macOS only (cgo against the macOS SDK, lipo, iconutil, codesign); `make app` runs it.
#
# Environment (all optional):
#   VERSION               build version (default: git describe). The binary gets it verbatim (corral version);
#                         Info.plist gets its leading numeric part, e.g. v1.2.3-4-gabc -> 1.2.3 (0.0.0 if none).
#   COMMIT                commit (default: git rev-parse --short HEAD)
#   GO_LDFLAGS            go build -ldflags (default: the Makefile's LDFLAGS for VERSION and COMMIT)
#   DIST                  output directory (default: dist); the bundle is $DIST/Corral.app
#   GO                    go command (default: go)
#   CORRAL_SIGN_IDENTITY  codesign identity, e.g. "Developer ID Application: Example Org (TEAMID1234)".
#                         Unset: ad-hoc signature ("-") with the bundle id as identifier: enough to run on
#                         this Mac and for notifications, not for Gatekeeper on other Macs.
#                         Set: hardened runtime, secure timestamp and packaging/macos/corral.entitlements,
#                         as notarization (notarize.sh) requires.
#   MACOSX_DEPLOYMENT_TARGET  default 13.0, the Info.plist LSMinimumSystemVersion
#
# Layout produced:
#   Corral.app/Contents/Info.plist              from ./Info.plist, version filled in
#   Corral.app/Contents/PkgInfo
#   Corral.app/Contents/MacOS/corral            universal binary: the CLI, and with no arguments the app
#   Corral.app/Contents/MacOS/corral-guest-conn universal binary qemu runs per guest connection (core/guestconn;
#                                               corral finds it beside itself)
#   Corral.app/Contents/Resources/Corral.icns   from an .iconset drawn by cmd/genassets
#
# Written for the bash 3.2 that macOS ships: no mapfile, no associative arrays.
set -euo pipefail

die() {
	printf 'build-app: %s\n' "$*" >&2
	exit 1
}
log() { printf 'build-app: %s\n' "$*" >&2; }

if [ "$(uname -s)" != Darwin ]; then
	die "Corral.app can only be built on macOS (needs cgo with the macOS SDK, lipo, iconutil and codesign); on Linux use 'make build' or 'make deb'"
fi

cd "$(dirname "$0")/../.."
GO=${GO:-go}
for tool in "$GO" lipo iconutil codesign plutil xcrun; do
	command -v "$tool" >/dev/null || die "$tool not found; install the Xcode command line tools (xcode-select --install) and Go"
done

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
GO_LDFLAGS=${GO_LDFLAGS:-"-s -w -X github.com/corral-dev/corral/core/version.Version=$VERSION -X github.com/corral-dev/corral/core/version.Commit=$COMMIT"}
DIST=${DIST:-dist}
export MACOSX_DEPLOYMENT_TARGET=${MACOSX_DEPLOYMENT_TARGET:-13.0}

# CFBundleShortVersionString and CFBundleVersion must be up to three dot-separated integers.
if [[ $VERSION =~ ^v?([0-9]+(\.[0-9]+){0,2}) ]]; then
	plist_version=${BASH_REMATCH[1]}
else
	plist_version=0.0.0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sdk=$(xcrun --sdk macosx --show-sdk-path)
for arch in arm64 amd64; do
	case $arch in
	arm64) carch=arm64 ;;
	amd64) carch=x86_64 ;;
	esac
	log "building darwin/$arch (cgo, macOS >= $MACOSX_DEPLOYMENT_TARGET)"
	CGO_ENABLED=1 GOOS=darwin GOARCH=$arch \
		CC="$(xcrun --sdk macosx --find clang) -arch $carch -isysroot $sdk" \
		CGO_CFLAGS="-mmacosx-version-min=$MACOSX_DEPLOYMENT_TARGET" \
		CGO_LDFLAGS="-mmacosx-version-min=$MACOSX_DEPLOYMENT_TARGET" \
		"$GO" build -trimpath -ldflags "$GO_LDFLAGS" -o "$tmp/corral-$arch" ./cmd/corral
	CGO_ENABLED=0 GOOS=darwin GOARCH=$arch "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/corral-guest-conn-$arch" ./cmd/corral-guest-conn
done
for b in corral corral-guest-conn; do
	lipo -create -output "$tmp/$b" "$tmp/$b-arm64" "$tmp/$b-amd64"
	lipo -verify_arch arm64 x86_64 "$tmp/$b" || die "lipo output for $b lacks an architecture"
done

log "drawing the icon"
"$GO" run ./cmd/genassets -out "$tmp/png" -iconset "$tmp/Corral.iconset"
iconutil -c icns -o "$tmp/Corral.icns" "$tmp/Corral.iconset"

app=$DIST/Corral.app
log "assembling $app"
rm -rf "$app"
mkdir -p "$app/Contents/MacOS" "$app/Contents/Resources"
install -m 0755 "$tmp/corral" "$app/Contents/MacOS/corral"
install -m 0755 "$tmp/corral-guest-conn" "$app/Contents/MacOS/corral-guest-conn"
install -m 0644 "$tmp/Corral.icns" "$app/Contents/Resources/Corral.icns"
install -m 0644 Info.plist "$app/Contents/Info.plist"
printf 'APPL????' >"$app/Contents/PkgInfo"
plutil -replace CFBundleShortVersionString -string "$plist_version" "$app/Contents/Info.plist"
plutil -replace CFBundleVersion -string "$plist_version" "$app/Contents/Info.plist"
plutil -lint "$app/Contents/Info.plist" >/dev/null || die "Info.plist is not valid after filling in the version"
if grep -q '@VERSION@' "$app/Contents/Info.plist"; then
	die "Info.plist still has a @VERSION@ placeholder"
fi

# Sign the bundle, not just the binary: Go's linker signature (Identifier=corral, Info.plist not bound) is
# not enough for UNUserNotificationCenter, which wants the bundle id as signing identifier.
bundle_id=$(plutil -extract CFBundleIdentifier raw "$app/Contents/Info.plist")
if [ -n "${CORRAL_SIGN_IDENTITY:-}" ]; then
	log "signing with '$CORRAL_SIGN_IDENTITY' (hardened runtime)"
	# Nested code first: the bundle's signature seals the helper's, and
	# notarization wants every executable signed with the hardened runtime.
	codesign --force --options runtime --timestamp \
		--identifier "$bundle_id.guest-conn" --sign "$CORRAL_SIGN_IDENTITY" "$app/Contents/MacOS/corral-guest-conn"
	codesign --force --options runtime --timestamp \
		--entitlements packaging/macos/corral.entitlements \
		--identifier "$bundle_id" --sign "$CORRAL_SIGN_IDENTITY" "$app"
else
	log "signing ad hoc (set CORRAL_SIGN_IDENTITY for a Developer ID signature)"
	codesign --force --deep --identifier "$bundle_id" --sign - "$app"
fi
codesign --verify --deep --strict "$app" || die "codesign could not verify $app"
codesign --display --verbose=2 "$app" 2>&1 | grep -E '^(Identifier|Format|Signature|TeamIdentifier|Info.plist)=' >&2 || true

log "built $app (version $VERSION, bundle version $plist_version)"
printf '%s\n' "$app"
