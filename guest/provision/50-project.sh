#!/bin/sh
# Project paths: hide (PARAM_HIDE) covers paths with an empty read-only
# tmpfs; box_dirs (PARAM_BOX_DIRS) bind-mounts box-local directories over
# project paths. /usr/local/lib/corral/apply-project (guest/apply-project.sh)
# does both from a systemd unit, so corral-launch can check them.
# Runs after the project mount exists (Lima mounts before provisioning).
set -eu

umask 022
{
	printf 'PROJECT=%s\n' "${PARAM_PROJECT:-}"
	printf 'HIDE=%s\n' "${PARAM_HIDE:-}"
	printf 'BOX_DIRS=%s\n' "${PARAM_BOX_DIRS:-}"
} >/etc/corral/project.env

/usr/local/lib/corral/unit corral-project "corral project paths (hide, box_dirs)" "local-fs.target remote-fs.target" /usr/local/lib/corral/apply-project
