#!/bin/sh
# corral-request: ask the box's user for a host or a forwarded port, with a
# reason. The request goes to the box's egress broker, on the path the box
# already has to it (the proxy address in /etc/corral/network.env, written
# by provision/40-network.sh), and the user sees it in `corral egress`, the
# menu's inbox and a notification, and answers Allow or Deny on the host.
# A request grants nothing by itself; while it waits, a connection to the
# host waits too (up to a minute) and proceeds the moment it is allowed.
#
#   corral-request HOST[:PORT] --why "REASON"   (short for egress HOST[:PORT];
#                                              what the broker's 403 names)
#   corral-request egress HOST[:PORT] --why "REASON"
#   corral-request port PORT --why "REASON"
#
# The request names the process that ran this command (its executable,
# pid, parents and the session in CORRAL_SESSION): the box's own word,
# which the host shows and never decides on.
set -eu

usage() {
	echo 'usage: corral-request [egress] HOST[:PORT] --why "REASON" | corral-request port PORT --why "REASON"' >&2
	exit 2
}

[ $# -ge 2 ] || usage
case $1 in
egress | port)
	what=$1
	target=$2
	shift 2
	;;
-*) usage ;;
*)
	what=egress
	target=$1
	shift
	;;
esac
why=
while [ $# -gt 0 ]; do
	case $1 in
	--why)
		[ $# -ge 2 ] || usage
		why=$2
		shift 2
		;;
	--why=*)
		why=${1#--why=}
		shift
		;;
	*) usage ;;
	esac
done
[ -n "$why" ] || {
	echo "corral-request: --why is required: the user decides on it" >&2
	exit 2
}

env_file=${CORRAL_NETWORK_ENV:-/etc/corral/network.env}
NETWORK=
PROXY_HOST=
PROXY_PORT=
# network.env holds only NAME=VALUE lines written by 40-network.sh.
while IFS='=' read -r k v; do
	case $k in
	NETWORK) NETWORK=$v ;;
	PROXY_HOST) PROXY_HOST=$v ;;
	PROXY_PORT) PROXY_PORT=$v ;;
	esac
done <"$env_file"
if [ "$NETWORK" != broker ] || [ -z "$PROXY_HOST" ] || [ "${PROXY_PORT:-0}" = 0 ]; then
	echo "corral-request: this box has no egress broker (network = ${NETWORK:-unknown}); nothing to ask" >&2
	exit 1
fi

# The asking process: the parent of this script, and up to four of its
# parents, by name (comm).
comm() { cat "/proc/$1/comm" 2>/dev/null || echo '?'; }
ppid_of() { awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
pid=$PPID
exe=$(comm "$pid")
chain=
p=$(ppid_of "$pid")
n=0
while [ "${p:-0}" -gt 1 ] && [ $n -lt 4 ]; do
	chain="${chain:+$chain < }$(comm "$p")"
	p=$(ppid_of "$p")
	n=$((n + 1))
done

out=$(curl -sS --noproxy '*' --max-time 20 -o - -w '\n%{http_code}' \
	--data-urlencode "what=$what" \
	--data-urlencode "target=$target" \
	--data-urlencode "why=$why" \
	--data-urlencode "exe=$exe" \
	--data-urlencode "pid=$pid" \
	--data-urlencode "chain=$chain" \
	--data-urlencode "session=${CORRAL_SESSION:-}" \
	"http://$PROXY_HOST:$PROXY_PORT/corral/request") || {
	echo "corral-request: the broker at $PROXY_HOST:$PROXY_PORT did not answer" >&2
	exit 1
}
code=$(printf '%s\n' "$out" | tail -n 1)
printf '%s\n' "$out" | sed '$d' >&2
[ "$code" = 202 ]
