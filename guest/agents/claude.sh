#!/bin/sh
# Claude Code's install step (core/agent "claude"), run as root once in the
# golden build by guest/provision/30-agent.sh.
#
#   $1  the pinned npm platform package, verified against its hash by
#       30-agent.sh (claude_install = "npm"); absent with "official".
#
# The binary is kept as claude-real; /usr/local/bin/claude is the wrapper
# that turns permission prompts off and points CLAUDE_CONFIG_DIR at the
# box's agent state. Golden builds have network access (they run only
# corral's scripts, no project code) for the official installer; boxes
# cloned from the golden never need its hosts, and the wrapper turns the
# auto-updater off. An image that already carries claude-real (the offline
# test image) installs nothing.
set -eu

if [ ! -x /usr/local/bin/claude-real ] && [ $# -ge 1 ]; then
	tar -xzf "$1" -O package/claude >/usr/local/bin/claude-real.tmp
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
