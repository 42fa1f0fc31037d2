#!/bin/sh
# Prints where the golden image's toolchains are configured to download
# from: npm's registry, Go's GOPROXY and GOSUMDB, pip's index (its config,
# its environment, and pip's own default), cargo's config files and apt's
# sources. `corral golden build` runs it over ssh as the box user after the
# golden's provisioning, and core/toolreg parses the output on the host,
# strictly: this script only reports raw text and decides nothing.
#
# Output: a version line, then one block per finding: "@TOOL WHAT" and the
# finding's text, every line of it prefixed with "| ". Each block is capped
# at 64 KiB. Nothing here may fail the golden build: every probe is
# optional.
set -u

echo "# corral toolchain registries 1"

# block TOOL WHAT: stdin as one block.
block() {
	printf '@%s %s\n' "$1" "$2"
	head -c 65536 | sed 's/^/| /'
}

if command -v npm >/dev/null 2>&1; then
	npm config get registry 2>/dev/null | block npm registry
fi

if command -v go >/dev/null 2>&1; then
	go env GOPROXY 2>/dev/null | block go GOPROXY
	go env GOSUMDB 2>/dev/null | block go GOSUMDB
fi

if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
	python3 -m pip config list 2>/dev/null | block pip config
	[ -z "${PIP_INDEX_URL:-}" ] || printf '%s\n' "$PIP_INDEX_URL" | block pip "env PIP_INDEX_URL"
	[ -z "${PIP_EXTRA_INDEX_URL:-}" ] || printf '%s\n' "$PIP_EXTRA_INDEX_URL" | block pip "env PIP_EXTRA_INDEX_URL"
	# pip's own default index and the host its files come from, asked
	# from pip itself (corral names no index).
	python3 -c 'from pip._internal.models.index import PyPI
print(PyPI.simple_url)
print("https://" + PyPI.file_storage_domain + "/")' 2>/dev/null | block pip default
fi

cargo_home=${CARGO_HOME:-${HOME:-}/.cargo}
# The file name is only printed, never written (SC2094 is a false alarm).
for f in "$cargo_home/config.toml" "$cargo_home/config"; do
	# shellcheck disable=SC2094
	[ -f "$f" ] && block cargo "$f" <"$f"
done

for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	# shellcheck disable=SC2094
	[ -f "$f" ] && block apt "$f" <"$f"
done
exit 0
