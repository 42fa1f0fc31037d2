#!/bin/sh
# Language toolchains from the toolchains key (PARAM_TOOLCHAINS), from
# Debian packages so that no installer script runs in the box.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/20-toolchains.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

tcs=${PARAM_TOOLCHAINS:-}
[ -n "$tcs" ] || exit 0

want=
for t in $tcs; do
	case $t in
	go) want="$want golang-go" ;;
	node) want="$want nodejs npm" ;;
	python) want="$want python3 python3-pip python3-venv" ;;
	rust) want="$want rustc cargo" ;;
	*)
		echo "corral: unknown toolchain $t" >&2
		exit 1
		;;
	esac
done

missing=
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || exit 0
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get update -q && apt-get install -y --no-install-recommends -- $missing
