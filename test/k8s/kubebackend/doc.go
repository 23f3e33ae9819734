// Package kubebackend holds the tests of coordinator/kube against a real
// API server (test/k8s/k8stest): task Pods through the backend, their
// phases back as task events, Node objects as atom nodes.
package kubebackend
