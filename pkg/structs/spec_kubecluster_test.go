package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubernetesClusterFields: a kubernetes cluster carries its own image,
// client rate limits, heartbeatPods and its task Pods' service account; a
// local one may not name them.
func TestKubernetesClusterFields(t *testing.T) {
	t.Parallel()
	cfg, err := ParseClusterConfig([]byte(`clusters:
  - name: kwok
    backend: kubernetes
    kubeconfig: /etc/atom/kwok.kubeconfig
    namespace: atom-jobs
    image: registry.example.com/atom/cpu:1.0
    qps: 2000
    burst: 4000
    heartbeatPods: true
    serviceAccount: atom-task
  - {name: prod, backend: kubernetes}
`))
	require.NoError(t, err)
	assert.Equal(t, []Cluster{
		{Name: "kwok", Backend: "kubernetes", Kubeconfig: "/etc/atom/kwok.kubeconfig", Namespace: "atom-jobs",
			Image: "registry.example.com/atom/cpu:1.0", QPS: 2000, Burst: 4000, HeartbeatPods: true, ServiceAccount: "atom-task"},
		{Name: "prod", Backend: "kubernetes"},
	}, cfg.Clusters)
}

func TestKubernetesClusterFieldsRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, spec, want string }{
		{"image on local", "clusters: [{name: a, image: atom/cpu:1}]",
			`clusters[0].image "atom/cpu:1" is not allowed: only a kubernetes cluster has one: give backend: kubernetes, or no image`},
		{"qps on local", "clusters: [{name: a, qps: 10}]",
			`clusters[0].qps 10 is not allowed: only a kubernetes cluster has one: give backend: kubernetes, or no qps`},
		{"burst on local", "clusters: [{name: a, backend: local, burst: 10}]",
			`clusters[0].burst 10 is not allowed: only a kubernetes cluster has one: give backend: kubernetes, or no burst`},
		{"heartbeatPods on local", "clusters: [{name: a, heartbeatPods: true}]",
			`clusters[0].heartbeatPods true is not allowed: only a kubernetes cluster has Pods: give backend: kubernetes, or no heartbeatPods`},
		{"serviceAccount on local", "clusters: [{name: a, serviceAccount: x}]",
			`clusters[0].serviceAccount "x" is not allowed: only a kubernetes cluster has one: give backend: kubernetes, or no serviceAccount`},
		{"bad serviceAccount", "clusters: [{name: a, backend: kubernetes, serviceAccount: Atom_Task}]",
			`clusters[0].serviceAccount "Atom_Task" is not allowed: use a Kubernetes service account name`},
		{"negative qps", "clusters: [{name: a, backend: kubernetes, qps: -1}]",
			`clusters[0].qps -1 is not allowed: use requests per second from 1 to 100000 (leave it out for the server's --kube-qps)`},
		{"huge qps", "clusters: [{name: a, backend: kubernetes, qps: 100001}]",
			`clusters[0].qps 100001 is not allowed: use requests per second from 1 to 100000`},
		{"negative burst", "clusters: [{name: a, backend: kubernetes, burst: -5}]",
			`clusters[0].burst -5 is not allowed: use a number of requests from 1 to 1000000 (leave it out for the server's --kube-burst)`},
		{"fractional qps", "clusters: [{name: a, backend: kubernetes, qps: 1.5}]", `clusters[0].qps 1.5 is not allowed: use a whole number`},
		{"image with a space", "clusters: [{name: a, backend: kubernetes, image: 'atom cpu'}]",
			`clusters[0].image "atom cpu" is not allowed: use an image reference without spaces`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseClusterConfig([]byte(tc.spec))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
