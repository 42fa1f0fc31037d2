#!/bin/sh
# Installs everything corral's tests need on a fresh Debian 12 machine
# (run as root): linters, the desktop test stack (private D-Bus, keyring,
# notification daemon, Xvfb), and real Lima (1.2.2, the declared minimum,
# and 2.2.0 beside it from packaging/third_party) with an offline test
# image for the end-to-end tests. Idempotent; safe to re-run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
	shellcheck shfmt git curl ca-certificates make iproute2 util-linux \
	dbus gnome-keyring libsecret-tools xvfb dunst \
	dpkg-dev desktop-file-utils npm

"$here/setup-lima.sh"
"$here/setup-lima2.sh"
"$here/build-image.sh"
"$here/create-test-user.sh"
