#!/bin/sh
# The agent layer (PARAM_AGENT). Every agent gets its state directory
# /corral/agents/<agent>; "claude" also installs Claude Code once (in the
# golden image) as /usr/local/bin/claude-real and adds the wrapper that
# turns permission prompts off and points CLAUDE_CONFIG_DIR at that state.
#
# Agent state (core/agentstate): with agent_state = "shared" the directory
# is a Lima mount. Otherwise it lives on this box's own disk, owned by the
# box user, and a "seeded" box fills it once from /corral/seed/agent (a
# read-only share of the box's own seed directory, written by the host
# before the first boot). Order: after 00-base.sh; before 90-done.sh (the
# host empties the seed once provisioning finished).
set -eu

agent=${PARAM_AGENT:-shell}
case $agent in
shell | claude) ;;
*)
	echo "corral: unknown agent $agent" >&2
	exit 1
	;;
esac

state=/corral/agents/$agent
install -d -m 0755 /corral /corral/agents
if ! mountpoint -q "$state"; then
	install -d -m 0700 "$state"
	if [ -n "${PARAM_USER:-}" ]; then
		chown "$PARAM_USER:" "$state"
	fi
	if [ -d /corral/seed/agent ] && [ ! -e "$state/.corral-seeded" ]; then
		# cp as the box user: nothing in the seed becomes root-owned.
		runuser -u "${PARAM_USER:-root}" -- cp -R /corral/seed/agent/. "$state/"
		runuser -u "${PARAM_USER:-root}" -- touch "$state/.corral-seeded"
	fi
fi

[ "$agent" = claude ] || exit 0

# Claude Code itself, once, in the golden image: the official installer,
# run with a throwaway HOME, its binary kept as claude-real. Golden builds
# for this agent have network access (they run only corral's scripts, no
# project code); boxes cloned from the golden never need the installer's
# hosts, and the wrapper turns the auto-updater off.
# claude_install = "npm" (PARAM_CLAUDE_INSTALL): the pinned npm platform
# package, fetched and verified on the host (core/pins) and shared
# read-only at /corral/npm; checked again here before it is unpacked.
if [ ! -x /usr/local/bin/claude-real ] && [ "${PARAM_CLAUDE_INSTALL:-official}" = npm ]; then
	tgz=/corral/npm/${PARAM_CLAUDE_NPM_FILE:?}
	if [ "$(sha512sum "$tgz" | cut -d' ' -f1)" != "${PARAM_CLAUDE_NPM_SHA512:?}" ]; then
		echo "corral: $tgz does not match its pinned hash; not installing it" >&2
		exit 1
	fi
	tar -xzf "$tgz" -O package/claude >/usr/local/bin/claude-real.tmp
	chmod 0755 /usr/local/bin/claude-real.tmp
	mv -f /usr/local/bin/claude-real.tmp /usr/local/bin/claude-real
fi
if [ ! -x /usr/local/bin/claude-real ]; then
	tmp=$(mktemp -d)
	if ! curl -fsSL https://claude.ai/install.sh -o "$tmp/install.sh" || ! HOME=$tmp bash "$tmp/install.sh"; then
		echo "corral: installing Claude Code failed; the box has no network for it (corral golden build needs it once)" >&2
		rm -rf "$tmp"
		exit 1
	fi
	install -m 0755 "$(readlink -f "$tmp/.local/bin/claude")" /usr/local/bin/claude-real
	rm -rf "$tmp"
fi
cat >/usr/local/bin/claude <<'WRAP'
#!/bin/sh
# corral: Claude Code with permission prompts off; the box is the boundary.
export CLAUDE_CONFIG_DIR="${CLAUDE_CONFIG_DIR:-/corral/agents/claude}"
export DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
export CLAUDE_CODE_PROXY_RESOLVES_HOSTS=1
if [ ! -x /usr/local/bin/claude-real ]; then
	echo "corral: Claude Code is not installed in this box; rebuild the golden image with: corral golden build" >&2
	exit 127
fi
exec /usr/local/bin/claude-real --dangerously-skip-permissions "$@"
WRAP
chmod 0755 /usr/local/bin/claude
