#!/bin/sh
# The agent layer, from the agent registry (core/agent) as data: this script
# knows no agent by name. Parameters (core/limayaml):
#   PARAM_AGENT            the box's agent; its state lives in /corral/agents/<agent>
#   PARAM_AGENT_STATE_DIR  where the agent looks for its state, relative to the
#                          box user's home (".codex"); linked to that directory
#   PARAM_AGENT_INSTRUCTIONS  the file in the state directory the agent reads
#                          its instructions from at start ("AGENTS.md"); it
#                          gets corral's block (below)
#   PARAM_AGENT_NPM        "FILE:SHA512HEX ..." pinned npm tarballs under
#                          /corral/npm (golden build only), handed to the
#                          install step in this order after their hashes match
# and the agent's install step, a Lima data file at
# /usr/local/lib/corral/agent-install (golden build only): run as root once
# (the sha256 of the step is recorded in /var/lib/corral/agent-installed, so
# boxes cloned from the golden image do not run it again).
#
# Agent state (core/agentstate): with agent_state = "shared" the directory
# is a Lima mount. Otherwise it lives on this box's own disk, owned by the
# box user, and a "seeded" box fills it once from /corral/seed/agent (a
# read-only share of the box's own seed directory, written by the host
# before the first boot). Order: after 00-base.sh; before 90-done.sh (the
# host empties the seed once provisioning finished).
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/30-agent.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

# CORRAL_TEST_ROOT: guest/guest_test.go runs this script under a temporary
# directory; Lima never sets it.
root=${CORRAL_TEST_ROOT:-}
agent=${PARAM_AGENT:-shell}
case $agent in
"" | -* | *[!a-z0-9-]*)
	echo "corral: invalid agent name $agent" >&2
	exit 1
	;;
esac

state=$root/corral/agents/$agent
install -d -m 0755 "$root/corral" "$root/corral/agents"
if ! mountpoint -q "$state"; then
	install -d -m 0700 "$state"
	if [ -n "${PARAM_USER:-}" ]; then
		chown "$PARAM_USER:" "$state"
	fi
	if [ -d "$root/corral/seed/agent" ] && [ ! -e "$state/.corral-seeded" ]; then
		# cp as the box user: nothing in the seed becomes root-owned.
		runuser -u "${PARAM_USER:-root}" -- cp -R "$root/corral/seed/agent/." "$state/"
		runuser -u "${PARAM_USER:-root}" -- touch "$state/.corral-seeded"
	fi
fi

# The agent's own state path in the user's home points at the state
# directory (as the user: a link the box may replace is the box's own
# business). An existing directory there is left alone.
rel=${PARAM_AGENT_STATE_DIR:-}
if [ -n "$rel" ] && [ -n "${PARAM_USER:-}" ]; then
	case $rel in
	/* | ../* | */../* | *[!A-Za-z0-9._/-]*)
		echo "corral: invalid agent state directory $rel" >&2
		exit 1
		;;
	esac
	home=$(getent passwd "$PARAM_USER" | cut -d: -f6)
	if [ -n "$home" ] && [ -d "$home" ]; then
		link=$home/$rel
		if [ -L "$link" ] || [ ! -e "$link" ]; then
			runuser -u "$PARAM_USER" -- mkdir -p "$(dirname "$link")"
			runuser -u "$PARAM_USER" -- ln -sfn "$state" "$link"
		else
			echo "corral: $link exists and is not a link; the agent keeps its state there" >&2
		fi
	fi
fi

# corral's block in the agent's instruction file: how egress works and how
# to ask for a host (the text is guest/agent-instructions.md, written by
# the first provision script). Rewritten at every boot between its first
# and last lines; the rest of the file is the user's and is kept. Written
# as the box user: the state directory is theirs, and a file there may be
# a link the box made, which root must never write through. Before the
# install step (which exits early once done).
# as_user CMD...: CMD as the box user (as is under CORRAL_TEST_ROOT).
as_user() {
	if [ -n "${PARAM_USER:-}" ]; then
		runuser -u "$PARAM_USER" -- "$@"
	else
		"$@"
	fi
}
text=$root/usr/local/lib/corral/agent-instructions.md
file=${PARAM_AGENT_INSTRUCTIONS:-}
if [ -n "$file" ] && [ -f "$text" ]; then
	case $file in
	.* | */* | *[!A-Za-z0-9._-]*)
		echo "corral: invalid agent instructions file $file" >&2
		exit 1
		;;
	esac
	# Not fatal: the agent runs without the block (the broker's 403 names
	# corral-request too).
	# shellcheck disable=SC2016 # the script is for the inner sh
	as_user sh -euc '
		f=$1 text=$2
		if [ -e "$f" ] && [ ! -f "$f" ] && [ ! -L "$f" ]; then
			echo "corral: $f is not a file; the agent instructions are not written" >&2
			exit 0
		fi
		begin=$(head -n 1 "$text")
		end=$(tail -n 1 "$text")
		tmp=$(mktemp "$f.XXXXXX")
		{
			# Only whole blocks (a begin line, then its end line) are
			# dropped: the lines after a begin line are held until its end
			# line, and given back when another begin or the end of the
			# file comes first (nothing of the user'"'"'s is lost).
			if [ -f "$f" ] && [ ! -L "$f" ]; then
				awk -v b="$begin" -v e="$end" "
					\$0 == b { if (inb) printf \"%s\", held; inb = 1; held = \$0 \"\\n\"; next }
					inb && \$0 == e { inb = 0; held = \"\"; next }
					inb { held = held \$0 \"\\n\"; next }
					{ print }
					END { if (inb) printf \"%s\", held }
				" "$f"
			fi
			cat "$text"
		} >"$tmp"
		if cmp -s "$tmp" "$f"; then rm -f "$tmp"; else mv -f "$tmp" "$f"; fi
	' sh "$state/$file" "$text" || echo "corral: writing the agent instructions to $state/$file failed" >&2
fi

step=$root/usr/local/lib/corral/agent-install
mark=$root/var/lib/corral/agent-installed
[ -f "$step" ] || exit 0
want=$(sha256sum "$step" | cut -d' ' -f1)
[ "$(cat "$mark" 2>/dev/null || true)" != "$want" ] || exit 0

# The pinned tarballs, each checked against its hash before the step sees it.
set --
for spec in ${PARAM_AGENT_NPM:-}; do
	file=${spec%%:*}
	sum=${spec#*:}
	case $file in
	"" | .* | */*)
		echo "corral: invalid npm file name $file" >&2
		exit 1
		;;
	esac
	tgz=$root/corral/npm/$file
	if [ ! -f "$tgz" ] || [ "$(sha512sum "$tgz" | cut -d' ' -f1)" != "$sum" ]; then
		echo "corral: $tgz is missing or does not match its pinned hash; not installing it" >&2
		exit 1
	fi
	set -- "$@" "$tgz"
done
echo "corral: installing agent $agent" >&2
sh -eu "$step" "$@"
install -d -m 0755 "$root/var/lib/corral"
printf '%s\n' "$want" >"$mark"
