#!/bin/sh
# apply-network: the guest side of the network mode, run by the
# corral-network unit (provision/40-network.sh) at every boot.
# broker: nftables table "corral" accepts loopback, established traffic and
# TCP to the broker (PROXY_HOST:PROXY_PORT); everything else, DNS, UDP and
# IPv6 included, is rejected. It lives in its own table and never flushes
# the ruleset, so Lima's own NAT rules keep working.
# offline: only loopback. full: no table.
set -eu

# shellcheck disable=SC1091 # written by provision/40-network.sh
. /etc/corral/network.env
nft delete table inet corral 2>/dev/null || true
[ "$NETWORK" = full ] && exit 0
broker_rule=
host_rule=
if [ "$NETWORK" = broker ]; then
	broker_rule="ip daddr $PROXY_HOST tcp dport $PROXY_PORT accept"
	# The named host ports (host_ports), one by one, at the broker's
	# address: under the host funnel qemu forwards only these; on vz this
	# rule is the only gate.
	ports=
	for p in ${HOST_PORTS:-}; do
		case "$p" in
		'' | *[!0-9]*) continue ;;
		esac
		ports="${ports:+$ports, }$p"
	done
	if [ -n "$ports" ]; then
		host_rule="ip daddr $PROXY_HOST tcp dport { $ports } accept"
	fi
fi
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
		$broker_rule
		$host_rule
		meta l4proto tcp reject with tcp reset
		reject
	}
}
NFT
