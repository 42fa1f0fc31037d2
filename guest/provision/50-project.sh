#!/bin/sh
# Project paths: hide (PARAM_HIDE) covers paths with an empty read-only
# tmpfs; box_dirs (PARAM_BOX_DIRS) bind-mounts box-local directories over
# project paths. Both are a systemd unit so corral-launch can check them.
# Runs after the project mount exists (Lima mounts before provisioning).
set -eu

umask 022
{
	printf 'PROJECT=%s\n' "${PARAM_PROJECT:-}"
	printf 'HIDE=%s\n' "${PARAM_HIDE:-}"
	printf 'BOX_DIRS=%s\n' "${PARAM_BOX_DIRS:-}"
} >/etc/corral/project.env

install -m 0755 /dev/stdin /usr/local/lib/corral/apply-project <<'APPLY'
#!/bin/sh
set -eu
. /etc/corral/project.env
[ -n "$PROJECT" ] || exit 0
for p in $HIDE; do
	t="$PROJECT/$p"
	mountpoint -q "$t" && continue
	if [ -d "$t" ]; then
		mount -t tmpfs -o ro,size=4k,mode=0500 corral-hide "$t"
	elif [ -e "$t" ]; then
		mount --bind -o ro /dev/null "$t"
	fi
done
for p in $BOX_DIRS; do
	t="$PROJECT/$p"
	src="/var/lib/corral/box-dirs/$(printf '%s' "$p" | tr '/' '_')"
	mountpoint -q "$t" && continue
	install -d -m 0755 "$src"
	chown "$(stat -c %u:%g "$PROJECT")" "$src"
	[ -d "$t" ] || mkdir -p "$t" 2>/dev/null || continue
	mount --bind "$src" "$t"
done
APPLY

cat >/etc/systemd/system/corral-project.service <<'UNIT'
[Unit]
Description=corral project paths (hide, box_dirs)
After=local-fs.target remote-fs.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/lib/corral/apply-project
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable corral-project.service >/dev/null 2>&1
systemctl restart corral-project.service
