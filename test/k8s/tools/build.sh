#!/usr/bin/env bash
# Builds the Kubernetes programs atom's tests run for real (kube-apiserver,
# kube-scheduler and kubelet from k8s.io/kubernetes v1.37.2, kwok v0.8.0) from this tools
# module into a cache outside the repository, and copies kwok's node and pod
# stage files beside them. A cache whose stamp matches this module's go.mod,
# go.sum and this script is used as it is, so only the first run builds
# (about 12 minutes on 2 idle cores, 20 on a busy shared machine; see
# README "Test environment").
#
#   test/k8s/tools/build.sh        # prints the bin directory on its last line
#
# The cache is $ATOM_K8S_TOOLS when set, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/k8s-v1.37.2; the test harness
# (test/k8s/k8stest) looks in the same place.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
GO="${GO:-go}"
cache="${ATOM_K8S_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/atom/k8s-v1.37.2}"
bin="$cache/bin"
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)"

have() {
	[ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ] || return 1
	for f in kube-apiserver kube-scheduler kubelet kwok; do [ -x "$bin/$f" ] || return 1; done
	for d in node/fast node/heartbeat pod/fast; do [ -d "$cache/stage/$d" ] || return 1; done
}

if have; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "building kube-apiserver, kube-scheduler, kubelet (k8s.io/kubernetes v1.37.2) and kwok v0.8.0 into $bin" >&2
echo "(the first build takes 12-20 minutes on 2 cores; later runs reuse it)" >&2
start=$(date +%s)
cd "$here"
# The version the API server reports (kwok and clients read it); the
# apiserver's own compatibility version is compiled in and does not need it.
ver=k8s.io/component-base/version
ldflags="-s -w -X $ver.gitVersion=v1.37.2 -X $ver.gitMajor=1 -X $ver.gitMinor=37 -X $ver.gitTreeState=clean"
CGO_ENABLED=0 GOFLAGS=-buildvcs=false "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubelet \
	sigs.k8s.io/kwok/cmd/kwok

# kwok's stage files, as shipped in its module.
kwok_dir="$(GOFLAGS=-buildvcs=false "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
for d in node/fast node/heartbeat pod/fast; do
	mkdir -p "$tmp/stage/$d"
	cp "$kwok_dir/kustomize/stage/$d/"*.yaml "$tmp/stage/$d/"
	rm -f "$tmp/stage/$d/kustomization.yaml"
	chmod 0644 "$tmp/stage/$d/"*.yaml
done

rm -rf "$bin" "$cache/stage"
mkdir -p "$bin"
mv "$tmp/kube-apiserver" "$tmp/kube-scheduler" "$tmp/kubelet" "$tmp/kwok" "$bin/"
mv "$tmp/stage" "$cache/stage"
echo "$stamp" >"$bin/.stamp"
echo "built in $(($(date +%s) - start))s" >&2
echo "$bin"
