#!/bin/sh
# corral-git-shadow: mount the git shadow, an overlay over each of the
# project's git directories whose upper layer is on the box's own disk
# (/var/lib/corral/git-shadow/NAME). The host's git directory is the
# read-only lower layer: on Linux qemu the host binds it read-only for the
# VM, so even with this overlay unmounted guest root cannot write it; on
# macOS vz the share is read-only only as far as the guest enforces it.
# git in the box then works normally (commit, branch, rebase, stash) and
# every write lands in the shadow; `corral pull` takes commits out.
#
# Reads /etc/corral/git-shadow.env (written by provision/44-git-shadow.sh):
#   GIT_SHADOW=on|off  PROJECT=<dir>  SOURCE=mount|clone  GIT_SHADOW_DIRS=<git dirs outside the
#   project, shared read-only at the same path, space-separated>
# Idempotent: a directory that already carries the overlay is left alone.
#
# Submodule paths (gitlinks in the host's index): the host's `git status`
# enters each one that holds a repository, so the box must not make one
# there. A populated path's .git is shadowed (a directory) or bound
# read-only (a gitdir file, whose target is inside the shadowed .git); an
# empty path gets a directory of the box's own disk mounted over it
# (/var/lib/corral/gitlinks/N), so the agent can still initialize and build
# the submodule there. On Linux qemu the host has already done the same in
# qemu's mount namespace (guest root cannot undo that); here it is what the
# guest enforces on every platform.
set -eu

# shellcheck source=/dev/null
. /etc/corral/git-shadow.env
[ "${GIT_SHADOW:-on}" = on ] || exit 0
[ -n "${PROJECT:-}" ] || exit 0
# source = "clone": the project is the box's own clone, not the host's.
[ "${SOURCE:-mount}" = mount ] || exit 0

base=/var/lib/corral/git-shadow
lower=/run/corral/git-lower

# shadow DIR NAME: overlay DIR with the shadow NAME. The lower layer is
# reached through a bind at a fixed path, so DIR may hold the characters
# overlayfs options cannot (",", ":").
shadow() {
	dir=$1
	name=$2
	[ -d "$dir" ] || return 0
	# The last line is the mount on top (a read-only bind may lie below).
	if [ "$(findmnt -n -o FSTYPE --mountpoint "$dir" 2>/dev/null | tail -n 1)" = overlay ]; then
		return 0
	fi
	install -d -m 0700 "$base" "$lower"
	install -d -m 0755 "$base/$name/upper" "$base/$name/work" "$lower/$name"
	# The merged root takes the upper directory's owner and mode: make it
	# the git directory's, so the box user can create .git/index.lock.
	chown "$(stat -c %u:%g "$dir")" "$base/$name/upper"
	chmod "$(stat -c %a "$dir")" "$base/$name/upper"
	mountpoint -q "$lower/$name" || mount --bind "$dir" "$lower/$name"
	if mount -t overlay corral-git-shadow \
		-o "lowerdir=$lower/$name,upperdir=$base/$name/upper,workdir=$base/$name/work" "$dir"; then
		return 0
	fi
	# No overlay (a kernel or file system that refuses it): keep the git
	# directory read-only rather than writable, and say so. git in the box
	# can then read history but not commit.
	echo "corral-git-shadow: cannot mount the shadow over $dir; it stays read-only in the box" >&2
	mount --bind -o ro "$dir" "$dir"
}

if [ -d "$PROJECT/.git" ] && [ ! -L "$PROJECT/.git" ]; then
	shadow "$PROJECT/.git" project
fi
n=0
for d in ${GIT_SHADOW_DIRS:-}; do
	n=$((n + 1))
	shadow "$d" "outside-$n"
done

gitlinks=/var/lib/corral/gitlinks
# The index is read with the host repository's own config but no command
# from it: ls-files runs no hook, and fsmonitor is off.
git -c core.fsmonitor=false -c core.quotepath=off -c safe.directory='*' \
	--git-dir="$PROJECT/.git" --work-tree="$PROJECT" ls-files --stage 2>/dev/null |
	while IFS= read -r line; do
		case $line in
		160000\ *) ;;
		*) continue ;;
		esac
		rel=${line#*"	"}
		case $rel in
		\"* | /* | ../* | */../* | *"/.."*)
			echo "corral-git-shadow: skipping an unusual submodule path: $rel" >&2
			continue
			;;
		esac
		p=$PROJECT/$rel
		if [ -L "$p" ] || { [ -e "$p" ] && [ ! -d "$p" ]; }; then
			echo "corral-git-shadow: submodule path $p is not a directory; leaving it" >&2
			continue
		fi
		if [ -L "$p/.git" ]; then
			echo "corral-git-shadow: $p/.git is a symbolic link; leaving it" >&2
		elif [ -d "$p/.git" ]; then
			shadow "$p/.git" "gitlink-$(printf '%s' "$rel" | sha256sum | cut -c1-16)"
		elif [ -e "$p/.git" ]; then
			if ! mountpoint -q "$p/.git"; then
				mount --bind "$p/.git" "$p/.git" && mount -o remount,bind,ro "$p/.git"
			fi
		elif ! mountpoint -q "$p"; then
			own=$gitlinks/$(printf '%s' "$rel" | sha256sum | cut -c1-16)
			install -d -m 0700 "$gitlinks"
			install -d -m 0755 "$own"
			chown "$(stat -c %u:%g "$PROJECT")" "$own"
			mkdir -p "$p"
			mount --bind "$own" "$p"
		fi
	done
