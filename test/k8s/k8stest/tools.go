package k8stest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Versions of the Kubernetes programs the harness runs (test/k8s/tools).
const (
	KubernetesVersion = "v1.37.2"
	KwokVersion       = "v0.8.0"
)

// Tools are the programs and files a cluster is started from.
type Tools struct {
	Etcd          string
	KubeAPIServer string
	KubeScheduler string
	Kwok          string
	// Stages are kwok's stage files (node/fast, node/heartbeat, pod/fast).
	Stages []string
}

// ToolsDir is where `make k8s-tools` puts the Kubernetes binaries:
// $ATOM_K8S_TOOLS, else ${XDG_CACHE_HOME:-$HOME/.cache}/atom/k8s-v1.37.2.
// The binaries are in its bin/, kwok's stage files in its stage/.
func ToolsDir() string {
	if d := os.Getenv("ATOM_K8S_TOOLS"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "atom", "k8s-"+KubernetesVersion)
}

// stageFiles are kwok's stage files, relative to ToolsDir()/stage, as
// test/k8s/tools/build.sh copies them from the kwok module.
var stageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat/node-heartbeat.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// FindTools locates etcd on PATH and the Kubernetes programs in ToolsDir.
// Its error names what is missing and how to get it.
func FindTools() (Tools, error) {
	var t Tools
	var err error
	if t.Etcd, err = exec.LookPath("etcd"); err != nil {
		return t, fmt.Errorf("etcd not found on PATH: install Debian's etcd-server (apt-get install -y etcd-server; make test does it)")
	}
	dir := ToolsDir()
	howto := fmt.Sprintf("run `make k8s-tools` (builds kube-apiserver and kube-scheduler %s and kwok %s from test/k8s/tools into %s; 12-20 minutes on 2 cores the first time, cached after; make test does it)",
		KubernetesVersion, KwokVersion, dir)
	bin := filepath.Join(dir, "bin")
	for _, p := range []struct {
		dst  *string
		name string
	}{{&t.KubeAPIServer, "kube-apiserver"}, {&t.KubeScheduler, "kube-scheduler"}, {&t.Kwok, "kwok"}} {
		path := filepath.Join(bin, p.name)
		if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
			return t, fmt.Errorf("%s not found at %s: %s", p.name, path, howto)
		}
		*p.dst = path
	}
	for _, f := range stageFiles {
		path := filepath.Join(dir, "stage", f)
		if _, err := os.Stat(path); err != nil {
			return t, fmt.Errorf("kwok stage file %s not found: %s", path, howto)
		}
		t.Stages = append(t.Stages, path)
	}
	return t, nil
}
