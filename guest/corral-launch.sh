#!/bin/bash
# corral-launch WORKDIR ARGV...: the guest end of every corral session.
# ssh delivers the session's environment as CORRAL_FWD_<NAME> (accepted by
# sshd's AcceptEnv); this strips the prefix, checks that the box's guest
# units are up (refusing to run otherwise), and execs ARGV in WORKDIR
# through a login shell so profile.d (proxy settings) applies.
set -eu

if [ $# -lt 1 ]; then
	echo "usage: corral-launch WORKDIR [ARGV...]" >&2
	exit 2
fi
workdir=$1
shift

# The units write /run/corral/ready/UNIT when they started and remove it
# when they stop: one stat each. Only a missing file asks systemd (a box
# whose units predate the status files).
for unit in corral-network corral-project corral-git-shadow; do
	[ -e "/run/corral/ready/$unit.service" ] && continue
	if ! systemctl is-active --quiet "$unit.service"; then
		echo "corral: guest unit $unit is not active; refusing to start the session" >&2
		echo "hint: corral doctor shows why (journalctl -u $unit in the box)" >&2
		exit 125
	fi
done

# Rename CORRAL_FWD_NAME to NAME without the values ever touching argv or
# being parsed: compgen lists exported names only (a value holding a
# newline cannot forge a name), and ${!name} reads the value indirectly.
while IFS= read -r fwd; do
	case $fwd in CORRAL_FWD_*) ;; *) continue ;; esac
	name=${fwd#CORRAL_FWD_}
	[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
	export "$name=${!fwd}"
	unset "$fwd"
done < <(compgen -e)

cd "$workdir" || {
	echo "corral: no such directory in the box: $workdir" >&2
	exit 125
}
if [ $# -eq 0 ]; then
	exec bash -l
fi
# "$0" "$@" inside bash -lc: the argv is passed as separate words, never
# re-parsed as shell code.
exec bash -lc 'cd "$0" && exec "$@"' "$workdir" "$@"
