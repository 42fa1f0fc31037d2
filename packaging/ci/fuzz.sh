#!/bin/sh
# Runs every fuzz target in the repository, one after another, for FUZZTIME
# each (default 30s). Targets are found, not listed: every `func FuzzX` in a
# _test.go file of a package of this module. go test fuzzes one target of
# one package per run, hence the loop.
#   packaging/ci/fuzz.sh               30s each (make fuzz)
#   FUZZTIME=3s packaging/ci/fuzz.sh   a short pass (make fuzz-short, in CI)
set -eu
cd "$(dirname "$0")/../.."
fuzztime=${FUZZTIME:-30s}
go=${GO:-go}
list=$(mktemp)
trap 'rm -f "$list"' EXIT
"$go" list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
	for f in "$dir"/*_test.go; do
		[ -f "$f" ] || continue
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | while read -r target; do
			echo "$pkg $target"
		done
	done
done | sort -u >"$list"
n=$(wc -l <"$list")
if [ "$n" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $n targets, $fuzztime each"
while read -r pkg target; do
	echo "fuzz: $pkg $target"
	"$go" test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
done <"$list"
