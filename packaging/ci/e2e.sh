#!/bin/sh
# End-to-end tests on real Lima VMs. Lima refuses root, so the tests run as
# an unprivileged user (packaging/linux/create-test-user.sh), and every VM,
# corral process and test server runs inside a fresh network namespace with
# only loopback: no guest traffic can leave the machine, even by mistake.
# CORRAL_E2E_RUN=REGEXP runs only the matching tests (go test -run).
# CORRAL_E2E_LIMA=PREFIX runs them against PREFIX/bin/limactl (e.g. Lima 2.2.0
# from setup-lima2.sh): it comes first on PATH, for corral and the tests alike.
# CORRAL_E2E_CLIENT=1 also runs core/lima's TestE2ELifecycle (the Lima client
# on the same limactl: one boot more) after the suite, in the same namespace
# and as the same user.
# CORRAL_E2E_KEEP=DIR: where a failed test keeps its boxes' logs (default
# /tmp; cmd/corral/e2e/diagnose_e2e_test.go), outside the work dir this
# script deletes.
# At the end it prints the table of test and subtest durations
# (packaging/ci/e2e-times.sh; docs/BENCHMARKS.md "VM timings") and the
# list of skipped subtests (packaging/ci/e2e-skips.sh), and fails on a skip
# not on packaging/ci/e2e-skips.allow. CORRAL_REQUIRE_DESKTOP passes through
# to the tests (make test-all sets it): a missing desktop program fails the
# app and keyring rows instead of skipping them.
set -eu
cd "$(dirname "$0")/../.."
user=${CORRAL_E2E_USER:-corral-e2e}
image=${CORRAL_E2E_IMAGE:-/var/cache/corral/images/bookworm}
path=/usr/local/bin:/usr/bin:/bin
if [ -n "${CORRAL_E2E_LIMA:-}" ]; then
	[ -x "$CORRAL_E2E_LIMA/bin/limactl" ] || {
		echo "e2e: no limactl in $CORRAL_E2E_LIMA/bin (packaging/linux/setup-lima2.sh)" >&2
		exit 2
	}
	path="$CORRAL_E2E_LIMA/bin:$path"
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "e2e: run as root (it creates a network namespace and drops to $user)" >&2
	exit 2
fi
# Close inherited descriptors 3-9 (flock(1) hands its lock file to the
# command, usually as fd 3): a broker the tests start outlives the command
# that started it, and must not keep the caller's lock held after this
# script ends. (sh redirects single-digit descriptors only.)
for fd in 3 4 5 6 7 8 9; do
	eval "exec $fd>&-"
done
work=$(mktemp -d /tmp/ce.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/corral" ./cmd/corral
# qemu runs this per guest connection when it is beside corral (core/guestconn).
CGO_ENABLED=0 go build -o "$work/corral-guest-conn" ./cmd/corral-guest-conn
go test -c -tags e2e -o "$work/e2e.test" ./cmd/corral/e2e
if [ -n "${CORRAL_E2E_CLIENT:-}" ]; then
	# The test reads testdata/ relative to its package dir.
	go test -c -tags e2e -o "$work/lima.test" ./core/lima
	mkdir -p "$work/lima-pkg/testdata"
	cp core/lima/testdata/e2e-template.yaml "$work/lima-pkg/testdata/"
fi
chown -R "$user" "$work"
chmod 0755 "$work"

# The state dir is short so Lima's socket paths fit (see core/project); so
# is the client test's (CORRAL_E2E_DIR). The output goes to the terminal
# and to e2e.log, for the table; the exit code through a file (sh has no
# pipefail).
# shellcheck disable=SC2016 # expanded by the inner sh, from "$@"
{
	rc=0
	unshare -n sh -c '
		ip link set lo up
		cd "$1"
		echo "e2e: $(runuser -u "$2" -- env PATH="$5" limactl --version)" >&2
		rc=0
		runuser -u "$2" -- env -i PATH="$5" HOME="$1" \
			CORRAL_E2E=1 CORRAL_E2E_BENCH="${CORRAL_E2E_BENCH:-}" CORRAL_REQUIRE_DESKTOP="${CORRAL_REQUIRE_DESKTOP:-}" CORRAL_BENCH_OUT="$1/bench-run.md" CORRAL_BIN="$1/corral" CORRAL_E2E_IMAGE="$3" CORRAL_HOME="$1/h" CORRAL_E2E_KEEP="$7" \
			"$1/e2e.test" -test.v -test.timeout 80m -test.run "$4" || rc=$?
		if [ -n "$6" ]; then
			cd "$1/lima-pkg"
			runuser -u "$2" -- env -i PATH="$5" HOME="$1" \
				CORRAL_E2E=1 CORRAL_E2E_IMAGE="$3" CORRAL_E2E_DIR="$1/cl" \
				"$1/lima.test" -test.v -test.timeout 20m -test.run "^TestE2ELifecycle\$" || rc=$?
		fi
		exit "$rc"
	' e2e "$work" "$user" "$image" "${CORRAL_E2E_RUN:-.}" "$path" "${CORRAL_E2E_CLIENT:-}" "${CORRAL_E2E_KEEP:-}" || rc=$?
	echo "$rc" >"$work/rc"
} 2>&1 | tee "$work/e2e.log"
rc=$(cat "$work/rc" 2>/dev/null || echo 1)
echo "=== e2e: test durations (packaging/ci/e2e-times.sh) ==="
packaging/ci/e2e-times.sh "$work/e2e.log" || true
# Last: what the run skipped. A skip not on packaging/ci/e2e-skips.allow
# fails the run: a check that silently stopped running is a failure.
packaging/ci/e2e-skips.sh "$work/e2e.log" || rc=1
# The run-overhead table (docs/BENCHMARKS.md) outlives the work dir.
[ -f "$work/bench-run.md" ] && cp "$work/bench-run.md" "${CORRAL_BENCH_OUT:-/tmp/corral-bench-run.md}"
exit "$rc"
