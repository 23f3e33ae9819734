package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// job status shows the datasets and each warm-up's progress.
func TestWarmUpLines(t *testing.T) {
	since := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	w := structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/x", "video/y"}, Since: since}
	cases := map[string]struct {
		st   structs.WarmUpStatus
		want string
	}{
		"copying": {structs.WarmUpStatus{WarmUp: w, From: map[string]structs.ClusterID{"lidar/x": "a", "video/y": "c"},
			Bytes: 1 << 20, TotalBytes: 4 << 20, Files: 3, TotalFiles: 8, Running: true},
			"cluster b: lidar/x from a, video/y from c: 3/8 files, 1048576/4194304 bytes (25%), since 2026-05-01 12:00:00"},
		"finding": {structs.WarmUpStatus{WarmUp: w, Running: true},
			"cluster b: lidar/x, video/y: finding the datasets, since 2026-05-01 12:00:00"},
		"retrying": {structs.WarmUpStatus{WarmUp: w, Running: true, Retries: 2, LastError: "cluster b's cache: redis 10.0.0.5:6379 not reachable for 10s while checking the cache's layout: connection refused"},
			"cluster b: lidar/x, video/y: a redis is unreachable, tried again 2 time(s): cluster b's cache: redis 10.0.0.5:6379 not reachable for 10s while checking the cache's layout: connection refused, since 2026-05-01 12:00:00"},
		"follower": {structs.WarmUpStatus{WarmUp: w},
			"cluster b: lidar/x, video/y: waiting for the leader to start it, since 2026-05-01 12:00:00"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, warmUpLine(tc.st)) })
	}
	var out bytes.Buffer
	j := &structs.Job{ID: "j-1", Name: "j", Kind: structs.KindCommand, Replicas: 1, State: structs.JobScheduled,
		Datasets: []string{"lidar/x", "video/y"}, CacheMountPath: "/mnt/cache", WarmUps: []structs.WarmUp{w}}
	printJob(&out, &wire.JobStatus{Job: j, WarmUps: []structs.WarmUpStatus{cases["copying"].st}})
	assert.Contains(t, out.String(), "\nDatasets:   lidar/x, video/y at /mnt/cache\n")
	assert.Contains(t, out.String(), "\nWarm-up:    cluster b: lidar/x from a, video/y from c: 3/8 files, 1048576/4194304 bytes (25%), since 2026-05-01 12:00:00\n")
}
