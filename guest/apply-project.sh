#!/bin/sh
# apply-project: the project paths, run by the corral-project unit
# (provision/50-project.sh) at every boot. HIDE covers paths with an empty
# read-only tmpfs; BOX_DIRS bind-mounts box-local directories over project
# paths.
# The lists are space-separated relative paths (core/config allows no
# space, glob or shell character in them); globbing stays off all the same,
# and an entry that is absolute or climbs out with .. is skipped.
set -euf

# shellcheck disable=SC1091 # written by provision/50-project.sh
. "${CORRAL_ETC:-/etc/corral}/project.env"
[ -n "$PROJECT" ] || exit 0
# inside REL: REL is a relative path that stays inside the project.
inside() {
	case "/$1/" in
	//* | */../* | */./*) return 1 ;;
	esac
}
for p in $HIDE; do
	inside "$p" || continue
	t="$PROJECT/$p"
	mountpoint -q "$t" && continue
	if [ -d "$t" ]; then
		mount -t tmpfs -o ro,size=4k,mode=0500 corral-hide "$t"
	elif [ -e "$t" ]; then
		mount --bind -o ro /dev/null "$t"
	fi
done
for p in $BOX_DIRS; do
	inside "$p" || continue
	t="$PROJECT/$p"
	src="/var/lib/corral/box-dirs/$(printf '%s' "$p" | tr '/' '_')"
	mountpoint -q "$t" && continue
	install -d -m 0755 "$src"
	chown "$(stat -c %u:%g "$PROJECT")" "$src"
	[ -d "$t" ] || mkdir -p "$t" 2>/dev/null || continue
	mount --bind "$src" "$t"
done
