#!/bin/sh
# fake-ssh.sh stands in for ssh in core/remotebox's tests. It reads its
# argv as ssh does (options, "--", the destination, the remote command
# line), records them, reads the remote command line with this shell as
# the remote login shell would, and answers from files under
# $FAKE_SSH_DIR/DESTINATION/:
#
#   unreachable       ssh's own failure: exit 255
#   slow              no answer at all (sleeps until killed)
#   ls.json           what corral ls --json prints
#   egress-BOX.json   what corral egress --json -- BOX prints
#   fail              an action fails: this text on stderr, exit 1
#
# Every remote command line is appended to $FAKE_SSH_DIR/calls, every ssh
# option to $FAKE_SSH_DIR/opts. The version check answers
# $FAKE_SSH_VERSION and $FAKE_SSH_COMMIT.
set -eu
dest=""
while [ $# -gt 0 ]; do
	case $1 in
	--)
		dest=$2
		shift 2
		break
		;;
	-F | -p | -e | -o)
		printf '%s %s\n' "$1" "$2" >>"$FAKE_SSH_DIR/opts"
		shift 2
		;;
	*)
		printf '%s\n' "$1" >>"$FAKE_SSH_DIR/opts"
		shift
		;;
	esac
done
cmdline=$1
dir=$FAKE_SSH_DIR/$dest
printf '%s\n' "$cmdline" >>"$FAKE_SSH_DIR/calls"
if [ -e "$dir/unreachable" ]; then
	echo "ssh: connect to host $dest port 22: Connection refused" >&2
	exit 255
fi
if [ -e "$dir/slow" ]; then
	exec sleep 60
fi
# The remote shell's reading of the command line: corral, --host, local,
# then the command and its arguments.
eval "set -- $cmdline"
shift 3
case $1 in
version)
	printf '{"version":"%s","commit":"%s"}\n' "$FAKE_SSH_VERSION" "$FAKE_SSH_COMMIT"
	;;
ls)
	cat "$dir/ls.json"
	;;
egress)
	box=""
	for a; do box=$a; done
	if [ -e "$dir/egress-$box.json" ]; then
		cat "$dir/egress-$box.json"
	else
		echo "corral: no box $box" >&2
		echo "hint: corral ls lists the boxes" >&2
		exit 1
	fi
	;;
*)
	echo "progress on stderr" >&2
	if [ -e "$dir/fail" ]; then
		cat "$dir/fail" >&2
		exit 1
	fi
	;;
esac
