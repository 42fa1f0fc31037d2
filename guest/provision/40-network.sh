#!/bin/sh
# The guest side of the network mode (PARAM_NETWORK: full|broker|offline):
# the proxy settings of every client, and the corral-network unit that runs
# /usr/local/lib/corral/apply-network (guest/apply-network.sh: the nftables
# funnel) at every boot, a unit so corral-launch can check it is active.
# 41-sudo.sh then takes blanket sudo away outside full mode.
set -eu
# The guest's record of this step (guest.ProvisionRecordDir): its exit status,
# readable by the box user (umask 022), read by the golden build and doctor;
# no record means it did not run to its end.
# shellcheck disable=SC2154 # corral_rc is set in the trap
trap 'corral_rc=$?; (umask 022 && mkdir -p "${CORRAL_TEST_ROOT:-}/run/corral/provision" && echo "$corral_rc" >"${CORRAL_TEST_ROOT:-}/run/corral/provision/40-network.sh") 2>/dev/null || :; exit "$corral_rc"' EXIT

umask 022
{
	printf 'NETWORK=%s\n' "${PARAM_NETWORK:-broker}"
	printf 'PROXY_HOST=%s\n' "${PARAM_PROXY_HOST:-192.168.5.2}"
	printf 'PROXY_PORT=%s\n' "${PARAM_PROXY_PORT:-0}"
	# host_ports: named host loopback ports, at PROXY_HOST:PORT (digits
	# and spaces only; corral sets it at every start).
	case "${PARAM_HOST_PORTS:-}" in
	*[!0-9\ ]*) printf 'HOST_PORTS=\n' ;;
	*) printf 'HOST_PORTS="%s"\n' "${PARAM_HOST_PORTS:-}" ;;
	esac
} >/etc/corral/network.env

proxy=
if [ "${PARAM_NETWORK:-broker}" = broker ]; then
	proxy="http://${PARAM_PROXY_HOST:-192.168.5.2}:${PARAM_PROXY_PORT:-0}"
fi
# Proxy settings for every client that reads them: login shells, PAM, apt.
if [ -n "$proxy" ]; then
	cat >/etc/profile.d/corral-proxy.sh <<ENV
export HTTP_PROXY=$proxy HTTPS_PROXY=$proxy http_proxy=$proxy https_proxy=$proxy
export NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1
export CLAUDE_CODE_PROXY_RESOLVES_HOSTS=1
ENV
	# A corral session's ID (CORRAL_SESSION, set by corral-launch from the
	# host) rides in the proxy URL as its user name, so that the broker can
	# say which session a connection came from. Display only: any process
	# in the box can claim any session (docs/SECURITY.md).
	cat >>/etc/profile.d/corral-proxy.sh <<'ENV'
case ${CORRAL_SESSION:-} in
'' | *[!A-Za-z0-9-]*) ;;
*)
	_corral_proxy="http://session-$CORRAL_SESSION:x@${HTTP_PROXY#http://}"
	export HTTP_PROXY="$_corral_proxy" HTTPS_PROXY="$_corral_proxy" http_proxy="$_corral_proxy" https_proxy="$_corral_proxy"
	unset _corral_proxy
	;;
esac
ENV
	sed -i '/^[Hh][Tt][Tt][Pp][Ss]*_[Pp][Rr][Oo][Xx][Yy]=/d; /^[Nn][Oo]_[Pp][Rr][Oo][Xx][Yy]=/d' /etc/environment
	printf 'HTTP_PROXY=%s\nHTTPS_PROXY=%s\nhttp_proxy=%s\nhttps_proxy=%s\nNO_PROXY=localhost,127.0.0.1,::1\n' \
		"$proxy" "$proxy" "$proxy" "$proxy" >>/etc/environment
	printf 'Acquire::http::Proxy "%s";\nAcquire::https::Proxy "%s";\n' "$proxy" "$proxy" >/etc/apt/apt.conf.d/90corral-proxy
	! command -v git >/dev/null 2>&1 || git config --system http.proxy "$proxy" # 35-git.sh shares /etc/gitconfig: never overwrite it
	printf 'proxy=%s\nhttps-proxy=%s\n' "$proxy" "$proxy" >/etc/npmrc
	printf '[global]\nproxy = %s\n' "$proxy" >/etc/pip.conf
else
	rm -f /etc/profile.d/corral-proxy.sh /etc/apt/apt.conf.d/90corral-proxy /etc/npmrc /etc/pip.conf
	! command -v git >/dev/null 2>&1 || git config --system --unset-all http.proxy || true
fi

/usr/local/lib/corral/unit corral-network "corral network mode" network.target /usr/local/lib/corral/apply-network
