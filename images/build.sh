#!/usr/bin/env bash
# images/build.sh [NAME...]: builds the images of images/ (default: cpu
# openmpi spark coordinator) without a Docker engine, from the same
# Dockerfiles, with Debian's buildah, into OCI archives that
# `ctr -n k8s.io images import` takes (make images runs it; see
# images/README.md). Needs root, buildah and debootstrap (make deps-images).
#
# - The base, debian:bookworm-slim, is made here: debootstrap
#   --variant=minbase bookworm from the Debian mirror, trimmed as Debian's
#   slim image is, imported into buildah's storage and tagged
#   docker.io/library/debian:bookworm-slim, so `buildah bud --pull-never`
#   finds it. Kept under $cache/base, keyed by what makes it.
# - atom and the coordinator are built here with the host's Go (the same
#   flags as the Dockerfiles' golang:1.26 stage; atom with cgo against the
#   host's glibc, which must be bookworm's or older) into bin/images/, and
#   the Dockerfiles take them with --build-arg ATOM_FROM=host: their
#   golang stage is skipped.
# - Each image goes to $cache/NAME.oci.tar, named localhost/atom/NAME:$tag.
#   An image whose inputs (its Dockerfile, the files it copies, the
#   binaries, the base, the build arguments) have not changed since its
#   archive was written is not built again.
#
# images/build.sh --run NAME [OPTIONS] -- COMMAND [ARG...] runs a command
# in a built image (see below).
#
# Prints one line per image on stdout:
#   image=REF archive=PATH built=true|false seconds=S bytes=N
# and what it does on stderr. Environment: ATOM_IMAGES_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/images), ATOM_IMAGES_TAG (dev),
# ATOM_DEBIAN_MIRROR (the mirror debootstrap uses; default the host's
# first Debian mirror, else http://deb.debian.org/debian), GO (go).
set -euo pipefail

# Bump when what this script puts into images changes (build options, the
# archive's shape): every image is then rebuilt.
script_version=1
# Bump when the base's recipe (make_base) changes.
base_version=1

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${ATOM_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/atom/images}
tag=${ATOM_IMAGES_TAG:-dev}
GO=${GO:-go}
driver=${ATOM_IMAGES_STORAGE_DRIVER:-overlay}
all=(cpu openmpi spark coordinator)

log() { printf 'images: %s\n' "$*" >&2; }
die() { printf 'images: %s\n' "$*" >&2; exit 1; }

run=
if [ "${1:-}" = --run ]; then
	[ $# -ge 3 ] || die "usage: images/build.sh --run NAME [BUILDAH-RUN-OPTIONS] -- COMMAND [ARG...]"
	run=$2
	shift 2
	names=("$run")
else
	names=("$@")
fi
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for n in "${names[@]}"; do
	case " ${all[*]} " in
	*" $n "*) ;;
	*)
		if [ "$n" = cuda ]; then
			die "cuda: not built here: its base, nvidia/cuda, comes only from NVIDIA's registry (build it with docker build -f images/cuda/Dockerfile .; images/README.md)"
		fi
		die "$n: no such image (there are: ${all[*]})"
		;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, and buildah's chroot isolation): sudo make images"
for tool in buildah debootstrap flock; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run make deps-images (apt-get install -y buildah debootstrap)"
done

mkdir -p "$cache/base"
# One build at a time: test binaries and make images may start together.
exec 9>"$cache/.lock"
flock 9

# bh runs buildah on storage of our own under the cache, so nothing of the
# machine's /var/lib/containers is touched or needed.
bh() {
	buildah --root "$cache/storage-$driver" --runroot "$cache/run-$driver" --storage-driver "$driver" "$@"
}

# --run NAME [OPTIONS] -- COMMAND [ARG...]: runs COMMAND in a container of
# the built image NAME (buildah run --isolation chroot: the image's files,
# environment and working directory, the host's network; OPTIONS are
# buildah run's, e.g. -e K=V), as tests do to look inside an image. It does
# not build: build first.
if [ -n "$run" ]; then
	flock -u 9
	flock -s 9
	bh inspect --type image "localhost/atom/$run:$tag" >/dev/null 2>&1 ||
		die "$run: localhost/atom/$run:$tag is not built: images/build.sh $run"
	ctr=$(bh from --pull-never --quiet "localhost/atom/$run:$tag")
	# shellcheck disable=SC2064
	trap "bh rm '$ctr' >/dev/null 2>&1" EXIT
	opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1:-}" = -- ] && shift
	bh run --isolation chroot "${opts[@]}" "$ctr" -- "$@"
	exit
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the base image -------------------------------------------------------

suite=bookworm
variant=minbase
base_ref=docker.io/library/debian:bookworm-slim
base_glibc=2.36 # bookworm's: binaries built on the host may need no newer

mirror=${ATOM_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1 || true)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

base_key=$(printf '%s\n' "$base_version" "$suite" "$variant" "$(uname -m)" | sha256sum | cut -c1-16)
base_tar=$cache/base/debian-$suite-$variant-$base_key.tar.gz
base_id_ref=localhost/atom/base:$suite-$variant-$base_key

# write_apt_config ROOTFS: dpkg and apt trimmed as in Debian's slim image
# (no documentation but copyright files, no manuals or translations, no
# package cache), and the apt sources of Debian's image: the release, its
# updates and security, from deb.debian.org.
write_apt_config() {
	local r=$1
	cat >"$r"/etc/dpkg/dpkg.cfg.d/slim <<-'EOF'
		# As in Debian's slim image: no documentation, manuals or translations.
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/groff/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/lintian/*
		path-exclude /usr/share/linda/*
		path-exclude /usr/share/locale/*
		path-include /usr/share/locale/locale.alias
	EOF
	cat >"$r"/etc/apt/apt.conf.d/slim <<-'EOF'
		# As in Debian's container images: no package cache kept, no translations.
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
		Acquire::Languages "none";
		Acquire::GzipIndexes "true";
		Acquire::CompressionTypes::Order:: "gz";
		APT::AutoRemove::SuggestsImportant "false";
	EOF
	rm -f "$r"/etc/apt/sources.list
	cat >"$r"/etc/apt/sources.list.d/debian.sources <<-EOF
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: $suite $suite-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: http://deb.debian.org/debian-security
		Suites: $suite-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
}

# make_base ROOTFS: makes a debootstrapped root what Debian's slim image
# is: its apt configuration (write_apt_config), the release's updates
# applied, trimmed (no documentation but copyright files, no manuals or
# translations, no apt lists or package cache), and nothing of this
# machine (hostname, resolv.conf, device nodes).
make_base() {
	local r=$1
	write_apt_config "$r"
	# Debian's image has the release's updates and security fixes too.
	mount -t proc proc "$r/proc"
	if ! chroot "$r" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -y -qq -o Dpkg::Use-Pty=0 upgrade' >"$r.upgrade.log" 2>&1; then
		umount "$r/proc"
		tail -n 30 "$r.upgrade.log" >&2
		die "apt-get upgrade in the new base failed"
	fi
	umount "$r/proc"
	rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin "$r"/var/lib/apt/lists/* \
		"$r"/var/log/bootstrap.log "$r"/dev/* "$r"/etc/resolv.conf
	find "$r"/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
	find "$r"/usr/share/doc -mindepth 1 -type d -empty -delete
	rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/groff/* "$r"/usr/share/lintian/*
	find "$r"/usr/share/locale -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
	: >"$r"/etc/hostname
	for f in "$r"/var/log/dpkg.log "$r"/var/log/alternatives.log "$r"/var/log/apt/*; do
		if [ -f "$f" ]; then : >"$f"; fi
	done
}

ensure_base() {
	if bh inspect --type image "$base_id_ref" >/dev/null 2>&1; then
		bh tag "$base_id_ref" "$base_ref"
		return
	fi
	local t0 tmp ctr mnt
	t0=$(now)
	if [ ! -s "$base_tar" ]; then
		log "making the base: debootstrap --variant=$variant $suite from $mirror (a minute or two, once)"
		tmp=$(mktemp -d "$cache/base/debootstrap.XXXXXX")
		# shellcheck disable=SC2064
		trap "umount '$tmp/root/proc' 2>/dev/null; rm -rf --one-file-system '$tmp'" EXIT
		if ! debootstrap --variant="$variant" "$suite" "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1; then
			tail -n 30 "$tmp/debootstrap.log" >&2
			die "debootstrap $suite from $mirror failed"
		fi
		make_base "$tmp/root"
		tar --numeric-owner --xattrs -C "$tmp/root" -czf "$tmp/base.tar.gz" .
		mv "$tmp/base.tar.gz" "$base_tar"
		rm -rf "$tmp"
		trap - EXIT
		# Bases of other keys are of no more use.
		find "$cache/base" -maxdepth 1 -name "debian-*.tar.gz" -not -name "${base_tar##*/}" -delete
	fi
	log "importing the base $base_tar as $base_ref"
	ctr=$(bh from --pull-never scratch)
	mnt=$(bh mount "$ctr")
	tar --numeric-owner --xattrs -xzf "$base_tar" -C "$mnt"
	bh umount "$ctr" >/dev/null
	bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
		--created-by "debootstrap --variant=$variant $suite (atom images/build.sh)" "$ctr"
	bh commit --quiet --rm "$ctr" "$base_id_ref" >/dev/null
	bh tag "$base_id_ref" "$base_ref"
	log "base ready in $(since "$t0")s"
}

# --- the binaries ---------------------------------------------------------

# build_binaries: bin/images/atom (cgo) and bin/images/coordinator (no
# cgo), as the Dockerfiles' source stages build them.
build_binaries() {
	local need_atom=false need_coord=false n
	for n in "${names[@]}"; do
		case $n in
		coordinator) need_coord=true ;;
		*) need_atom=true ;;
		esac
	done
	mkdir -p "$root/bin/images"
	if $need_atom; then
		# cgo's warnings (NVML's deprecations) go to the log.
		(cd "$root" && CGO_ENABLED=1 "$GO" build -buildvcs=false -trimpath -ldflags "-s -w" -o bin/images/atom ./atom) >"$cache/go-build.log" 2>&1 || {
			grep -v -e 'warning:' -e 'note:' -e '^ ' -e 'In function' "$cache/go-build.log" | tail -n 30 >&2
			die "go build ./atom failed (cgo needs gcc and libfuse-dev: make deps-cache; all of it: $cache/go-build.log)"
		}
		local glibc
		glibc=$(grep -ao 'GLIBC_2\.[0-9]*' "$root/bin/images/atom" | sed 's/GLIBC_//' | sort -V | tail -n 1)
		if [ -n "$glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" "$base_glibc" | sort -V | tail -n 1)" != "$base_glibc" ]; then
			die "bin/images/atom needs glibc $glibc, newer than $suite's $base_glibc: build on Debian $suite (or older)"
		fi
	fi
	if $need_coord; then
		(cd "$root" && CGO_ENABLED=0 "$GO" build -buildvcs=false -trimpath -ldflags "-s -w" -o bin/images/coordinator ./coordinator) >"$cache/go-build.log" 2>&1 || {
			tail -n 30 "$cache/go-build.log" >&2
			die "go build ./coordinator failed"
		}
	fi
}

# --- the images -----------------------------------------------------------

# copy_sources DOCKERFILE: the build-context paths its COPY and ADD
# instructions read, except those of the stage named source (skipped here).
copy_sources() {
	awk '
		buf == "" && /^[[:space:]]*#/ { next }
		/\\$/ { sub(/\\$/, ""); buf = buf $0 " "; next }
		{ $0 = buf $0; buf = "" }
		toupper($1) == "FROM" { stage = ""; for (i = 2; i < NF; i++) if (toupper($i) == "AS") stage = $(i + 1); next }
		(toupper($1) == "COPY" || toupper($1) == "ADD") && stage != "source" {
			n = 0; from = 0
			for (i = 2; i <= NF; i++) {
				if ($i ~ /^--from=/) from = 1
				else if ($i !~ /^--/) a[++n] = $i
			}
			if (!from) for (i = 1; i < n; i++) print a[i]
		}
	' "$1"
}

# build_args NAME: the --build-arg options of image NAME.
build_args() {
	printf '%s\n' --build-arg ATOM_FROM=host
	case $1 in
	openmpi) printf '%s\n' --build-arg BASE=$base_ref ;;
	esac
}

# image_key NAME: a hash of everything the image is made from.
image_key() {
	local name=$1 df=images/$1/Dockerfile src
	{
		echo "script=$script_version base=$base_key ref=localhost/atom/$name:$tag"
		buildah --version
		build_args "$name"
		sha256sum "$df"
		while read -r src; do
			[ -e "$src" ] || die "$df copies $src, which the build context lacks"
			find "$src" -type f -print0 | sort -z | xargs -0 sha256sum
		done < <(copy_sources "$df")
	} | sha256sum | cut -c1-64
}

# Where a proxy re-signs TLS (a CA of this machine's own in
# /usr/local/share/ca-certificates), pip in the Spark image's build does
# not trust PyPI with its own CA list: it gets the machine's through a
# pip.conf in a home directory of the build's own, mounted over /root (an
# existing directory, so nothing of the mount stays in the image, as an
# empty file at a new mount point would).
pip_home=
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null && [ -s /etc/ssl/certs/ca-certificates.crt ]; then
	pip_home=$cache/build-home
	mkdir -p "$pip_home/.config/pip"
	cp /etc/ssl/certs/ca-certificates.crt "$pip_home/.config/pip/ca-certificates.crt"
	printf '[global]\ncert = /root/.config/pip/ca-certificates.crt\n' >"$pip_home/.config/pip/pip.conf"
fi

build_image() {
	local name=$1 t0 ref archive key built=false df
	t0=$(now)
	ref=localhost/atom/$name:$tag
	archive=$cache/$name.oci.tar
	df=images/$name/Dockerfile
	key=$(cd "$root" && image_key "$name")
	if [ ! -s "$archive" ] || [ "$(cat "$cache/$name.key" 2>/dev/null)" != "$key" ]; then
		local opts=()
		mapfile -t opts < <(build_args "$name")
		if [ "$name" = spark ] && [ -n "$pip_home" ]; then
			opts+=(--volume "$pip_home:/root")
		fi
		log "building $ref from $df (log: $cache/$name.log)"
		if ! (cd "$root" && bh bud --pull-never --isolation chroot --layers --force-rm \
			-f "$df" "${opts[@]}" -t "$ref" . >"$cache/$name.log" 2>&1); then
			tail -n 40 "$cache/$name.log" >&2
			die "$name: buildah bud failed (all of it: $cache/$name.log)"
		fi
		rm -f "$archive.tmp"
		bh push --quiet "$ref" "oci-archive:$archive.tmp:$ref" >/dev/null ||
			die "$name: buildah push to $archive failed"
		mv "$archive.tmp" "$archive"
		echo "$key" >"$cache/$name.key"
		built=true
		pruned=false
	fi
	printf 'image=%s archive=%s built=%s seconds=%s bytes=%s\n' "$ref" "$archive" "$built" "$(since "$t0")" "$(stat -c %s "$archive")"
}

t_all=$(now)
build_binaries
ensure_base
pruned=true
for n in "${names[@]}"; do
	build_image "$n"
done
# What no image or build step uses any more (images replaced by this
# run, the binaries' scratch stages); the steps --layers reuses stay.
$pruned || bh rmi --prune >/dev/null 2>&1 || true
log "done in $(since "$t_all")s"
