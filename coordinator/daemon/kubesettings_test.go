package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
)

// TestKubeSettings: a cluster's own image, qps, burst and heartbeatPods win
// over the server's; the server's apply where the cluster sets none; the
// defaults where neither does.
func TestKubeSettings(t *testing.T) {
	bare := &structs.Cluster{Name: "k", Backend: "kubernetes"}
	own := &structs.Cluster{Name: "kwok", Backend: "kubernetes", Image: "own:1", QPS: 3000, Burst: 6000, HeartbeatPods: true}
	for _, tc := range []struct {
		name string
		c    *structs.Cluster
		cfg  Config
		want kubeSettings
	}{
		{"defaults", bare, Config{}, kubeSettings{qps: DefaultKubeQPS, burst: DefaultKubeBurst}},
		{"server's", bare, Config{KubeImage: "srv:1", KubeQPS: 50, KubeBurst: 70, KubeHeartbeatPods: true},
			kubeSettings{image: "srv:1", qps: 50, burst: 70, heartbeatPods: true}},
		{"cluster's", own, Config{KubeImage: "srv:1", KubeQPS: 50, KubeBurst: 70},
			kubeSettings{image: "own:1", qps: 3000, burst: 6000, heartbeatPods: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, settingsFor(tc.c, tc.cfg))
		})
	}
}

// TestKubeClientErrors: a cluster whose kubeconfig is missing, names no
// cluster, or is left out on a server that runs in no Pod is refused
// saying what to give.
func TestKubeClientErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	dir := t.TempDir()
	notKubeconfig := filepath.Join(dir, "tokens.yaml")
	require.NoError(t, os.WriteFile(notKubeconfig, []byte("users:\n  - {name: alice, token: 0123456789abcdef}\n"), 0o600))
	for _, tc := range []struct {
		kubeconfig, want string
	}{
		{"", `cluster k8s: no kubeconfig given, and this server runs in no Pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set) to use its service account: give the cluster a kubeconfig: FILE with the coordinator's credentials`},
		{notKubeconfig, `cluster k8s: kubeconfig "` + notKubeconfig + `" names no cluster to use (no current-context, or no clusters): give a kubeconfig file as kubectl uses, whose current context is the coordinator's`},
		{filepath.Join(dir, "nope"), `cluster k8s: kubeconfig "` + filepath.Join(dir, "nope") + `": stat ` + filepath.Join(dir, "nope") + `: no such file or directory`},
	} {
		c := &structs.Cluster{Name: "k8s", Backend: "kubernetes", Kubeconfig: tc.kubeconfig}
		_, err := kubeClient(c, settingsFor(c, Config{}))
		require.EqualError(t, err, tc.want)
	}
}

// TestLoopbackURLs: the coordinator URLs task Pods would get that are
// loopback addresses (the Pod's own), which the server warns about when it
// drives a kubernetes cluster.
func TestLoopbackURLs(t *testing.T) {
	assert.Equal(t, []string{"http://127.0.0.1:7070", "https://localhost:7071", "http://[::1]:7072"},
		loopbackURLs("http://127.0.0.1:7070,https://localhost:7071,http://[::1]:7072,https://atom-coordinator-0.atom-coordinator-peers.atom.svc.cluster.local:7070,http://10.0.0.5:7070"))
	assert.Empty(t, loopbackURLs("https://atom-coordinator.atom.svc:7070"))
}

// TestKubeErrorUnreachable: a volume request whose cluster's API server
// does not answer says so and to retry (it read "the outcome is unknown:
// retry the request (a job submission with the same request ID)").
func TestKubeErrorUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	err := kubeError(fmt.Errorf("Get \"https://10.0.0.1:6443/api/v1/namespaces/atom-jobs/persistentvolumeclaims\": %w", refused), "volumes of cluster b")
	assert.EqualError(t, err, `volumes of cluster b: the cluster's API server did not answer: Get "https://10.0.0.1:6443/api/v1/namespaces/atom-jobs/persistentvolumeclaims": dial tcp: connect: connection refused: retry once it does`)
}
