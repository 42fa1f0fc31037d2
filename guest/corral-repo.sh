#!/bin/sh
# corral-repo OP DIR [HAVE...]: the box's end of `corral pull`, run as the
# box user over ssh. DIR is the box's repository (the project directory:
# the git shadow over the host's .git, or the box's own clone). HAVEs are
# commits the host already has; the host checks everything this prints.
#   bundle  write a git bundle of DIR's branches to stdout, leaving out the
#           HAVEs' history where git can (a full bundle when nothing is new)
#   count   print how many commits on DIR's branches are not in the HAVEs
#   heads   print DIR's branches, "OBJECT refs/heads/NAME" a line: a bundle
#           leaves out the branches whose tips the host has, and this list
#           tells those from deleted ones
set -eu

if [ $# -lt 2 ]; then
	echo "usage: corral-repo bundle|count|heads DIR [HAVE...]" >&2
	exit 2
fi
op=$1
dir=$2
shift 2
cd "$dir"

# Only full hex object names the box knows: an unknown one would make git
# refuse the whole range.
haves=
for h in "$@"; do
	case $h in
	'' | *[!0-9a-f]*) continue ;;
	esac
	if git cat-file -e "$h^{commit}" 2>/dev/null; then
		haves="$haves $h"
	fi
done

case $op in
bundle)
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	# shellcheck disable=SC2086 # haves are hex words
	if ! git bundle create -q "$tmp" --branches --not $haves 2>/dev/null; then
		# Nothing new (git refuses an empty bundle): send every branch, so
		# the host still sees moved and deleted branches.
		git bundle create -q "$tmp" --branches
	fi
	cat "$tmp"
	;;
heads)
	git for-each-ref --format='%(objectname) %(refname)' refs/heads/
	;;
count)
	# shellcheck disable=SC2086
	git rev-list --count --branches --not $haves
	;;
*)
	echo "corral-repo: unknown operation $op" >&2
	exit 2
	;;
esac
