package k8stest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// What a real node changes on the machine besides its own directory.
const (
	// RealNodeIP is the real node's InternalIP: an address setup adds to
	// lo (the kubelet refuses a loopback node IP; the kernel has no dummy
	// links), where the kubelet serves and the API server reaches it.
	RealNodeIP = "198.18.0.1"
	// RealNodePodCIDR is the Pods' network: a bridge, RealNodeBridge, whose
	// address is RealNodeGateway. Pods have no other route, so they reach
	// the host (at RealNodeGateway) and each other, nothing beyond.
	RealNodePodCIDR = "10.89.0.0/24"
	RealNodeGateway = "10.89.0.1"
	RealNodeBridge  = "atomrn0"

	realNodeNetwork = "atom-realnode" // the CNI network's name
	realNodeDirBase = "atom-realnode-"
)

// realNodeSysctls are those the bridge plugin (ip_forward) and the kubelet
// (its kernel tunables) change; teardown puts back what setup found.
var realNodeSysctls = []string{
	"net/ipv4/ip_forward",
	"vm/overcommit_memory", "vm/panic_on_oom",
	"kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// realNodeMachinePaths are made by the kubelet, containerd or the CNI
// plugins outside the node's directory when missing; teardown removes
// those setup did not find.
var realNodeMachinePaths = []string{
	"/var/lib/kubelet", // the device-plugin socket's directory is fixed
	"/var/log/containers",
	"/var/log/pods",
	"/var/lib/cni",
	"/run/containerd", // the shims' sockets (s/) are under it, whatever the config
}

// realNodeDirPrefix is the start of every real node's directory path.
func realNodeDirPrefix() string { return filepath.Join(os.TempDir(), realNodeDirBase) }

// captureHost records what the machine looks like before a real node in
// dir changes it, and writes it to realNodeStateFile.
func captureHost(dir string) (*hostState, error) {
	s := &hostState{PID: os.Getpid(), Dir: dir, Started: time.Now(), Sysctls: map[string]string{}, Chains: map[string][]string{}}
	for _, k := range realNodeSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			continue // not on this kernel
		}
		s.Sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, p := range realNodeMachinePaths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			s.Created = append(s.Created, p)
		}
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			if chains, err := iptablesChains(bin, table); err == nil {
				s.Chains[bin+"/"+table] = chains
			}
		}
	}
	return s, s.write()
}

// setupNetwork adds RealNodeIP to lo and makes the Pods' bridge with its
// gateway address (the bridge plugin adopts it), so that both exist
// before the kubelet and the first Pod.
func setupNetwork(s *hostState) error {
	if !loHasNodeIP() {
		s.LoAddr = true
		if err := s.write(); err != nil { // before the change, in case we die
			return err
		}
		if out, err := run("ip", "addr", "add", RealNodeIP+"/32", "dev", "lo"); err != nil {
			return fmt.Errorf("add the real node's IP to lo (ip addr add %s/32 dev lo): %v: %s", RealNodeIP, err, out)
		}
	}
	_, _ = run("ip", "link", "del", RealNodeBridge) // a killed run's
	for _, args := range [][]string{
		// A fixed address: a bridge whose address was not set takes its
		// ports' lowest, so each Pod's end would change the gateway's
		// MAC under the other Pods' ARP caches, cutting them off from
		// the host (the coordinator) until they ask again (~15 s).
		{"link", "add", RealNodeBridge, "address", realNodeBridgeMAC, "type", "bridge"},
		{"addr", "add", RealNodeGateway + "/24", "dev", RealNodeBridge},
		{"link", "set", RealNodeBridge, "up"},
	} {
		if out, err := run("ip", args...); err != nil {
			return fmt.Errorf("make the Pods' bridge (ip %s): %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// realNodeBridgeMAC is the Pods' bridge's address (locally administered).
const realNodeBridgeMAC = "02:a7:6f:6d:00:01"

func loHasNodeIP() bool {
	out, _ := run("ip", "-4", "-o", "addr", "show", "dev", "lo")
	return strings.Contains(out, " "+RealNodeIP+"/")
}

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// restoreHost undoes what setup changed on the machine outside the node's
// directory, as s recorded it: the lo address, the bridge, the sysctls,
// the machine paths it made and new iptables chains. Processes and mounts
// must be gone first (sweep).
func restoreHost(s *hostState) []error {
	var errs []error
	// Veths whose Pod network namespace outlived its Pod, then the bridge.
	if out, err := run("ip", "-o", "link", "show", "master", RealNodeBridge); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				_, _ = run("ip", "link", "del", name)
			}
		}
	}
	if linkExists(RealNodeBridge) {
		if out, err := run("ip", "link", "del", RealNodeBridge); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %v: %s", RealNodeBridge, err, out))
		}
	}
	if s == nil {
		return errs
	}
	if s.LoAddr && loHasNodeIP() {
		if out, err := run("ip", "addr", "del", RealNodeIP+"/32", "dev", "lo"); err != nil {
			errs = append(errs, fmt.Errorf("remove %s from lo: %v: %s", RealNodeIP, err, out))
		}
	}
	for k, v := range s.Sysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s to %s: %w", strings.ReplaceAll(k, "/", "."), v, err))
		}
	}
	for _, p := range s.Created {
		if err := removeMachinePath(p); err != nil {
			errs = append(errs, err)
		}
	}
	if !slices.Contains(s.Created, "/var/log/containers") {
		removeLinksInto("/var/log/containers", realNodeDirPrefix())
	}
	if !slices.Contains(s.Created, "/var/lib/cni") {
		matches, _ := filepath.Glob("/var/lib/cni/results/" + realNodeNetwork + "-*")
		for _, m := range append(matches, "/var/lib/cni/networks/"+realNodeNetwork) {
			_ = os.RemoveAll(m)
		}
	}
	errs = append(errs, removeNewChains(s.Chains)...)
	return errs
}

// removeMachinePath removes a machine path setup did not find: all of it,
// unless something outside the node still uses it (/run/containerd: only
// the node's shims' sockets, then the directories if empty).
func removeMachinePath(p string) error {
	if p == "/run/containerd" {
		_ = os.Remove("/run/containerd/s")
		_ = os.Remove("/run/containerd")
		return nil
	}
	if ms := mountsUnder(p + "/"); len(ms) > 0 {
		return fmt.Errorf("not removing %s: %d mounts left under it, e.g. %s", p, len(ms), ms[0])
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove %s (made by the real node): %w", p, err)
	}
	return nil
}

// removeLinksInto removes the symbolic links in dir that point under
// prefix (the kubelet's /var/log/containers links to a node's logs).
func removeLinksInto(dir, prefix string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, prefix) {
			_ = os.Remove(p)
		}
	}
}

// iptablesChains lists the chains of table (from bin-save).
func iptablesChains(bin, table string) ([]string, error) {
	out, err := run(bin+"-save", "-t", table)
	if err != nil {
		return nil, err
	}
	var chains []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, ":") {
			chains = append(chains, strings.Fields(line[1:])[0])
		}
	}
	return chains, nil
}

// removeNewChains deletes the KUBE-* and CNI-* chains that were not there
// before (by "BIN/TABLE"), and the rules that jump to them.
func removeNewChains(before map[string][]string) []error {
	var errs []error
	for key, old := range before {
		bin, table, _ := strings.Cut(key, "/")
		now, err := iptablesChains(bin, table)
		if err != nil {
			continue
		}
		var added []string
		for _, ch := range now {
			if !slices.Contains(old, ch) && (strings.HasPrefix(ch, "KUBE-") || strings.HasPrefix(ch, "CNI-")) {
				added = append(added, ch)
			}
		}
		if len(added) == 0 {
			continue
		}
		out, _ := run(bin+"-save", "-t", table)
		for _, line := range strings.Split(out, "\n") {
			args := splitQuoted(line)
			if len(args) < 4 || args[0] != "-A" {
				continue
			}
			if i := slices.Index(args, "-j"); i > 0 && i+1 < len(args) && slices.Contains(added, args[i+1]) {
				args[0] = "-D"
				_, _ = run(bin, append([]string{"-t", table}, args...)...)
			}
		}
		for _, ch := range added {
			_, _ = run(bin, "-t", table, "-F", ch)
		}
		for _, ch := range added {
			if out, err := run(bin, "-t", table, "-X", ch); err != nil {
				errs = append(errs, fmt.Errorf("delete %s chain %s/%s the real node made: %v: %s", bin, table, ch, err, out))
			}
		}
	}
	return errs
}

// splitQuoted splits an iptables-save rule into arguments, keeping
// "quoted strings" whole.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// run runs a command and returns its combined output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
