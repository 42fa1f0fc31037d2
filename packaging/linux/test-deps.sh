#!/bin/sh
# Installs everything corral's tests need on a fresh Debian 12 machine
# (run as root): linters, the desktop test stack (private D-Bus, keyring,
# notification daemon, Xvfb), sshd (the remote-host test runs its own on
# 127.0.0.1 with its own config and keys), and real Lima (1.2.2, the
# declared minimum, and 2.2.0 beside it from packaging/third_party) with an offline test
# image for the end-to-end tests. Idempotent; safe to re-run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
	shellcheck shfmt git curl ca-certificates make iproute2 util-linux \
	dbus gnome-keyring libsecret-tools xvfb dunst \
	dpkg-dev desktop-file-utils \
	openssh-server squid openssl
# The tests run their own sshd on 127.0.0.1, and their own squid there
# (the upstream proxy of the broker's tests, core/broker/brokertest
# StartSquid); the system's services stay off where systemd started them
# on installation.
if [ -d /run/systemd/system ]; then
	systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
	systemctl disable --now squid.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/squid ]; then
	# Without systemd the package's init script may have started squid
	# (a proxy on port 3128 for every local user): stop it.
	/etc/init.d/squid stop >/dev/null 2>&1 || true
	update-rc.d squid disable >/dev/null 2>&1 || true
fi
# npm fetches the pinned agent packages (core/pins). Machines of this kind
# already have Node.js and npm from outside Debian, and Debian's npm
# conflicts with that nodejs: install Debian's only where there is none.
command -v npm >/dev/null 2>&1 ||
	apt-get install -y -q --no-install-recommends npm

"$here/setup-lima.sh"
# Lima 2.2.0's build is CPU-bound and the image build (debootstrap) mostly
# waits on downloads and disk, so they overlap; the image needs 1.2.2's guest
# agent, which setup-lima.sh has installed by now.
"$here/setup-lima2.sh" &
lima2=$!
"$here/build-image.sh" || {
	kill "$lima2" 2>/dev/null || true
	exit 1
}
wait "$lima2"
"$here/create-test-user.sh"
