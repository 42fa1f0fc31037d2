#!/bin/sh
# corral-git-credential: git's credential helper in the box (configured as
# credential.helper by provision/35-git.sh). For "get" it answers with the
# token the session brought from the host in CORRAL_GIT_TOKEN_<HOST>: the
# host upper-cased, every character other than A-Z and 0-9 replaced by "_"
# (core/launchenv.TokenVar computes the same name). The token only lives in
# the session's environment: nothing is written to disk, and "store" and
# "erase" do nothing. Only https is answered, so a token never crosses the
# network in clear text.
set -eu

op=${1:-}
protocol=
host=
# Read git's key=value lines up to a blank line or the end of input.
while IFS= read -r line || [ -n "$line" ]; do
	[ -n "$line" ] || break
	case $line in
	protocol=*) protocol=${line#protocol=} ;;
	host=*) host=${line#host=} ;;
	esac
done

[ "$op" = get ] || exit 0
[ "$protocol" = https ] || exit 0
[ -n "$host" ] || exit 0

var=CORRAL_GIT_TOKEN_$(printf '%s' "$host" | LC_ALL=C tr '[:lower:]' '[:upper:]' | LC_ALL=C tr -c '[:upper:][:digit:]' '_')
# $var holds only [A-Z0-9_], so this eval reads a variable and runs nothing.
eval "token=\${$var:-}"
[ -n "$token" ] || exit 0
printf 'username=x-access-token\npassword=%s\n' "$token"
