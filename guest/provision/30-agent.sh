#!/bin/sh
# The agent layer (PARAM_AGENT). "shell" needs nothing. "claude" expects the
# Claude Code binary at /usr/local/bin/claude-real; the golden build puts it
# there (fetched and verified on the host, so the box never needs the
# installer's hosts), and this script adds the wrapper that turns
# permission prompts off and points the login state at /corral/agents/claude.
set -eu

case ${PARAM_AGENT:-shell} in
shell) exit 0 ;;
claude) ;;
*) echo "corral: unknown agent ${PARAM_AGENT}" >&2; exit 1 ;;
esac

install -d -m 0755 /corral/agents/claude 2>/dev/null || true
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
