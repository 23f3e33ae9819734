package kubebackend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestSparkExecutorsOfAnotherCluster: two coordinators (atom clusters a
// and b) drive one namespace of one API server. An executor Pod that a's
// Spark driver asks for is a's: b leaves it alone and says so once, a
// binds it and it runs. b deleted it ("its driver Pod ... is gone": a's
// driver is not among b's Pods).
func TestSparkExecutorsOfAnotherCluster(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "64", Memory: "256Gi"})
	a := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"a": c})
	b := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"b": c})

	id := a.submit(t, sparkSpec("clean", "normal"))
	a.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	d := driverPod(t, c, id)
	exec := executor(t, c, id, d, "clean-exec-1")
	assert.Equal(t, "cpu-1", boundTo(t, c, exec.Name))
	require.Eventually(t, func() bool {
		return strings.Contains(b.log.String(), `msg="leaving alone an executor pod of another atom cluster's driver" cluster=b pod=clean-exec-1 driver=`+d.Name+` driverCluster=a`)
	}, 30*time.Second, 50*time.Millisecond, "b has seen a's executor and leaves it alone")
	a.waitJob(t, id, "has its executor running", func(_ *structs.Job, ts []*structs.Task) bool {
		for _, x := range ts {
			if x.Executor == exec.Name && x.State == structs.TaskRunning {
				return true
			}
		}
		return false
	})
	p, err := c.Admin.CoreV1().Pods(ns).Get(context.Background(), exec.Name, metav1.GetOptions{})
	require.NoError(t, err, "b did not delete it")
	assert.Nil(t, p.DeletionTimestamp)
	assert.Equal(t, exec.UID, p.UID)
	assert.NotContains(t, b.log.String(), "deleting a spark executor pod")
}
