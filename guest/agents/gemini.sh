#!/bin/sh
# Gemini CLI's install step (core/agent "gemini"), run as root once in the
# golden build by guest/provision/30-agent.sh.
#
#   $1  the pinned npm package node-linux-<arch> (Node >= 20: Gemini CLI's
#       engines; Debian 12 ships 18), verified by 30-agent.sh
#   $2  the pinned npm package @google/gemini-cli (a self-contained bundle)
#
# Node goes to /usr/local/lib/corral-agents/node (not on PATH: the box's
# own node, if any, stays the project's), Gemini CLI's package to
# /usr/local/lib/corral-agents/gemini. An image that already carries them
# (the offline test image) installs nothing. /usr/local/bin/gemini is the
# wrapper: that Node, approvals off (--yolo; the box is the boundary).
set -eu

base=/usr/local/lib/corral-agents
if [ ! -x "$base/node/bin/node" ] || [ ! -f "$base/gemini/bundle/gemini.js" ]; then
	if [ $# -lt 2 ]; then
		echo "corral: gemini installs only from its pinned npm packages (core/pins); this build had none (a box created with --no-golden gets none: set golden = false instead)" >&2
		exit 1
	fi
	install -d -m 0755 "$base/node/bin" "$base/gemini"
	tar -xzf "$1" -O package/bin/node >"$base/node/bin/node.tmp"
	chmod 0755 "$base/node/bin/node.tmp"
	mv -f "$base/node/bin/node.tmp" "$base/node/bin/node"
	tar --no-same-owner -xzf "$2" -C "$base/gemini" --strip-components=1 package/
	chmod -R a+rX,go-w "$base/gemini"
fi
# With GOOGLE_GEMINI_BASE_URL set and no auth type chosen, Gemini CLI (0.61)
# picks the "gateway" type, which its own check then refuses ("Invalid auth
# method selected"): under the box's broker the wrapper names the API-key
# type in the lowest settings layer (system defaults), which the user's own
# choice overrides. Gemini CLI reads that file only when no directory above
# it is group- or world-writable.
printf '{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n' >"$base/gemini-brokered.json"
chmod 0644 "$base/gemini-brokered.json"
cat >/usr/local/bin/gemini <<'WRAP'
#!/bin/sh
# corral: Gemini CLI on its pinned Node, approvals off; the box is the boundary.
if [ -n "${GOOGLE_GEMINI_BASE_URL:-}" ] && [ -z "${GEMINI_CLI_SYSTEM_DEFAULTS_PATH:-}" ]; then
	export GEMINI_CLI_SYSTEM_DEFAULTS_PATH=/usr/local/lib/corral-agents/gemini-brokered.json
fi
exec /usr/local/lib/corral-agents/node/bin/node /usr/local/lib/corral-agents/gemini/bundle/gemini.js --yolo "$@"
WRAP
chmod 0755 /usr/local/bin/gemini
