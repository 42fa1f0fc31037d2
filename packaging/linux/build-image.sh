#!/bin/bash
# build-image.sh [OUTDIR] — build corral's offline Debian bookworm guest image for Lima (qemu, root, Debian 12 host).
#
# Output in OUTDIR (default /var/cache/corral/images/bookworm):
#   rootfs.qcow2   whole-disk ext4 (no partition table), root=/dev/vda
#   vmlinuz        generic Debian kernel (linux-image-amd64: has 9p, which corral mounts projects with on Linux)
#   initrd.img     small initramfs (MODULES=list: virtio + ext4 only)
#   SHA256SUMS     of the three files above
#   .stamp         hash of this script (and of the guest agent, the npm pins and npm-fetch.sh); a later run
#                  with the same inputs and a complete, intact image does nothing
# The image carries Claude Code (/usr/local/bin/claude-real) from the npm package pinned in core/pins/npm.txt,
# fetched and verified by npm-fetch.sh into NPM_CACHE (default /var/cache/corral/npm, reused across runs);
# CLAUDE_CODE=skip builds without it (then no e2e test can run the claude agent). It carries Codex and Gemini CLI
# (with the Node it needs) the same way, installed by their own install steps (guest/agents/codex.sh, gemini.sh,
# run in the chroot with the pinned tarballs); AGENTS=skip builds without them. With the agents it carries a Node
# toolchain on PATH (that Node and the pinned npm) whose npm names NPM_REGISTRY (default http://localhost:38460/, the
# e2e tests' fake registry; empty for npm's own).
# Boot it with direct kernel boot and legacyBIOS (see core/lima/testdata/e2e-template.yaml).
#
# Development knobs: KEEP_DEBOOTSTRAP=DIR keeps a pristine copy of the debootstrap tree in DIR and starts from
# it on the next run (saves the download; a stale tree is yours to delete); KEEP_WORK=1 keeps the work dir.
#
# The guest never reaches the network by itself: cloud-init reads NoCloud (Lima's cidata) only, apt has only a file: source,
# the timers that phone home are masked, DNS points at Lima's 192.168.5.3 and names resolve from /etc/hosts only.
# The Debian mirror is read from this machine's apt sources at run time (env MIRROR overrides it).
set -euo pipefail

OUT=${1:-/var/cache/corral/images/bookworm}
SUITE=bookworm
# The Lima guest agent of setup-lima.sh, pre-installed so it listens before Lima's hostagent first looks for it
# (see the guest agent section below). Optional: without it Lima installs the agent at boot as usual.
GUESTAGENT=${GUESTAGENT:-${PREFIX:-/usr/local}/share/lima/lima-guestagent.Linux-x86_64}
[ -f "$GUESTAGENT" ] || GUESTAGENT=
HERE=$(cd "$(dirname "$0")" && pwd)
PINS=$HERE/../../core/pins/npm.txt
NPM_CACHE=${NPM_CACHE:-/var/cache/corral/npm}
CLAUDE_CODE=${CLAUDE_CODE:-pinned}
AGENTS=${AGENTS:-pinned}
# The registry the image's npm names (empty: npm's own default). The e2e tests serve a fake one there.
NPM_REGISTRY=${NPM_REGISTRY-http://localhost:38460/}
AGENT_STEPS=$HERE/../../guest/agents
hash_inputs=("$0" "$HERE/npm-fetch.sh" ${GUESTAGENT:+"$GUESTAGENT"})
[ "$CLAUDE_CODE" = skip ] && [ "$AGENTS" = skip ] || hash_inputs+=("$PINS")
[ "$AGENTS" = skip ] || hash_inputs+=("$AGENT_STEPS/codex.sh" "$AGENT_STEPS/gemini.sh")
SCRIPT_HASH=$( (cat "${hash_inputs[@]}" && printf 'NPM_REGISTRY=%s\n' "$NPM_REGISTRY") | sha256sum | cut -d' ' -f1)
FILES=(rootfs.qcow2 vmlinuz initrd.img)

log() { printf 'build-image: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (debootstrap, chroot)"
	exit 1
fi

# An image is complete when the stamp names this script and every file matches SHA256SUMS.
if [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$SCRIPT_HASH" ] && [ -f "$OUT/SHA256SUMS" ] &&
	(cd "$OUT" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
	log "$OUT already holds a complete image of this script version; nothing to do"
	exit 0
fi

for tool in debootstrap dpkg-scanpackages mkfs.ext4 qemu-img chroot $([ "$CLAUDE_CODE" = skip ] && [ "$AGENTS" = skip ] || echo npm); do
	command -v "$tool" >/dev/null || {
		log "$tool not found: run packaging/linux/setup-lima.sh first"
		exit 1
	}
done

# mirror_from_apt prints the URI of the first deb822 stanza (or one-line entry) that serves "$SUITE" itself,
# not -security/-updates.
mirror_from_apt() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$SUITE" '
			function flush() { if (uri != "" && has) { print uri; found=1; exit } uri=""; has=0 }
			/^[[:space:]]*$/ { flush(); next }
			/^URIs:/ { uri=$2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) has=1 }
			END { if (!found) flush() }' "$f"
	done | head -n1
	awk -v suite="$SUITE" '$1 == "deb" && $0 !~ /\[/ && $3 == suite { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true
}
MIRROR=${MIRROR:-$(mirror_from_apt | head -n1)}
if [ -z "$MIRROR" ]; then
	log "no Debian mirror for $SUITE in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list; set MIRROR"
	exit 1
fi

mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/.build-image.XXXXXX")
ROOT=$WORK/rootfs
cleanup() {
	for m in sys proc dev/pts dev; do
		mountpoint -q "$ROOT/$m" 2>/dev/null && umount -l "$ROOT/$m"
	done
	# Never rm -rf through a still-mounted /dev or /proc (a bind mount of the host's /dev would lose device nodes).
	if awk -v w="$WORK/" 'index($2, w) == 1 { found=1 } END { exit !found }' /proc/mounts; then
		log "mounts remain under $WORK; not removing it"
	elif [ -z "${KEEP_WORK:-}" ]; then
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

t0=$(date +%s)
# Everything the guest needs is installed here, at build time (tmux: corral's detachable sessions) (the kernel comes after, see below): Lima's boot scripts would otherwise try to
# apt-get iptables/sshfs inside the guest. python3-cffi-backend: debootstrap cannot resolve the virtual
# python3-cffi-backend-api-* that cloud-init's python3-cryptography needs.
include=(
	systemd-sysv udev dbus libpam-systemd kmod netbase procps iproute2 isc-dhcp-client
	initramfs-tools
	cloud-init python3-cffi-backend python3-minimal
	openssh-server sudo iptables sshfs fuse3
	curl git ca-certificates
)
# nftables and tmux are deliberately not installed: their packages (with what they need) go into a package
# source inside the image (/var/lib/corral/local-debs, a file: apt source), so that every golden build from this
# image proves that guest/provision/05-require.sh installs what corral's guest scripts run when an image lacks it,
# with no network (nothing is downloaded at test time).
local_debs=(nftables tmux)
if [ -n "${KEEP_DEBOOTSTRAP:-}" ] && [ -x "$KEEP_DEBOOTSTRAP/usr/bin/systemctl" ]; then
	log "copying debootstrap tree from $KEEP_DEBOOTSTRAP"
	cp -a "$KEEP_DEBOOTSTRAP" "$ROOT"
else
	log "debootstrap $SUITE (mirror from apt sources)"
	if ! debootstrap --variant=minbase --include="$(
		IFS=,
		echo "${include[*]}"
	)" "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
		tail -n 20 "$WORK/debootstrap.log" >&2
		log "debootstrap failed (log above)"
		exit 1
	fi
	if [ -n "${KEEP_DEBOOTSTRAP:-}" ]; then
		rm -rf "$KEEP_DEBOOTSTRAP"
		cp -a "$ROOT" "$KEEP_DEBOOTSTRAP"
	fi
fi
t1=$(date +%s)

mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"

# The initramfs only has to find the root disk: virtio block + ext4. MODULES=list keeps it small (~4 MB instead of
# ~40 MB) and avoids MODULES=dep probing the build host's devices. Written before the kernel is installed so the
# kernel's postinst builds the small initramfs once instead of the full one.
cat >"$ROOT/etc/initramfs-tools/conf.d/corral.conf" <<'CONF'
MODULES=list
CONF
printf '%s\n' virtio_pci virtio_blk virtio_scsi sd_mod ext4 crc32c_generic >"$ROOT/etc/initramfs-tools/modules"
# The generic kernel, not linux-image-cloud-amd64: the cloud kernel has no 9p (CONFIG_NET_9P unset).
# shellcheck disable=SC2016 # ${Status} is dpkg-query's format, not shell
had_kernel=$(chroot "$ROOT" dpkg-query -W -f='${Status}' linux-image-amd64 2>/dev/null || true)
if ! chroot "$ROOT" /bin/sh -euc '
	export DEBIAN_FRONTEND=noninteractive
	apt-get -q update
	apt-get -q install -y --no-install-recommends linux-image-amd64
' >"$WORK/kernel.log" 2>&1; then
	tail -n 20 "$WORK/kernel.log" >&2
	log "installing the kernel failed (log above)"
	exit 1
fi
# The local package source (see local_debs above): downloaded while the chroot still has the mirror, indexed
# here (dpkg-scanpackages), named by the only apt source the guest keeps.
if ! chroot "$ROOT" /bin/sh -euc '
	export DEBIAN_FRONTEND=noninteractive
	apt-get clean
	apt-get -q install -y --no-install-recommends --download-only "$@"
	mkdir -p /var/lib/corral/local-debs
	mv /var/cache/apt/archives/*.deb /var/lib/corral/local-debs/
' sh "${local_debs[@]}" >"$WORK/local-debs.log" 2>&1; then
	tail -n 20 "$WORK/local-debs.log" >&2
	log "downloading ${local_debs[*]} for the image's package source failed (log above)"
	exit 1
fi
(cd "$ROOT/var/lib/corral/local-debs" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null)
log "local package source: $(find "$ROOT/var/lib/corral/local-debs" -name '*.deb' | wc -l) packages for ${local_debs[*]}"
KVER=$(find "$ROOT/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n1)
case "$had_kernel" in
*"install ok installed"*) chroot "$ROOT" update-initramfs -u -k "$KVER" >/dev/null ;; # tree from KEEP_DEBOOTSTRAP
esac

# Prune /lib/modules to what a Lima VM uses. Mind the non-obvious ones: `button` (ACPI power button) is what
# makes `limactl stop` (QMP system_powerdown) shut the guest down instead of waiting 3 minutes and killing qemu. The generic kernel's modules are ~380 MB; most are hardware
# drivers a virtio guest never loads. Named modules are kept with their dependencies; whole directories are kept
# where modules are requested by alias at run time (crypto, netfilter match/target extensions). Lima 2.x's guest
# agent lists the guest's listening ports through sock_diag (tcp_diag, udp_diag, loaded by alias on first use):
# without them it sees no port at all and Lima forwards none (`ss` alone still works: it falls back to /proc).
keep_names=(
	virtio_pci virtio_pci_legacy_dev virtio_pci_modern_dev virtio_mmio virtio_blk virtio_net virtio_scsi
	virtio_console virtio_balloon virtio_rng virtio_input virtio_gpu virtio-gpu
	sd_mod sr_mod cdrom scsi_mod isofs
	9p 9pnet 9pnet_virtio netfs fscache fuse overlay ext4 jbd2 mbcache loop squashfs autofs4 binfmt_misc
	vfat nls_utf8 nls_ascii nls_cp437 nls_iso8859_1
	crc32c_generic crc32c-intel libcrc32c
	nf_tables nfnetlink nf_conntrack nf_nat nf_reject_ipv4 nf_reject_ipv6 nf_defrag_ipv4 nf_defrag_ipv6
	ip_tables ip6_tables x_tables iptable_filter iptable_nat iptable_mangle iptable_raw
	ip6table_filter ip6table_nat ip6table_mangle ip6table_raw
	bridge br_netfilter veth tun dummy vsock vmw_vsock_virtio_transport qemu_fw_cfg
	sch_fq_codel evdev serio_raw button
	inet_diag tcp_diag udp_diag
)
keep_dirs=(
	kernel/crypto kernel/lib kernel/arch/x86/crypto kernel/net/netfilter kernel/net/ipv4/netfilter
	kernel/net/ipv6/netfilter kernel/net/bridge kernel/net/sched kernel/net/9p kernel/fs/9p kernel/fs/netfs
	kernel/fs/fscache kernel/fs/fuse kernel/fs/overlayfs kernel/fs/nls kernel/drivers/virtio
)
mods=$ROOT/lib/modules/$KVER
before=$(du -sm "$mods" | cut -f1)
keep=$WORK/keep.list
: >"$keep"
for m in "${keep_names[@]}"; do
	# --show-depends prints "insmod /lib/modules/.../x.ko" for the module and its dependencies; built-ins print "builtin".
	chroot "$ROOT" modprobe --set-version "$KVER" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" { print $2 }' >>"$keep" || true
done
for d in "${keep_dirs[@]}"; do
	[ -d "$mods/$d" ] && (cd "$ROOT" && find "lib/modules/$KVER/$d" -name '*.ko*' | sed 's|^|/|') >>"$keep"
done
# Dependencies of the kept directories as well.
sort -u "$keep" -o "$keep"
while read -r ko; do
	chroot "$ROOT" modprobe --set-version "$KVER" --show-depends "$(basename "${ko%%.ko*}")" 2>/dev/null |
		awk '$1 == "insmod" { print $2 }'
done <"$keep" >"$keep.deps"
sort -u "$keep" "$keep.deps" -o "$keep"
(cd "$ROOT" && find "lib/modules/$KVER/kernel" -name '*.ko*' | sed 's|^|/|') | sort >"$WORK/all.list"
comm -23 "$WORK/all.list" "$keep" | sed "s|^|$ROOT|" | xargs -r rm -f
find "$mods/kernel" -type d -empty -delete
chroot "$ROOT" depmod -a "$KVER"
after=$(du -sm "$mods" | cut -f1)
log "modules pruned: ${before} MB -> ${after} MB ($(wc -l <"$keep") kept)"

# shellcheck disable=SC2016 # runs in the chroot
chroot "$ROOT" /bin/bash -euc '
	export DEBIAN_FRONTEND=noninteractive
	# Never phone home: mask what would reach a mirror, a time server, or scan disks on a timer.
	for u in apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service \
		systemd-timesyncd.service e2scrub_all.timer e2scrub_reap.service fstrim.timer dpkg-db-backup.timer \
		man-db.timer systemd-networkd-wait-online.service; do
		systemctl mask "$u" >/dev/null 2>&1
	done
	systemctl enable systemd-networkd ssh >/dev/null 2>&1
	# No apt sources inside the guest but the local package source (file:, no network).
	: >/etc/apt/sources.list
	rm -f /etc/apt/sources.list.d/*
	echo "deb [trusted=yes] file:/var/lib/corral/local-debs ./" >/etc/apt/sources.list.d/corral-local.list
	# Identity is generated per instance: empty machine-id, no ssh host keys (sshd regenerates them on boot).
	: >/etc/machine-id
	rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*
	passwd -l root >/dev/null
	apt-get clean
	rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/info/* /var/cache/debconf/*-old /var/log/*.log
	find /usr/share/locale -mindepth 1 -maxdepth 1 ! -name "en*" ! -name locale.alias -exec rm -rf {} +
'
# Lima guest agent. Lima's boot script 25-guestagent-base.sh installs and starts it late in cloud-final, while
# the hostagent sets up its ssh forward of /run/lima-guestagent.sock as soon as ssh works. Lima 1.2.2 cannot
# recover when that first attempt finds no agent: it deletes the host end and asks the ssh ControlMaster for the
# same forward again, which ssh acknowledges as a duplicate without listening, so `limactl start` ends DEGRADED
# ("guest agent does not seem to be running"). Under TCG on a busy host the agent came ~50 s too late. Starting
# the same agent from systemd early in boot closes the window; the boot script still replaces and restarts it.
if [ -n "$GUESTAGENT" ]; then
	install -m 0755 "$GUESTAGENT" "$ROOT/usr/local/bin/lima-guestagent"
	cat >"$ROOT/etc/systemd/system/lima-guestagent.service" <<'UNIT'
[Unit]
Description=lima-guestagent

[Service]
ExecStart=/usr/local/bin/lima-guestagent daemon
Type=simple
Restart=on-failure
OOMPolicy=continue
OOMScoreAdjust=-500

[Install]
WantedBy=multi-user.target
UNIT
	ln -sf /etc/systemd/system/lima-guestagent.service "$ROOT/etc/systemd/system/multi-user.target.wants/lima-guestagent.service"
else
	log "no Lima guest agent (GUESTAGENT or PREFIX/share/lima); Lima installs it at boot (slow hosts may start DEGRADED)"
fi

# Claude Code, from the pinned npm platform package (core/pins/npm.txt), verified before use. Provisioning
# (guest/provision/30-agent.sh) finds claude-real and adds the wrapper; no installer runs in the guest.
if [ "$CLAUDE_CODE" != skip ]; then
	case $(chroot "$ROOT" dpkg --print-architecture) in
	amd64) npm_arch=x64 ;;
	arm64) npm_arch=arm64 ;;
	*)
		log "no Claude Code package for this architecture"
		exit 1
		;;
	esac
	tgz=$("$HERE/npm-fetch.sh" "@anthropic-ai/claude-code-linux-$npm_arch" "$NPM_CACHE")
	tar -xzf "$tgz" -O package/claude >"$ROOT/usr/local/bin/claude-real"
	chmod 0755 "$ROOT/usr/local/bin/claude-real"
	log "Claude Code $(awk -v n="@anthropic-ai/claude-code-linux-$npm_arch" '$1 == n { print $2 }' "$PINS") from $(basename "$tgz")"
fi

# Codex and Gemini CLI (with its Node), from their pinned npm packages (core/pins/npm.txt), verified by
# npm-fetch.sh and installed by the agents' own install steps (the ones a golden build runs), so every box of
# this image can run them whatever its agent is.
if [ "$AGENTS" != skip ]; then
	case $(chroot "$ROOT" dpkg --print-architecture) in
	amd64) npm_arch=x64 ;;
	arm64) npm_arch=arm64 ;;
	*)
		log "no agent packages for this architecture"
		exit 1
		;;
	esac
	codex_version=$(awk -v s="-linux-$npm_arch" '$1 == "@openai/codex" && substr($2, length($2) - length(s) + 1) == s { print $2 }' "$PINS")
	codex=$("$HERE/npm-fetch.sh" "@openai/codex@$codex_version" "$NPM_CACHE")
	node=$("$HERE/npm-fetch.sh" "node-linux-$npm_arch" "$NPM_CACHE")
	gemini=$("$HERE/npm-fetch.sh" "@google/gemini-cli" "$NPM_CACHE")
	steps=$ROOT/tmp/corral-agent-steps
	mkdir -p "$steps"
	cp "$codex" "$node" "$gemini" "$AGENT_STEPS/codex.sh" "$AGENT_STEPS/gemini.sh" "$steps/"
	chroot "$ROOT" sh -eu /tmp/corral-agent-steps/codex.sh "/tmp/corral-agent-steps/$(basename "$codex")"
	chroot "$ROOT" sh -eu /tmp/corral-agent-steps/gemini.sh "/tmp/corral-agent-steps/$(basename "$node")" "/tmp/corral-agent-steps/$(basename "$gemini")"
	rm -rf "$steps"
	log "Codex $codex_version, Node $(basename "$node" .tgz), Gemini CLI $(basename "$gemini" .tgz)"

	# A Node toolchain on PATH, as a project's image has one: that Node (a hard link, so npm's prefix is
	# /usr/local) and the pinned npm client. Its global npmrc names NPM_REGISTRY, as an image built for a
	# corporate mirror names the mirror; the golden build asks npm for it and records it as the boxes'
	# "toolchains" egress group (core/toolreg). The default is the e2e tests' local registry.
	npmcli=$("$HERE/npm-fetch.sh" npm "$NPM_CACHE")
	ln -f "$ROOT/usr/local/lib/corral-agents/node/bin/node" "$ROOT/usr/local/bin/node"
	install -d -m 0755 "$ROOT/usr/local/lib/node_modules/npm" "$ROOT/usr/local/etc"
	tar --no-same-owner -xzf "$npmcli" -C "$ROOT/usr/local/lib/node_modules/npm" --strip-components=1 package/
	chmod -R a+rX,go-w "$ROOT/usr/local/lib/node_modules/npm"
	ln -sfn ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
	ln -sfn ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
	if [ -n "$NPM_REGISTRY" ]; then
		printf 'registry=%s\n' "$NPM_REGISTRY" >"$ROOT/usr/local/etc/npmrc"
	fi
	log "npm $(basename "$npmcli" .tgz), registry ${NPM_REGISTRY:-the default}"
fi

# Host keys: cloud-init's ssh module creates them on first boot (before ssh.service); this drop-in is the fallback
# so sshd never fails to start for lack of keys. Only when there is none, and only ed25519 (as cloud-init's
# ssh_genkeytypes below): `ssh-keygen -A` would add the RSA key cloud-init skipped, tens of seconds under TCG.
mkdir -p "$ROOT/etc/systemd/system/ssh.service.d"
cat >"$ROOT/etc/systemd/system/ssh.service.d/10-hostkeys.conf" <<'UNIT'
[Service]
ExecStartPre=/bin/sh -c 'ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 || /usr/bin/ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key'
UNIT

# corral forwards secrets as CORRAL_FWD_* over ssh SendEnv. Baked in (not provisioned) so that Lima's ssh
# ControlMaster, opened before any provision script runs, already sees it.
cat >"$ROOT/etc/ssh/sshd_config.d/corral.conf" <<'SSHD'
AcceptEnv CORRAL_FWD_*
SSHD

cat >"$ROOT/etc/systemd/network/99-dhcp.network" <<'NET'
[Match]
Name=eth* en*

[Network]
DHCP=ipv4
LinkLocalAddressing=no
IPv6AcceptRA=no
NET

cat >"$ROOT/etc/cloud/cloud.cfg.d/99-corral.cfg" <<'CFG'
# corral: Lima's cidata (NoCloud) is the only datasource; no cloud metadata probing, no package modules.
datasource_list: [ NoCloud, None ]
manage_etc_hosts: true
# One host key type: under TCG an RSA 3072 key takes tens of seconds of every new box's first boot.
ssh_genkeytypes: [ed25519]
apt:
  preserve_sources_list: true
cloud_init_modules: [seed_random, bootcmd, write_files, growpart, resizefs, disk_setup, mounts, set_hostname, update_hostname, update_etc_hosts, users_groups, ssh]
cloud_config_modules: [set_passwords, timezone, runcmd]
cloud_final_modules: [scripts_vendor, scripts_per_once, scripts_per_boot, scripts_per_instance, scripts_user, final_message]
CFG

echo "/dev/vda / ext4 defaults,discard 0 1" >"$ROOT/etc/fstab"
# DNS: never the build host's resolver (debootstrap copies it in). 192.168.5.3 is Lima's slirp DNS; names resolve
# from /etc/hosts only (cloud-init manage_etc_hosts puts the hostname there).
rm -f "$ROOT/etc/resolv.conf"
printf 'nameserver 192.168.5.3\n' >"$ROOT/etc/resolv.conf"
sed -i 's/^hosts:.*/hosts:          files/' "$ROOT/etc/nsswitch.conf"

for m in sys proc dev/pts dev; do umount "$ROOT/$m"; done
cp -L "$ROOT/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
cp -L "$ROOT/boot/initrd.img-$KVER" "$WORK/initrd.img"
# The kernel and initrd live outside the disk (direct kernel boot); drop the copies inside it.
rm -f "$ROOT"/boot/initrd.img-* "$ROOT"/initrd.img "$ROOT"/initrd.img.old
t2=$(date +%s)

# 3 GiB: the three agents take about 1.1 GiB of it (Claude Code 373 MB, Codex 390 MB, Node and Gemini CLI 220 MB);
# the qcow2 keeps only the blocks in use, and a box's disk key grows the filesystem at first boot.
mkfs.ext4 -q -F -L rootfs -d "$ROOT" "$WORK/rootfs.raw" 3072M >/dev/null
qemu-img convert -O qcow2 "$WORK/rootfs.raw" "$WORK/rootfs.qcow2"
rm -f "$WORK/rootfs.raw"
(cd "$WORK" && sha256sum "${FILES[@]}" >SHA256SUMS)
t3=$(date +%s)

# Install: files first, stamp last, so an interrupted run never looks complete.
mkdir -p "$OUT"
rm -f "$OUT/.stamp"
for f in "${FILES[@]}" SHA256SUMS; do mv -f "$WORK/$f" "$OUT/$f"; done
chmod 0644 "$OUT"/*
chmod 0755 "$OUT"
printf '%s\n' "$SCRIPT_HASH" >"$OUT/.stamp"

log "kernel $KVER; rootfs $(du -sm "$ROOT" | cut -f1) MB; $(cd "$OUT" && du -m "${FILES[@]}" | awk '{printf "%s %s MB, ", $2, $1}')"
log "TIMING debootstrap=$((t1 - t0))s customise=$((t2 - t1))s mkfs+qcow2=$((t3 - t2))s total=$((t3 - t0))s"
