#!/bin/bash
# create-test-user.sh [USER] — create the unprivileged user that runs limactl in corral's e2e tests (root).
#
# Lima refuses to run as root, so CI (root) runs limactl through `runuser -u USER`. The user gets /dev/kvm
# through the kvm group when the device exists (hosts with usable KVM); on TCG-only hosts it is not needed.
# Idempotent: an existing user is only added to the kvm group.
set -euo pipefail

USER_NAME=${1:-${CORRAL_E2E_USER:-corral-e2e}}

log() { printf 'create-test-user: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root"
	exit 1
fi

groups=()
if [ -e /dev/kvm ]; then
	groupadd -f -r kvm
	# udev normally does this; containers and fresh VMs may leave /dev/kvm root-only.
	if [ "$(stat -c %G /dev/kvm)" = root ]; then
		chgrp kvm /dev/kvm
		chmod 0660 /dev/kvm
	fi
	groups=(kvm)
fi

if id "$USER_NAME" >/dev/null 2>&1; then
	log "user $USER_NAME exists"
else
	useradd --create-home --shell /bin/bash "$USER_NAME"
	log "created user $USER_NAME"
fi
for g in "${groups[@]}"; do
	id -nG "$USER_NAME" | tr ' ' '\n' | grep -qx "$g" || usermod -aG "$g" "$USER_NAME"
done
id "$USER_NAME"
