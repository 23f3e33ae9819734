// Package k8stest starts real Kubernetes control planes for atom's tests:
// etcd (Debian's etcd-server) on loopback, a kube-apiserver built from
// k8s.io/kubernetes v1.37.2 with token authentication, RBAC and a
// service-account key pair, and kwok v0.8.0 playing the kubelets of the
// nodes a test adds, so that bound Pods become Running. Nothing is faked: the
// clients it hands out talk HTTPS to the real API server.
//
// The Kubernetes binaries come from `make k8s-tools` (test/k8s/tools), which
// builds them once into a cache outside the repository; etcd from
// `apt-get install etcd-server`. `make test` does both. A test that finds
// one missing fails and says how to get it; it never skips.
//
//	c := k8stest.Start(t, k8stest.Options{})
//	c.AddGPUNode(t, "gpu-1", 8, "A100")
//	pod, err := c.Coordinator.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
//	c.WaitPodPhase(t, "default", pod.Name, corev1.PodRunning)
//
// Each cluster has two identities: Admin (group system:masters) for setting
// the stage, and Coordinator, which authenticates as the service account
// atom/atom-coordinator and may do only what RBAC grants it (apply
// deploy/rbac.yaml with ApplyFile to grant what the coordinator has in
// production).
//
// SetNodeReady (StopNode, RestartNode) makes a node go silent as a dead
// kubelet does (Ready=Unknown, its Pods left as they are) and brings it
// back. StartTwo starts two independent clusters; StartKubeScheduler adds
// the kube-scheduler built from the same module; ApplyYAML and ApplyFile
// server-side apply manifests.
//
// No controller-manager runs. What that leaves to the test: the `default`
// service account of a new namespace (CreateNamespace makes both), the
// node.kubernetes.io/not-ready taint (the node helpers remove it), garbage
// collection of owned objects, PVC binding and the pvc-protection finalizer,
// and the status of ResourceQuotas (Pods in a namespace holding one are
// refused until a controller computes its status).
package k8stest
