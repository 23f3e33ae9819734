// Package realnode holds the tests of what atom does in real containers:
// jobs submitted to a coordinator whose kubernetes backend starts their
// Pods on a real node (kubelet, containerd, runc; test/k8s/nodetest), with
// atom as every container's ENTRYPOINT and PID 1 and the images built from
// images/. The node has fake GPUs (no devices): atom checks them in its
// simulated mode. One real node per machine: the tests wait for it.
package realnode
