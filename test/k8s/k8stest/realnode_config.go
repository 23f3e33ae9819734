package k8stest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// cniBinDir is where Debian's containernetworking-plugins puts them.
var cniBinDir = "/usr/lib/cni"

// nodeTools are the programs a real node runs.
type nodeTools struct {
	Kubelet, Containerd, Ctr string
}

// findNodeTools locates the kubelet in ToolsDir and containerd, its runc
// shim, runc, the CNI plugins and ip on the machine. Its error names what
// is missing and how to get it.
func findNodeTools() (nodeTools, error) {
	var t nodeTools
	deps := "install them with `make deps-node` (apt-get install containerd runc containernetworking-plugins iproute2 iptables; make test and make test-k8s do it)"
	t.Kubelet = filepath.Join(ToolsDir(), "bin", "kubelet")
	if fi, err := os.Stat(t.Kubelet); err != nil || fi.Mode()&0o111 == 0 {
		return t, fmt.Errorf("kubelet not found at %s: run `make k8s-tools` (builds it beside kube-apiserver from test/k8s/tools; make test does it)", t.Kubelet)
	}
	var missing []string
	for _, p := range []struct {
		dst  *string
		name string
	}{{&t.Containerd, "containerd"}, {&t.Ctr, "ctr"}, {new(string), "containerd-shim-runc-v2"}, {new(string), "runc"}, {new(string), "ip"}, {new(string), "mount"}} {
		path, err := exec.LookPath(p.name)
		if err != nil {
			missing = append(missing, p.name)
		}
		*p.dst = path
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("the real node needs %s, not found (on PATH or in %s): %s", strings.Join(missing, ", "), cniBinDir, deps)
	}
	if os.Geteuid() != 0 {
		return t, fmt.Errorf("the real node needs root (containerd, the kubelet, a bridge, cgroups): run the tests as root")
	}
	return t, nil
}

// containerdConfig is containerd's configuration: everything under dir,
// the CRI plugin with the harness's pause image, no OOM score changes (no
// CAP_SYS_RESOURCE here), network namespaces under its state directory and
// the CNI configuration in dir/cni/net.d.
func containerdConfig(dir string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	ctrd := filepath.Join(dir, "containerd")
	return fmt.Sprintf(`version = 2
root = %s
state = %s
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %s

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %s
    conf_dir = %s
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %s
        SystemdCgroup = false
`, q(filepath.Join(ctrd, "root")), q(filepath.Join(ctrd, "state")), q(filepath.Join(ctrd, "containerd.sock")),
		q(PauseImage), q(cniBinDir), q(filepath.Join(dir, "cni", "net.d")), q(filepath.Join(ctrd, "runc")))
}

// cniConfig is the Pods' network: the bridge with host-local addresses
// from RealNodePodCIDR (its state in dir), no default route (only the
// service range, through the gateway: see RealNodeAPIServiceIP), no
// masquerading; portmap for hostPorts.
func cniConfig(dir string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"cniVersion": "0.4.0",
		"name":       realNodeNetwork,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      RealNodeBridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": RealNodePodCIDR, "gateway": RealNodeGateway}}},
					"routes":  []map[string]string{{"dst": RealNodeServiceCIDR}},
					"dataDir": filepath.Join(dir, "cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
}

// kubeletConfig is the KubeletConfiguration (as JSON, which the kubelet
// reads as YAML): what this machine needs (cgroup v1 with the cgroupfs
// driver, no swap check), TLS with the harness's CA, Pod logs under dir,
// no image GC, no eviction, no iptables chains.
func kubeletConfig(dir string, port int, caFile, certFile, keyFile string, taints []corev1.Taint) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            RealNodeIP,
		"port":               port,
		"readOnlyPort":       0,
		"healthzPort":        0,
		"tlsCertFile":        certFile,
		"tlsPrivateKeyFile":  keyFile,
		"rotateCertificates": false,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": caFile},
		},
		"authorization":                   map[string]any{"mode": "AlwaysAllow"},
		"cgroupDriver":                    "cgroupfs",
		"failCgroupV1":                    false,
		"failSwapOn":                      false,
		"containerRuntimeEndpoint":        "unix://" + filepath.Join(dir, "containerd", "containerd.sock"),
		"podLogsDir":                      filepath.Join(dir, "pod-logs"),
		"imageGCHighThresholdPercent":     100,
		"imageGCLowThresholdPercent":      99,
		"evictionHard":                    map[string]string{"memory.available": "0%", "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"},
		"makeIPTablesUtilChains":          false,
		"resolvConf":                      "/etc/resolv.conf",
		"shutdownGracePeriod":             "0s",
		"shutdownGracePeriodCriticalPods": "0s",
		"serializeImagePulls":             false,
	}
	if len(taints) > 0 {
		cfg["registerWithTaints"] = taints
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// freePortOn returns a TCP port on ip that was free a moment ago.
func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
