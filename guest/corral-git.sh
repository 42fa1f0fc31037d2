#!/bin/sh
# git in the box: the real git, plus one line of why when it fails to make
# a repository inside the project. On Linux qemu the host refuses every
# .git entry in the work tree (core/namerule: host git would obey a
# repository the box made there), and git's own message ("cannot mkdir
# .git: Operation not permitted") does not say so. Installed as
# /usr/local/bin/git, ahead of /usr/bin on every PATH; exit code, input and
# output are git's own.
/usr/bin/git "$@"
rc=$?
[ "$rc" -ne 0 ] || exit 0
made=
for a in "$@"; do
	case "$a" in
	init | clone | submodule | worktree) made=1 ;;
	esac
done
[ -n "$made" ] || exit "$rc"
PROJECT=
# shellcheck disable=SC1091 # written by provision/44-git-shadow.sh
[ -r "${CORRAL_ETC:-/etc/corral}/git-shadow.env" ] && . "${CORRAL_ETC:-/etc/corral}/git-shadow.env"
[ -n "$PROJECT" ] || exit "$rc"
here=$(pwd -P 2>/dev/null || pwd)
inside=
case "$here/" in "$PROJECT"/*) inside=1 ;; esac
for a in "$@"; do
	case "$a" in "$PROJECT" | "$PROJECT"/*) inside=1 ;; esac
done
if [ -n "$inside" ]; then
	echo "corral: this box cannot make a git repository inside the project ($PROJECT): the host refuses any .git there. Make it outside the project (under \$HOME or /tmp), or ask the user for a box_dirs path or source = \"clone\" (docs/SECURITY.md)." >&2
fi
exit "$rc"
