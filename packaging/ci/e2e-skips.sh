#!/bin/sh
# e2e-skips.sh LOG [ALLOW]: the subtests a verbose e2e run (go test -v
# output in LOG) skipped, each with its skip message, and whether the
# allow-list ALLOW (default packaging/ci/e2e-skips.allow) allows it. Exits 1
# when a skip is not allowed, so CI fails on a check that silently stopped
# running; 0 otherwise (no skip at all included). packaging/ci/e2e.sh runs
# it at the end of every run.
#
# go test -v prints a test's messages as they happen, under its "=== RUN"
# (or "=== CONT"/"=== NAME") line, and the "--- SKIP: NAME" line later
# (a subtest's when its parent ends); the skip message is the last message
# line printed under that name.
set -eu
log=${1:?usage: e2e-skips.sh LOG [ALLOW]}
allow=${2:-$(dirname "$0")/e2e-skips.allow}

skips=$(awk '
	/^=== (RUN|CONT|NAME) / { cur = $3; next }
	/^ +[^ ]+\.go:[0-9]+: / {
		if (cur != "") {
			msg = $0
			sub(/^ +[^ ]+\.go:[0-9]+: /, "", msg)
			last[cur] = msg
		}
		next
	}
	/^ *--- SKIP: / {
		name = $3
		if (!(name in seen)) { seen[name] = 1; print name ": " last[name] }
	}
' "$log")

# The allow-list's patterns: every line that is neither empty nor a comment.
patterns=$(grep -v -e '^#' -e '^[[:space:]]*$' "$allow" || true)
n=0
bad=0
echo "=== e2e: skipped subtests (allowed by $allow, else a failure) ==="
if [ -n "$skips" ]; then
	while IFS= read -r s; do
		n=$((n + 1))
		if [ -n "$patterns" ] && printf '%s\n' "$s" | grep -Eq -e "$patterns"; then
			echo "  allowed      $s"
		else
			echo "  NOT ALLOWED  $s"
			bad=$((bad + 1))
		fi
	done <<SKIPS
$skips
SKIPS
fi
[ "$n" -gt 0 ] || echo "  none"
if [ "$bad" -gt 0 ]; then
	echo "=== e2e: $bad skip(s) not on the allow-list: make the check run, or add it to $allow with its reason ==="
	exit 1
fi
