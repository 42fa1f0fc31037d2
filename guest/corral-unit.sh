#!/bin/sh
# corral-unit NAME DESCRIPTION AFTER EXEC: the one systemd unit shape of the
# provision scripts. It writes the oneshot unit NAME.service that runs EXEC
# at every boot after the units AFTER (space-separated), enables it, and
# (re)starts it now. corral-launch refuses a session while a unit of
# guest.Units is not active, so a failed EXEC fails closed.
# Installed by the first provision script (guest.Installer), which runs before the provision
# scripts that call it.
set -eu

if [ $# -ne 4 ]; then
	echo "usage: corral-unit NAME DESCRIPTION AFTER EXEC" >&2
	exit 2
fi
name=$1 description=$2 after=$3 exec=$4
dir=${CORRAL_UNIT_DIR:-/etc/systemd/system} # tests write elsewhere
umask 022
unit=$dir/$name.service
new=$(mktemp "$dir/.$name.XXXXXX")
trap 'rm -f "$new"' EXIT

cat >"$new" <<UNIT
[Unit]
Description=$description
After=$after
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=$exec
# The status corral-launch reads with one stat instead of asking systemctl
# on every session; /run is empty at boot, and stopping the unit (or a
# failed start) removes it.
ExecStartPost=/bin/sh -c 'mkdir -p /run/corral/ready && : >/run/corral/ready/%n'
ExecStopPost=/bin/rm -f /run/corral/ready/%n
[Install]
WantedBy=multi-user.target
UNIT
# Lima runs the provision scripts at every boot, and under TCG each
# daemon-reload (systemd reruns its generators) costs seconds: reload only
# when the unit file changed, enable only when it is not. The restart
# always runs: EXEC's inputs (the env file the calling script just wrote,
# the project mount Lima made after the boot ran the unit) may differ from
# those of the boot's own run.
if cmp -s "$new" "$unit"; then
	rm -f "$new"
else
	mv -f "$new" "$unit"
	systemctl daemon-reload
fi
[ -L "$dir/multi-user.target.wants/$name.service" ] || systemctl enable "$name.service" >/dev/null 2>&1
systemctl restart "$name.service"
