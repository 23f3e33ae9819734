// Package k8stest starts real Kubernetes control planes for atom's tests:
// etcd (Debian's etcd-server) on loopback, a kube-apiserver built from
// k8s.io/kubernetes v1.37.2 with token authentication, RBAC and a
// service-account key pair, and kwok v0.8.0 playing the kubelets of the
// nodes a test adds, so that bound Pods become Running. Nothing is faked: the
// clients it hands out talk HTTPS to the real API server.
//
// The Kubernetes binaries come from `make k8s-tools` (test/k8s/tools), which
// builds them once into a cache outside the repository; etcd from
// `apt-get install etcd-server`; the real node's runtime from `make
// deps-node`. `make test` does all three. A test that finds one missing
// fails and says how to get it; it never skips.
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
// the kube-scheduler built from the same module (StartComponent another
// control-plane program, StartProgram any program, for benchmarks);
// ApplyYAML and ApplyFile server-side apply manifests.
//
// # The real node
//
// AddRealNode adds one real node to a cluster: kubelet v1.37.2 (built by
// `make k8s-tools` beside kube-apiserver) on Debian's containerd 1.6, runc
// and CNI plugins (`make deps-node`), as root. Pods bound to it run as
// containers; their logs, exec and exit codes come through the API server
// as on any cluster. It registers with fake GPUs (nvidia.com/gpu patched
// into its status, which the kubelet keeps; no devices), GPUModelLabel,
// PoolLabel and the labels and taints asked for, and is Ready about 2 s
// after the machine is its own (the log says "real node NAME ready in
// 2.1s"). kwok nodes may sit beside it: kwok manages only nodes with its
// annotation, and the kubelet runs only Pods bound to it.
//
//	c := k8stest.Start(t, k8stest.Options{})
//	n := c.AddRealNode(t, k8stest.RealNodeOptions{GPUs: 8, GPUModel: "A100", Pool: "training"})
//	pod.Spec.NodeName = n.Name
//	pod.Spec.Containers[0].Image = k8stest.ToolboxImage // args: print:hi count:5:100ms exit:3 ...
//	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
//	n.ImportImage(t, filepath.Join(k8stest.CacheDir(), "images", "cpu.oci.tar"), "localhost/atom/cpu:dev") // make images
//
// No registry is reachable: images are imported into the node's containerd
// (ImportImage takes any OCI or docker archive and names it), and Pods use
// imagePullPolicy Never. The harness builds its own pause image and
// ToolboxImage from static Go programs (internal/pause, internal/toolbox),
// cached under CacheDir()/realnode. Pods get addresses in RealNodePodCIDR
// on a bridge with no other route; they reach the host at RealNodeGateway.
// The node's InternalIP is RealNodeIP, an address added to lo. Pods reach
// the API server as in a cluster, at the `kubernetes` Service
// (KUBERNETES_SERVICE_HOST, RealNodeAPIServiceIP:443) with their service
// account's token: no kube-proxy runs, so the node routes the service
// range to the host and DNATs that address to a forwarder in the test
// process (realnode_apiserver.go).
//
// For fault tests: StopKubelet kills the kubelet (containers run on; mark
// the node as the absent node lifecycle controller would with
// SetNodeUnknown), StartKubelet starts it again and waits for Ready,
// RestartContainerd restarts containerd; Ctr runs ctr against its
// containerd (n.ContainerdSocket, namespace k8s.io).
//
// One real node per machine: the kubelet's device-plugin socket, the
// /kubepods cgroups, the bridge and the node IP are the machine's, so
// AddRealNode first takes an flock on /run/lock/atom-realnode.lock (held
// until teardown, waiting for another test binary's node). Everything else
// lives in the node's own directory (n.Dir, under $TMPDIR). Setup records
// what it changes in /run/lock/atom-realnode.json; teardown stops every
// process, shim and container, unmounts, removes the kubepods cgroups, the
// bridge, the lo address, /var/lib/kubelet, /var/log/containers and what
// else it made, restores ip_forward and the kernel settings the kubelet
// changes, checks that nothing is left and deletes the Node. A run killed
// midway is cleaned up by the next real node's setup.
//
// No controller-manager runs. What that leaves to the test: the `default`
// service account and kube-root-ca.crt ConfigMap of a new namespace
// (CreateNamespace makes them), the node.kubernetes.io/not-ready taint (the
// node helpers remove it), garbage collection of owned objects, PVC binding and the pvc-protection finalizer,
// and the status of ResourceQuotas (Pods in a namespace holding one are
// refused until a controller computes its status).
package k8stest
