#!/bin/sh
# Codex's install step (core/agent "codex"), run as root once in the golden
# build by guest/provision/30-agent.sh.
#
#   $1  the pinned npm platform package @openai/codex@<version>-linux-<arch>,
#       verified against its hash by 30-agent.sh
#
# The platform package holds a static native binary (vendor/<triple>/bin/codex)
# and the ripgrep it uses (vendor/<triple>/codex-path/rg); the Node launcher of
# the main package is not needed. An image that already carries them (the
# offline test image, packaging/linux/build-image.sh) installs nothing.
# /usr/local/bin/codex is the wrapper: ripgrep first in PATH (as the launcher
# does), approvals off (the box is the boundary), and the session's
# OPENAI_BASE_URL and OPENAI_API_KEY in the places Codex reads.
set -eu

dir=/usr/local/lib/corral-agents/codex
if [ ! -x "$dir/bin/codex" ]; then
	if [ $# -lt 1 ]; then
		echo "corral: codex installs only from its pinned npm package (core/pins); this build had none (a box created with --no-golden gets none: set golden = false instead)" >&2
		exit 1
	fi
	tmp=$(mktemp -d)
	tar --no-same-owner -xzf "$1" -C "$tmp" --wildcards 'package/vendor/*/bin/*' 'package/vendor/*/codex-path/*'
	set -- "$tmp"/package/vendor/*/bin/codex
	if [ $# -ne 1 ] || [ ! -f "$1" ]; then
		echo "corral: the codex package does not hold one vendor/<triple>/bin/codex" >&2
		rm -rf "$tmp"
		exit 1
	fi
	triple=$(dirname "$(dirname "$1")")
	install -d -m 0755 "$dir"
	cp -R "$triple/bin" "$triple/codex-path" "$dir/"
	chmod -R a+rX,go-w "$dir"
	rm -rf "$tmp"
fi
cat >/usr/local/bin/codex <<'WRAP'
#!/bin/sh
# corral: Codex with approvals and its own sandbox off; the box is the boundary.
# Codex (0.171) takes its API's base only from its config (openai_base_url),
# not from OPENAI_BASE_URL, and an API key from CODEX_API_KEY, not
# OPENAI_API_KEY: the session's variables (under the box's broker, its
# route and a placeholder) are handed to it here.
export PATH="/usr/local/lib/corral-agents/codex/codex-path:$PATH"
if [ -n "${OPENAI_API_KEY:-}" ] && [ -z "${CODEX_API_KEY:-}" ]; then
	export CODEX_API_KEY="$OPENAI_API_KEY"
fi
if [ -n "${OPENAI_BASE_URL:-}" ]; then
	set -- -c "openai_base_url=\"$OPENAI_BASE_URL\"" "$@"
fi
exec /usr/local/lib/corral-agents/codex/bin/codex --dangerously-bypass-approvals-and-sandbox "$@"
WRAP
chmod 0755 /usr/local/bin/codex
