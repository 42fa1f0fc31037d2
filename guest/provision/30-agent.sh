#!/bin/sh
# The agent layer (PARAM_AGENT). "shell" needs nothing. "claude" installs
# Claude Code once (in the golden image) as /usr/local/bin/claude-real and
# adds the wrapper that turns permission prompts off and points the login
# state at /corral/agents/claude.
set -eu

case ${PARAM_AGENT:-shell} in
shell) exit 0 ;;
claude) ;;
*) echo "corral: unknown agent ${PARAM_AGENT}" >&2; exit 1 ;;
esac

install -d -m 0755 /corral/agents/claude 2>/dev/null || true

# Claude Code itself, once, in the golden image: the official installer,
# run with a throwaway HOME, its binary kept as claude-real. Golden builds
# for this agent have network access (they run only corral's scripts, no
# project code); boxes cloned from the golden never need the installer's
# hosts, and the wrapper turns the auto-updater off.
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
