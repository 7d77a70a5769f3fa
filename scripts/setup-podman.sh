#!/usr/bin/env bash
# Sets podman up to build and run mwj's images on a Debian bookworm machine
# with no Docker engine and no registry, as our build machines are:
#
#   1. installs podman, runc and debootstrap from Debian;
#   2. writes /etc/containers/containers.conf: runc as the runtime (crun
#      fails to create containers under these machines' cgroup setup) and no
#      default ulimits (podman's default nofile/nproc limits cannot be set
#      here either);
#   3. makes the Dockerfile's base image, debian:bookworm-slim, which cannot
#      be pulled: debootstrap (minbase) from this machine's own Debian
#      mirror, trimmed as Debian's official slim image is, with this
#      machine's apt sources inside, so that apt in a build reaches the same
#      mirror the host does; imported and tagged under the name Docker would
#      resolve (docker.io/library/debian:bookworm-slim) and localhost/.
#
# Safe to run again: each step is skipped when already done.
#
#   scripts/setup-podman.sh               all three steps
#   scripts/setup-podman.sh --force-base  make the base image again
#
# Environment: MIRROR (the Debian mirror debootstrap reads; default: the
# host's, from /etc/apt), BASE_TAG (default debian:bookworm-slim).
set -euo pipefail

force_base=0
for arg in "$@"; do
	case "$arg" in
	--force-base) force_base=1 ;;
	*)
		echo "usage: $0 [--force-base]" >&2
		exit 1
		;;
	esac
done

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
base_tag=${BASE_TAG:-debian:bookworm-slim}
suite=bookworm
conf=/etc/containers/containers.conf

log() { echo "setup-podman: $*"; }
die() {
	echo "setup-podman: $*" >&2
	exit 1
}

install_packages() {
	local missing=() p
	for p in podman runc debootstrap; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		log "podman, runc and debootstrap already installed"
		return
	fi
	log "installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Our settings in the main file, which podman 4.3 (bookworm) reads; a file
# someone else wrote is left alone unless it already says the same.
write_conf() {
	if [ -e "$conf" ]; then
		if grep -q '^runtime *= *"runc"' "$conf" && grep -q '^default_ulimits *= *\[\]' "$conf"; then
			log "$conf already selects runc with no default ulimits"
			return
		fi
		die "$conf exists and does not set runtime = \"runc\" under [engine] and default_ulimits = [] under [containers]; add them and run again"
	fi
	log "writing $conf"
	$sudo mkdir -p "${conf%/*}"
	$sudo tee "$conf" > /dev/null <<'EOF'
# Written by mwj's scripts/setup-podman.sh (DEVELOPERS.md).
[containers]
# The runtime cannot apply podman's default nofile/nproc limits here.
default_ulimits = []

[engine]
# crun cannot create containers under this machine's cgroup setup; runc can.
runtime = "runc"
EOF
}

# The first http(s) URI of the host's Debian archive for $suite, from the
# deb822 sources (bookworm's default) or the one-line format.
host_mirror() {
	local f
	{
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$suite" '
			/^URIs:/ { uris = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) found = 1 }
			/^$/ { if (found && uris ~ /^https?:/) { print uris; exit } uris = ""; found = 0 }
			END { if (found && uris ~ /^https?:/) print uris }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v suite="$suite" '$1 == "deb" && $3 == suite && $2 ~ /^https?:/ { print $2; exit }' "$f"
	done
	} | head -1
}

# The host's Debian sources, for apt inside the image: the entries of the
# files that name the $suite suites (not third-party ones such as nodesource).
copy_sources() {
	local root=$1 f n=0
	for f in /etc/apt/sources.list.d/*.sources; do
		if [ ! -f "$f" ] || ! grep -q "^Suites:.*\b$suite\b" "$f"; then
			continue
		fi
		$sudo cp "$f" "$root/etc/apt/sources.list.d/"
		n=$((n + 1))
	done
	if [ "$n" -gt 0 ]; then
		$sudo rm -f "$root/etc/apt/sources.list"
	elif [ -f /etc/apt/sources.list ] && grep -q "^deb .* $suite" /etc/apt/sources.list; then
		grep "^deb .* $suite" /etc/apt/sources.list | $sudo tee "$root/etc/apt/sources.list" > /dev/null
	fi
	# else: debootstrap's own sources.list (the mirror it used) stays.
}

# What Debian's official debian:*-slim adds to a minbase system: no docs,
# man pages or locales from later installs, apt without caches or extra
# languages, and services never started by package installs.
slim_config() {
	local root=$1
	$sudo tee "$root/etc/dpkg/dpkg.cfg.d/docker" > /dev/null <<'EOF'
# The "slim" variant: as in Debian's official images.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
	$sudo tee "$root/etc/apt/apt.conf.d/docker-clean" > /dev/null <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
	echo 'Acquire::Languages "none";' | $sudo tee "$root/etc/apt/apt.conf.d/docker-no-languages" > /dev/null
	printf 'Acquire::GzipIndexes "true";\nAcquire::CompressionTypes::Order:: "gz";\n' |
		$sudo tee "$root/etc/apt/apt.conf.d/docker-gzip-indexes" > /dev/null
	echo 'Apt::AutoRemove::SuggestsImportant "false";' |
		$sudo tee "$root/etc/apt/apt.conf.d/docker-autoremove-suggests" > /dev/null
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$root/usr/sbin/policy-rc.d" > /dev/null
	$sudo chmod 0755 "$root/usr/sbin/policy-rc.d"
	# What debootstrap installed before the excludes existed.
	$sudo find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
	$sudo find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
	$sudo rm -rf "$root"/usr/share/{groff,info,linda,lintian/overrides,locale,man}/*
	$sudo rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
		"$root"/var/cache/apt/archives/*.deb "$root"/tmp/*
	$sudo find "$root/var/log" -type f -delete
	# The runtime mounts /dev, /proc and /sys; the image keeps the folders.
	$sudo rm -rf "$root"/dev/* "$root"/proc/* "$root"/sys/* 2>/dev/null || true
	: | $sudo tee "$root/etc/machine-id" > /dev/null
}

make_base() {
	local mirror root
	if [ "$force_base" = 0 ] && $sudo podman image exists "$base_tag"; then
		log "base image $base_tag already present ($($sudo podman image inspect --format '{{.Id}}' "$base_tag" | cut -c1-12))"
		return
	fi
	mirror=${MIRROR:-$(host_mirror)}
	[ -n "$mirror" ] || die "no http(s) Debian mirror for $suite in /etc/apt; set MIRROR"
	root=$(mktemp -d /var/tmp/mwj-base.XXXXXX)
	# shellcheck disable=SC2064 # the path is fixed now
	trap "$sudo rm -rf '$root'" EXIT
	log "debootstrap --variant=minbase $suite from $mirror (a few minutes)"
	$sudo debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$root.log" 2>&1 ||
		die "debootstrap failed; see $root.log"
	$sudo rm -f "$root.log"
	copy_sources "$root"
	slim_config "$root"
	log "importing as $base_tag"
	$sudo tar --numeric-owner -C "$root" -c . |
		$sudo podman import \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'CMD ["bash"]' --quiet - "localhost/$base_tag" > /dev/null
	$sudo podman tag "localhost/$base_tag" "docker.io/library/$base_tag"
	log "base image $base_tag: $($sudo podman image inspect --format '{{.Size}}' "$base_tag") bytes"
}

install_packages
write_conf
make_base
log "done; 'make images' builds the images"
