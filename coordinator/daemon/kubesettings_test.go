package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
