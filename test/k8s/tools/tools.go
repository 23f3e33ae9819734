//go:build tools

// Package tools pins the Kubernetes programs that atom's tests run for real:
// kube-apiserver and kube-scheduler from k8s.io/kubernetes, and kwok, which
// plays the kubelets. It is its own module so that the main go.mod stays
// small; scripts/k8s-tools.sh (make k8s-tools) builds the binaries from it.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
