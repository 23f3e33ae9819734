package k8stest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PoolLabel puts a node in an atom pool (as coordinator/kube reads it).
const PoolLabel = "atom.io/pool"

// RealNodeOptions describe the real node. The zero value is a node named
// "real-1" without GPUs.
type RealNodeOptions struct {
	// Name is the Node's name; "real-1" by default.
	Name string
	// GPUs is the nvidia.com/gpu capacity and allocatable the harness
	// patches into the Node's status (the kubelet keeps it; there are no
	// devices). GPUModel goes into GPUModelLabel, Pool into PoolLabel.
	GPUs     int
	GPUModel string
	Pool     string
	// Labels are further Node labels (the kubelet's --node-labels: not in
	// the kubernetes.io and k8s.io namespaces).
	Labels map[string]string
	// Taints are registered with the node (the not-ready taint is removed).
	Taints []corev1.Taint
	// Timeout bounds start-up once the machine is ours; 2 minutes by
	// default. LockTimeout bounds the wait for another test's real node
	// (one per machine); 15 minutes by default.
	Timeout, LockTimeout time.Duration
}

// RealNode is a kubelet with containerd, runc and a CNI bridge that
// registered with a Cluster: Pods bound to it run as containers. See the
// package documentation.
type RealNode struct {
	// Name is the Node's name; IP its InternalIP (RealNodeIP), where the
	// kubelet serves on KubeletPort.
	Name        string
	IP          string
	KubeletPort int
	// PodCIDR is the Pods' subnet (RealNodePodCIDR); Gateway the host's
	// address on their bridge, where a Pod reaches a server of the test
	// listening on all addresses (or on Gateway).
	PodCIDR, Gateway string
	// Dir holds everything of the node: containerd's root, state and
	// socket, the kubelet's root, Pod logs, CNI state, certificates, logs/.
	Dir string
	// ContainerdSocket is containerd's address; Ctr builds ctr commands
	// against it.
	ContainerdSocket string
	// StartupTime is from the machine lock taken to the Node Ready.
	StartupTime time.Duration

	c      *Cluster
	opts   RealNodeOptions
	tools  nodeTools
	lock   *os.File
	state  *hostState
	logf   func(string, ...any)
	apiFwd *apiForwarder // the kubernetes Service's forwarder

	mu         sync.Mutex
	kubelet    *proc
	containerd *proc
	procs      []*proc // every process started, for their logs
	starts     map[string]int
	closed     bool
}

// AddRealNode starts a real node for c and stops it, leaving the machine
// as it found it, when t ends (before c's own cleanup). It waits for the
// machine's real-node lock first (one real node per machine). It fails t,
// saying what to install, when a program is missing.
func (c *Cluster) AddRealNode(t testing.TB, opts RealNodeOptions) *RealNode {
	t.Helper()
	n, err := c.NewRealNode(context.Background(), opts)
	if err != nil {
		t.Fatalf("cluster %s: real node: %v", c.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			n.mu.Lock()
			procs := append([]*proc(nil), n.procs...)
			n.mu.Unlock()
			for _, p := range procs {
				t.Logf("real node %s: last lines of %s:\n%s", n.Name, p.logPath, p.tail(25))
			}
		}
		if err := n.Close(); err != nil {
			t.Errorf("stop real node %s: %v", n.Name, err)
		}
	})
	return n
}

// NewRealNode starts a real node for c; the caller must Close it (before
// c). Tests use AddRealNode.
func (c *Cluster) NewRealNode(ctx context.Context, opts RealNodeOptions) (*RealNode, error) {
	if opts.Name == "" {
		opts.Name = "real-1"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 15 * time.Minute
	}
	tools, err := findNodeTools()
	if err != nil {
		return nil, err
	}
	// The images first (built once, cached): no need to hold the machine.
	images := map[string]string{}
	for _, im := range []struct {
		name, ref string
		src       []byte
	}{{"pause", PauseImage, pauseSource}, {"toolbox", ToolboxImage, toolboxSource}} {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		path, err := programImage(bctx, im.name, im.ref, im.src)
		cancel()
		if err != nil {
			return nil, err
		}
		images[im.ref] = path
	}

	n := &RealNode{
		Name: opts.Name, IP: RealNodeIP, PodCIDR: RealNodePodCIDR, Gateway: RealNodeGateway,
		c: c, opts: opts, tools: tools, logf: c.opts.Logf, starts: map[string]int{},
	}
	lctx, cancel := context.WithTimeout(ctx, opts.LockTimeout)
	n.lock, err = machineLock(lctx, n.logf)
	cancel()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := n.cleanEarlier(); err != nil {
		unlockMachine(n.lock)
		return nil, err
	}
	ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := n.start(ctx, images); err != nil {
		if cerr := n.Close(); cerr != nil {
			err = fmt.Errorf("%w; and its teardown: %v", err, cerr)
		}
		return nil, fmt.Errorf("node %s: %w", opts.Name, err)
	}
	n.StartupTime = time.Since(start)
	n.logf("real node %s ready in %.1fs (kubelet %s, containerd, runc; %d GPUs; Pods in %s): cluster %s",
		n.Name, n.StartupTime.Seconds(), KubernetesVersion, opts.GPUs, n.PodCIDR, c.Name)
	return n, nil
}

// cleanEarlier undoes what a killed earlier real node left on the machine.
func (n *RealNode) cleanEarlier() error {
	old, err := readHostState()
	if err != nil {
		return err
	}
	dir := ""
	if old != nil {
		dir = old.Dir
	}
	what, err := sweep("", old, false)
	if err != nil {
		return fmt.Errorf("clean up after an earlier real node (%s): %w", realNodeStateFile, err)
	}
	if old != nil || !strings.HasPrefix(what, "killed 0 processes, unmounted 0") {
		n.logf("real node: cleaned up after an earlier real node (pid %d, %s): %s", pidOf(old), dir, what)
	}
	if err := os.Remove(realNodeStateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func pidOf(s *hostState) int {
	if s == nil {
		return 0
	}
	return s.PID
}

// start sets up the machine and starts containerd and the kubelet.
func (n *RealNode) start(ctx context.Context, images map[string]string) error {
	t0 := time.Now()
	dir, err := os.MkdirTemp("", realNodeDirBase)
	if err != nil {
		return err
	}
	n.Dir = dir
	n.ContainerdSocket = filepath.Join(dir, "containerd", "containerd.sock")
	if n.state, err = captureHost(dir); err != nil {
		return fmt.Errorf("record the machine's state in %s: %w", realNodeStateFile, err)
	}
	if err := setupNetwork(n.state); err != nil {
		return err
	}
	if err := n.serveAPIServer(); err != nil {
		return err
	}
	if err := n.writeConfig(); err != nil {
		return err
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	tCtrd := time.Now()
	for _, ref := range []string{PauseImage, ToolboxImage} {
		if err := n.importImage(ctx, images[ref], ref); err != nil {
			return err
		}
	}
	if err := n.prepareCluster(ctx); err != nil {
		return err
	}
	tImages := time.Now()
	if err := n.startKubelet(ctx); err != nil {
		return err
	}
	if err := n.waitRegisteredAndReady(ctx, time.Time{}); err != nil {
		return err
	}
	n.logf("real node %s: containerd %.1fs, images %.1fs, kubelet to Ready %.1fs", n.Name,
		tCtrd.Sub(t0).Seconds(), tImages.Sub(tCtrd).Seconds(), time.Since(tImages).Seconds())
	return nil
}

// writeConfig writes the certificates, kubeconfig and configurations.
func (n *RealNode) writeConfig() error {
	dir, pki := n.Dir, n.c.pki
	for _, d := range []string{"certs", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "containerd"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	certs := filepath.Join(dir, "certs")
	serveCert, serveKey, err := pki.issue(certs, "kubelet", certRequest{
		CN: n.Name, IPs: []net.IP{net.ParseIP(RealNodeIP), net.ParseIP("127.0.0.1")}, DNS: []string{n.Name, "localhost"},
	})
	if err != nil {
		return err
	}
	clientCert, clientKey, err := pki.issue(certs, "kubelet-client", certRequest{
		CN: "system:node:" + n.Name, Orgs: []string{"system:nodes"}, Client: true,
	})
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["k8s"] = &clientcmdapi.Cluster{Server: n.c.Host, CertificateAuthorityData: n.c.CAData}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: clientCert, ClientKey: clientKey}
	kc.Contexts["k8s"] = &clientcmdapi.Context{Cluster: "k8s", AuthInfo: "node"}
	kc.CurrentContext = "k8s"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "kubelet.kubeconfig")); err != nil {
		return err
	}
	if n.KubeletPort, err = freePortOn(RealNodeIP); err != nil {
		return err
	}
	kcfg, err := kubeletConfig(dir, n.KubeletPort, pki.caFile, serveCert, serveKey, n.opts.Taints)
	if err != nil {
		return err
	}
	cni, err := cniConfig(dir)
	if err != nil {
		return err
	}
	for path, data := range map[string][]byte{
		"kubelet.yaml":                        kcfg,
		"containerd.toml":                     []byte(containerdConfig(dir)),
		"cni/net.d/10-atom-realnode.conflist": cni,
	} {
		if err := os.WriteFile(filepath.Join(dir, path), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// spawnNamed starts a node process; the second start of a name logs to
// name-2.log, and so on.
func (n *RealNode) spawnNamed(name, bin string, args []string) (*proc, error) {
	n.mu.Lock()
	n.starts[name]++
	logName := name
	if k := n.starts[name]; k > 1 {
		logName = fmt.Sprintf("%s-%d", name, k)
	}
	n.mu.Unlock()
	p, err := spawn(n.Dir, logName, bin, args, nil)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.procs = append(n.procs, p)
	n.mu.Unlock()
	return p, nil
}

func (n *RealNode) startContainerd(ctx context.Context) error {
	p, err := n.spawnNamed("containerd", n.tools.Containerd, []string{"--config", filepath.Join(n.Dir, "containerd.toml")})
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.containerd = p
	n.mu.Unlock()
	return p.waitUntil(ctx, func(ctx context.Context) error {
		out, err := n.Ctr("version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr version: %v: %s", err, out)
		}
		return nil
	})
}

func (n *RealNode) startKubelet(ctx context.Context) error {
	labels := map[string]string{}
	if n.opts.GPUModel != "" {
		labels[GPUModelLabel] = n.opts.GPUModel
	}
	if n.opts.Pool != "" {
		labels[PoolLabel] = n.opts.Pool
	}
	maps.Copy(labels, n.opts.Labels)
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	args := []string{
		"--config=" + filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(n.Dir, "kubelet.kubeconfig"),
		"--root-dir=" + filepath.Join(n.Dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.Dir, "certs"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + RealNodeIP,
		"--v=2",
	}
	if len(kv) > 0 {
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	p, err := n.spawnNamed("kubelet", n.tools.Kubelet, args)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kubelet = p
	n.mu.Unlock()
	return nil
}

// prepareCluster makes what the kubelet needs from the cluster that a
// controller-manager would: RBAC for its node identity beyond the Node
// authorizer (events, RuntimeClasses), the kube-node-lease namespace and
// the default namespace's kube-root-ca.crt.
func (n *RealNode) prepareCluster(ctx context.Context) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "atom-test-node-" + n.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "system:node:" + n.Name}},
	}
	if _, err := n.c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind ClusterRole system:node to the node: %w", err)
	}
	// The API server makes kube-node-lease itself, but maybe not yet.
	for _, ns := range []string{corev1.NamespaceNodeLease, metav1.NamespaceDefault} {
		if err := n.c.EnsureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// waitRegisteredAndReady waits for the Node object, gives it its GPUs and
// removes the not-ready taint, then waits until it is Ready with them.
// After since, when not zero, the kubelet must have renewed the node's
// Lease (a restarted kubelet does at once; a new node's kubelet makes its
// Lease only 10 s after it registered the Node).
func (n *RealNode) waitRegisteredAndReady(ctx context.Context, since time.Time) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		n.mu.Lock()
		k := n.kubelet
		n.mu.Unlock()
		if k.exited() {
			return fmt.Errorf("kubelet %w (%v); last lines of %s:\n%s", errExited, k.err, k.logPath, k.tail(30))
		}
		ready, why, err := n.fixAndCheck(ctx, since)
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready: %s (%w); last lines of %s:\n%s", n.Name, last, ctx.Err(), k.logPath, k.tail(30))
		case <-tick.C:
		}
	}
}

// fixAndCheck does what the node still lacks (GPUs, not-ready taint
// removed) and says whether it is Ready, or why not.
func (n *RealNode) fixAndCheck(ctx context.Context, since time.Time) (bool, string, error) {
	node, err := n.c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "the kubelet has not registered the Node", nil
	}
	if err != nil {
		return false, err.Error(), nil
	}
	if n.opts.GPUs > 0 {
		if q, ok := node.Status.Allocatable[GPUResource]; !ok || q.Value() != int64(n.opts.GPUs) {
			patch := fmt.Sprintf(`{"status":{"capacity":{%q:"%d"},"allocatable":{%q:"%d"}}}`, GPUResource, n.opts.GPUs, GPUResource, n.opts.GPUs)
			if _, err := n.c.Admin.CoreV1().Nodes().PatchStatus(ctx, n.Name, []byte(patch)); err != nil {
				return false, fmt.Sprintf("give it %d GPUs: %v", n.opts.GPUs, err), nil
			}
			return false, "GPUs just patched", nil
		}
	}
	if err := n.c.removeNotReadyTaint(ctx, node); err != nil {
		return false, err.Error(), nil
	}
	if !NodeReady(node) {
		return false, "condition Ready is not True", nil
	}
	if !since.IsZero() {
		lease, err := n.c.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(since) {
			return false, "its Lease is not renewed since the kubelet started", nil
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == NotReadyTaint {
			return false, "the not-ready taint is still there", nil
		}
	}
	return true, "", nil
}

// Ctr returns a ctr command against the node's containerd, in the k8s.io
// namespace (the kubelet's): n.Ctr("images", "ls").
func (n *RealNode) Ctr(args ...string) *exec.Cmd {
	return exec.Command(n.tools.Ctr, append([]string{"--address", n.ContainerdSocket, "--namespace", "k8s.io"}, args...)...)
}

// ImportImage imports the image in an OCI (or docker save) archive into
// the node's containerd as ref, for Pods with imagePullPolicy Never or
// IfNotPresent: `make images` archives, or any `buildah push
// oci-archive:`. The archive holds one image (an index of several
// platforms is fine).
func (n *RealNode) ImportImage(t testing.TB, archive, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := n.importImage(ctx, archive, ref); err != nil {
		t.Fatalf("real node %s: %v", n.Name, err)
	}
}

func (n *RealNode) importImage(ctx context.Context, archive, ref string) error {
	if _, err := os.Stat(archive); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	// The archive's index becomes image ref; names inside the archive that
	// are bare tags are put under ref's repository, full ones are imported
	// only when in that repository.
	repo := ref
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	args := []string{"--address", n.ContainerdSocket, "--namespace", "k8s.io", "images", "import", "--base-name", repo, "--index-name", ref, archive}
	// containerd 1.6 now and then fails an import with "content digest
	// sha256:...: not found" (its garbage collection racing the import's
	// blobs, seen about once in tens of node starts): the image it left
	// removed, tried again, it imports.
	for try := 1; ; try++ {
		out, err := exec.CommandContext(ctx, n.tools.Ctr, args...).CombinedOutput()
		if err == nil {
			break
		}
		if try == 3 || !strings.Contains(string(out), "not found") || ctx.Err() != nil {
			return fmt.Errorf("import %s as %s (ctr images import, %d tries): %v: %s", archive, ref, try, err, out)
		}
		n.logf("real node %s: import of %s failed (%s); removing the image it left and trying again", n.Name, ref, strings.TrimSpace(string(out)))
		// The failed import leaves the image's record pointing at the
		// content it lost: imported again, the record is kept and the
		// content not written, so every later try fails alike.
		_ = n.Ctr("images", "rm", ref).Run()
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	// The CRI plugin learns of it from an event, and labels it when it has.
	filter := fmt.Sprintf(`name==%s,labels."io.cri-containerd.image"==managed`, ref)
	for {
		out, err := n.Ctr("images", "ls", "-q", filter).Output()
		if err == nil && strings.TrimSpace(string(out)) == ref {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("image %s imported but containerd's CRI plugin does not list it: %w", ref, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StopKubelet kills the kubelet (SIGKILL), as a crashed one: its
// containers keep running and the Node keeps its last status (no node
// lifecycle controller runs here: Cluster.SetNodeUnknown marks it as
// that controller would once its grace period passed).
func (n *RealNode) StopKubelet(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	k := n.kubelet
	n.mu.Unlock()
	k.kill()
	if !k.exited() {
		t.Fatalf("real node %s: kubelet (pid %d) did not exit after SIGKILL", n.Name, k.cmd.Process.Pid)
	}
}

// StartKubelet starts the kubelet again and waits until the Node is Ready
// with a Lease renewed by it, its GPUs given back (a restarted kubelet may
// zero extended resources no device plugin reports).
func (n *RealNode) StartKubelet(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if pid := n.KubeletPID(); pid != 0 {
		t.Fatalf("real node %s: StartKubelet: the kubelet (pid %d) runs: StopKubelet first", n.Name, pid)
	}
	start := time.Now()
	err := n.startKubelet(ctx)
	if err == nil {
		err = n.waitRegisteredAndReady(ctx, start)
	}
	if err != nil {
		t.Fatalf("real node %s: start kubelet again: %v", n.Name, err)
	}
	n.logf("real node %s: kubelet started again, Ready in %.1fs", n.Name, time.Since(start).Seconds())
}

// RestartContainerd stops containerd (SIGTERM: its shims and containers
// keep running) and starts it again with the same state; the kubelet
// reconnects.
func (n *RealNode) RestartContainerd(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	p := n.containerd
	n.mu.Unlock()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.startContainerd(ctx); err != nil {
		t.Fatalf("real node %s: restart containerd: %v", n.Name, err)
	}
}

// KubeletLog is the path of the running kubelet's log.
func (n *RealNode) KubeletLog() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubelet == nil {
		return ""
	}
	return n.kubelet.logPath
}

// Close stops the kubelet, containerd, the shims and every container,
// unmounts what they mounted, removes the kubepods cgroups, the bridge,
// the lo address and the machine paths they made, restores the sysctls,
// deletes the Node and its RBAC binding (best effort: the cluster may be
// gone), removes Dir (unless ATOM_K8S_KEEP is set) and lets the machine
// lock go. Its error names anything left behind.
func (n *RealNode) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	procs := append([]*proc(nil), n.procs...)
	n.mu.Unlock()
	defer unlockMachine(n.lock)
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].kill() // the kubelet before containerd
	}
	_ = n.apiFwd.close()
	if n.c.Admin != nil && n.Dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = n.c.Admin.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		_ = n.c.Admin.RbacV1().ClusterRoleBindings().Delete(ctx, "atom-test-node-"+n.Name, metav1.DeleteOptions{})
		cancel()
	}
	keep := os.Getenv("ATOM_K8S_KEEP") != ""
	_, err := sweep(n.Dir, n.state, keep)
	if left := leftovers(n.Dir, n.state); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("left on the machine after teardown: %s", strings.Join(left, "; ")))
	}
	if err != nil {
		return err // the state file stays, for the next run to finish
	}
	if keep && n.Dir != "" {
		n.logf("real node %s: kept %s", n.Name, n.Dir)
	}
	if err := os.Remove(realNodeStateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// KubeletPID is the process ID of the running kubelet (0 when stopped).
func (n *RealNode) KubeletPID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubelet == nil || n.kubelet.exited() {
		return 0
	}
	return n.kubelet.cmd.Process.Pid
}
