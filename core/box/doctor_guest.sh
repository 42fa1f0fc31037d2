#!/bin/sh
# corral doctor, the guest half. Run over ssh as the box user with the
# session's environment (CORRAL_FWD_*, as a session sends it), it prints
# key=value lines that core/box parses (parseGuestReport). It prints names
# and states only, never a variable's value.
#
# Arguments: NETWORK, then any of
#   unit:NAME           a systemd unit that must be active
#   env:NAME            a variable the session forwards (as CORRAL_FWD_NAME)
#   git:HOST:VAR        a git_tokens host and its token variable
# Not set -e: every check runs and reports, whatever the others do.
set -u

printf 'network_want=%s\n' "${1:-}"
shift

if [ -e /etc/corral/provisioned ]; then
	printf 'marker=1\nmarker_hash=%s\n' "$(head -n 1 /etc/corral/provisioned 2>/dev/null || true)"
else
	echo 'marker=0'
fi

printf 'network=%s\n' "$(sed -n 's/^NETWORK=//p' /etc/corral/network.env 2>/dev/null || true)"

# The user sessions run as: the one Lima made, which the template must
# name (core/limayaml GuestUser).
printf 'user=%s\n' "$(id -un 2>/dev/null || true)"

if sudo -n true >/dev/null 2>&1; then echo 'sudo=yes'; else echo 'sudo=no'; fi

# The nftables table is readable only by root: through sudo where the box
# has it, else nft's own error says whether it was permission or absence.
nft=/usr/sbin/nft
[ -x "$nft" ] || nft=$(command -v nft 2>/dev/null || echo nft)
if sudo -n "$nft" list table inet corral >/dev/null 2>&1; then
	echo 'nft=present'
elif out=$("$nft" list table inet corral 2>&1); then
	echo 'nft=present'
else
	case $out in
	*"ermission"* | *"not permitted"*) echo 'nft=unknown' ;;
	*) echo 'nft=absent' ;;
	esac
fi

for arg in "$@"; do
	case $arg in
	unit:*)
		u=${arg#unit:}
		printf 'unit.%s=%s\n' "$u" "$(systemctl is-active "$u" 2>/dev/null || true)"
		;;
	env:*)
		n=${arg#env:}
		case $n in *[!A-Za-z0-9_]* | "" | [0-9]*) continue ;; esac
		# $n holds only [A-Za-z0-9_]: this eval reads a variable, runs nothing.
		eval "set_=\${CORRAL_FWD_$n+1}"
		printf 'env.%s=%s\n' "$n" "${set_:-0}"
		;;
	git:*)
		rest=${arg#git:}
		host=${rest%:*}
		var=${rest##*:}
		case $var in *[!A-Z0-9_]* | "") continue ;; esac
		if ! command -v git >/dev/null 2>&1; then
			printf 'git.%s=nogit\n' "$host"
			continue
		fi
		# As corral-launch would: the token under its own name, exported in
		# a subshell (never on a command line), for git's credential
		# helper. Only grep sees git's answer. $var holds only [A-Z0-9_].
		if (
			eval "export $var=\"\${CORRAL_FWD_$var:-}\""
			printf 'protocol=https\nhost=%s\n\n' "$host" |
				GIT_TERMINAL_PROMPT=0 git -c credential.interactive=never credential fill 2>/dev/null |
				grep -q '^password=.'
		); then
			printf 'git.%s=ok\n' "$host"
		else
			printf 'git.%s=none\n' "$host"
		fi
		;;
	esac
done
echo 'end=1'
