#!/usr/bin/env bash
# Type-check every package for darwin/arm64 and darwin/amd64 on a Linux
# machine (cgo faked: catches Go-level API mistakes against systray,
# darwinkit and go-keychain, not C or Objective-C mistakes), then vet and
# build for darwin the packages whose import graph has no cgo. The shipped
# darwin binary still needs a Mac: see packaging/macos/build-app.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/darwincheck" ./cmd/darwincheck
fail=0
for arch in arm64 amd64; do
	"$tmp/darwincheck" -goos darwin -goarch "$arch" ./... || fail=1
done
mapfile -t pkgs < <(GOOS=darwin CGO_ENABLED=1 CC=/nonexistent go list -e -f '{{.ImportPath}}' ./...)
nocgo=()
for p in "${pkgs[@]}"; do
	c=$(GOOS=darwin CGO_ENABLED=1 CC=/nonexistent go list -e -deps \
		-f '{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}' "$p" | grep . || true)
	[ -z "$c" ] && nocgo+=("$p")
done
for arch in arm64 amd64; do
	GOOS=darwin GOARCH=$arch CGO_ENABLED=0 go vet "${nocgo[@]}" || fail=1
done
# The must-fail self-test: a deliberately broken darwin file.
if "$tmp/darwincheck" -goos darwin -goarch arm64 ./cmd/darwincheck/testdata/broken >/dev/null 2>&1; then
	echo "darwin check: the broken darwin file passed; the checker is not working" >&2
	fail=1
fi
if [ $fail -ne 0 ]; then
	echo "darwin check: FAILED" >&2
	exit 1
fi
echo "darwin check: OK (${#pkgs[@]} packages type-checked for darwin/arm64 and darwin/amd64; ${#nocgo[@]} vetted without cgo)"
