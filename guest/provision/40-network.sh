#!/bin/sh
# The guest side of the network mode (PARAM_NETWORK: full|broker|offline).
# broker: nftables table "corral" accepts loopback, established traffic and
# TCP to the broker (PARAM_PROXY_HOST:PARAM_PROXY_PORT); everything else,
# DNS, UDP and IPv6 included, is rejected. It lives in its own table and
# never flushes the ruleset, so Lima's own NAT rules keep working.
# offline: only loopback. Both remove blanket sudo.
# The apply step is a systemd unit so corral-launch can check it is active.
set -eu

install -m 0755 /dev/stdin /usr/local/lib/corral/apply-network <<'APPLY'
#!/bin/sh
set -eu
. /etc/corral/network.env
nft delete table inet corral 2>/dev/null || true
[ "$NETWORK" = full ] && exit 0
nft -f - <<NFT
table inet corral {
	chain out {
		type filter hook output priority 0; policy drop;
		oif "lo" accept
		ct state established,related accept
		# Replies of sshd: Lima's ssh master was connected before this
		# table (and conntrack) existed, so conntrack may not see it as
		# established; only root can bind port 22.
		tcp sport 22 accept
		$( [ "$NETWORK" = broker ] && echo "ip daddr $PROXY_HOST tcp dport $PROXY_PORT accept" )
		meta l4proto tcp reject with tcp reset
		reject
	}
}
NFT
APPLY

umask 022
{
	printf 'NETWORK=%s\n' "${PARAM_NETWORK:-broker}"
	printf 'PROXY_HOST=%s\n' "${PARAM_PROXY_HOST:-192.168.5.2}"
	printf 'PROXY_PORT=%s\n' "${PARAM_PROXY_PORT:-0}"
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

cat >/etc/systemd/system/corral-network.service <<'UNIT'
[Unit]
Description=corral network mode
After=network.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/lib/corral/apply-network
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable corral-network.service >/dev/null 2>&1
systemctl restart corral-network.service

# No blanket sudo outside full mode: root could undo the funnel. Lima's host
# agent still needs a few fixed root reads to see that the box is ready
# (pkg/hostagent/requirements.go in Lima 1.2.2), so the user keeps exactly
# those and nothing else (PARAM_SUDO=lima). PARAM_SUDO=all (full mode, or
# the sudo key) (re)grants sudo, since a box may be cloned from a golden
# image built in another mode.
user=${PARAM_USER:?the Lima user name (param USER) is missing}
tmp=$(mktemp)
if [ "${PARAM_SUDO:-lima}" != all ]; then
	cat >"$tmp" <<SUDO
# corral: no blanket sudo in this box; only Lima's readiness checks.
Cmnd_Alias CORRAL_LIMA = /usr/bin/cat /mnt/lima-cidata/param.env, \\
	/usr/bin/diff -q /run/lima-ssh-ready /mnt/lima-cidata/meta-data, \\
	/usr/bin/diff -q /run/lima-boot-done /mnt/lima-cidata/meta-data, \\
	/usr/bin/grep -q ^user_allow_other /etc/fuse.conf, \\
	/usr/sbin/nft list table inet corral
$user ALL=(root) NOPASSWD: CORRAL_LIMA
SUDO
	for f in /etc/sudoers.d/*; do
		[ -e "$f" ] && [ "$f" != /etc/sudoers.d/README ] && rm -f "$f"
	done
	for g in sudo wheel admin; do
		for u in $(getent group "$g" | cut -d: -f4 | tr , " "); do gpasswd -d "$u" "$g" >/dev/null 2>&1 || true; done
	done
else
	printf '# corral: full network mode keeps sudo\n%s ALL=(ALL) NOPASSWD:ALL\n' "$user" >"$tmp"
fi
visudo -cq -f "$tmp"
install -m 0440 "$tmp" /etc/sudoers.d/90-corral
rm -f "$tmp"
