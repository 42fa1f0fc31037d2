#!/bin/bash
# corral-launch: the guest end of every corral session.
#
#   corral-launch WORKDIR [ARGV...]
#       runs ARGV (a login shell when empty) in WORKDIR; the ssh session is
#       the session.
#   corral-launch --tmux open|new NAME AGENT WORKDIR [ARGV...]
#       a detachable session under tmux (server socket "corral"): "open"
#       attaches to session NAME, creating it first when it does not
#       exist; "new" creates it detached and prints NAME. Closing the
#       terminal detaches; the session ends when ARGV exits.
#   corral-launch --attach NAME      attaches to an existing session.
#   corral-launch --list             lists sessions, one per line:
#       NAME AGENT CREATED ATTACHED ACTIVITY (times in unix seconds)
#   corral-launch --pane FIFO WORKDIR [ARGV...]
#       internal: the first process of a tmux session.
#
# ssh delivers the session's environment as CORRAL_FWD_<NAME> (accepted by
# sshd's AcceptEnv); this strips the prefix, checks that the box's guest
# units are up (refusing to run otherwise), and execs ARGV in WORKDIR
# through a login shell so profile.d (proxy settings) applies.
#
# Secrets and tmux: tmux keeps a global and a per-session environment that
# any process of the user can read (tmux show-environment), seeded from the
# environment of the client that starts the server or the session. So tmux
# itself only ever runs with a scrubbed environment (tmux_clean: a fixed
# list of non-secret names), and the session's variables reach its first
# process over a private pipe: a FIFO in a fresh 0700 directory, opened by
# this script before the session exists, filled with NAME=VALUE records
# (printf is a builtin: no argv), unlinked by the reader as soon as it has
# opened it. The values live in the pipe's kernel buffer, never on disk,
# in an argv or in tmux's tables.
set -eu

ready=${CORRAL_LAUNCH_READY:-/run/corral/ready}

usage() {
	echo "usage: corral-launch [--tmux open|new NAME AGENT] WORKDIR [ARGV...] | --attach NAME | --list" >&2
	exit 2
}

# tmux_clean runs tmux with only non-secret variables in its environment
# (values never pass through an argv either).
tmux_clean() (
	while IFS= read -r v; do
		case $v in
		HOME | USER | LOGNAME | PATH | SHELL | TERM | LANG | LC_ALL | TMUX_TMPDIR) ;;
		*) unset "$v" 2>/dev/null || true ;;
		esac
	done < <(compgen -e)
	exec tmux -L corral "$@"
)

need_tmux() {
	command -v tmux >/dev/null 2>&1 && return 0
	echo "corral: tmux is not installed in this box; detachable sessions need it" >&2
	echo "hint: rebuild the box's golden image (corral golden rm, then corral rebuild)" >&2
	exit 126
}

valid_session() {
	[[ $1 =~ ^[a-z0-9][a-z0-9-]{0,31}$ ]] || {
		echo "corral: invalid session name: $1" >&2
		exit 2
	}
}

check_units() {
	# The units write $ready/UNIT when they started and remove it when
	# they stop: one stat each. Only a missing file asks systemd (a box
	# whose units predate the status files).
	for unit in corral-network corral-project corral-git-shadow; do
		[ -e "$ready/$unit.service" ] && continue
		if ! systemctl is-active --quiet "$unit.service" 2>/dev/null; then
			echo "corral: guest unit $unit is not active; refusing to start the session" >&2
			echo "hint: corral doctor shows why (journalctl -u $unit in the box)" >&2
			exit 125
		fi
	done
}

# rename_fwd renames CORRAL_FWD_NAME to NAME without the values ever
# touching argv or being parsed: ${!CORRAL_FWD_@} lists variable names
# only (a value holding a newline cannot forge a name; no subshell, no
# fork), and ${!fwd} reads the value indirectly. The names end up in
# fwd_names.
fwd_names=()
rename_fwd() {
	local fwd name
	for fwd in "${!CORRAL_FWD_@}"; do
		name=${fwd#CORRAL_FWD_}
		[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
		export "$name=${!fwd}"
		unset "$fwd"
		fwd_names+=("$name")
	done
}

# run_here execs ARGV (or a login shell) in WORKDIR.
run_here() {
	local workdir=$1
	shift
	cd "$workdir" || {
		echo "corral: no such directory in the box: $workdir" >&2
		exit 125
	}
	if [ $# -eq 0 ]; then
		exec bash -l
	fi
	# "$0" "$@" inside bash -lc: the argv is passed as separate words,
	# never re-parsed as shell code.
	exec bash -lc 'cd "$0" && exec "$@"' "$workdir" "$@"
}

# new_session NAME AGENT WORKDIR ARGV... creates the tmux session, its
# first process reading the forwarded variables from a private FIFO.
new_session() {
	local name=$1 agent=$2 workdir=$3
	shift 3
	local dir fifo n v size=0 LC_ALL=C # ${#v} counts bytes
	for n in "${fwd_names[@]}"; do
		v=${!n}
		size=$((size + ${#n} + ${#v} + 2))
	done
	v=
	if [ "$size" -gt 60000 ]; then # a pipe buffers 64 KiB; nobody reads yet
		echo "corral: the session environment is too large for a detachable session ($size bytes)" >&2
		exit 2
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/corral-pane.XXXXXXXX") # 0700
	fifo=$dir/env
	mkfifo -m 0600 "$fifo"
	# Read-write: opening never blocks, and the records wait in the pipe
	# until the session's first process reads them.
	exec 3<>"$fifo"
	for n in "${fwd_names[@]}"; do
		printf '%s=%s\0' "$n" "${!n}" >&3
	done
	printf '\0' >&3
	local size_args=()
	if [[ ${COLUMNS:-} =~ ^[0-9]+$ && ${LINES:-} =~ ^[0-9]+$ ]]; then
		size_args=(-x "$COLUMNS" -y "$LINES")
	fi
	if ! tmux_clean new-session -d -s "$name" "${size_args[@]}" -c "$workdir" -- "$self" --pane "$fifo" "$workdir" "$@"; then
		exec 3>&-
		rm -rf "$dir"
		return 1
	fi
	tmux_clean set-option -q -t "=$name:" @corral_agent "$agent" 2>/dev/null || true
	# The first process unlinks the FIFO once it has it open; until then
	# keep the write end (closing it would drop the records).
	for _ in $(seq 100); do
		[ -p "$fifo" ] || break
		sleep 0.1
	done
	exec 3>&-
	if [ -p "$fifo" ]; then
		rm -rf "$dir"
		echo "corral: session $name did not start" >&2
		exit 1
	fi
	rmdir "$dir" 2>/dev/null || true
}

self=$0
[ $# -ge 1 ] || usage
case $1 in
--list)
	command -v tmux >/dev/null 2>&1 || exit 0
	# No server (no session): nothing to list.
	# Space-separated: tmux prints control characters in formats as "_".
	tmux_clean list-sessions -F "#{session_name} #{@corral_agent} #{session_created} #{session_attached} #{session_activity}" 2>/dev/null || true
	exit 0
	;;
--attach)
	[ $# -eq 2 ] || usage
	valid_session "$2"
	need_tmux
	rename_fwd # TERM for the client
	if ! tmux_clean has-session -t "=$2" 2>/dev/null; then
		echo "corral: no session $2 in this box" >&2
		exit 3
	fi
	tmux_clean attach-session -t "=$2"
	exit 0
	;;
--pane)
	[ $# -ge 3 ] || usage
	fifo=$2
	workdir=$3
	shift 3
	exec 3<"$fifo"
	rm -f "$fifo"
	while IFS= read -r -d '' kv <&3; do
		[ -n "$kv" ] || break
		n=${kv%%=*}
		[[ $n =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
		# The terminal inside tmux is tmux's, not the client's.
		case $n in TERM | COLUMNS | LINES) continue ;; esac
		export "$n=${kv#*=}"
	done
	exec 3<&-
	unset kv n fifo
	run_here "$workdir" "$@"
	;;
--tmux)
	[ $# -ge 5 ] || usage
	mode=$2 name=$3 agent=$4 workdir=$5
	shift 5
	case $mode in open | new) ;; *) usage ;; esac
	valid_session "$name"
	need_tmux
	check_units
	rename_fwd
	if [ "$mode" = open ] && tmux_clean has-session -t "=$name" 2>/dev/null; then
		tmux_clean attach-session -t "=$name"
		exit 0
	fi
	if ! new_session "$name" "$agent" "$workdir" "$@"; then
		# Lost a race with another client creating it: attach to theirs.
		[ "$mode" = open ] || exit 1
	fi
	if [ "$mode" = new ]; then
		printf '%s\n' "$name"
		exit 0
	fi
	tmux_clean attach-session -t "=$name"
	exit 0
	;;
--*) usage ;;
esac

workdir=$1
shift
check_units
rename_fwd
run_here "$workdir" "$@"
