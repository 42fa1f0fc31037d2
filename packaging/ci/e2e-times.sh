#!/bin/sh
# e2e-times.sh [LOG...]: the table of test and subtest durations of a
# `go test -v` log (the e2e suite's, printed by packaging/ci/e2e.sh at the
# end of a run), in Markdown, for docs/BENCHMARKS.md "VM timings".
# Reads standard input when no LOG is given. Rows keep the log's order
# (a test, then its subtests, indented by depth); the last rows are the
# total of the top-level tests and the ten slowest subtests.
#   packaging/ci/e2e-times.sh /tmp/corral-e2e.log
set -eu
awk '
# --- PASS: TestX/sub_name (12.34s), indented 4 spaces per level.
/^ *--- (PASS|FAIL|SKIP): [^ ]+ \([0-9.]+s\)$/ {
	line = $0
	match(line, /^ */)
	depth = RLENGTH / 4
	result = $2
	sub(/:$/, "", result)
	name = $3
	gsub(/\|/, "\\|", name) # a cell of a Markdown table
	secs = $4
	gsub(/[()s]/, "", secs)
	n++
	names[n] = name
	results[n] = result
	times[n] = secs + 0
	depths[n] = depth
	if (depth == 0) total += secs
}
END {
	if (n == 0) {
		print "e2e-times: no test results (--- PASS/FAIL/SKIP lines) in the log" > "/dev/stderr"
		exit 1
	}
	print "| test | result | time |"
	print "| --- | --- | ---: |"
	for (i = 1; i <= n; i++) {
		name = names[i]
		if (depths[i] > 0) {
			# the last part of the name, underscores back to spaces, indented
			sub(/^.*\//, "", name)
			gsub(/_/, " ", name)
			pad = ""
			for (d = 0; d < depths[i]; d++) pad = pad "&nbsp;&nbsp;"
			name = pad "↳ " name
		}
		printf "| %s | %s | %s |\n", name, results[i], dur(times[i])
	}
	printf "| **total (top-level tests)** | | **%s** |\n", dur(total)
	# the ten slowest subtests (a leaf or not), by time
	m = 0
	for (i = 1; i <= n; i++)
		if (depths[i] > 0) idx[++m] = i
	for (i = 2; i <= m; i++) {
		v = idx[i]
		for (j = i - 1; j >= 1 && times[idx[j]] < times[v]; j--) idx[j + 1] = idx[j]
		idx[j + 1] = v
	}
	if (m > 0) {
		print ""
		print "| slowest subtests | time |"
		print "| --- | ---: |"
		for (i = 1; i <= m && i <= 10; i++) printf "| %s | %s |\n", names[idx[i]], dur(times[idx[i]])
	}
}
function dur(s) {
	if (s < 60) return sprintf("%.1f s", s)
	s = int(s + 0.5)
	return sprintf("%d min %02d s", int(s / 60), s % 60)
}
' "$@"
