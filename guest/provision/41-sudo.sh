#!/bin/sh
# Sudo by network mode (PARAM_SUDO: lima|all). Runs after 40-network.sh, so
# the funnel is in place before the user loses the means to undo it, and
# at every boot, since a box may be cloned from a golden image built in
# another mode.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/41-sudo.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

# No blanket sudo outside full mode: root could undo the funnel. Lima's host
# agent still needs a few fixed root reads to see that the box is ready
# (pkg/hostagent/requirements.go in Lima 1.2.2), so the user keeps exactly
# those and nothing else (PARAM_SUDO=lima). PARAM_SUDO=all (full mode, or
# the sudo key) (re)grants sudo, since a box may be cloned from a golden
# image built in another mode. corral-suspend (guest/corral-suspend.sh) is
# the one corral command the user may run as root, with exactly these
# arguments: `corral stop --save` and the resume after it need it, and it
# only unmounts and remounts the box's shares and steps the clock.
user=${PARAM_USER:?the Lima user name (param USER) is missing}
tmp=$(mktemp)
if [ "${PARAM_SUDO:-lima}" != all ]; then
	cat >"$tmp" <<SUDO
# corral: no blanket sudo in this box; only Lima's readiness checks.
Cmnd_Alias CORRAL_LIMA = /usr/bin/cat /mnt/lima-cidata/param.env, \\
	/usr/bin/diff -q /run/lima-ssh-ready /mnt/lima-cidata/meta-data, \\
	/usr/bin/diff -q /run/lima-boot-done /mnt/lima-cidata/meta-data, \\
	/usr/bin/grep -q ^user_allow_other /etc/fuse.conf, \\
	/usr/sbin/nft list table inet corral
Cmnd_Alias CORRAL_SUSPEND = /usr/local/lib/corral/suspend prepare, \\
	/usr/local/lib/corral/suspend resume
$user ALL=(root) NOPASSWD: CORRAL_SUSPEND
$user ALL=(root) NOPASSWD: CORRAL_LIMA
SUDO
	for f in /etc/sudoers.d/*; do
		[ -e "$f" ] && [ "$f" != /etc/sudoers.d/README ] && rm -f "$f"
	done
	for g in sudo wheel admin; do
		for u in $(getent group "$g" | cut -d: -f4 | tr , " "); do gpasswd -d "$u" "$g" >/dev/null 2>&1 || true; done
	done
else
	printf '# corral: full network mode keeps sudo\n%s ALL=(ALL) NOPASSWD:ALL\n' "$user" >"$tmp"
fi
visudo -cq -f "$tmp"
install -m 0440 "$tmp" /etc/sudoers.d/90-corral
rm -f "$tmp"
