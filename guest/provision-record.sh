#!/bin/sh
# Prints the guest's record of this boot's provision steps, one line per
# step: its file name and its exit status ("40-network.sh 0"). Each
# guest/provision script writes its own record when it exits (its EXIT
# trap); /run is emptied at every boot, so a record is this boot's. Run by
# the golden build as the box user (ssh, the script on stdin); the host
# parses the output as hostile (core/golden CheckProvision).
set -eu

dir=${CORRAL_TEST_ROOT:-}/run/corral/provision
[ -d "$dir" ] || exit 0
for f in "$dir"/*; do
	[ -f "$f" ] || continue
	printf '%s %s\n' "${f##*/}" "$(head -c 8 "$f" | tr -dc '0-9')"
done
