#!/bin/sh
# Runs every fuzz target in the repository, one after another, for FUZZTIME
# each (default 30s). Targets are found, not listed: every `func FuzzX` in a
# _test.go file of a package of this module. go test fuzzes one target of
# one package per run, hence the loop.
#   packaging/ci/fuzz.sh               30s each (make fuzz)
#   FUZZTIME=3s packaging/ci/fuzz.sh   a short pass (make fuzz-short, in CI)
#
# Go before 1.27 can fail a target that found nothing: its coordinator races
# its own -fuzztime deadline (golang/go#75804) and prints a bare "context
# deadline exceeded" with no crasher written. A failure with exactly that
# signature (the message, and no "Failing input written to") runs the target
# again, at most twice; any other failure fails at once.
set -eu
cd "$(dirname "$0")/../.."
fuzztime=${FUZZTIME:-30s}
go=${GO:-go}
list=$(mktemp)
out=$(mktemp)
trap 'rm -f "$list" "$out"' EXIT
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
# deadline_race FILE: the output is Go's coordinator deadline race, not a find.
deadline_race() {
	grep -q 'context deadline exceeded' "$1" && ! grep -q 'Failing input written to' "$1"
}
while read -r pkg target; do
	try=1
	while :; do
		echo "fuzz: $pkg $target"
		if "$go" test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" >"$out" 2>&1; then
			cat "$out"
			break
		fi
		cat "$out"
		if [ "$try" -ge 3 ] || ! deadline_race "$out"; then
			exit 1
		fi
		echo "fuzz: $target: Go's fuzz deadline race (golang/go#75804), nothing found; again ($try of 2)"
		try=$((try + 1))
	done
done <"$list"
