#!/bin/sh
# corral-suspend prepare|resume: the box's side of `corral stop --save`
# and of the resume that follows (core/box suspend.go). Run as root through
# a fixed sudo rule (provision/41-sudo.sh), so it takes no arguments beyond
# the verb and validates what it reads on stdin.
#
# prepare: qemu refuses to save a VM while a 9p export is mounted in the
# guest (the 9p device's migration blocker), so every 9p mount (the
# project, agent state, the seed, the git shadow's lower binds) is
# unmounted, with what is mounted on top of it (hide tmpfs, box_dirs
# binds, the git shadow overlays). A process using one of them makes the
# save refuse (exit 3) before anything is unmounted: the hide mounts are
# never taken off under a process that could then read what they hide. The
# corral units are stopped first, so corral-launch refuses sessions until
# resume has put everything back.
#
# resume (stdin: the host's time, seconds since the epoch): the guest
# continues where prepare left it. In order: step the clock (no NTP in a
# box); reread Lima's cidata (a new instance ID at every start) and mark
# the boot done with it, in the format this Lima uses, so Lima's host
# agent sees the box ready; mount the 9p shares again from fstab; start
# the corral units, which put the hide mounts, box_dirs and the git shadow
# back. If they cannot start, the shares are taken off again: a share is
# never left mounted without its hide mounts.
#
# The box user may run both verbs (the sudo rule), at any time. So that no
# process of the box sees a hidden path while the hide mounts are off (in
# prepare between the units' stop and the unmount; in resume between the
# mount and the units' start) or starts using a share after the busy
# check, each verb runs as a transient system service (outside user.slice,
# where every process of the box user lives: ssh sessions, tmux, agents)
# that freezes user.slice for its whole run (systemd's cgroup freezer) and
# thaws it at exit.
set -eu

units="corral-git-shadow.service corral-project.service"
cidata=/mnt/lima-cidata

ninep() {
	findmnt -n -l -t 9p -o TARGET 2>/dev/null || true
}

# users MOUNTPOINT...: the pids (other than this script's) with a working
# directory, root, open file or mapping under one of the mount points.
users() {
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$pid" = $$ ] && continue
		for f in "$p/cwd" "$p/root" "$p"/fd/*; do
			t=$(readlink "$f" 2>/dev/null) || continue
			for m in "$@"; do
				case "$t" in "$m" | "$m"/*)
					echo "$pid"
					continue 3
					;;
				esac
			done
		done
		if [ -r "$p/maps" ]; then
			for m in "$@"; do
				if grep -qF " $m/" "$p/maps" 2>/dev/null; then
					echo "$pid"
					continue 2
				fi
			done
		fi
	done
}

remount() {
	mount -a -t 9p || return 1
	for u in $units; do
		if systemctl cat "$u" >/dev/null 2>&1; then
			systemctl start "$u" || return 1
		fi
	done
}

prepare() {
	targets=$(ninep)
	[ -n "$targets" ] || exit 0
	set -f
	old_ifs=$IFS
	IFS='
'
	# shellcheck disable=SC2086 # one mount point per line
	busy=$(users $targets | sort -u | head -n 20)
	IFS=$old_ifs
	set +f
	if [ -n "$busy" ]; then
		names=
		for p in $busy; do
			names="$names $(tr -d '\n' <"/proc/$p/comm" 2>/dev/null)($p)"
		done
		echo "corral-suspend: in use by:$names" >&2
		exit 3
	fi
	for u in $units; do
		systemctl stop "$u" 2>/dev/null || true
	done
	# Last mounted first, with what lies on top; a second pass takes what
	# an overlay still held in the first.
	for _ in 1 2 3; do
		ninep | tac | while IFS= read -r t; do
			umount -R "$t" 2>/dev/null || true
		done
		[ -z "$(ninep)" ] && exit 0
	done
	left=$(ninep | head -n 5 | tr '\n' ' ')
	remount || true
	echo "corral-suspend: still mounted: $left" >&2
	exit 3
}

# rearm FILE: rewrite Lima's readiness file FILE for the new cidata. Lima
# 1.x compares it with meta-data, Lima 2.x with the instance ID.
rearm() {
	[ -e "$1" ] || return 0
	if [ "$(cat "$1")" = "$old_meta" ]; then
		cat "$cidata/meta-data" >"$1"
	else
		printf '%s\n' "$new_iid" >"$1"
	fi
}

resume() {
	now=$(readtime)
	date -u -s "@$now" >/dev/null
	old_meta=$(cat "$cidata/meta-data")
	dev=$(findmnt -n -o SOURCE --mountpoint "$cidata")
	umount "$cidata"
	blockdev --flushbufs "$dev" 2>/dev/null || true
	echo 3 >/proc/sys/vm/drop_caches
	mount -o ro,mode=0700,dmode=0700,overriderockperm,exec,uid=0 "$dev" "$cidata"
	new_iid=$(sed -n 's/^LIMA_CIDATA_IID=//p' "$cidata/lima.env" 2>/dev/null || true)
	[ -n "$new_iid" ] || new_iid=$(sed -n 's/^instance-id: *//p' "$cidata/meta-data")
	rearm /run/lima-ssh-ready
	rearm /run/lima-fuse-ready
	rearm /run/lima-boot-done
	if ! remount; then
		ninep | tac | while IFS= read -r t; do
			umount -R "$t" 2>/dev/null || umount -R -l "$t" 2>/dev/null || true
		done
		echo "corral-suspend: the corral units did not start; the shares stay unmounted" >&2
		exit 1
	fi
}

# frozen VERB: VERB with user.slice frozen, from a system service.
frozen() {
	case "$(cat /proc/self/cgroup)" in
	*/user.slice*)
		echo "corral-suspend: $1 runs as a system service, not from a user session" >&2
		exit 2
		;;
	esac
	systemctl freeze user.slice
	trap 'systemctl thaw user.slice' EXIT
	"$1"
}

# readtime: the host's time from stdin, digits only, printed back.
readtime() {
	read -r now || true
	case "$now" in
	'' | *[!0-9]*)
		echo "corral-suspend: resume reads the host's time (seconds) on stdin" >&2
		exit 2
		;;
	esac
	printf '%s\n' "$now"
}

# system VERB [STDIN]: VERB-frozen as a transient system service; its
# output and exit status pass through.
system() {
	printf '%s' "${2:-}" | systemd-run --quiet --pipe --wait --collect --service-type=exec \
		--unit="corral-suspend-$1-$$" -- "$0" "$1-frozen"
}

case "${1:-}" in
prepare) system prepare ;;
resume)
	t=$(readtime)
	system resume "$t
"
	;;
prepare-frozen) frozen prepare ;;
resume-frozen) frozen resume ;;
*)
	echo "usage: corral-suspend prepare|resume" >&2
	exit 2
	;;
esac
