#!/bin/sh
# End-to-end tests on real Lima VMs. Lima refuses root, so the tests run as
# an unprivileged user (packaging/linux/create-test-user.sh), and every VM,
# corral process and test server runs inside a fresh network namespace with
# only loopback: no guest traffic can leave the machine, even by mistake.
# CORRAL_E2E_RUN=REGEXP runs only the matching tests (go test -run).
# CORRAL_E2E_LIMA=PREFIX runs them against PREFIX/bin/limactl (e.g. Lima 2.2.0
# from setup-lima2.sh): it comes first on PATH, for corral and the tests alike.
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
chown -R "$user" "$work"
chmod 0755 "$work"

# The state dir is short so Lima's socket paths fit (see core/project).
# shellcheck disable=SC2016 # expanded by the inner sh, from "$@"
unshare -n sh -c '
	ip link set lo up
	cd "$1"
	echo "e2e: $(runuser -u "$2" -- env PATH="$5" limactl --version)" >&2
	exec runuser -u "$2" -- env -i PATH="$5" HOME="$1" \
		CORRAL_E2E=1 CORRAL_E2E_BENCH="${CORRAL_E2E_BENCH:-}" CORRAL_BENCH_OUT="$1/bench-run.md" CORRAL_BIN="$1/corral" CORRAL_E2E_IMAGE="$3" CORRAL_HOME="$1/h" \
		"$1/e2e.test" -test.v -test.timeout 80m -test.run "$4"
' e2e "$work" "$user" "$image" "${CORRAL_E2E_RUN:-.}" "$path" || rc=$?
# The run-overhead table (docs/BENCHMARKS.md) outlives the work dir.
[ -f "$work/bench-run.md" ] && cp "$work/bench-run.md" "${CORRAL_BENCH_OUT:-/tmp/corral-bench-run.md}"
exit "${rc:-0}"
