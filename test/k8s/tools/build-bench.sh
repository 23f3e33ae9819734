#!/usr/bin/env bash
# Builds what `make bench-k8s` runs beyond the test programs of build.sh:
# kube-controller-manager from this tools module (k8s.io/kubernetes v1.37.2,
# for its Job controller) and Kueue v0.17.0 with its CRDs and webhook
# manifests, into a cache outside the repository. A cache whose stamp
# matches this module's go.mod, go.sum and this script is used as it is.
#
#   test/k8s/tools/build-bench.sh   # prints the cache directory on its last line
#
# Kueue is built from its own module (`go install sigs.k8s.io/kueue/cmd/kueue@v0.17.0`,
# with the versions its go.mod pins: k8s.io/* v0.35), not from this one:
# a dependency of Kueue v0.17.0 (github.com/kubeflow/trainer/v2 v2.2.0) uses
# corev1.WorkloadReference, which k8s.io/api v0.37 removed, so Kueue does
# not compile against the k8s.io/* v0.37.2 this module pins.
#
# The cache is $ATOM_K8S_BENCH_TOOLS when set, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/bench-k8s-v1.37.2-kueue-v0.17.0
# (bin/, kueue/crd/, kueue/webhooks.yaml); test/benchk8s looks in the same place.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
GO="${GO:-go}"
k8s=v1.37.2
kueue=v0.17.0
cache="${ATOM_K8S_BENCH_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/atom/bench-k8s-$k8s-kueue-$kueue}"
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/build-bench.sh" | sha256sum | cut -d' ' -f1)"

have() {
	[ -f "$cache/.stamp" ] && [ "$(cat "$cache/.stamp")" = "$stamp" ] || return 1
	for f in kube-controller-manager kueue; do [ -x "$cache/bin/$f" ] || return 1; done
	[ -f "$cache/kueue/webhooks.yaml" ] && [ -f "$cache/kueue/crd/kueue.x-k8s.io_clusterqueues.yaml" ]
}

if have; then
	echo "$cache"
	exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "building kube-controller-manager (k8s.io/kubernetes $k8s) and Kueue $kueue into $cache" >&2
echo "(the first build takes 10-20 minutes on 2 cores; later runs reuse it)" >&2
start=$(date +%s)
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

cd "$here"
ver=k8s.io/component-base/version
"$GO" build -trimpath -ldflags "-s -w -X $ver.gitVersion=$k8s -X $ver.gitMajor=1 -X $ver.gitMinor=37 -X $ver.gitTreeState=clean" \
	-o "$tmp/bin/" k8s.io/kubernetes/cmd/kube-controller-manager

cd "$tmp"
GOBIN="$tmp/bin" "$GO" install -trimpath -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$kueue" \
	"sigs.k8s.io/kueue/cmd/kueue@$kueue"

# Kueue's CRDs and admission webhooks, as shipped in its module.
kueue_dir="$("$GO" mod download -json "sigs.k8s.io/kueue@$kueue" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
mkdir -p "$tmp/kueue/crd"
cp "$kueue_dir"/config/components/crd/bases/*.yaml "$tmp/kueue/crd/"
cp "$kueue_dir/config/components/webhook/manifests.yaml" "$tmp/kueue/webhooks.yaml"
chmod 0644 "$tmp/kueue/crd/"*.yaml "$tmp/kueue/webhooks.yaml"

rm -rf "$cache/bin" "$cache/kueue"
mv "$tmp/bin" "$tmp/kueue" "$cache/"
echo "$stamp" >"$cache/.stamp"
echo "built in $(($(date +%s) - start))s" >&2
echo "$cache"
