package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
)

func TestKubeFlags(t *testing.T) {
	cfg, err := serverConfig(t)
	require.NoError(t, err)
	assert.Equal(t, "", cfg.KubeImage)
	assert.False(t, cfg.KubeHeartbeatPods)
	assert.Equal(t, daemon.DefaultKubeQPS, cfg.KubeQPS)
	assert.Equal(t, daemon.DefaultKubeBurst, cfg.KubeBurst)
	assert.Equal(t, time.Hour, cfg.KubeKeepFinished)

	cfg, err = serverConfig(t, "--kube-image", "registry.example.com/atom/cuda:1.0", "--kube-heartbeat-pods",
		"--kube-qps", "2000", "--kube-burst", "5000", "--kube-keep-finished", "10m")
	require.NoError(t, err)
	assert.Equal(t, "registry.example.com/atom/cuda:1.0", cfg.KubeImage)
	assert.True(t, cfg.KubeHeartbeatPods)
	assert.Equal(t, 2000, cfg.KubeQPS)
	assert.Equal(t, 5000, cfg.KubeBurst)
	assert.Equal(t, 10*time.Minute, cfg.KubeKeepFinished)

	cfg, err = serverConfig(t, "--kube-keep-finished", "0")
	require.NoError(t, err)
	assert.Negative(t, cfg.KubeKeepFinished, "0 deletes a finished Pod at once")
}

// TestKubeFlagsRefused: each bad value is refused at start-up, naming the
// flag, the value and what is allowed.
func TestKubeFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--kube-qps", "0"}, "--kube-qps 0: use requests per second from 1 to 100000"},
		{[]string{"--kube-qps", "-3"}, "--kube-qps -3: use requests per second from 1 to 100000"},
		{[]string{"--kube-qps", "100001"}, "--kube-qps 100001: use requests per second from 1 to 100000"},
		{[]string{"--kube-burst", "0"}, "--kube-burst 0: use a number of requests from 1 to 1000000"},
		{[]string{"--kube-burst", "1000001"}, "--kube-burst 1000001: use a number of requests from 1 to 1000000"},
		{[]string{"--kube-keep-finished", "-1s"}, "--kube-keep-finished -1s: use a duration of 0 (delete at once) or more, such as 1h"},
		{[]string{"--kube-image", "atom cpu"}, `--kube-image "atom cpu": use an image reference without spaces, such as registry.example.com/atom/cpu:1.0`},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			_, err := serverConfig(t, tc.args...)
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error())
			assert.Equal(t, 2, ExitCode(err))
		})
	}
}
