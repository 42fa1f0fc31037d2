#!/bin/sh
# The main job on a fresh Debian machine (run as root after install.sh):
# build the offline guest image, then, as an unprivileged user (Lima
# refuses root), create a real box for a sample project, run commands in it
# and print their output. The VM runs in a network namespace with only
# loopback, so nothing in it can reach the network.
# shellcheck disable=SC2016 # single-quoted scripts below are expanded by inner shells, from "$0"/"$@"
set -eu
here=$(cd "$(dirname "$0")" && pwd)
user=${CORRAL_DEMO_USER:-${SUDO_USER:-corral-e2e}}
image=${CORRAL_IMAGE:-/var/cache/corral/images/bookworm}
corral=${CORRAL:-$(command -v corral || echo /usr/local/bin/corral)}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (it builds the image and drops to user $user)" >&2
	exit 2
fi
[ -x "$corral" ] || {
	echo "demo: corral not found; run packaging/linux/install.sh first" >&2
	exit 1
}
"$here/build-image.sh" "$image"
CORRAL_E2E_USER=$user "$here/create-test-user.sh"

home=$(getent passwd "$user" | cut -d: -f6)
demo=$home/corral-demo
runuser -u "$user" -- mkdir -p "$demo/project" "$demo/state"
runuser -u "$user" -- sh -c 'echo "hello from the host" > "$0/project/hello.txt"' "$demo"
printf '%s\n' "image = \"$image\"" 'cpus = 2' 'memory = "1GiB"' 'disk = "4GiB"' \
	'agent = "shell"' 'network = "offline"' | runuser -u "$user" -- sh -c 'cat > "$0/state/config.toml"' "$demo"

echo "== corral: creating a box for $demo/project (about two minutes under TCG)"
# shellcheck disable=SC2016 # expanded by the inner shells
unshare -n sh -c '
	ip link set lo up
	exec runuser -u "$1" -- env CORRAL_HOME="$2/state" HOME="$3" PATH="$PATH" sh -c "
		set -e
		cd \"\$0/project\"
		\"\$1\" up
		\"\$1\" run -- uname -sr
		\"\$1\" run -- cat hello.txt
		\"\$1\" run -- sh -c \"echo written in the box > from-box.txt\"
		\"\$1\" ls
		\"\$1\" stop
	" "$2" "$4"
' demo "$user" "$demo" "$home" "$corral"
echo "== the host sees: $(cat "$demo/project/from-box.txt")"
echo "== done: the box is stopped; start it again with: runuser -u $user -- env CORRAL_HOME=$demo/state $corral up -C $demo/project"
