#!/bin/sh
# corral base setup, run as root at every boot (Lima runs provision
# scripts on each start; every step is idempotent).
# Order: first, because later scripts and every session rely on sshd
# accepting CORRAL_FWD_* and on /etc/corral existing.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/00-base.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

install -d -m 0755 /etc/corral /usr/local/lib/corral

conf=/etc/ssh/sshd_config.d/corral.conf
want='AcceptEnv CORRAL_FWD_*'
if [ "$(cat "$conf" 2>/dev/null || true)" != "$want" ]; then
	printf '%s\n' "$want" >"$conf"
	# sshd reads its config per connection; reload for new connections.
	systemctl reload ssh 2>/dev/null || systemctl reload sshd 2>/dev/null || true
fi

# A box must never reach out on its own: no time sync, no apt timers.
# Disable only what is enabled or running: each disable reloads systemd,
# seconds under TCG, and this runs at every boot.
for unit in apt-daily.timer apt-daily-upgrade.timer systemd-timesyncd.service; do
	if systemctl -q is-enabled "$unit" 2>/dev/null || systemctl -q is-active "$unit" 2>/dev/null; then
		systemctl disable --now "$unit" 2>/dev/null || true
	fi
done
